// Early stopping in a run (part of `saturn run` and `saturn serve`, run.h):
// one rule (tune/early_stop.h) per group of tasks that share a workload's
// `early_stop:`, fed every evaluation as it is logged; a task the rule
// stops ends `stopped` (the dispatcher stops its worker with a checkpoint).
// A resumed run or a restarted service replays its logged evaluations
// first, so the rule decides as if it had never stopped.
//
// It also tells the planner how much work each task is expected to train:
// the rule's expected steps given the decisions the task has passed.
//
//   EarlyStopper stopper;
//   stopper.Replay(state.Events(), workload);
//   if (auto d = stopper.OnEvaluation(task, step, loss, accuracy)) stop it (d->value);
//   double f = stopper.ExpectedFraction(task, workload);   // of its steps
//   stopper.StopDistribution(task, workload);  // where it ends: {(steps, p)}
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "contracts/events.h"
#include "contracts/profile.h"
#include "contracts/workload.h"
#include "planner/problem.h"
#include "tune/early_stop.h"

namespace saturn {

// The runtime of option `o` of problem task `j` when it trains `fraction`
// of its steps: its profile row's fixed costs (start-up, launch, the
// checkpoints) stay whole, its steps scale; without the row's step_s and
// steps, the whole runtime scales.
double ScaledRuntime(const ProfileTable& profile, const Problem& problem, int j, const Option& o,
                     double fraction);

class EarlyStopper {
 public:
  struct Stop {
    double value = 0.0;  // the metric that stopped it
  };

  // A task's evaluation after `step` steps (accuracy < 0: not reported).
  // A stop when its rule stops it now; nothing for a task without a rule,
  // an evaluation already seen (a task resumed before it), or a metric the
  // evaluation does not carry.
  std::optional<Stop> OnEvaluation(const WorkloadTask& task, long step, double loss,
                                   double accuracy);
  // The evaluations of a run's event log, in order, without deciding
  // (`workload`: whose tasks they are; others are skipped); a task that
  // arrives again (task_arrived) is forgotten first.
  void Replay(const std::vector<Event>& events, const Workload& workload);
  // A task of this name left the run (a cancelled one, replaced by a new
  // one of its name): the new one is a new trial to the rules, the old
  // one's evaluations stay in their history under another key.
  void Forget(const std::string& task);
  // The fraction of its steps `task` is expected to train, from its rule,
  // its group's size in `workload` and the decisions it has passed; 1 for a
  // task without a rule.
  double ExpectedFraction(const WorkloadTask& task, const Workload& workload) const;
  // Where its rule is expected to end `task` before any decision on it:
  // (steps, probability), ascending (tune/early_stop.h's
  // StopStepDistribution); {(steps, 1)} for a task without a rule.
  std::vector<std::pair<long, double>> StopDistribution(const WorkloadTask& task,
                                                        const Workload& workload) const;
  // The size of `task`'s group in `workload` (the tasks its rule judges
  // together) and how many of it train at once.
  static std::pair<int, int> GroupOf(const WorkloadTask& task, const Workload& workload);

 private:
  StopRule& RuleOf(const WorkloadTask& task);

  std::map<std::string, std::unique_ptr<StopRule>> rules_;  // by stop group
  std::set<std::pair<std::string, long>> seen_;             // (task, step) evaluated
  std::map<std::string, long> last_evaluated_;              // task -> its latest step
  std::map<std::string, int> generation_;                   // task -> times forgotten
  // (group, size, steps, every, concurrency) -> the rule's outlook: expected
  // total steps by decisions passed, where it stops tasks, and the steps it
  // decides at (one Monte Carlo per group).
  const RuleOutlook& OutlookOf(const WorkloadTask& task, const Workload& workload) const;
  mutable std::map<std::tuple<std::string, int, long, long, int>, RuleOutlook> outlooks_;
};

}  // namespace saturn
