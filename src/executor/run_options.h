// How `saturn run` and `saturn serve` run (executor/run.h): the options of
// one Run, set from the command line (cli/executor_options.h) or by tests.
// Torch-free and light: the parts of the executor share it without the Run.
//
//   RunOptions o; o.workload_path = "examples/quickstart/workload.yaml";
//   o.solve.time_limit_s = 5;
#pragma once

#include <string>
#include <vector>

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
  // Packs (planner/pack_search.h): profiling measures them and the first
  // plan may train LoRA tasks that share a base in one worker; --no-pack:
  // every task alone. Re-planning keeps packs as units and packs arrivals.
  bool pack = true;
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

// Where `saturn serve`'s tasks come from: the submissions stored in its
// state folder, run on the cluster that `cluster_path` names (its nodes, or
// `from: slurm`: the launch backend's allocation, as a workload's `cluster:
// {from: slurm}` is for `saturn run`).
struct ServiceSource {
  std::string state_dir = "saturn-service";
  std::string cluster_path;
};

}  // namespace saturn
