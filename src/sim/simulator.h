// A discrete-event simulator of a cluster executing Saturn plans.
//
// The profile is what the planner believes; `true_runtime` is what each task
// really takes in each configuration. Tasks start in plan order per GPU (a
// task starts once all its GPUs are free and it is next on each of them), so
// tasks whose predecessors finish early start early, as in the executor.
// Introspection calls the same Replan as the executor (replan/replan.h) every
// `interval_s`; a switch pre-empts only the tasks whose assignment changes,
// and a resumed task first spends `switch_cost_s` producing nothing
// (checkpoint + restart). Tasks may arrive over time (online mode): each
// arrival re-plans. Deterministic for a seed.
//
//   SimOptions opt; opt.interval_s = 3600;
//   SimResult r = Simulate(believed, TruthWithNoise(believed, 0.3, 0.0, seed), arrivals, opt);
//   r.makespan_s; r.events;  // same event format as the executor
//
// With early stopping (SimOptions::early_stop) a task's rule decides at its
// decision steps, fed the metric the task reports there. With packs
// (SimOptions::packs) each pack is scheduled as one task (sim/sim_packs.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "contracts/task_view.h"
#include "planner/problem.h"
#include "replan/replan.h"
#include "sim/sim_early_stop.h"
#include "sim/sim_packs.h"

namespace saturn {

// Where a simulation stands, for progress displays.
struct SimProgress {
  double now_s = 0.0;  // simulated time
  int finished = 0;    // tasks done
  int tasks = 0;       // of this many
  int replans = 0;
  int plan_switches = 0;
};

struct SimOptions {
  ReplanPolicy policy;
  bool introspection = true;
  double interval_s = defaults::kPaperIntervalS;
  // A running task's true speed becomes known after it ran this long.
  double observe_after_s = 60.0;
  int utilization_points = 200;
  bool record_events = true;  // false saves memory on huge runs
  // Called before the first plan, after every task that finishes and after
  // every re-planning check (throttle in the callback: it may run millions
  // of times).
  std::function<void(const SimProgress&)> on_progress;
  // Early stopping (sim/sim_early_stop.h): one entry per task, or none. A
  // task its rule stops ends `stopped`, its devices free; the planner plans
  // with each task's expected work and re-plans at every stop.
  std::vector<SimEarlyStop> early_stop;
  // Packs (sim/sim_packs.h): its groups of two or more tasks train as one
  // unit each, named pack-N, their members leaving one by one (under
  // early_stop, where their rule stops them). Results and task events are
  // the tasks' (a member's carry its pack's placement, its row `pack`), as is
  // the first plan; plan switches name the pack, and a pack arrives with
  // its last member.
  std::shared_ptr<const SimPacking> packs;
};

// A task's end state (contracts/task_view.h: status, start_s, end_s,
// attempts, its last configuration) and what the simulation measured of it.
struct SimTaskResult : TaskState {
  double arrival_s = 0.0;
  double busy_s = 0.0;     // time holding GPUs (a pack member: while in the pack)
  double dead_s = 0.0;     // of which restarting from a checkpoint
  double work_done = 0.0;  // fraction of the task completed (1 when finished)
  std::string pack;        // the pack it trained in ("" alone)
};

struct SimResult {
  double makespan_s = 0.0;
  double mean_jct_s = 0.0;
  double p99_jct_s = 0.0;
  int replans = 0;
  int plan_switches = 0;
  int preemptions = 0;
  double planning_wall_s = 0.0;  // solver time spent, wall clock
  double gpu_s = 0.0;            // GPU-seconds held (a pack's devices once)
  Plan initial_plan;  // a pack's members each with its own end and `pack`, as `saturn plan`
  std::vector<SimTaskResult> tasks;
  std::vector<Event> events;
  std::vector<std::pair<double, double>> utilization;  // (time, busy GPU fraction) samples
};

// true_runtime[j][o]: real runtime of task j with its option o (same indexing
// as `believed`); arrival_s[j]: when task j arrives (empty: all at 0).
SimResult Simulate(const Problem& believed, const std::vector<std::vector<double>>& true_runtime,
                   const std::vector<double>& arrival_s, const SimOptions& options);

// Truth = belief: what the plan expects.
std::vector<std::vector<double>> TruthEqualsBelief(const Problem& believed);
// Truth = belief x a factor per task, uniform in [1 - sigma, 1 + sigma] (the
// profile got the task's speed wrong by up to +-sigma in every
// configuration), x a factor per (task, option) uniform in
// [1 - config_sigma, 1 + config_sigma] (errors specific to one configuration).
std::vector<std::vector<double>> TruthWithNoise(const Problem& believed, double sigma,
                                                double config_sigma, uint64_t seed);
// Truth from another profile table (same tasks and configurations); InputError
// naming the missing row otherwise.
std::vector<std::vector<double>> TruthFromProfile(const Problem& believed,
                                                  const ProfileTable& truth,
                                                  const std::string& source);

}  // namespace saturn
