// Early stopping in the simulator (sim/simulator.h): the executor's rules
// (tune/early_stop.h) decide at the simulated tasks' decision steps, fed the
// metric each task reports there, and the planner is told each task's
// expected work as the executor tells it (executor/early_stopper.h).
//
//   SimEarlyStop e;  e.spec = spec;  e.group = "w";  e.steps = 800;  e.eval_every = 50;
//   e.curve = {{50, 3.1}, {100, 2.7}};     // (step, metric); the last holds after
//   SimStoppers stoppers(per_task);
//   double at = stoppers.NextDecision(j, done);   // a fraction of its work, or > 1: none
//   double value;
//   if (stoppers.Decide(j, at, "t0", &value)) /* stopped */;
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
#include "planner/packing.h"
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

// How many tasks train at once at most, as SimStoppers counts them for the
// rule's outlook: the cluster's GPUs over the fewest any task's option takes.
int StopConcurrency(const Problem& problem);

// Under early stopping, `terms` (the tasks' pack terms) as the planner
// prices a pack's members (planner/packing.h's MemberSteps): where each
// task's rule may end it (StopStepDistribution of its group, in the
// profile's steps) and its group; `concurrency` as SimStoppers has it.
void ExpectPackStops(const std::vector<SimEarlyStop>& stops, int concurrency, PackTerms& terms);

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

  // The same in steps, for a member of a pack (whose steps are not a fixed
  // fraction of a runtime: sim/sim_packs.h): its next decision step (-1:
  // none), the decision there, how many it passed and the steps it is
  // expected to train in all (its steps without a rule).
  long NextDecisionStep(int j) const;
  bool DecideAtStep(int j, long step, const std::string& name, double* value);
  int Passed(int j) const { return passed_[static_cast<size_t>(j)]; }
  double ExpectedSteps(int j) const;

 private:
  std::vector<SimEarlyStop> tasks_;
  std::vector<std::vector<long>> decisions_;  // per task
  std::vector<int> passed_;
  std::vector<std::vector<double>> expected_;  // per task, by decisions passed
  std::map<std::string, std::unique_ptr<StopRule>> rules_;
  bool any_ = false;
};

}  // namespace saturn
