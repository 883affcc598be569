// pipeline: GPipe. The blocks are cut into one contiguous stage per device,
// balanced by measured per-block time; the batch is split into micro-batches
// that flow forward through the stages, then backward in reverse, and the
// step ends with a flush (every stage applies its optimizer). Activations go
// forward and their gradients backward by point-to-point send/recv.
//
// Knobs: micro_batches (tuned by search), partition (the stage boundaries
// [0, b1, ..., blocks], measured once per search), checkpointing (blocks.h's
// MemorySavers; tried only when no setting fits without). With its blocks split by
// tensor parallelism it is pipeline-tp's outer trainer (trainers.h): each
// stage is then a group of ranks, and a rank sends to and receives from
// the rank of the same position in the neighbouring stages.
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "common/clock.h"
#include "common/error.h"
#include "engine/blocks.h"
#include "engine/estimate.h"
#include "engine/pack.h"
#include "engine/phases.h"
#include "engine/trainers.h"

namespace saturn::engine {
namespace {

constexpr int64_t kMaxDims = 8;

}  // namespace

// Contiguous split of per-block times into `parts` non-empty stages that
// minimises the slowest stage (dynamic programming over prefix sums).
std::vector<int64_t> BalancedPartition(const std::vector<double>& times, int parts) {
  int n = static_cast<int>(times.size());
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + times[i];
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[p][i]: slowest stage when the first i blocks form p stages.
  std::vector<std::vector<double>> best(parts + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> cut(parts + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0.0;
  for (int p = 1; p <= parts; ++p) {
    for (int i = p; i <= n; ++i) {
      for (int j = p - 1; j < i; ++j) {
        double slowest = std::max(best[p - 1][j], prefix[i] - prefix[j]);
        if (slowest < best[p][i]) best[p][i] = slowest, cut[p][i] = j;
      }
    }
  }
  std::vector<int64_t> bounds(parts + 1);
  bounds[parts] = n;
  for (int p = parts, i = n; p > 0; --p)
    i = cut[p][i], bounds[p - 1] = i;
  return bounds;
}

// Forward plus backward time of each block on one micro-batch, each block
// built alone (memory: one block) with zeros for values. Every rank measures and the times are
// averaged, so all ranks agree on the partition.
std::vector<double> MeasureBlockTimes(TrainContext& ctx, int64_t micro_batch) {
  Batch batch = ctx.StepSamples(0, 0, micro_batch);
  at::Tensor x = batch.inputs;
  int n = ctx.model.NumBlocks();
  at::Tensor times = at::zeros({n}, at::kDouble);
  for (int i = 0; i < n; ++i) {
    // Values do not change the time: zeros, so that a model with pretrained
    // weights is not read whole by every stage (each builds its own blocks).
    std::unique_ptr<Block> block = ctx.model.BuildBlockToFill(i);
    {
      at::NoGradGuard no_grad;
      for (const ParamSlot& slot : block->Params())
        slot.tensor->zero_();
    }
    BlockToDevice(*block, ctx.device);
    at::Tensor input = i == 0 ? x : x.detach().requires_grad_(true);
    at::Tensor output;
    double best = std::numeric_limits<double>::infinity();
    // The first runs of the first layer still pay one-time costs (fresh
    // memory, kernel selection): keep the fastest of three.
    for (int repeat = 0; repeat < 3; ++repeat) {
      double start = MonotonicSeconds();
      output = RunBlock(*block, input, ctx);
      if (output.requires_grad()) output.backward(at::ones_like(output));
      ctx.device.Synchronize();
      best = std::min(best, MonotonicSeconds() - start);
    }
    times[i] = best;
    x = output.detach();
  }
  times = times.to(ctx.comm.ScalarOptions().device());
  ctx.comm.AllReduceSum(times);
  times = times.cpu() / ctx.comm.Size();
  return std::vector<double>(times.data_ptr<double>(), times.data_ptr<double>() + n);
}

namespace {

std::vector<int64_t> PartitionKnob(const Knobs& knobs, int blocks, int stages) {
  std::vector<int64_t> bounds;
  if (knobs.contains("partition")) {
    const Knobs& value = knobs["partition"];
    bool ok = value.is_array() && static_cast<int>(value.size()) == stages + 1;
    for (size_t i = 0; ok && i < value.size(); ++i) {
      ok = value[i].is_number_integer();
      if (ok) bounds.push_back(value[i].get<int64_t>());
      ok = ok && (i == 0 ? bounds[i] == 0 : bounds[i] > bounds[i - 1]);
    }
    if (!ok || bounds.back() != blocks) {
      throw InputError("", 0, "--knobs",
                       "partition: expected " + std::to_string(stages + 1) +
                           " increasing block indices from 0 to " + std::to_string(blocks));
    }
  }
  return bounds;
}

int64_t MicroBatchSize(const TrainContext& ctx, int64_t micro_batches) {
  return std::max<int64_t>(1, ctx.BatchSize() / micro_batches);
}

std::vector<int64_t> MeasuredPartition(TrainContext& ctx, int64_t micro_batch) {
  return BalancedPartition(MeasureBlockTimes(ctx, micro_batch), ctx.comm.Size());
}

class PipelineTrainer final : public Trainer {
 public:
  PipelineTrainer(TrainContext& ctx, int64_t micro_batches, const std::vector<int64_t>& bounds,
                  bool checkpointing, const TensorGroup& tensor_parallel)
      : ctx_(ctx),
        stage_(ctx.comm.Rank()),
        stages_(ctx.comm.Size()),
        micro_batches_(micro_batches),
        bounds_(bounds),
        blocks_(ctx, static_cast<int>(bounds[stage_]), static_cast<int>(bounds[stage_ + 1]),
                Placement::kDevice, tensor_parallel) {
    blocks_.SetCheckpointing(checkpointing);
  }

  double Step(int64_t step) override {
    bool first = stage_ == 0, last = stage_ == stages_ - 1;
    double start = MonotonicSeconds(), idle = 0.0, loss_sum = 0.0;
    // A pack whose members left may have fewer rows than micro-batches.
    const int64_t micro_batches = std::min(micro_batches_, ctx_.BatchSize());
    std::vector<at::Tensor> inputs(micro_batches), outputs(micro_batches);
    std::vector<Work> sends;
    for (int64_t j = 0; j < micro_batches; ++j) {
      auto [begin, end] = ActivateRows(j, micro_batches);
      Batch batch;
      if (first || last) batch = ctx_.StepSamples(step, begin, end - begin);
      if (first) {
        inputs[j] = batch.inputs;
      } else {
        double wait = MonotonicSeconds();
        inputs[j] = ReceiveActivation(Tag(j, 0)).requires_grad_(true);
        idle += MonotonicSeconds() - wait;
      }
      at::Tensor y = blocks_.Forward(inputs[j]);
      if (last) {
        outputs[j] = ctx_.model.LossSum(y, batch.targets) / static_cast<double>(ctx_.LossItems());
        loss_sum += outputs[j].item<double>();
      } else {
        outputs[j] = y;
        SendActivation(y.detach(), Tag(j, 0), sends);
      }
    }
    for (int64_t j = micro_batches - 1; j >= 0; --j) {
      ActivateRows(j, micro_batches);  // blocks recomputed under checkpointing run again
      if (last) {
        PhaseScope phase(Phase::kBackward);
        outputs[j].backward();
      } else {
        at::Tensor grad = at::empty_like(outputs[j]);
        double wait = MonotonicSeconds();
        ctx_.comm.Recv(grad, stage_ + 1, Tag(j, 2));
        idle += MonotonicSeconds() - wait;
        PhaseScope phase(Phase::kBackward);
        // A stage before every trainable parameter (LoRA's frozen
        // embeddings alone) has nothing to back-propagate into.
        if (outputs[j].requires_grad()) torch::autograd::backward({outputs[j]}, {grad});
      }
      if (!first) sends.push_back(ctx_.comm.Send(inputs[j].grad(), stage_ - 1, Tag(j, 2)));
      inputs[j].reset();
      outputs[j].reset();
    }
    for (Work& send : sends)
      send.Wait();
    SumTiedGrads();
    idle_s_ += idle;
    busy_s_ += MonotonicSeconds() - start;
    blocks_.Update(step + 1, BlockSet::Grads::kRelease, &ctx_.comm);
    return ctx_.comm.SumOf(last ? loss_sum : 0.0);
  }

  void Save(CheckpointWriter& out) override { blocks_.Save(out); }
  void Load(const CheckpointReader& in) override { blocks_.Load(in); }

  nlohmann::json Stats() const override {
    double bubble = ctx_.comm.SumOf(busy_s_ > 0 ? idle_s_ / busy_s_ : 0.0) / stages_;
    double m = static_cast<double>(micro_batches_), p = static_cast<double>(stages_);
    return {{"bubble", bubble},
            {"gpipe_bubble", (p - 1) / (m + p - 1)},
            {"stages", stages_},
            {"micro_batches", micro_batches_}};
  }

 private:
  static int Tag(int64_t micro_batch, int kind) { return static_cast<int>(micro_batch * 4 + kind); }

  // Micro-batch j's samples [begin, end) of the step. In a pack they are
  // the rows its layers apply each member's adapters to (engine/pack.h):
  // the first and last stages fetch them, which activates them; a stage
  // between fetches nothing, and backward runs the micro-batches again in
  // reverse, so each stage activates them itself.
  std::pair<int64_t, int64_t> ActivateRows(int64_t j, int64_t micro_batches) const {
    auto [begin, end] =
        SliceOf(ctx_.BatchSize(), static_cast<int>(j), static_cast<int>(micro_batches));
    if (PackRows* rows = ActivePackRows()) rows->Activate(begin, end - begin);
    return {begin, end};
  }

  int StageOf(int block) const {
    int s = 0;
    while (s + 1 < stages_ && block >= bounds_[s + 1])
      ++s;
    return s;
  }

  // Tied copies (GPT-2's embedding on the first stage and its head's copy on
  // the last): each stage holding copies sums its own, sends that to the
  // other holders and adds theirs, in stage order, so every copy gets the
  // same total.
  void SumTiedGrads() {
    blocks_.SumTiedGrads();
    std::vector<TiedParam> groups = ctx_.model.TiedParams();
    for (size_t g = 0; g < groups.size(); ++g) {
      std::vector<at::Tensor> mine;
      std::vector<int> holders;
      for (const auto& [block, name] : groups[g].copies) {
        int s = StageOf(block);
        if (std::find(holders.begin(), holders.end(), s) == holders.end()) holders.push_back(s);
        if (s != stage_) continue;
        for (const ParamSlot& slot : blocks_.At(block).Params()) {
          if (slot.name == name && slot.tensor->grad().defined())
            mine.push_back(slot.tensor->grad());
        }
      }
      if (mine.empty() || holders.size() < 2) continue;
      std::sort(holders.begin(), holders.end());
      const at::Tensor& own = mine[0];  // equal to the others after SumTiedGrads
      std::vector<Work> sends;
      std::vector<at::Tensor> parts;
      for (int other : holders) {
        if (other == stage_) {
          parts.push_back(own);
          continue;
        }
        sends.push_back(ctx_.comm.Send(own, other, Tag(static_cast<int64_t>(g), 3)));
        at::Tensor theirs = at::empty_like(own);
        ctx_.comm.Recv(theirs, other, Tag(static_cast<int64_t>(g), 3));
        parts.push_back(theirs);
      }
      for (Work& send : sends)
        send.Wait();
      at::Tensor total = SumInOrder(parts);
      at::NoGradGuard no_grad;
      for (at::Tensor& grad : mine)
        grad.copy_(total);
    }
  }

  // Shapes travel ahead of the data: micro-batches may differ in size.
  void SendActivation(const at::Tensor& y, int tag, std::vector<Work>& sends) {
    at::Tensor header = at::zeros({kMaxDims + 1}, at::kLong);
    header[0] = y.dim();
    for (int64_t d = 0; d < y.dim(); ++d)
      header[d + 1] = y.size(d);
    sends.push_back(ctx_.comm.Send(ctx_.device.Place(header), stage_ + 1, tag));
    sends.push_back(ctx_.comm.Send(y.contiguous(), stage_ + 1, tag + 1));
  }

  at::Tensor ReceiveActivation(int tag) {
    at::Tensor header = ctx_.device.Place(at::zeros({kMaxDims + 1}, at::kLong));
    ctx_.comm.Recv(header, stage_ - 1, tag);
    header = header.cpu();
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < header[0].item<int64_t>(); ++d)
      shape.push_back(header[d + 1].item<int64_t>());
    at::Tensor x = at::empty(shape, ctx_.device.Options());
    ctx_.comm.Recv(x, stage_ - 1, tag + 1);
    return x;
  }

  TrainContext& ctx_;
  int stage_, stages_;
  int64_t micro_batches_;
  std::vector<int64_t> bounds_;
  BlockSet blocks_;
  double idle_s_ = 0.0, busy_s_ = 0.0;
};

class Pipeline final : public Technique {
 public:
  std::string_view Name() const override { return "pipeline"; }
  std::string_view Description() const override {
    return "GPipe: time-balanced stages, micro-batches, synchronous flush";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 2; }
  // Every stage serves every member's rows of a micro-batch at once.
  bool TakesPacks() const override { return true; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (std::string why = model.WhyNotSplittable(); !why.empty()) return why;
    if (model.NumBlocks() < gpus) {
      return "pipeline needs at least one block per device (" + std::to_string(model.NumBlocks()) +
             " blocks, " + std::to_string(gpus) + " devices)";
    }
    return Technique::Unsupported(task, model, gpus);
  }

  // Two partitions: balanced by measured time (fastest when it fits) and
  // balanced by parameters (what each stage keeps). Timings taken on a busy
  // machine can tilt the first one until a stage no longer fits while the
  // second does, so both are tried where they differ and search keeps the
  // fastest that fits.
  std::vector<Knobs> SearchSpace(TrainContext& ctx) const override {
    std::vector<std::vector<int64_t>> partitions = {MeasuredPartition(ctx, MicroBatchSize(ctx, 1))};
    std::vector<int64_t> counts = ctx.model.BlockParamCounts();
    std::vector<int64_t> by_params =
        BalancedPartition(std::vector<double>(counts.begin(), counts.end()), ctx.comm.Size());
    if (by_params != partitions[0]) partitions.push_back(by_params);
    std::vector<Knobs> space;
    for (const std::vector<int64_t>& bounds : partitions) {
      for (int64_t m = 1; m <= ctx.BatchSize() && m <= 32; m *= 2) {
        space.push_back({{"micro_batches", m}, {"partition", bounds}});
      }
    }
    return space;
  }

  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs& knobs) const override {
    std::vector<int64_t> bounds = PartitionKnob(knobs, ctx.model.NumBlocks(), ctx.gpus);
    if (bounds.empty()) return std::nullopt;
    std::vector<int64_t> counts = ctx.model.BlockParamCounts();
    int64_t largest = 0;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      int64_t params = 0;
      for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i)
        params += counts[i];
      largest = std::max(largest, params);
    }
    return largest * static_cast<int64_t>(sizeof(float)) *
           (2 + static_cast<int64_t>(ctx.optimizer.Slots().size()));
  }

  // Micro-batches already bound activations: checkpointing only.
  std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const override {
    return WithMemorySavers(SearchSpace(ctx), 1, /*accumulation=*/false);
  }

  SearchResult Estimate(const EstimateContext& ctx) const override {
    Estimator est(ctx);
    if (!est.Unsupported().empty()) return est.NotEstimated();
    std::vector<int64_t> bounds = BalancedPartition(est.BlockFlops(), ctx.gpus);
    std::vector<EstimateSetting> settings;
    for (bool checkpointing : {false, true}) {
      for (int64_t m = 1; m <= est.BatchSize() && m <= 32; m *= 2) {
        Knobs knobs = {{"micro_batches", m}, {"partition", bounds}};
        if (checkpointing) knobs["checkpointing"] = true;
        settings.push_back(EstimateStages(est, bounds, m, checkpointing, std::move(knobs)));
      }
    }
    return est.Pick(settings);
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return MakePipelineTrainer(ctx, knobs);
  }

 private:
  // GPipe: every stage keeps the whole batch's activations of its blocks
  // (all micro-batches go forward before any goes back) and a micro-batch
  // in and out; the step is the slowest stage's compute stretched by the
  // bubble, (m + p - 1) / m, plus filling and draining the pipe.
  static EstimateSetting EstimateStages(const Estimator& est, const std::vector<int64_t>& bounds,
                                        int64_t m, bool checkpointing, Knobs knobs) {
    const int p = static_cast<int>(bounds.size()) - 1;
    const double batch = static_cast<double>(est.BatchSize());
    const double micro = batch / static_cast<double>(m);
    std::vector<double> flops = est.BlockFlops();
    double total = std::accumulate(flops.begin(), flops.end(), 0.0), slowest = 0.0;
    EstimateSetting s;
    s.knobs = std::move(knobs);
    for (int stage = 0; stage < p; ++stage) {
      int begin = static_cast<int>(bounds[stage]), end = static_cast<int>(bounds[stage + 1]);
      int64_t state = est.StateBytes(begin, end, 1, 1, /*grads=*/false);
      s.resident_bytes.push_back(state);
      s.peak_bytes.push_back(state + 4 * est.LargestTrainable(begin, end) + est.DataBytes(batch) +
                             est.ActivationBytes(begin, end, batch, checkpointing) +
                             static_cast<int64_t>(2 * micro * est.BoundaryBytes()));
      slowest = std::max(slowest, std::accumulate(flops.begin() + begin, flops.begin() + end, 0.0));
    }
    double bubble = static_cast<double>(m + p - 1) / static_cast<double>(m);
    s.compute_s = est.ComputeSeconds(batch, checkpointing, slowest / total) * bubble;
    s.comm_s = 2.0 * (p - 1) * est.SendSeconds(micro * est.BoundaryBytes());
    s.step_s = s.compute_s + s.comm_s;
    return s;
  }
};

}  // namespace

std::unique_ptr<Trainer> MakePipelineTrainer(TrainContext& ctx, const Knobs& knobs,
                                             const TensorGroup& tensor_parallel) {
  int64_t micro_batches = KnobInt(knobs, "micro_batches", std::min<int64_t>(4, ctx.BatchSize()), 1);
  if (micro_batches > ctx.BatchSize()) {
    throw InputError("", 0, "--knobs",
                     "micro_batches: at most batch_size (" + std::to_string(ctx.BatchSize()) + ")");
  }
  std::vector<int64_t> bounds = PartitionKnob(knobs, ctx.model.NumBlocks(), ctx.comm.Size());
  if (bounds.empty()) bounds = MeasuredPartition(ctx, MicroBatchSize(ctx, micro_batches));
  return std::make_unique<PipelineTrainer>(
      ctx, micro_batches, bounds, KnobBool(knobs, "checkpointing", false), tensor_parallel);
}

std::unique_ptr<Technique> MakePipelineTechnique() {
  return std::make_unique<Pipeline>();
}

}  // namespace saturn::engine
