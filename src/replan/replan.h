// Introspection: re-planning the remaining work while a batch runs.
//
// One implementation, used by the executor (real runs) and the simulator
// (replayed runs). At each check the caller reports every task's progress;
// Replan builds the remaining problem, re-times the current plan under the
// newest estimates, solves afresh (warm-started from the current plan) and
// switches only when the new plan finishes sooner by more than the threshold.
// Unlike the prototype, it
//  - charges a switch: every option of a running task except "keep running
//    as is" pays `switch_cost_s` (checkpoint + restart), and a task resumed
//    from a checkpoint pays it when it starts again;
//  - pre-empts only the running tasks whose assignment changes (the rest keep
//    their devices: a pinned starts_now option), never all of them;
//  - learns from what it sees: a running task's measured speed against its
//    profile (`slowdown`) scales its remaining runtime in every configuration.
// Re-plans are incremental where they can be: no solve when the re-timed
// plan is within the threshold of the lower bound (no plan could be worth a
// switch), nor, if the policy asks (unchanged_tolerance), when progress
// matched the plan within noise; such a check costs milliseconds.
// New tasks (online arrivals) enter the same way: the current plan is
// extended with them (appended where they fit first) and the fresh plan is
// adopted unless it is worse (no threshold: the task set changed anyway).
//
//   ReplanDecision d = Replan(base, progress, current_plan, now, policy);
//   if (d.switch_plan) { preempt(d.preempted); current_plan = d.plan; }
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "planner/problem.h"
#include "planner/schedule.h"
#include "spec/plan.h"

namespace saturn {

struct RunningOn {
  int option = -1;  // index into the base task's options
  int node = -1;
  std::vector<int> gpu_ids;
};

struct TaskProgress {
  bool arrived = true;
  bool finished = false;
  double done = 0.0;            // fraction of the task's work done, 0..1
  bool has_checkpoint = false;  // resumes (paying switch_cost_s) when started again
  std::optional<RunningOn> running;
  double slowdown = 1.0;  // measured runtime / profiled runtime; 1 = as profiled
};

struct ReplanPolicy {
  std::string solver = "auto";
  double time_limit_s = defaults::kReplanTimeLimitS;
  double work_scale = 1.0;
  uint64_t seed = 0;
  double threshold_s = defaults::kPaperThresholdS;  // switch only if the plan improves by more
  double switch_cost_s = defaults::kSwitchCostS;    // checkpoint + restart of one task
  bool allow_preemption = true;                     // false: running tasks always keep running
  // Incremental re-planning: keep the plan without solving when no task
  // arrived and the re-timed plan ends no later than planned plus this
  // fraction of the time left (progress matched the plan within noise; the
  // plan was searched from the same state already). 0: off, always solve
  // (unless the lower bound already rules a switch out).
  double unchanged_tolerance = 0.0;
};

// The remaining work as a planning problem. Task k is base task base_index[k];
// keep_option[k] is the index of its "keep running as is" option, or -1.
struct RemainingProblem {
  Problem problem;
  std::vector<int> base_index;
  std::vector<int> keep_option;
};

RemainingProblem BuildRemainingProblem(const Problem& base,
                                       const std::vector<TaskProgress>& progress,
                                       const ReplanPolicy& policy);

// The current plan for the remaining tasks under current estimates: planned
// configurations, nodes and order kept, running tasks kept where they run,
// everything moved as early as the new estimates allow; remaining tasks the
// plan does not know (new arrivals) are appended with their least-area option.
Schedule RetimePlan(const RemainingProblem& remaining, const Plan& current);

struct ReplanDecision {
  bool switch_plan = false;
  Plan plan;                           // the plan to follow from now on (absolute times)
  double current_end_s = 0.0;          // when the current plan would finish, re-estimated
  double new_end_s = 0.0;              // when the fresh plan would finish
  std::vector<std::string> preempted;  // running tasks that must stop
  std::string summary;
};

// `current` has absolute times; `now` is the time of the check.
ReplanDecision Replan(const Problem& base, const std::vector<TaskProgress>& progress,
                      const Plan& current, double now, const ReplanPolicy& policy);

}  // namespace saturn
