// tp: tensor parallelism as in Megatron-LM (Shoeybi et al. 2019). Every
// rank trains on the whole batch; each transformer layer's attention heads
// and MLP hidden units are split across the ranks (q, k, v and the MLP's
// first map by columns, the attention output and the MLP's second map by
// rows), with one all-reduce of activations forward and one of gradients
// backward per sub-layer (engine/tensor_parallel.h). Blocks that do not
// split (embeddings, the head) are whole on every rank: every rank computes
// them on the same inputs, so their gradients come out the same everywhere
// and nothing else is reduced. A layer's parameters, gradients and optimizer
// state take 1/ranks of a device each, so a layer too large for one device
// (even one at a time, as fsdp gathers them) trains on several.
// Checkpoints hold whole blocks (gathered on save, sliced on load), so a
// task moves between tp and any other technique at a checkpoint. Knobs:
// checkpointing and accumulation (blocks.h's MemorySavers), tried only when
// the plain step does not fit.
//
// Also here: the grid that hybrid techniques run tp in (engine/trainers.h).
// The pieces the split layers call are the engine's (tensor_parallel.cc).
#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "engine/blocks.h"
#include "engine/estimate.h"
#include "engine/trainers.h"

namespace saturn::engine {

namespace {

// A grid's ranks: this rank's tensor-parallel group and its outer group,
// the context the outer trainer runs in, and that trainer.
class GridTrainer final : public Trainer {
 public:
  GridTrainer(TrainContext& ctx, int tp, const OuterTrainer& outer)
      : tp_(ctx.comm.Subgroup(Consecutive(ctx.comm.Rank() / tp * tp, tp))),
        across_(ctx.comm.Subgroup(Strided(ctx.comm.Rank() % tp, tp, ctx.comm.Size()))),
        context_{ctx.task, ctx.model,           ctx.data, ctx.optimizer, ctx.device,
                 *across_, ctx.comm.Size() / tp},
        inner_(outer(context_, TensorGroup{tp_.get(), tp_->Rank(), tp_->Size()})) {}

  double Step(int64_t step) override { return inner_->Step(step); }
  void Save(CheckpointWriter& out) override { inner_->Save(out); }
  void Load(const CheckpointReader& in) override { inner_->Load(in); }
  nlohmann::json Stats() const override {
    nlohmann::json stats = inner_->Stats();
    stats["tp"] = tp_->Size();
    stats["groups"] = across_->Size();
    return stats;
  }

 private:
  static std::vector<int> Consecutive(int first, int count) {
    std::vector<int> ranks;
    for (int r = first; r < first + count; ++r)
      ranks.push_back(r);
    return ranks;
  }
  static std::vector<int> Strided(int first, int stride, int size) {
    std::vector<int> ranks;
    for (int r = first; r < size; r += stride)
      ranks.push_back(r);
    return ranks;
  }

  std::unique_ptr<Communicator> tp_, across_;
  TrainContext context_;
  std::unique_ptr<Trainer> inner_;
};

}  // namespace

std::unique_ptr<Trainer> MakeGridTrainer(TrainContext& ctx, int tp, const OuterTrainer& outer) {
  if (tp < 1 || ctx.comm.Size() % tp != 0) {
    throw std::invalid_argument("MakeGridTrainer: tp " + std::to_string(tp) + " does not divide " +
                                std::to_string(ctx.comm.Size()) + " ranks");
  }
  return std::make_unique<GridTrainer>(ctx, tp, outer);
}

std::string TensorParallelUnsupported(const TaskSpec& task, const Model& model, int degree) {
  if (task.lora.Enabled()) {
    return "tensor parallelism does not split LoRA adapters: fine-tune with LoRA under single, "
           "ddp, fsdp, pipeline or spill";
  }
  bool splits = false;
  for (int i = 0; i < model.NumBlocks(); ++i) {
    const int64_t parts = model.BuildBlock(i, /*materialize=*/false)->TensorParallelParts();
    if (parts == 0) continue;
    splits = true;
    if (parts % degree != 0) {
      return "the model's " + std::to_string(parts) + " attention heads do not split evenly " +
             "across " + std::to_string(degree) + " devices";
    }
  }
  if (!splits) return "the model has no transformer layers to split across devices";
  return "";
}

std::vector<int> GridDegrees(const TaskSpec& task, const Model& model, int gpus, int min_groups) {
  std::vector<int> degrees;
  for (int tp = 2; tp * min_groups <= gpus; ++tp) {
    if (gpus % tp == 0 && TensorParallelUnsupported(task, model, tp).empty()) degrees.push_back(tp);
  }
  return degrees;
}

int GridDegreeKnob(const TrainContext& ctx, const Knobs& knobs, int min_groups) {
  std::vector<int> degrees = GridDegrees(ctx.task, ctx.model, ctx.comm.Size(), min_groups);
  int64_t tp = KnobInt(knobs, "tp", degrees.empty() ? 0 : degrees.back(), 2);
  if (std::find(degrees.begin(), degrees.end(), tp) == degrees.end()) {
    std::string list;
    for (int d : degrees)
      list += (list.empty() ? "" : ", ") + std::to_string(d);
    throw InputError("", 0, "--knobs",
                     "tp: expected one of [" + list + "] (degrees >= 2 that divide " +
                         std::to_string(ctx.comm.Size()) + " devices into at least " +
                         std::to_string(min_groups) + " groups and split the model's heads)");
  }
  return static_cast<int>(tp);
}

namespace {

class Tp final : public Technique {
 public:
  std::string_view Name() const override { return "tp"; }
  std::string_view Description() const override {
    return "tensor parallel (Megatron-style): each transformer layer's heads and MLP split "
           "across the devices, an all-reduce per sub-layer";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 2; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (gpus < 2) return "tp splits layers across devices: it needs at least 2";
    return TensorParallelUnsupported(task, model, gpus);
  }

  std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const override {
    return WithMemorySavers({Knobs::object()}, ctx.BatchSize(), /*accumulation=*/true);
  }

  SearchResult Estimate(const EstimateContext& ctx) const override {
    return EstimateWholeBatch(ctx, ctx.gpus);
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return MakeWholeBatchTrainer(ctx, MemorySavers::FromKnobs(knobs, ctx.BatchSize()),
                                 TensorGroup{&ctx.comm, ctx.comm.Rank(), ctx.comm.Size()});
  }
};

}  // namespace

std::unique_ptr<Technique> MakeTpTechnique() {
  return std::make_unique<Tp>();
}

}  // namespace saturn::engine
