// Early-stopping rules (a workload's `early_stop:`, contracts/early_stop.h):
// fed the evaluations of a group of tasks as they happen, a rule says which
// task stops now. Torch-free: the executor feeds the rule, the planner asks
// what it will cost.
//
//   EarlyStopSpec spec;  // as the workload reader fills it
//   spec.rule = "asha";
//   spec.grace_steps = 50;
//   std::unique_ptr<StopRule> rule = MakeStopRule(spec);
//   if (rule->OnEvaluation("lr3e-4", 50, 400, 2.31)) { /* stop lr3e-4 */ }
//   rule->DecisionSteps(400, 50);                      // {50, 100, 200}
//   ExpectedTotalSteps(spec, 64, 400, 50);             // {E, E|passed 50, ..., 400}
//
// The rules follow Ray Tune's schedulers, with steps as Ray's time attribute
// and the spec's metric as its objective (eval_loss: mode min; eval_accuracy:
// max; both compared as "higher is better" inside, loss negated).
//
// asha: Ray's AsyncHyperBandScheduler with one bracket (async_hyperband.py,
// _Bracket.on_result and cutoff). Rungs at G, G*R, G*R^2, ... (G =
// grace_steps, R = reduction_factor), shared by the whole group, whatever
// each task's total. An evaluation at step t is taken to the highest rung <= t
// the task has no record at (none: it continues). There the cutoff is the
// (1 - 1/R)*100 percentile (np.nanpercentile, linear) of the values recorded
// at that rung before this one; the task stops if its value is below it
// (none recorded: it continues); then its value is recorded. As in Ray:
//   - a NaN value continues (NaN < cutoff is false), is recorded as the
//     task's (it is not judged at that rung again) and is left out of later
//     cutoffs (nanpercentile);
//   - an evaluation at t >= the task's total steps never stops it but is
//     recorded (Ray's on_trial_complete), so a short task's last value
//     counts at that rung for the longer ones.
//
// median: Ray's MedianStoppingRule (median_stopping_rule.py, hard stop), in
// steps. At an evaluation at step t >= grace_steps (t < total), the others
// are the tasks whose last evaluation is at or past t (stopped and finished
// ones included); each gives its running mean: the mean of its values at
// steps in [grace_steps, t]. With at least min_samples others, the task
// stops if its best value so far (every evaluation, before grace too) is
// worse than the median of those means (ties continue). Where Ray would give
// a NaN that stops every trial, this rule does not:
//   - a NaN value counts as the worst possible value (-inf, higher is better),
//     in the task's best and in its running means;
//   - another task with no value in [grace_steps, t] (its evaluations
//     skipped that window) is not counted as a sample.
// Too few samples always continues (Ray may pause the trial instead when
// others wait to run), and means are plain running sums (numpy sums 8 or
// more values pairwise: the last bits may differ).
// Each task's steps must increase from one evaluation to the next
// (std::logic_error otherwise).
//
// A rule holds no clock and no thread: the caller feeds evaluations in the
// order they happened, from one thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/registry.h"
#include "contracts/early_stop.h"

namespace saturn {

// One rule's state over one group of tasks (a workload's tasks).
class StopRule {
 public:
  virtual ~StopRule() = default;
  // `task`: its name; `step`: steps done when evaluated; `total_steps`: the
  // task's planned steps; `value`: the metric as reported (the spec says
  // which way is better). True: stop the task now. Never true at
  // step >= total_steps (it has ended anyway) nor before grace_steps.
  virtual bool OnEvaluation(const std::string& task, long step, long total_steps, double value) = 0;
  // The steps (ascending, each < total_steps) at which the rule may stop a
  // task of `total_steps` that evaluates every `eval_every` steps. asha: its
  // rungs; median: every evaluation from grace_steps on. None when
  // eval_every <= 0 (no evaluations, no decisions).
  virtual std::vector<long> DecisionSteps(long total_steps, long eval_every) const = 0;
};

// A kind of rule as the registry holds it: its name and how to make one.
struct StopRuleKind {
  std::string name;
  std::function<std::unique_ptr<StopRule>(const EarlyStopSpec&)> make;
  std::string_view Name() const { return name; }
};

class StopRuleRegistry : public Registry<StopRuleKind> {
 public:
  StopRuleRegistry() : Registry("early-stopping rule", "early_stop") {}
};

// Every rule ("asha", "median"), registered in one place (tune/early_stop.cc).
const StopRuleRegistry& StopRules();
// Their names, for the workload reader's "expected one of".
std::vector<std::string> StopRuleNames();

// A fresh rule (no evaluations yet) for `spec`. InputError for an unknown
// rule or metric and for numbers the rule cannot use (asha: grace_steps < 1,
// reduction_factor < 2; median: grace_steps < 0, min_samples < 1), naming
// the field; the workload reader checks these first, with the file and line.
std::unique_ptr<StopRule> MakeStopRule(const EarlyStopSpec& spec);

// An estimate of the steps a task of `total_steps` trains under `spec`, in a
// group of `group_size` tasks evaluating every `eval_every` steps, given it
// has passed the first `passed` of DecisionSteps: element `passed` for
// passed = 0 .. D (D decision steps). Element 0 is the unconditional
// expectation; element D is total_steps (a task past every decision runs to
// the end). Non-decreasing in `passed`. All total_steps when the group has
// one task or there are no decision steps; {total_steps} when the spec is
// not enabled.
//
// Not a formula: a Monte Carlo of the rule objects themselves, the same
// numbers on every run (a fixed seed, splitmix64). The model: each task has
// a fixed quality q ~ U(0, 1) and reports loss q + sqrt(d1 / t) at step t (d1
// the first decision step): a learning curve shared by all, so a task's rank
// is the same at every step. The tasks train in a random order,
// `concurrency` at once (0, or the group's size or more: all at once), each
// at one step per unit of time, the next starting as soon as one stops or
// finishes: the order in which they reach each rung is the one a cluster of
// that many slots gives, which is what makes ASHA asynchronous (the first
// tasks to reach a rung meet few rivals there, so more of them go on than
// 1/R). The workload reader shuffles a group's tasks (early_stop's
// `order: shuffled`, the default) so that a grid's start order is random as
// here; under `order: written` a grid written worst-first stops far less than
// this. Real curves cross and real tasks differ in speed, so take it as an
// estimate. To stay cheap (under 0.5 s for
// 5000 tasks) groups over 5000 tasks are simulated as 5000, each simulation
// repeats max(8, 20000 / tasks) times, and a rule with over 32 decision
// steps (median with frequent evaluations) is simulated deciding at every
// m-th evaluation only (m = ceil(D / 32)), a task that passed k real
// decision steps taking the estimate of the simulated ones at or before them.
std::vector<double> ExpectedTotalSteps(const EarlyStopSpec& spec, int group_size, long total_steps,
                                       long eval_every, int concurrency = 0);

// Where the rule ends a task of such a group, as the same Monte Carlo has
// it: (steps trained, probability), ascending in steps, probabilities
// summing to 1, its mean ExpectedTotalSteps's first value (unless that is
// raised to the first decision step). {(total_steps, 1)} where the rule
// never decides. The planner prices a pack's members on it
// (planner/packing.h's MemberSteps): a pack lasts as long as its last
// member, not as long as its mean one.
std::vector<std::pair<long, double>> StopStepDistribution(const EarlyStopSpec& spec, int group_size,
                                                          long total_steps, long eval_every,
                                                          int concurrency = 0);

// Both from one simulation, with the rule's decision steps (what the
// executor's EarlyStopper keeps per group).
struct RuleOutlook {
  std::vector<double> expected;                // ExpectedTotalSteps
  std::vector<std::pair<long, double>> stops;  // StopStepDistribution
  std::vector<long> decisions;                 // the rule's DecisionSteps(total, every)
};
RuleOutlook OutlookOfRule(const EarlyStopSpec& spec, int group_size, long total_steps,
                          long eval_every, int concurrency = 0);

}  // namespace saturn
