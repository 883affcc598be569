// The trial runner: from a workload to the planner's profile table.
//
// For every distinct trial — tasks that differ only in learning rate or seed
// share one — x technique x GPU count, the profiler runs the technique's
// search in a worker process (docs/worker.md) with a timeout, unless the
// profile cache already holds its result. A crash, an out-of-memory or a
// timeout marks that configuration infeasible with its reason; it never stops
// the profiler. A task's runtime in a configuration is the measured step time
// (StepEstimate: the mean over 10 steps after warm-up, gross outliers
// dropped) times its total steps, plus the warm-up steps' extra time
// (StartCost), plus what a launch costs besides its steps: starting the
// worker and building the trainer, and the checkpoints an uninterrupted run
// writes (RuntimeEstimate).
//
// Trials run one at a time by default: on CPU devices every trial shares the
// same cores, and measured step times inflate when trials overlap
// (bench/profiler measures by how much).
//
//   ProfilerOptions opt; opt.cache_path = "profiles.sqlite";
//   ProfileRun run = RunProfiler(workload, opt);
//   WriteFileAtomic("profile.csv", ProfileToCsv(run.table));
//   std::fputs(ProfileSummary(workload, run).c_str(), stderr);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/defaults.h"
#include "contracts/profile.h"
#include "contracts/workload.h"
#include "launch/backend.h"
#include "launch/worker.h"

namespace saturn {

// Where trials run while tasks train (tasks that arrive during a run): the
// devices no task holds, lent one trial at a time. Without it a trial uses
// devices 0..gpus-1 of whichever node the backend picks.
class TrialDevices {
 public:
  virtual ~TrialDevices() = default;
  struct Lease {
    std::string node;
    std::vector<int> gpu_ids;
  };
  // `gpus` devices of one node of `gpu_type` that no task holds, held until
  // Release; nullopt while there are none (asked again a moment later).
  virtual std::optional<Lease> Acquire(int gpus, const std::string& gpu_type) = 0;
  virtual void Release(const Lease& lease) = 0;
};

struct ProfilerOptions {
  std::string worker;      // saturn-worker; "" = FindWorkerBinary()
  std::string cache_path;  // "" = ProfileCache::DefaultPath()
  bool use_cache = true;
  bool refresh = false;                               // re-measure and overwrite cached trials
  double trial_timeout_s = defaults::kTrialTimeoutS;  // wall seconds per trial
  int warmup = kDefaultWarmupSteps;                   // steps before measuring (worker_request.h)
  int measure = kDefaultMeasureSteps;                 // steps measured (worker_request.h)
  int parallel = 1;                                   // trials at once
  std::string work_dir;                               // trial files; "" = a fresh temporary folder
  LaunchBackend* backend = nullptr;                   // nullptr = local
  bool progress = true;
  // Where trial ages (timeouts) and the profiling wall time are read;
  // nullptr = the steady wall clock. Tests drive it by hand.
  const Clock* clock = nullptr;
  TrialDevices* devices = nullptr;  // nullptr = any devices
  // The executor's checkpoint interval (steps; 0: its default, a tenth of the
  // task): runtimes include the checkpoints a run writes.
  long checkpoint_every = 0;
  // Mixed clusters (`--types estimate`): measure every configuration on one
  // type only (the reference: the type with the largest node, then the most
  // device memory, then the first named) and one configuration per task on
  // each other type, and scale the
  // rest by that measured ratio of step times. A configuration is measured
  // instead where the scale cannot say: one whose measured peak memory does
  // not fit the other type's devices, or more GPUs than the reference's
  // nodes have. Estimated rows say so in the profile (`estimated_from`).
  bool estimate_types = false;
  // Analytic estimates (engine/estimate.h) instead of trials: "auto" where a
  // trial cannot run on this machine (its devices would need more memory
  // than it has), "always" (`--estimate`) for every trial. Estimated rows
  // say so in the profile (`estimated_from`: "analytic: ...").
  std::string estimate = "auto";
  // Measure packs of the tasks that may share a base (profiler/pack_trials.h)
  // and write the profile's pack columns: `saturn profile` (not --no-pack).
  bool packs = false;
};

// The step time a task's runtime is extrapolated from: the mean of the
// measured steps, leaving out gross outliers (over 3x the median: a one-off
// stall), since a long run pays for its ordinary slow steps too. `fallback`
// (the worker's own figure) when there are no samples.
double StepEstimate(const std::vector<double>& samples, double fallback);
// How far StepEstimate's mean may be off by chance: the standard error of
// the samples it keeps (their standard deviation over the square root of
// their number); 0 with fewer than two.
double StepStandardError(const std::vector<double>& samples);

// What a fresh start costs beyond steady steps: the warm-up steps' time over
// as many steady steps (first-step allocations, lazy initialisation). Every
// launch of a task pays it, so a short task's runtime is not just steps x
// step time.
double StartCost(const WorkerSearchResult& r);
// A task's runtime in a configuration, as one uninterrupted launch:
// steps x step_s + StartCost + launch_s + checkpoint_s x the checkpoints it
// writes with `checkpoint_every` (CheckpointWrites).
double RuntimeEstimate(const WorkerSearchResult& r, long steps, long checkpoint_every);

// Evaluation on held-out data is planned like training: a task that
// evaluates every E steps has step time step_s + eval_s / E, eval_s being
// one evaluation as the worker timed it in the search (evaluating, and
// writing the checkpoint it reads). EvalEvery: the task's E, 0 if none.
long EvalEvery(const WorkloadTask& task);
double StepWithEvaluation(const WorkerSearchResult& r, long eval_every);

struct Trial {
  std::string trial_key;
  std::string technique;
  int gpus = 1;
  std::string device_kind;
  double memory_gib = 0.0;
  int threads = 1;
  // The GPU type it measures (mixed clusters; "" for a cluster's one unnamed
  // type) and a node of that type to run it on.
  std::string gpu_type;
  std::string node;
  // That node's device speed at fp32 and bf16 (NodeSpeed), for estimates.
  std::optional<DeviceSpeed> speed_fp32, speed_bf16;
  std::string example_task;  // a task that uses this trial (for messages)
  // Outcome.
  WorkerSearchResult result;
  double step_se_s = 0.0;  // StepStandardError of the measured steps
  // Not measured but estimated (ProfilerOptions::estimate_types): from
  // what, as the profile's `estimated_from` column says it ("x0.500 of slow
  // (single x1 measured on both)"); "" when measured.
  std::string estimated_from;
  bool cached = false;
  bool transient = false;  // crash or timeout: not cached, tried again next time
  double wall_s = 0.0;
  // A table class's arrays, measured in the process of its first task's own
  // trial after the task (saturn-worker search --pack-sizes): that trial's
  // riders, ascending: (members, trial index). A rider is not run itself:
  // it has the index of the trial that carries it.
  std::vector<std::pair<int, int>> riders;
  int carried_by = -1;
};

// How long a trial may run before it is killed: the options' limit, once
// for the trial and once for each of its riders.
double TrialTimeout(const Trial& t, const ProfilerOptions& o);

// Measurement noise (docs/contracts.md, Contract 2): a task's configuration
// is left out of the table when it measured faster than a simpler one of
// the task that is kept — fewer GPUs, or as many with a technique listed
// before it — but by no more than the noise: twice the standard error of
// the difference of their runtimes (steps x StepStandardError of each,
// combined), about a 95% test, plus what it gains in fixed costs (start-up,
// launch, checkpoints, evaluation: each measured once, so their spread is
// noise too). So a configuration stays only if its steps, what the
// technique changes, are faster beyond the noise as well as its whole
// runtime. A technique is simpler than another when the
// worker lists it first (single, ddp, fsdp, pipeline, spill, tp, tp-ddp, pipeline-tp, then
// plug-ins); a command task's templates, in the order written. A planner
// fed the table never picks the complex configuration for noise.
struct WithinNoise {
  int task = 0;         // index into the workload's tasks
  int trial = 0;        // the configuration left out (index into trials)
  int kept = 0;         // the simpler one that stays, faster but for noise
  double margin_s = 0;  // the noise, in runtime seconds
};

// Which of one task's feasible configurations to leave out. Each entry:
// the trial, its GPU count, its technique's rank (lower is simpler), its
// runtime, that runtime's standard error and the part of the runtime that
// is not steps x step time. Returns {trial, kept trial, margin} per
// configuration left out (`task` unset).
struct Measured {
  int trial = 0;
  int gpus = 1;
  int rank = 0;
  double runtime_s = 0;
  double se_s = 0;
  double fixed_s = 0;
};
std::vector<WithinNoise> LeaveOutWithinNoise(std::vector<Measured> configs);

struct ProfileRun {
  ProfileTable table;
  std::vector<Trial> trials;
  // For each workload task, the indices of its trials.
  std::vector<std::vector<int>> task_trials;
  int cache_hits = 0;
  int trials_run = 0;
  int estimated = 0;  // trials scaled from another type, not run
  int analytic = 0;   // trials estimated analytically (ProfilerOptions::estimate), not run
  double wall_s = 0.0;
  long checkpoint_every = 0;              // the options' (runtimes count its checkpoints)
  std::vector<WithinNoise> within_noise;  // configurations left out of the table
  // The packs measured (ProfilerOptions::packs), a few lines for the
  // summary; "" when none.
  std::string pack_summary;
};

// Throws InputError if a task has no feasible configuration at all (naming
// the task and each configuration's reason), nothing is written then.
ProfileRun RunProfiler(const Workload& workload, const ProfilerOptions& options);

// Per task: the best technique at each GPU count, the configurations left
// out as within noise of a simpler one ("1 GPU: spill within noise of
// single (1m15s vs 1m16s, noise 2.8s): single kept") and why the others
// failed.
std::string ProfileSummary(const Workload& workload, const ProfileRun& run);

}  // namespace saturn
