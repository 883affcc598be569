// Early stopping in the simulator (sim/simulator.h): the executor's rules
// (tune/early_stop.h) decide at the simulated tasks' decision steps, fed the
// metric each task reports there, and the planner is told each task's
// expected work as the executor tells it (executor/early_stopper.h).
//
//   SimEarlyStop e;  e.spec = spec;  e.group = "w";  e.steps = 800;  e.eval_every = 50;
//   e.curve = {{50, 3.1}, {100, 2.7}};     // (step, metric); the last holds after
//   SimStoppers stoppers(per_task);
//   double at = stoppers.NextDecision(j, done);   // a fraction of its work, or > 1: none
//   if (stoppers.Decide(j, at)) /* stopped */;
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "contracts/early_stop.h"
#include "contracts/events.h"
#include "contracts/profile.h"
#include "contracts/workload.h"
#include "planner/problem.h"
#include "tune/early_stop.h"

namespace saturn {

// One task's early stopping: its rule, its group, and what it reports.
struct SimEarlyStop {
  EarlyStopSpec spec;  // not enabled: the task runs to its end
  std::string group;
  long steps = 0;
  long eval_every = 0;
  // The metric it reports at each evaluation step, ascending steps: the
  // value at the last step at or before a decision counts (a real run's
  // evaluations, or a model's).
  std::vector<std::pair<long, double>> curve;
  // The part of its runtime a launch costs whatever its steps (start-up,
  // loading, the last checkpoint): the steps take the rest, so its
  // decisions come at fixed + (step / steps) x (1 - fixed) of the runtime.
  double fixed_fraction = 0.0;
};

// Each of `problem`'s tasks' early stopping from `workload` (by name: its
// rule, group, steps and eval.every; a task not in it runs to its end). The
// metric each reports comes from `evaluations` (a run's task_evaluated
// events, e.g. a run of the same tasks to their end) when given; else each
// task has a fixed quality drawn from `seed` (lower loss better), the same
// at every step. A launch's fixed costs are `profile`'s (runtime less
// step_s x steps of the task's first configuration). InputError naming
// `evaluations_source` for a task of the
// workload with no evaluation there.
std::vector<SimEarlyStop> EarlyStopsFromWorkload(
    const Problem& problem, const ProfileTable& profile, const Workload& workload,
    const std::vector<Event>* evaluations, const std::string& evaluations_source, uint64_t seed);

class SimStoppers {
 public:
  // One entry per task (may be empty: no early stopping).
  // `concurrency`: how many tasks of a group train at once (the planner's
  // estimate of their expected work depends on it; 0: all).
  explicit SimStoppers(std::vector<SimEarlyStop> tasks, int concurrency = 0);

  bool Any() const { return any_; }
  // The fraction of its work at which task j next decides, after `done`;
  // > 1 when it never decides again.
  double NextDecision(int j, double done) const;
  // Task j reached the decision at fraction `at`: whether its rule stops it
  // (else it has passed one more decision); `*value`: the metric it reported.
  bool Decide(int j, double at, const std::string& name, double* value);
  // The step task j has trained at fraction `at` of its work.
  long StepAt(int j, double at) const;
  // The fraction of its work task j is expected to do in all (1 without a rule).
  double ExpectedFraction(int j) const;

 private:
  std::vector<SimEarlyStop> tasks_;
  std::vector<std::vector<long>> decisions_;  // per task
  std::vector<int> passed_;
  std::vector<std::vector<double>> expected_;  // per task, by decisions passed
  std::map<std::string, std::unique_ptr<StopRule>> rules_;
  bool any_ = false;
};

}  // namespace saturn
