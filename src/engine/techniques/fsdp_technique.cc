// fsdp as a technique (fsdp.cc is its trainer): what it runs on, the
// settings Search measures, its memory per device and its analytic
// estimate.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/blocks.h"
#include "engine/estimate.h"
#include "engine/techniques/fsdp.h"

namespace saturn::engine {
namespace {

class Fsdp final : public Technique {
 public:
  std::string_view Name() const override { return "fsdp"; }
  bool TakesPacks() const override { return true; }
  std::string_view Description() const override {
    return "fully sharded data parallel (ZeRO-3), optional activation checkpointing and CPU "
           "offload";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 2; }
  bool SplitsBatch() const override { return true; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (std::string why = model.WhyNotSplittable(); !why.empty()) return why;
    return Technique::Unsupported(task, model, gpus);
  }

  // Checkpointing recomputes the forward pass and offload moves every
  // shard over the host link at every step: both only trade speed for
  // memory (measured on the LoRA grid: checkpointing 1.23-1.35x the plain
  // step), so Search measures them only when the plain setting does not fit.
  std::vector<Knobs> SearchSpace(TrainContext&) const override {
    return {{{"checkpointing", false}, {"offload", false}}};
  }
  // In order of the memory they save; the offloaded one with checkpointing
  // is skipped where the one without fits.
  std::vector<Knobs> MemorySavingSpace(TrainContext&) const override {
    return {{{"checkpointing", true}, {"offload", false}},
            {{"checkpointing", false}, {"offload", true}},
            {{"checkpointing", true}, {"offload", true}}};
  }

  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs& knobs) const override {
    std::vector<int64_t> counts = ctx.model.BlockParamCounts();
    std::vector<int64_t> trainable = ctx.model.BlockTrainableCounts();
    int64_t sharded = 0, sharded_train = 0, largest = 0;
    for (size_t b = 0; b < counts.size(); ++b) {
      sharded += (counts[b] + ctx.gpus - 1) / ctx.gpus;
      sharded_train += (trainable[b] + ctx.gpus - 1) / ctx.gpus;
      largest = std::max(largest, counts[b]);
    }
    // Parameter shards, and gradient and state shards of the trainable ones.
    int64_t kept =
        KnobBool(knobs, "offload", false)
            ? 0
            : sharded + sharded_train * (1 + static_cast<int64_t>(ctx.optimizer.Slots().size()));
    return static_cast<int64_t>(sizeof(float)) * (kept + largest);
  }

  // Shards of everything (in host memory with offload), three blocks'
  // parameters gathered at a time (one computing, the next arriving, the
  // last being released) and one block's full gradient; every parameter
  // gathered for forward and again for backward, the trainable gradients
  // reduce-scattered; offloaded shards cross the host link both ways.
  SearchResult Estimate(const EstimateContext& ctx) const override {
    Estimator est(ctx);
    if (!est.Unsupported().empty()) return est.NotEstimated();
    const int n = est.Blocks();
    const double samples = std::ceil(static_cast<double>(est.BatchSize()) / ctx.gpus);
    const double params = 4.0 * static_cast<double>(est.TotalParams());
    const double trainable = 4.0 * static_cast<double>(est.TotalTrainable());
    const int64_t gathered = 4 * (3 * est.LargestBlockParams() + est.LargestBlockTrainable());
    std::vector<EstimateSetting> settings;
    for (bool offload : {false, true}) {
      const int64_t state = offload ? 0 : est.StateBytes(0, n, ctx.gpus);
      for (bool checkpointing : {false, true}) {
        EstimateSetting s;
        s.knobs = {{"checkpointing", checkpointing}, {"offload", offload}};
        int64_t peak = state + gathered + est.DataBytes(samples) +
                       est.ActivationBytes(0, n, samples, checkpointing);
        s.peak_bytes.assign(static_cast<size_t>(ctx.gpus), peak);
        s.resident_bytes.assign(static_cast<size_t>(ctx.gpus), state);
        s.compute_s = est.ComputeSeconds(samples, checkpointing);
        s.comm_s = 2 * est.GatherSeconds(params, ctx.gpus) + est.GatherSeconds(trainable, ctx.gpus);
        if (offload) s.comm_s += (params + trainable) / ctx.gpus / kHostLinkBytesS;
        s.step_s = s.compute_s + s.comm_s;
        settings.push_back(std::move(s));
      }
    }
    return est.Pick(settings);
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return MakeFsdpTrainer(ctx, KnobBool(knobs, "checkpointing", false),
                           KnobBool(knobs, "offload", false));
  }
};

}  // namespace

std::unique_ptr<Technique> MakeFsdpTechnique() {
  return std::make_unique<Fsdp>();
}

}  // namespace saturn::engine
