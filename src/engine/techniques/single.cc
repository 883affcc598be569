// single: the whole model on one device, one process. The baseline every
// other technique must match step for step. Knobs: checkpointing and
// accumulation (blocks.h's MemorySavers), tried only when the plain step
// does not fit.
#include "engine/blocks.h"
#include "engine/estimate.h"
#include "engine/trainers.h"

namespace saturn::engine {
namespace {

// Also tp's trainer: its blocks split their work inside.
class WholeBatchTrainer final : public Trainer {
 public:
  WholeBatchTrainer(TrainContext& ctx, const MemorySavers& savers,
                    const TensorGroup& tensor_parallel)
      : ctx_(ctx),
        savers_(savers),
        blocks_(ctx, 0, ctx.model.NumBlocks(), Placement::kDevice, tensor_parallel) {
    blocks_.SetCheckpointing(savers.checkpointing);
  }

  double Step(int64_t step) override {
    return WholeBatchStep(ctx_, blocks_, step, savers_.accumulation);
  }
  // With tensor parallelism, every rank's slices gathered (collective) and
  // the group's rank 0 writes.
  void Save(CheckpointWriter& out) override { blocks_.Save(out); }
  void Load(const CheckpointReader& in) override { blocks_.Load(in); }

 private:
  TrainContext& ctx_;
  MemorySavers savers_;
  BlockSet blocks_;
};

class Single final : public Technique {
 public:
  std::string_view Name() const override { return "single"; }
  bool TakesPacks() const override { return true; }
  std::string_view Description() const override { return "the whole model on one device"; }
  Layout ProcessLayout() const override { return Layout::kOneProcess; }
  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs&) const override {
    return ModelStateBytes(ctx);
  }
  std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const override {
    return WithMemorySavers({Knobs::object()}, ctx.BatchSize(), /*accumulation=*/true);
  }
  SearchResult Estimate(const EstimateContext& ctx) const override {
    return EstimateWholeBatch(ctx, 1);
  }
  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return MakeWholeBatchTrainer(ctx, MemorySavers::FromKnobs(knobs, ctx.BatchSize()));
  }
};

}  // namespace

std::unique_ptr<Trainer> MakeWholeBatchTrainer(TrainContext& ctx, const MemorySavers& savers,
                                               const TensorGroup& tensor_parallel) {
  return std::make_unique<WholeBatchTrainer>(ctx, savers, tensor_parallel);
}

std::unique_ptr<Technique> MakeSingleTechnique() {
  return std::make_unique<Single>();
}

}  // namespace saturn::engine
