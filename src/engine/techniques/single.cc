// single: the whole model on one device, one process. The baseline every
// other technique must match step for step.
#include "engine/blocks.h"

namespace saturn::engine {
namespace {

class SingleTrainer final : public Trainer {
 public:
  explicit SingleTrainer(TrainContext& ctx)
      : ctx_(ctx), blocks_(ctx, 0, ctx.model.NumBlocks(), Placement::kDevice) {}

  double Step(int64_t step) override { return WholeBatchStep(ctx_, blocks_, step); }
  void Save(CheckpointWriter& out) override { blocks_.Save(out); }
  void Load(const CheckpointReader& in) override { blocks_.Load(in); }

 private:
  TrainContext& ctx_;
  BlockSet blocks_;
};

class Single final : public Technique {
 public:
  std::string_view Name() const override { return "single"; }
  std::string_view Description() const override { return "the whole model on one device"; }
  Layout ProcessLayout() const override { return Layout::kOneProcess; }
  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs&) const override {
    return ModelStateBytes(ctx);
  }
  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs&) const override {
    return std::make_unique<SingleTrainer>(ctx);
  }
};

}  // namespace

std::unique_ptr<Technique> MakeSingleTechnique() {
  return std::make_unique<Single>();
}

}  // namespace saturn::engine
