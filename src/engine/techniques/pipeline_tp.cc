// pipeline-tp: pipeline stages whose layers run tensor parallel (with the
// data parallelism of a Saturn plan across tasks, Megatron-LM's 3D layout
// for one). Ranks r = s * tp + t: the `tp` consecutive ranks of stage s
// split each of its transformer layers between them as tp does, and the
// stages run GPipe as pipeline does, rank t of one stage sending its
// activations to rank t of the next. A stage holds 1/tp of its layers, so
// models that fit neither tp's nor pipeline's devices alone can fit both.
// Knobs: tp (the degree: >= 2, dividing the devices into >= 2 stages and
// the model's heads; searched), micro_batches (searched), partition (the
// stage boundaries; by default balanced by each block's measured time,
// unsplit), checkpointing (pipeline's).
#include <algorithm>

#include "common/error.h"
#include "engine/blocks.h"
#include "engine/errors.h"
#include "engine/trainers.h"

namespace saturn::engine {
namespace {

constexpr int kMinStages = 2;
constexpr int64_t kMaxMicroBatches = 32;

class PipelineTp final : public Technique {
 public:
  std::string_view Name() const override { return "pipeline-tp"; }
  std::string_view Description() const override {
    return "pipeline stages of several devices each, the stage's layers tensor parallel (2D)";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 4; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (gpus < 4) return "pipeline-tp needs at least 4 devices (2 stages of 2-way tensor parallel)";
    if (std::string why = model.WhyNotSplittable(); !why.empty()) return why;
    if (!Degrees(task, model, gpus).empty()) return "";
    if (std::string why = TensorParallelUnsupported(task, model, 2); !why.empty()) return why;
    return "no tensor-parallel degree >= 2 splits the model's heads and divides " +
           std::to_string(gpus) + " devices into 2 or more stages of at least one block each";
  }

  // The block times are measured once, on whole blocks, over all ranks;
  // each degree's stages are balanced on them (tp divides a transformer
  // layer's time about evenly, so the balance holds).
  std::vector<Knobs> SearchSpace(TrainContext& ctx) const override {
    std::vector<double> times = BlockTimes(ctx, ctx.BatchSize());
    std::vector<Knobs> space;
    for (int tp : Degrees(ctx.task, ctx.model, ctx.comm.Size())) {
      std::vector<int64_t> bounds = BalancedPartition(times, ctx.comm.Size() / tp);
      for (int64_t m = 1; m <= ctx.BatchSize() && m <= kMaxMicroBatches; m *= 2)
        space.push_back({{"tp", tp}, {"micro_batches", m}, {"partition", bounds}});
    }
    return space;
  }

  std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const override {
    return WithMemorySavers(SearchSpace(ctx), 1, /*accumulation=*/false);
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    int tp = GridDegreeKnob(ctx, knobs, kMinStages);
    if (ctx.comm.Size() / tp > ctx.model.NumBlocks()) {
      throw InputError("", 0, "--knobs",
                       "tp: " + std::to_string(ctx.comm.Size() / tp) + " stages for " +
                           std::to_string(ctx.model.NumBlocks()) +
                           " blocks (a stage needs one at least)");
    }
    // Stages measured here, over every rank: measured inside the grid, each
    // position's ranks would average their own times and could cut the
    // stages differently from their tensor-parallel peers.
    Knobs chosen = knobs;
    if (!chosen.contains("partition")) {
      int64_t micro_batches =
          KnobInt(knobs, "micro_batches", std::min<int64_t>(4, ctx.BatchSize()), 1);
      chosen["partition"] =
          BalancedPartition(BlockTimes(ctx, std::max<int64_t>(1, ctx.BatchSize() / micro_batches)),
                            ctx.comm.Size() / tp);
    }
    return MakeGridTrainer(ctx, tp, [chosen](TrainContext& across, const TensorGroup& group) {
      return MakePipelineTrainer(across, chosen, group);
    });
  }

 private:
  // MeasureBlockTimes, or where a block is too large to measure on one
  // device (what tp is for), parameter counts (on every rank alike: the
  // devices are the same).
  static std::vector<double> BlockTimes(TrainContext& ctx, int64_t micro_batch) {
    try {
      return MeasureBlockTimes(ctx, micro_batch);
    } catch (const OutOfMemoryError&) {
      std::vector<double> counts;
      for (int64_t count : ctx.model.BlockParamCounts())
        counts.push_back(static_cast<double>(count));
      return counts;
    }
  }

  static std::vector<int> Degrees(const TaskSpec& task, const Model& model, int gpus) {
    std::vector<int> degrees = GridDegrees(task, model, gpus, kMinStages);
    std::erase_if(degrees, [&](int tp) { return gpus / tp > model.NumBlocks(); });
    return degrees;
  }
};

}  // namespace

std::unique_ptr<Technique> MakePipelineTpTechnique() {
  return std::make_unique<PipelineTp>();
}

}  // namespace saturn::engine
