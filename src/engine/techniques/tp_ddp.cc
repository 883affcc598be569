// tp-ddp: tensor parallelism inside groups × data parallelism across them
// (Megatron-LM's 2D layout). Ranks r = g * tp + t: the `tp` consecutive
// ranks of group g split every transformer layer between them as tp does,
// and each group is one data-parallel replica training on its slice of the
// batch; a rank all-reduces its slices' gradients with rank t of every
// other group (ddp's buckets, overlapping backward). On a node of GPUs the
// consecutive ranks share the fast links that tp's per-layer all-reduces
// need, and the replicas' once-per-step gradient all-reduce is the one that
// crosses them. Knobs: tp (the degree: >= 2, dividing the devices into >=
// 2 groups and the model's heads; searched), bucket_mb, checkpointing and
// accumulation (ddp's).
#include "common/error.h"
#include "engine/blocks.h"
#include "engine/trainers.h"

namespace saturn::engine {
namespace {

constexpr int kMinGroups = 2;

class TpDdp final : public Technique {
 public:
  std::string_view Name() const override { return "tp-ddp"; }
  std::string_view Description() const override {
    return "tensor parallel inside groups of devices, data parallel across the groups (2D)";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 4; }
  bool SplitsBatch() const override { return true; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (gpus < 4) return "tp-ddp needs at least 4 devices (2-way tensor parallel x 2 replicas)";
    if (!Degrees(task, model, gpus).empty()) return "";
    if (std::string why = TensorParallelUnsupported(task, model, 2); !why.empty()) return why;
    return "no tensor-parallel degree >= 2 splits the model's heads and divides " +
           std::to_string(gpus) + " devices into 2 or more groups of at least one sample each " +
           "(batch_size " + std::to_string(task.batch_size) + ")";
  }

  std::vector<Knobs> SearchSpace(TrainContext& ctx) const override {
    std::vector<Knobs> space;
    for (int tp : Degrees(ctx.task, ctx.model, ctx.comm.Size()))
      space.push_back({{"tp", tp}});
    return space;
  }

  // Per degree: a replica trains batch / (devices / tp) samples.
  std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const override {
    std::vector<Knobs> space;
    for (int tp : Degrees(ctx.task, ctx.model, ctx.comm.Size())) {
      for (Knobs& knobs : WithMemorySavers({{{"tp", tp}}}, ctx.BatchSize() / (ctx.comm.Size() / tp),
                                           /*accumulation=*/true))
        space.push_back(std::move(knobs));
    }
    return space;
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    int tp = GridDegreeKnob(ctx, knobs, kMinGroups);
    if (ctx.BatchSize() < ctx.comm.Size() / tp) {
      throw InputError("", 0, "--knobs",
                       "tp: " + std::to_string(ctx.comm.Size() / tp) + " replicas for batch_size " +
                           std::to_string(ctx.BatchSize()) +
                           " (a replica needs one sample at least)");
    }
    return MakeGridTrainer(ctx, tp, [&knobs](TrainContext& across, const TensorGroup& group) {
      return MakeDdpTrainer(across, knobs, group);
    });
  }

 private:
  // GridDegrees whose groups each get a sample of the batch at least.
  static std::vector<int> Degrees(const TaskSpec& task, const Model& model, int gpus) {
    std::vector<int> degrees = GridDegrees(task, model, gpus, kMinGroups);
    std::erase_if(degrees, [&](int tp) { return task.batch_size < gpus / tp; });
    return degrees;
  }
};

}  // namespace

std::unique_ptr<Technique> MakeTpDdpTechnique() {
  return std::make_unique<TpDdp>();
}

}  // namespace saturn::engine
