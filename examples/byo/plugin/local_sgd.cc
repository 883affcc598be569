// local-sgd: an example technique plug-in (docs/byo.md, "3. Technique
// plug-ins (C++)"); examples/byo/plugin/workload.yaml trains with it.
//
// Local SGD: every rank holds a replica, trains on its slice of each batch
// and updates its own replica with its own optimizer; every `sync_every`
// steps the replicas (and their optimizer state) are averaged with one
// all-reduce. Communication drops by a factor of sync_every compared with
// ddp, at the price of replicas drifting apart between averages — so unlike
// the built-in techniques it does not train exactly the same weights as
// `single`; users choose it knowing that.
//
// Built as a shared library against engine/plugin.h only, and loaded with
// `plugins: [PATH/libsaturn_local_sgd.so]` in a workload (relative to the
// workload file; the build puts it in build/examples/byo/plugin/), or with
// `--plugin` (saturn profile, saturn run, saturn-worker).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "engine/plugin.h"

namespace {

using saturn::engine::Batch;
using saturn::engine::BlockSet;
using saturn::engine::CheckpointReader;
using saturn::engine::CheckpointWriter;
using saturn::engine::Knobs;
using saturn::engine::Placement;
using saturn::engine::Technique;
using saturn::engine::TrainContext;
using saturn::engine::Trainer;

constexpr int64_t kDefaultSyncEvery = 4;

class LocalSgdTrainer final : public Trainer {
 public:
  LocalSgdTrainer(TrainContext& ctx, int64_t sync_every)
      : ctx_(ctx),
        blocks_(ctx, 0, ctx.model.NumBlocks(), Placement::kDevice),
        sync_every_(sync_every) {}

  double Step(int64_t step) override {
    auto [begin, end] =
        saturn::engine::SliceOf(ctx_.BatchSize(), ctx_.comm.Rank(), ctx_.comm.Size());
    Batch batch = ctx_.StepSamples(step, begin, end - begin);
    at::Tensor loss_sum = ctx_.model.LossSum(blocks_.Forward(batch.inputs), batch.targets);
    // Each replica follows the mean loss of its own slice.
    double items = static_cast<double>((end - begin) * ctx_.model.LossItemsPerSample());
    (loss_sum / items).backward();
    blocks_.Update(step + 1);
    if ((step + 1) % sync_every_ == 0) Average();
    // Reported loss: the mean over the whole batch, as every technique does.
    return ctx_.comm.SumOf(loss_sum.item<double>()) / static_cast<double>(ctx_.LossItems());
  }

  // Checkpoints hold the average of the replicas, so that any technique can
  // resume from them; averaging here too keeps an uninterrupted run and a
  // resumed one identical.
  void Save(CheckpointWriter& out) override {
    Average();
    if (ctx_.comm.Rank() == 0) blocks_.Save(out);
  }
  void Load(const CheckpointReader& in) override { blocks_.Load(in); }

  nlohmann::json Stats() const override {
    return {{"sync_every", sync_every_}, {"averages", averages_}};
  }

 private:
  void Average() {
    at::NoGradGuard no_grad;
    double scale = 1.0 / ctx_.comm.Size();
    for (int b = blocks_.Begin(); b < blocks_.End(); ++b) {
      for (const saturn::engine::ParamSlot& slot : blocks_.At(b).Params()) {
        ctx_.comm.AllReduceSum(*slot.tensor);
        slot.tensor->mul_(scale);
      }
      for (std::vector<at::Tensor>& state : blocks_.StateOf(b)) {
        for (at::Tensor& t : state) {
          ctx_.comm.AllReduceSum(t);
          t.mul_(scale);
        }
      }
    }
    ++averages_;
  }

  TrainContext& ctx_;
  BlockSet blocks_;
  int64_t sync_every_;
  int64_t averages_ = 0;
};

class LocalSgd final : public Technique {
 public:
  std::string_view Name() const override { return "local-sgd"; }
  std::string_view Description() const override {
    return "local SGD (example plug-in): replicas train alone, averaged every sync_every steps";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  std::string Unsupported(const saturn::engine::TaskSpec& task, const saturn::engine::Model& model,
                          int gpus) const override {
    if (gpus < 2) return "local-sgd needs at least 2 devices (on one it is single)";
    return Technique::Unsupported(task, model, gpus);
  }
  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs&) const override {
    return saturn::engine::ModelStateBytes(ctx);
  }
  std::vector<Knobs> SearchSpace(TrainContext&) const override {
    return {Knobs{{"sync_every", kDefaultSyncEvery}}};
  }
  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return std::make_unique<LocalSgdTrainer>(
        ctx, saturn::engine::KnobInt(knobs, "sync_every", kDefaultSyncEvery, 1));
  }
};

}  // namespace

SATURN_TECHNIQUE_PLUGIN(registry) {
  registry.Register(std::make_unique<LocalSgd>());
}
