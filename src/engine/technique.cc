// The default search and execute of the template, and the registry.
#include "engine/technique.h"
#include "common/clock.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "engine/blocks.h"
#include "engine/errors.h"
#include "engine/eval.h"
#include "engine/pack.h"
#include "engine/phases.h"
#include "protocol/checkpoint_files.h"

namespace saturn::engine {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// "out of memory: needs 3.10 GiB per device, has 2.00 GiB (rank 1's peak)"
std::string OverCapacityReason(const std::vector<int64_t>& peaks, int64_t capacity) {
  size_t worst = std::max_element(peaks.begin(), peaks.end()) - peaks.begin();
  return "out of memory: needs " + FormatBytes(peaks[worst]) + " per device, has " +
         FormatBytes(capacity) + " (rank " + std::to_string(worst) + "'s peak)";
}

// One small collective per step: did any rank ask to stop, is any rank over
// its capacity? Every rank gets the same answer, so all leave together.
struct StepVerdict {
  bool stop = false;
  bool over_capacity = false;
};

StepVerdict AgreeAfterStep(TrainContext& ctx, bool stop_requested) {
  at::Tensor flags = at::tensor({stop_requested ? 1.0 : 0.0, ctx.device.OverCapacity() ? 1.0 : 0.0},
                                ctx.comm.ScalarOptions().dtype(at::kDouble));
  ctx.comm.AllReduceMax(flags);
  flags = flags.cpu();
  return {flags[0].item<double>() > 0, flags[1].item<double>() > 0};
}

double TimedStep(TrainContext& ctx, Trainer& trainer, int64_t step, double* loss) {
  double start = MonotonicSeconds();
  *loss = trainer.Step(step);
  ctx.device.Synchronize();
  return MonotonicSeconds() - start;
}

// One step with its phases recorded (phases.h). On a CUDA device the
// recorder synchronises at every phase change, which costs overlap, so
// there the phases come from an extra step that is not timed as a sample.
PhaseTimes RecordedStep(TrainContext& ctx, Trainer& trainer, int64_t step, double* seconds) {
  PhaseRecorder& recorder = PhaseRecorder::Get();
  const Device& device = ctx.device;
  recorder.BeginStep(device.IsCuda() ? std::function<void()>([&device] { device.Synchronize(); })
                                     : std::function<void()>());
  double loss = 0.0;
  *seconds = TimedStep(ctx, trainer, step, &loss);
  return recorder.EndStep();
}

// Mean seconds per phase over `steps`: {"data": s, "forward": s, ...}.
nlohmann::json PhasesJson(const std::vector<PhaseTimes>& steps) {
  nlohmann::json out = nlohmann::json::object();
  if (steps.empty()) return out;
  for (int p = 0; p < kPhaseCount; ++p) {
    double sum = 0.0;
    for (const PhaseTimes& t : steps)
      sum += t.seconds[p];
    out[PhaseName(static_cast<Phase>(p))] = sum / static_cast<double>(steps.size());
  }
  return out;
}

}  // namespace

int64_t TrainContext::BatchSize() const {
  const PackRows* rows = task.pack.empty() ? nullptr : ActivePackRows();
  return rows ? rows->BatchSize() : task.batch_size;
}

Batch TrainContext::StepSamples(int64_t step, int64_t offset, int64_t count) const {
  PhaseScope phase(Phase::kData);
  Batch batch = data.Samples(step * task.batch_size + offset, count);
  return {device.Place(batch.inputs), device.Place(batch.targets)};
}

std::string Technique::Unsupported(const TaskSpec& task, const Model&, int gpus) const {
  if (ProcessLayout() == Layout::kOneProcess && gpus != 1) {
    return std::string(Name()) + " runs on exactly 1 device, not " + std::to_string(gpus);
  }
  if (task.batch_size < gpus && ProcessLayout() == Layout::kRankPerDevice) {
    return "batch_size " + std::to_string(task.batch_size) + " is smaller than the " +
           std::to_string(gpus) + " devices";
  }
  return "";
}

std::vector<Knobs> Technique::SearchSpace(TrainContext&) const {
  return {Knobs::object()};
}

SearchResult Technique::Estimate(const EstimateContext&) const {
  SearchResult result;
  result.reason = "no analytic model for " + std::string(Name());
  return result;
}

std::optional<int64_t> Technique::StaticBytesPerDevice(const TrainContext&, const Knobs&) const {
  return std::nullopt;
}

namespace {

CheckpointMeta MetaAt(const TrainContext& ctx, std::string_view technique, int64_t step,
                      double loss) {
  CheckpointMeta meta;
  meta.step = step;
  meta.data_cursor = step * ctx.task.batch_size;
  meta.batch_size = ctx.task.batch_size;
  meta.seed = ctx.task.seed;
  meta.model = ctx.task.model;
  meta.finetune = ctx.task.finetune;
  meta.optimizer = ctx.task.optimizer.type;
  meta.blocks = ctx.model.NumBlocks();
  meta.loss = loss;
  meta.technique = std::string(technique);
  meta.gpus = ctx.gpus;
  meta.base = FrozenBaseOf(ctx.model, ctx.task.seed);
  return meta;
}

// Seconds to write and remove one checkpoint of `trainer`, as Execute does
// (collective; every rank returns the same time).
double TimeCheckpoint(TrainContext& ctx, std::string_view technique, Trainer& trainer,
                      const std::string& dir) {
  ctx.comm.Barrier();
  double start = MonotonicSeconds();
  {
    CheckpointWriter out(dir, 0, ctx.comm);
    trainer.Save(out);
    out.Commit(MetaAt(ctx, technique, 0, 0.0));
  }
  double seconds = MonotonicSeconds() - start;
  at::Tensor slowest = at::tensor({seconds}, ctx.comm.ScalarOptions().dtype(at::kDouble));
  ctx.comm.AllReduceMax(slowest);  // every rank has committed by now
  if (ctx.comm.Rank() == 0) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  return slowest.cpu().item<double>();
}

// Loads the checkpoint of options.from_step into `trainer` (InputError if
// it is damaged or of another task); its loss.
double Resume(TrainContext& ctx, const ExecuteOptions& options, Trainer& trainer) {
  std::string path = CheckpointPath(options.checkpoint_dir, options.from_step);
  CheckpointReader in(path);
  const CheckpointMeta& meta = in.Meta();
  auto mismatch = [&](const std::string& what) {
    throw InputError(path, 0, what, "the checkpoint was written for a different task");
  };
  if (meta.model != ctx.task.model) mismatch("model");
  if (meta.finetune != ctx.task.finetune) mismatch("finetune");
  if (meta.optimizer != ctx.task.optimizer.type) mismatch("optimizer");
  if (meta.batch_size != ctx.task.batch_size) mismatch("batch_size");
  if (meta.step != options.from_step || meta.blocks != ctx.model.NumBlocks()) mismatch("step");
  // A LoRA checkpoint's frozen base comes from the task's init again (the
  // trainer built it), so it must be the base the adapters were trained on.
  CheckFrozenBase(in, ctx.model, ctx.task.seed);
  trainer.Load(in);
  in.RestoreRng();
  return meta.loss;
}

}  // namespace

std::vector<Knobs> Technique::MemorySavingSpace(TrainContext&) const {
  return {};
}

namespace {

// Whether setting `a` is `b` with at least as much checkpointing,
// accumulation (MemorySavers) and offload (fsdp's), every other knob the
// same.
bool SavesAtLeast(const Knobs& a, const Knobs& b) {
  auto others = [](Knobs knobs) {
    knobs.erase("checkpointing");
    knobs.erase("accumulation");
    knobs.erase("offload");
    return knobs;
  };
  if (others(a) != others(b)) return false;
  return KnobBool(a, "checkpointing", false) >= KnobBool(b, "checkpointing", false) &&
         KnobInt(a, "accumulation", 1, 1) >= KnobInt(b, "accumulation", 1, 1) &&
         KnobBool(a, "offload", false) >= KnobBool(b, "offload", false);
}

// What the steps of one setting measured.
struct Measurement {
  std::vector<double> samples, warmup;
  std::vector<PhaseTimes> phases;
  bool over = false;
  std::string hard_limit_error;  // past the hard limit (alone on a device)
  double setup_s = 0.0;
};

// Builds `knobs`' trainer into `trainer` and runs the warm-up and measured
// steps (collective). A trainer that went past the hard limit is reset.
Measurement RunSteps(const Technique& technique, TrainContext& ctx, const SearchOptions& options,
                     const Knobs& knobs, std::unique_ptr<Trainer>& trainer) {
  Measurement m;
  try {
    double built = MonotonicSeconds();
    trainer = technique.MakeTrainer(ctx, knobs);
    m.setup_s = MonotonicSeconds() - built;
    bool record_in_samples = !ctx.device.IsCuda();
    for (int i = 0; i < options.warmup + options.measure && !m.over; ++i) {
      double seconds = 0.0;
      if (i >= options.warmup && record_in_samples) {
        m.phases.push_back(RecordedStep(ctx, *trainer, i, &seconds));
      } else {
        double loss = 0.0;
        seconds = TimedStep(ctx, *trainer, i, &loss);
      }
      m.over = AgreeAfterStep(ctx, false).over_capacity;
      (i >= options.warmup ? m.samples : m.warmup).push_back(seconds);
    }
    if (!m.over && !record_in_samples) {
      double seconds = 0.0;
      m.phases.push_back(RecordedStep(ctx, *trainer, options.warmup + options.measure, &seconds));
      m.over = AgreeAfterStep(ctx, false).over_capacity;
    }
  } catch (const std::exception& e) {
    // Past the hard limit. Alone, we can go on with the next setting; in a
    // group the others are stuck in a collective, so the rank must fail.
    if (!IsOutOfMemory(e) || ctx.comm.Size() > 1) throw;
    trainer.reset();
    m.over = true;
    m.hard_limit_error = ErrorText(e);
  }
  return m;
}

// The default search's state across the settings it measures: the result
// so far and the infeasible setting that came closest to fitting.
class SearchRun {
 public:
  SearchRun(const Technique& technique, TrainContext& ctx, const SearchOptions& options,
            SearchResult& result)
      : technique_(technique),
        ctx_(ctx),
        options_(options),
        result_(result),
        capacity_(ctx.device.CapacityBytes()) {}

  // Measures one setting into the result; whether it fits.
  bool Measure(const Knobs& knobs) {
    if (RefusedStatically(knobs)) return false;
    ctx_.device.ResetPeak();
    std::unique_ptr<Trainer> trainer;
    Measurement m = RunSteps(technique_, ctx_, options_, knobs, trainer);
    std::vector<int64_t> peaks = ctx_.comm.Gather(ctx_.device.PeakBytes());
    std::vector<int64_t> resident = ctx_.comm.Gather(ctx_.device.LiveBytes());
    nlohmann::json stats = trainer ? trainer->Stats() : nlohmann::json::object();
    if (!m.phases.empty()) stats["phases"] = PhasesJson(m.phases);
    if (m.over) {
      trainer.reset();
      std::string reason =
          m.hard_limit_error.empty() ? OverCapacityReason(peaks, capacity_) : m.hard_limit_error;
      Refuse(knobs, reason, *std::max_element(peaks.begin(), peaks.end()));
      return false;
    }
    double step_s = Median(m.samples);
    if (!options_.checkpoint_probe_dir.empty() && !timed_checkpoint_) {
      result_.checkpoint_s =
          TimeCheckpoint(ctx_, technique_.Name(), *trainer, options_.checkpoint_probe_dir);
      timed_checkpoint_ = true;
    }
    trainer.reset();
    result_.candidates.push_back(
        {{"knobs", knobs}, {"step_s", step_s}, {"setup_s", m.setup_s}, {"stats", stats}});
    if (!result_.feasible || step_s < result_.step_s) {
      result_.feasible = true;
      result_.knobs = knobs;
      result_.step_s = step_s;
      result_.step_samples_s = m.samples;
      result_.warmup_samples_s = m.warmup;
      result_.peak_memory_bytes = peaks;
      result_.resident_bytes = resident;
      result_.setup_s = m.setup_s;
      result_.stats = stats;
    }
    return true;
  }

  // Why nothing fitted: the reason of the setting closest to fitting.
  const std::string& ClosestReason() const { return closest_reason_; }

 private:
  // Whether parameters, gradients and optimizer state alone exceed the
  // capacity (nothing is built then); such a setting is refused.
  bool RefusedStatically(const Knobs& knobs) {
    std::optional<int64_t> needed = technique_.StaticBytesPerDevice(ctx_, knobs);
    if (capacity_ <= 0 || !needed || *needed <= capacity_) return false;
    Refuse(knobs,
           "out of memory: needs " + FormatBytes(*needed) + " per device, has " +
               FormatBytes(capacity_) + " (parameters, gradients and optimizer state alone)",
           *needed);
    return true;
  }

  void Refuse(const Knobs& knobs, const std::string& reason, int64_t peak) {
    result_.candidates.push_back({{"knobs", knobs}, {"reason", reason}});
    if (peak < closest_peak_) closest_peak_ = peak, closest_reason_ = reason;
  }

  const Technique& technique_;
  TrainContext& ctx_;
  const SearchOptions& options_;
  SearchResult& result_;
  const int64_t capacity_;
  std::string closest_reason_;
  int64_t closest_peak_ = INT64_MAX;
  bool timed_checkpoint_ = false;
};

}  // namespace

SearchResult Technique::Search(TrainContext& ctx, const SearchOptions& options) const {
  SearchResult result;
  result.reason = Unsupported(ctx.task, ctx.model, ctx.gpus);
  if (!result.reason.empty()) return result;
  SearchRun run(*this, ctx, options, result);
  for (const Knobs& knobs : SearchSpace(ctx))
    run.Measure(knobs);
  // Memory savers only where memory calls for them, and none that saves
  // more of both kinds than one that fits (it would only be slower).
  if (!result.feasible) {
    std::vector<Knobs> fitting;
    for (const Knobs& knobs : MemorySavingSpace(ctx)) {
      bool dominated = std::any_of(fitting.begin(), fitting.end(),
                                   [&](const Knobs& fits) { return SavesAtLeast(knobs, fits); });
      if (!dominated && run.Measure(knobs)) fitting.push_back(knobs);
    }
  }
  if (!result.feasible) result.reason = run.ClosestReason();
  return result;
}

ExecuteResult Technique::Execute(TrainContext& ctx, const Knobs& knobs,
                                 const ExecuteOptions& options) const {
  std::string unsupported = Unsupported(ctx.task, ctx.model, ctx.gpus);
  if (!unsupported.empty()) throw InputError("", 0, "--technique", unsupported);
  std::unique_ptr<Trainer> trainer = MakeTrainer(ctx, knobs);
  ExecuteResult result;
  result.completed_steps = options.from_step;
  if (options.from_step > 0) result.final_loss = Resume(ctx, options, *trainer);
  auto save_into = [&](const std::string& dir, int64_t step) {
    CheckpointWriter out(dir, step, ctx.comm);
    trainer->Save(out);
    return out.Commit(MetaAt(ctx, Name(), step, result.final_loss));
  };
  // A checkpoint is complete and verified once Commit returns: only then
  // may older ones go.
  auto save = [&](int64_t step) {
    std::string path = save_into(options.checkpoint_dir, step);
    if (ctx.comm.Rank() == 0)
      PruneCheckpoints(options.checkpoint_dir, step, options.keep_checkpoints);
    return path;
  };
  // Collective: rank 0 evaluates the model of `checkpoint` (or of one
  // written for it: its time counts in the result's seconds) while the
  // others wait.
  auto evaluate = [&](int64_t step, std::string checkpoint) {
    std::string scratch = options.checkpoint_dir + ".eval";
    bool own = checkpoint.empty();
    double start = MonotonicSeconds();
    if (own) checkpoint = save_into(scratch, step);
    if (ctx.comm.Rank() == 0 && options.eval_data != nullptr) {
      EvalResult r = Evaluate(ctx, *options.eval_data, options.eval_batches,
                              CheckpointParams(checkpoint, ctx.model));
      r.seconds = MonotonicSeconds() - start;
      if (options.on_eval) options.on_eval(step, r, checkpoint);
    } else if (ctx.comm.Rank() == 0 && options.on_eval_checkpoint) {
      options.on_eval_checkpoint(step, checkpoint);
    }
    ctx.comm.Barrier();
    if (own && ctx.comm.Rank() == 0) {
      std::error_code ec;
      std::filesystem::remove_all(scratch, ec);
    }
  };
  auto eval_due = [&](int64_t steps_done) {
    if (options.eval_every <= 0) return false;
    return options.eval_when ? options.eval_when(steps_done) : steps_done % options.eval_every == 0;
  };
  ctx.device.ResetPeak();
  bool ended_after = false;  // end_after ended it (not a stop request)
  for (int64_t step = options.from_step; step < options.to_step; ++step) {
    double loss = 0.0;
    double seconds = TimedStep(ctx, *trainer, step, &loss);
    bool stop_requested = options.stop != nullptr && options.stop->load();
    StepVerdict verdict = AgreeAfterStep(ctx, stop_requested);
    if (verdict.over_capacity) {
      std::vector<int64_t> peaks = ctx.comm.Gather(ctx.device.PeakBytes());
      throw OutOfMemoryError(OverCapacityReason(peaks, ctx.device.CapacityBytes()) + " at step " +
                             std::to_string(step));
    }
    result.completed_steps = step + 1;
    result.final_loss = loss;
    if (options.on_step) options.on_step(step, loss, seconds);
    if (verdict.stop || (options.end_after && options.end_after(step + 1))) {
      result.preempted = true;
      ended_after = !verdict.stop;
      break;
    }
    std::string saved;
    if (options.checkpoint_every > 0 && result.completed_steps % options.checkpoint_every == 0 &&
        result.completed_steps < options.to_step) {
      saved = save(result.completed_steps);
      if (options.on_checkpoint && ctx.comm.Rank() == 0)
        options.on_checkpoint(result.completed_steps, saved);
    }
    if (eval_due(result.completed_steps) && result.completed_steps < options.to_step) {
      evaluate(result.completed_steps, saved);
    }
  }
  result.resident_bytes = ctx.comm.Gather(ctx.device.LiveBytes());
  // Nothing trained (a retry after the last checkpoint, e.g. of a worker
  // that died writing the model): the checkpoint read is the result.
  bool nothing_new = options.from_step > 0 && result.completed_steps == options.from_step;
  result.checkpoint = nothing_new ? CheckpointPath(options.checkpoint_dir, options.from_step)
                                  : save(result.completed_steps);
  // The last step is always evaluated (on the final checkpoint), so every
  // task that evaluates ends with its final evaluation loss.
  if (options.eval_every > 0 && !result.preempted && result.completed_steps == options.to_step &&
      result.completed_steps > options.from_step) {
    evaluate(result.completed_steps, result.checkpoint);
  }
  // Ended by end_after (a pack whose members still in cannot go on: the
  // rest start again from this checkpoint, and would not evaluate this
  // step): what is due here is evaluated, e.g. a member's final one.
  if (ended_after && eval_due(result.completed_steps)) {
    evaluate(result.completed_steps, result.checkpoint);
  }
  result.peak_memory_bytes = ctx.comm.Gather(ctx.device.PeakBytes());
  result.stats = trainer->Stats();
  return result;
}

const TechniqueRegistry& BuiltinTechniques() {
  static const TechniqueRegistry* registry = [] {
    auto* r = new TechniqueRegistry;
    RegisterBuiltinTechniques(*r);
    return r;
  }();
  return *registry;
}

TechniqueRegistry& Techniques() {
  static TechniqueRegistry* registry = [] {
    auto* r = new TechniqueRegistry;
    RegisterBuiltinTechniques(*r);
    return r;
  }();
  return *registry;
}

}  // namespace saturn::engine
