// ddp: data parallelism. Every rank holds the whole model and trains on its
// slice of the batch; gradients are summed across ranks by all-reduce in
// buckets. A bucket is launched as soon as autograd has accumulated all of
// its gradients (a post-hook on each parameter's gradient accumulator), in
// bucket order on every rank, so communication overlaps the rest of the
// backward pass. Knobs: bucket_mb (default 25, PyTorch's); checkpointing and
// accumulation (blocks.h's MemorySavers), tried only when the plain step
// does not fit. With its blocks
// split by tensor parallelism it is tp-ddp's outer trainer (trainers.h):
// each replica is then a group of ranks, and a rank reduces its slices'
// gradients with the ranks holding the same slices in the other replicas.
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <map>

#include "engine/blocks.h"
#include "engine/estimate.h"
#include "engine/phases.h"
#include "engine/trainers.h"

namespace saturn::engine {
namespace {

constexpr double kDefaultBucketMb = 25.0;

class DdpTrainer final : public Trainer {
 public:
  DdpTrainer(TrainContext& ctx, double bucket_mb, const MemorySavers& savers,
             const TensorGroup& tensor_parallel)
      : ctx_(ctx),
        savers_(savers),
        blocks_(ctx, 0, ctx.model.NumBlocks(), Placement::kDevice, tensor_parallel) {
    blocks_.SetCheckpointing(savers.checkpointing);
    BuildBuckets(static_cast<int64_t>(bucket_mb * 1024 * 1024));
  }

  // With accumulation, the rank's share runs in chunks; gradients add up in
  // the buckets and are reduced during the last chunk's backward only.
  double Step(int64_t step) override {
    auto [first, last] = SliceOf(ctx_.BatchSize(), ctx_.comm.Rank(), ctx_.comm.Size());
    double loss_sum = 0.0;
    // A pack whose members left may leave a rank fewer rows than chunks.
    const int64_t chunks = std::max<int64_t>(1, std::min(savers_.accumulation, last - first));
    for (int64_t k = 0; k < chunks; ++k) {
      auto [begin, end] = SliceOf(last - first, static_cast<int>(k), static_cast<int>(chunks));
      Batch batch = ctx_.StepSamples(step, first + begin, end - begin);
      reducing_ = k == chunks - 1;
      for (Bucket& bucket : buckets_)
        bucket.pending = bucket.hooks;
      next_launch_ = 0;
      at::Tensor loss = ctx_.model.LossSum(blocks_.Forward(batch.inputs), batch.targets) /
                        static_cast<double>(ctx_.LossItems());
      {
        PhaseScope phase(Phase::kBackward);
        loss.backward();
      }
      loss_sum += loss.item<double>();
    }
    LaunchReady(/*all=*/true);
    for (Work& work : in_flight_)
      work.Wait();
    in_flight_.clear();
    blocks_.SumTiedGrads();
    blocks_.Update(step + 1, BlockSet::Grads::kZero);
    return ctx_.comm.SumOf(loss_sum);
  }

  void Save(CheckpointWriter& out) override {
    if (ctx_.comm.Rank() == 0) blocks_.Save(out);
  }
  void Load(const CheckpointReader& in) override { blocks_.Load(in); }

 private:
  struct Bucket {
    at::Tensor flat;
    std::vector<at::Tensor*> params;
    int hooks = 0;  // gradient-accumulator calls per backward pass
    int pending = 0;
  };

  // Buckets fill in reverse parameter order, roughly the order in which
  // backward produces gradients. Each parameter's gradient is a view of its
  // bucket, so autograd accumulates straight into the buffer we reduce.
  // Frozen parameters have no gradient and no bucket.
  void BuildBuckets(int64_t bucket_bytes) {
    std::vector<at::Tensor*> order;
    for (int b = ctx_.model.NumBlocks() - 1; b >= 0; --b) {
      const std::vector<ParamSlot>& params = blocks_.At(b).Params();
      for (size_t p = params.size(); p-- > 0;)
        if (params[p].trainable && !blocks_.IsSharedCopy(b, p)) order.push_back(params[p].tensor);
    }
    if (order.empty()) return;
    // With checkpointing each block back-propagates on its own, so a tied
    // parameter's accumulator runs once per block that uses it (else once).
    std::map<const void*, int> uses;
    for (int b = 0; b < ctx_.model.NumBlocks(); ++b) {
      for (const ParamSlot& slot : blocks_.At(b).Params())
        if (slot.trainable) ++uses[slot.tensor->unsafeGetTensorImpl()];
    }
    std::vector<std::vector<at::Tensor*>> groups(1);
    int64_t bytes = 0;
    for (at::Tensor* param : order) {
      int64_t size = param->numel() * param->element_size();
      if (!groups.back().empty() && bytes + size > bucket_bytes) {
        groups.emplace_back();
        bytes = 0;
      }
      groups.back().push_back(param);
      bytes += size;
    }
    buckets_.resize(groups.size());
    for (size_t b = 0; b < groups.size(); ++b) {
      Bucket& bucket = buckets_[b];
      bucket.params = groups[b];
      int64_t numel = 0;
      for (at::Tensor* param : bucket.params) {
        numel += param->numel();
        bucket.hooks += savers_.checkpointing ? uses[param->unsafeGetTensorImpl()] : 1;
      }
      bucket.flat = at::zeros({numel}, ctx_.device.Options());
      int64_t offset = 0;
      for (at::Tensor* param : bucket.params) {
        param->mutable_grad() = bucket.flat.narrow(0, offset, param->numel()).view(param->sizes());
        offset += param->numel();
        std::shared_ptr<torch::autograd::Node> accumulator =
            torch::autograd::impl::grad_accumulator(*param);
        accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, b](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              if (reducing_ && --buckets_[b].pending == 0) LaunchReady(/*all=*/false);
              return outputs;
            }));
        accumulators_.push_back(std::move(accumulator));
      }
    }
  }

  // Launches ready buckets strictly in order: collectives must be issued in
  // the same order on every rank.
  void LaunchReady(bool all) {
    while (next_launch_ < buckets_.size() && (all || buckets_[next_launch_].pending == 0)) {
      in_flight_.push_back(ctx_.comm.AllReduceSumAsync(buckets_[next_launch_].flat));
      ++next_launch_;
    }
  }

  TrainContext& ctx_;
  MemorySavers savers_;
  bool reducing_ = true;  // this backward's gradients are the step's last
  BlockSet blocks_;
  std::vector<Bucket> buckets_;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<Work> in_flight_;
  size_t next_launch_ = 0;
};

class Ddp final : public Technique {
 public:
  std::string_view Name() const override { return "ddp"; }
  bool TakesPacks() const override { return true; }
  std::string_view Description() const override {
    return "data parallel: a replica per device, bucketed gradient all-reduce overlapping backward";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 2; }
  bool SplitsBatch() const override { return true; }
  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs&) const override {
    return ModelStateBytes(ctx);
  }
  std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const override {
    return WithMemorySavers({Knobs::object()}, ctx.BatchSize() / ctx.comm.Size(),
                            /*accumulation=*/true);
  }
  // A whole replica per rank, its slice of the batch, one ring all-reduce
  // of the fp32 gradients (not counted as overlapping backward).
  SearchResult Estimate(const EstimateContext& ctx) const override {
    Estimator est(ctx);
    if (!est.Unsupported().empty()) return est.NotEstimated();
    const int n = est.Blocks();
    const int64_t samples = (est.BatchSize() + ctx.gpus - 1) / ctx.gpus;
    const int64_t state = est.StateBytes(0, n);
    std::vector<EstimateSetting> settings;
    for (const SaverSetting& saver : SaverSettings(est.BatchSize() / ctx.gpus, true)) {
      EstimateSetting s;
      s.knobs = saver.Apply(Knobs::object());
      double chunk = static_cast<double>(samples) / static_cast<double>(saver.accumulation);
      int64_t peak = state + est.DataBytes(static_cast<double>(samples)) +
                     est.ActivationBytes(0, n, chunk, saver.checkpointing);
      s.peak_bytes.assign(static_cast<size_t>(ctx.gpus), peak);
      s.resident_bytes.assign(static_cast<size_t>(ctx.gpus), state);
      s.compute_s = est.ComputeSeconds(static_cast<double>(samples), saver.checkpointing);
      s.comm_s = est.AllReduceSeconds(4.0 * static_cast<double>(est.TotalTrainable()), ctx.gpus);
      s.step_s = s.compute_s + s.comm_s;
      settings.push_back(std::move(s));
    }
    return est.Pick(settings);
  }
  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return MakeDdpTrainer(ctx, knobs);
  }
};

}  // namespace

std::unique_ptr<Trainer> MakeDdpTrainer(TrainContext& ctx, const Knobs& knobs,
                                        const TensorGroup& tensor_parallel) {
  return std::make_unique<DdpTrainer>(
      ctx, KnobNumber(knobs, "bucket_mb", kDefaultBucketMb),
      MemorySavers::FromKnobs(knobs, ctx.BatchSize() / ctx.comm.Size()), tensor_parallel);
}

std::unique_ptr<Technique> MakeDdpTechnique() {
  return std::make_unique<Ddp>();
}

}  // namespace saturn::engine
