// `saturn run`: profile (through the cache), plan, train every task on its
// planned devices in plan order, re-plan while training, and leave trained
// models and a report in the run directory.
//
// Workers start as soon as all their planned devices are free and they are
// next on each (plan_dispatch); no device ever runs two tasks. Every
// `interval_s` the executor re-solves for the remaining work in a background
// thread while training goes on (replan/replan.h) and switches when the new
// plan finishes sooner by more than the threshold: only the tasks whose
// assignment changes are pre-empted (SIGTERM: the worker checkpoints model,
// optimizer state and data cursor, then exits) and resumed under their new
// technique and GPU count. A worker that fails is retried from its last
// checkpoint up to `max_retries` times, then marked failed; the others go on.
// All state is in the run directory (run_state.h), so `--resume` continues a
// run whose orchestrator was killed. SIGTERM or Ctrl-C stops it gracefully:
// every worker checkpoints first.
//
// The run clock and every interval, grace and time stamp are read from an
// injected Clock (a SteadyClock by default).
//
// The parts, one job each: run_setup.h (set-up and resume), run_loop.h (the
// loop, shared with saturn serve), dispatcher.h (dispatch and jobs),
// placements.h (where tasks run, who holds each device), replanner.h (the
// re-planning thread), progress.h (progress, summary and report input),
// sharing run_context.h; contracts/event_kinds.h builds the event log's events.
//
//   RunOptions o; o.workload_path = "examples/quickstart/workload.yaml";
//   RunSummary s = RunWorkload(o);   // InputError on bad input
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/defaults.h"
#include "planner/solver.h"
#include "profiler/profiler.h"

namespace saturn {

struct RunOptions {
  std::string workload_path;
  std::vector<std::string> plugins;  // --plugin: added to the workload's plugins
  long max_tasks = 0;                // --max-tasks; 0: the workload's max_tasks or the default
  std::string run_dir;               // "" = DefaultRunDir(workload_path)
  bool resume = false;
  bool fresh = false;  // --fresh: an earlier run in run_dir is moved aside (never deleted)
  // Solver, time limit (per plan and re-plan), seed, threads, effort: the
  // first plan's; each re-plan's the same but for a shorter time limit and
  // its own seed.
  SolveOptions solve;
  bool introspection = true;
  double interval_s = 0.0;    // 0: a tenth of the planned makespan, in [10 s, 1000 s]
  double threshold_s = -1.0;  // < 0: 2% of the planned makespan, at least 2 switch costs
  double switch_cost_s = defaults::kSwitchCostS;  // estimated cost of checkpoint + restart
  int max_retries = defaults::kMaxRetries;
  // Checkpoints kept per task, the newest (0: every one).
  int keep_checkpoints = defaults::kKeepCheckpoints;
  long checkpoint_every = 0;                    // steps; 0: a tenth of the task's steps
  double stop_grace_s = defaults::kStopGraceS;  // SIGTERM, then SIGKILL after this long
  std::string profile_path;                     // use this profile instead of profiling
  ProfilerOptions profiler;
  std::string backend = "local";
  bool progress = true;
};

struct RunSummary {
  std::string run_dir;
  int finished = 0;
  int failed = 0;
  double makespan_s = 0.0;          // wall seconds of training (run clock)
  double planned_makespan_s = 0.0;  // the first plan's
  int plan_switches = 0;
  double profiling_s = 0.0;
  double planning_s = 0.0;
  bool interrupted = false;  // stopped by SIGTERM/SIGINT; resumable
  // For each sweep with evaluation, the task with the lowest final evaluation
  // loss: report.json's "best" entries ({sweep, task, final_eval_loss, ...}).
  std::vector<nlohmann::json> best;
  // What current practice would take, estimated from the profile, and the
  // speed-ups: report.json's "current_practice" (null without it).
  nlohmann::json current_practice;
};

RunSummary RunWorkload(const RunOptions& options);
RunSummary RunWorkload(const RunOptions& options, const Clock& clock);

// The run directory `saturn run` uses for a workload by default: under
// saturn-runs/, named after the file's path from the current folder (from /
// outside it) without its extension, parts joined by '-':
// "examples/quickstart/workload.yaml" -> "saturn-runs/examples-quickstart-workload".
// Two workload files never share one.
std::string DefaultRunDir(const std::string& workload_path);

}  // namespace saturn
