// Parallelism techniques: the "search + execute" template.
//
// A technique is one way to train a task on a number of devices (one
// device, data parallelism, sharding, pipelining, spilling). Saturn treats
// techniques as black boxes with two entry points:
//   Search   measures the technique on the task and devices: the best knob
//            settings (micro-batches, checkpointing, ...), the step time and
//            the peak memory of every device, or "infeasible: why";
//   Execute  trains a range of steps with chosen knobs, resuming from and
//            writing technique-independent checkpoints.
// Both have default implementations here, written in terms of what a
// technique must provide: the knob settings worth trying (SearchSpace) and a
// Trainer that runs one step. A technique overrides Search or Execute only
// when it needs something else (an analytic model instead of measuring, say).
//
// Processes. A kRankPerDevice technique runs one process per device (a
// "rank"); the worker starts them and joins them into `ctx.comm`. A
// kOneProcess technique runs on one device in one process (ctx.comm has size
// 1). Every rank runs the same calls in the same order: Search, Execute,
// SearchSpace, MakeTrainer and the Trainer's methods are collective.
//
// Rules every technique follows, so that Saturn can swap techniques
// mid-training:
//   - Step s trains on the samples [s*B, (s+1)*B) of ctx.data (B the task's
//     batch size) and returns the mean loss over them (on every rank). The
//     gradient is the gradient of that mean, however the batch is split.
//   - Parameters start from ctx.model.BuildBlock (same values everywhere)
//     and are updated by ctx.optimizer with step number s + 1.
//   - Save/Load use the checkpoint's per-block format (checkpoint.h).
//   - Memory a technique keeps "off the device" is allocated inside a
//     HostMemoryScope (device.h), so that peak device memory means the same
//     on CPU devices as on GPUs.
//
// Adding a technique: write techniques/<name>.cc with a Technique subclass
// and a Make<Name>Technique() function, and register it in
// RegisterBuiltinTechniques (techniques/builtin.cc). Outside the tree, a
// plug-in does the same in a shared library (engine/plugin.h).
//
//   class Single final : public Technique {
//    public:
//     std::string_view Name() const override { return "single"; }
//     std::string_view Description() const override { return "one device"; }
//     Layout ProcessLayout() const override { return Layout::kOneProcess; }
//     std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs&) const override {
//       return std::make_unique<SingleTrainer>(ctx);
//     }
//   };
//
//   const Technique& t = BuiltinTechniques().Get("fsdp");
//   SearchResult found = t.Search(ctx, SearchOptions{.warmup = 1, .measure = 3});
//   if (found.feasible) t.Execute(ctx, found.knobs, ExecuteOptions{.to_step = 100, ...});
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry.h"
#include "engine/checkpoint.h"
#include "engine/comm.h"
#include "engine/data.h"
#include "engine/device.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/task.h"

namespace saturn::engine {

// A technique's tunable settings, as a JSON object ({"micro_batches": 4}).
using Knobs = nlohmann::json;

// Everything a technique trains with, on one rank.
struct TrainContext {
  const TaskSpec& task;
  const Model& model;
  const Dataset& data;
  const Optimizer& optimizer;
  const Device& device;
  Communicator& comm;
  int gpus = 1;  // devices the technique runs on

  // The step's samples: the task's batch, or a pack's members' still in
  // (PackRows::Leave; a step's samples are numbered by the whole pack's).
  int64_t BatchSize() const;
  // Loss terms in one global batch: the mean loss is the summed loss over this.
  int64_t LossItems() const { return BatchSize() * model.LossItemsPerSample(); }
  // `count` samples of step `step`, starting at sample `offset` of its batch,
  // placed on the device.
  Batch StepSamples(int64_t step, int64_t offset, int64_t count) const;
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  // Trains step `step` (see the rules above); returns its mean loss.
  virtual double Step(int64_t step) = 0;
  // Write / read this rank's blocks of a checkpoint.
  virtual void Save(CheckpointWriter& out) = 0;
  virtual void Load(const CheckpointReader& in) = 0;
  // Technique-specific measurements (e.g. pipeline bubble), for reports.
  virtual nlohmann::json Stats() const { return nlohmann::json::object(); }
};

struct SearchOptions {
  int warmup = 2;   // steps run before measuring
  int measure = 5;  // steps measured
  // Where to time one checkpoint write (removed afterwards, visible to every
  // rank); empty: not timed.
  std::string checkpoint_probe_dir;
};

struct SearchResult {
  bool feasible = false;
  std::string reason;  // why not, when infeasible
  Knobs knobs = Knobs::object();
  double step_s = 0.0;  // median of the measured steps
  std::vector<double> step_samples_s;
  std::vector<double> warmup_samples_s;    // the warm-up steps (first-step costs)
  std::vector<int64_t> peak_memory_bytes;  // per device (rank order)
  std::vector<int64_t> resident_bytes;     // per device, between steps
  double setup_s = 0.0;                    // building the trainer of the chosen setting
  double checkpoint_s = 0.0;               // one checkpoint write (the first setting that fits)
  nlohmann::json stats = nlohmann::json::object();
  // Every setting tried: {"knobs", "step_s", "stats"} or {"knobs", "reason"}.
  nlohmann::json candidates = nlohmann::json::array();
  // An analytic estimate (Technique::Estimate), not a measurement: what it
  // assumed ("analytic: 989 TFLOP/s x 0.40, links 450 GB/s"); "" when measured.
  std::string estimated;
};

// How fast a device the estimate is for (engine/estimate.h).
struct DeviceRate {
  double peak_flops = 0.0;    // dense FLOP/s of one device at the task's precision; 0: unknown
  double efficiency = 0.40;   // the share of it a training step sustains
  double link_bytes_s = 0.0;  // bytes/s between two devices of a node, one way; 0: unknown
};

// What an analytic estimate knows: the task and model, and the devices it
// would run on (no device, data or process group is made).
struct EstimateContext {
  const TaskSpec& task;
  const Model& model;
  const Optimizer& optimizer;
  int gpus = 1;
  int64_t capacity_bytes = 0;  // of each device; 0: unlimited
  DeviceRate rate;
};

// One evaluation on held-out data (engine/eval.h).
struct EvalResult {
  double loss = 0.0;       // mean over the held-out batches, as training's loss
  double accuracy = -1.0;  // cross-entropy models: share of argmax hits; < 0: none
  // The standard error of `loss` over the held-out batches (their losses'
  // sample standard deviation / sqrt(batches)); < 0 with one batch.
  double loss_se = -1.0;
  double accuracy_se = -1.0;  // the accuracy's, likewise (cross-entropy models)
  double seconds = 0.0;       // what it took, reading (and, in Execute, writing) the model included
};

struct ExecuteOptions {
  int64_t from_step = 0;  // > 0: resume from the checkpoint of that step
  int64_t to_step = 0;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;  // 0: only at the end
  // Retention: after each checkpoint, rank 0 removes all but the newest
  // `keep_checkpoints` at or below it (protocol/checkpoint_files.h); 0 keeps all.
  int keep_checkpoints = 0;
  // Set (e.g. by SIGTERM) to stop after the current step with a checkpoint.
  const std::atomic<bool>* stop = nullptr;
  // Also stops after step `steps_done` - 1 (with a checkpoint, as `stop`)
  // where it answers true, asked after on_step (the same answer on every
  // rank): a pack whose members left could not go on (worker/pack_job.h).
  std::function<bool(int64_t steps_done)> end_after;
  // Called on every rank after each step.
  std::function<void(int64_t step, double loss, double step_s)> on_step;
  // Evaluation (task.eval): after every `eval_every` steps and after the
  // last step, rank 0 evaluates the model of a checkpoint (the regular one
  // when the step writes one, else one written for it into
  // `checkpoint_dir`.eval and removed) on `eval_data` (held-out samples,
  // needed on rank 0 only) and passes the result to `on_eval` (rank 0). 0:
  // no evaluation.
  int64_t eval_every = 0;
  // Which steps evaluate, where not every eval_every-th (the same answer on
  // every rank); the last step evaluates whenever eval_every > 0.
  std::function<bool(int64_t steps_done)> eval_when;
  int64_t eval_batches = 1;
  const Dataset* eval_data = nullptr;
  // `checkpoint`: the folder whose model was evaluated (it may be removed
  // once on_eval returns): e.g. to keep the best model (protocol/best_model.h).
  std::function<void(int64_t steps_done, const EvalResult& result, const std::string& checkpoint)>
      on_eval;
  // Instead of evaluating `eval_data` (which is then null): rank 0 gets the
  // checkpoint to evaluate, at the same steps, and evaluates it itself (a
  // pack's members, each on its own held-out data: worker/pack_job.h).
  std::function<void(int64_t steps_done, const std::string& checkpoint)> on_eval_checkpoint;
  // Called on rank 0 once each periodic checkpoint is complete (not the
  // last one, which the result names): a pack's worker writes its members'
  // own checkpoints from it, so a crash loses no more of a member's steps
  // than of a task alone's.
  std::function<void(int64_t step, const std::string& checkpoint)> on_checkpoint;
};

struct ExecuteResult {
  int64_t completed_steps = 0;
  double final_loss = 0.0;
  bool preempted = false;
  std::string checkpoint;
  std::vector<int64_t> peak_memory_bytes;
  std::vector<int64_t> resident_bytes;
  nlohmann::json stats = nlohmann::json::object();
};

class Technique {
 public:
  enum class Layout { kOneProcess, kRankPerDevice };

  virtual ~Technique() = default;
  virtual std::string_view Name() const = 0;
  virtual std::string_view Description() const = 0;
  virtual Layout ProcessLayout() const = 0;
  // Traits the orchestrators plan with (reported by `saturn-worker
  // techniques`, so technique knowledge lives here only): the device counts
  // the technique can run on (MaxGpus 0: no upper bound; a one-process
  // technique runs on exactly one), and whether it splits each batch across
  // its devices (then every device needs at least one sample).
  virtual int MinGpus() const { return 1; }
  virtual int MaxGpus() const { return ProcessLayout() == Layout::kOneProcess ? 1 : 0; }
  virtual bool SplitsBatch() const { return false; }
  // Whether it trains a pack (engine/pack.h): true for the techniques that
  // only see a step's samples through TrainContext::StepSamples, in slices
  // that each go through the whole model before the next is fetched.
  virtual bool TakesPacks() const { return false; }

  // Why the technique cannot train `task` on `gpus` devices at all ("needs at
  // least 2 devices"), or "" when it can. Called before any process starts.
  virtual std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const;
  // The knob settings Search measures; the fastest that fits wins.
  virtual std::vector<Knobs> SearchSpace(TrainContext& ctx) const;
  // Settings that trade speed for memory (activation checkpointing,
  // gradient accumulation: blocks.h's MemorySavers), which Search measures
  // only when no setting of SearchSpace fits, skipping any that saves more
  // of both than one that fits. Default: none.
  virtual std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const;
  // Bytes each device needs whatever happens (parameters, gradients,
  // optimizer state), when cheap to know: Search skips settings that cannot
  // fit without building anything.
  virtual std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                                      const Knobs& knobs) const;
  virtual std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const = 0;

  virtual SearchResult Search(TrainContext& ctx, const SearchOptions& options) const;
  // Search's answer without running anything (engine/estimate.h): the knob
  // setting Search would pick, its step time on devices of `ctx.rate` and
  // every device's peak memory, from the model's shape alone; infeasible
  // with the reason when even the setting that saves the most memory does
  // not fit. Filled in even when infeasible: peak_memory_bytes of that
  // setting. Default: infeasible, "no analytic model for <technique>".
  virtual SearchResult Estimate(const EstimateContext& ctx) const;
  // Throws OutOfMemoryError when a device goes over its capacity.
  virtual ExecuteResult Execute(TrainContext& ctx, const Knobs& knobs,
                                const ExecuteOptions& options) const;
};

class TechniqueRegistry : public Registry<Technique> {
 public:
  TechniqueRegistry() : Registry("technique", "--technique") {}
};

void RegisterBuiltinTechniques(TechniqueRegistry& registry);
// Only the built-in techniques.
const TechniqueRegistry& BuiltinTechniques();
// The techniques of this process: the built-ins, then those of the plug-ins
// loaded into it (engine/plugin.h).
TechniqueRegistry& Techniques();

}  // namespace saturn::engine
