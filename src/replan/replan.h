// Introspection: re-planning the remaining work while a batch runs.
//
// One implementation, used by the executor (real runs) and the simulator
// (replayed runs). At each check the caller reports every task's progress;
// Replan builds the remaining problem, re-times the current plan under the
// newest estimates and decides whether to switch: only when a new plan
// finishes sooner by more than the threshold. Unlike the prototype, it
//  - charges a switch: every option of a running task except "keep running
//    as is" pays `switch_cost_s` (checkpoint + restart), and a task resumed
//    from a checkpoint pays it when it starts again;
//  - pre-empts only the running tasks whose assignment changes (the rest keep
//    their devices: a pinned starts_now option), never all of them;
//  - learns from what it sees: a running task's measured speed against its
//    profile (`slowdown`) scales its remaining runtime in every configuration.
// Re-plans are incremental:
//  - no search when no task arrived, no task ended sooner than planned by
//    more than the noise (its devices are free early), and every node's
//    re-timed end is within `unchanged_tolerance` of its time left of its end
//    in the plan last searched (progress matched the plan within noise: it
//    was searched from this state; a kept plan keeps those ends in its extra
//    "searched_node_ends_s", so a drift below the noise at each check still
//    adds up to a search), nor
//    when the re-timed plan is within the threshold of the lower bound (no
//    plan could be worth a switch); such a check costs milliseconds;
//  - otherwise, on clusters of `incremental_nodes` nodes or more, node-group
//    search (planner/node_groups.h) from the re-timed plan, its groups drawn
//    around the nodes that changed; on smaller clusters (Saturn's scale,
//    where a whole solve is cheap) a fresh solve, warm-started from it.
// New tasks (online arrivals) enter the same way: the current plan is
// extended with them (appended where they fit first) and the searched plan
// is adopted unless it is worse (no threshold: the task set changed anyway).
//
//   ReplanDecision d = Replan(base, progress, current_plan, now, policy);
//   if (d.switch_plan) { preempt(d.preempted); current_plan = d.plan; }
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/defaults.h"
#include "contracts/plan.h"
#include "planner/packing.h"
#include "planner/problem.h"
#include "planner/schedule.h"
#include "planner/solver.h"

namespace saturn {

struct RunningOn {
  int option = -1;  // index into the base task's options
  int node = -1;
  std::vector<int> gpu_ids;
};

struct TaskProgress {
  bool arrived = true;
  bool finished = false;
  double done = 0.0;  // fraction of the task's work done, 0..1
  // The fraction of its work it is expected to do in all: below 1 when an
  // early-stopping rule may end it (executor/early_stopper.h), never below
  // `done`.
  double expected = 1.0;
  bool has_checkpoint = false;  // resumes (paying switch_cost_s) when started again
  std::optional<RunningOn> running;
  double slowdown = 1.0;  // measured runtime / profiled runtime; 1 = as profiled
  // The pack it trains in, or is planned to (planner/packing.h); "" alone.
  // Members of a running pack: the one holding the devices has `running`.
  std::string pack;
  // A member of a running pack that, pre-empted, resumes from its own
  // checkpoint at the stop (a LoRA pack's; an array member restarts from 0):
  // its pack may be split (replan/packed.h, SplitPack).
  bool resumes_alone = false;
};

// How to re-plan: the solve options (a default-made policy has a re-plan's
// time limit; one made from SolveOptions keeps theirs) and when a new plan
// is worth a switch.
struct ReplanPolicy : SolveOptions {
  ReplanPolicy() { time_limit_s = defaults::kReplanTimeLimitS; }
  explicit ReplanPolicy(const SolveOptions& options) : SolveOptions(options) {}

  double threshold_s = defaults::kPaperThresholdS;  // switch only if the plan improves by more
  double switch_cost_s = defaults::kSwitchCostS;    // checkpoint + restart of one task
  bool allow_preemption = true;                     // false: running tasks always keep running
  // Given pack terms: arrivals that may share a pack are packed with each
  // other (replan/packed.h); false: they are planned alone (--no-pack).
  bool pack_arrivals = true;
  // Running packs may be split (SplitPack); false where a decision must be
  // quick or cannot stop a pack (a plan extended for arrivals).
  bool split_packs = true;
  // New packs are numbered above this (the highest N of the run's pack-N
  // so far, its packs' folders included), besides the names in use.
  int packs_numbered_to = 0;
  // Keep the plan without searching when no task arrived and every node's
  // re-timed end is within this fraction of its time left of its planned
  // end, +-1 s (progress matched the plan within noise). 0: always search
  // (unless the lower bound already rules a switch out).
  double unchanged_tolerance = defaults::kUnchangedTolerance;
  // From this many nodes on, a search is node-group search around the nodes
  // that changed (work_scale x kIncrementalWorkUnits work units), not a fresh
  // solve of the whole remaining problem; 0: always afresh. Only with `auto`.
  int incremental_nodes = defaults::kIncrementalNodes;
};

// The incremental search's effort per check at work_scale 1, in work units
// (solver.h): about 0.2 s on one core here.
inline constexpr double kIncrementalWorkUnits = 4.0;

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
// plan does not know (new arrivals) are appended with their least-area
// option, and listed in `appended` if it is given.
Schedule RetimePlan(const RemainingProblem& remaining, const Plan& current,
                    std::vector<int>* appended = nullptr);

// Whether a check that must search does so incrementally (see above).
bool SearchesIncrementally(const Problem& remaining, const ReplanPolicy& policy);

struct ReplanDecision {
  bool switch_plan = false;
  Plan plan;                           // the plan to follow from now on (absolute times)
  double current_end_s = 0.0;          // when the current plan would finish, re-estimated
  double new_end_s = 0.0;              // when the fresh plan would finish
  std::vector<std::string> preempted;  // running tasks that must stop
  std::string summary;
  bool searched = false;  // a plan was searched (not kept without a solve)
  // Running packs this plan stops (a split), each with the members it had
  // then (also listed in `preempted`); they go on alone or in new packs.
  std::map<std::string, std::set<std::string>> split;
};

// `current` has absolute times; `now` is the time of the check. With
// `terms` (the profile's pack terms of `base`), tasks that share a pack in
// `progress` are planned as one (replan/packed.h): a running pack keeps
// running, a pack not started may move; the plan's members carry `pack`.
// When the check searches and packs may form (pack_arrivals), the tasks
// not started are also packed afresh, and that plan is taken when it ends
// sooner by more than the threshold. Unless progress was as planned, and
// when pre-emption and splits are allowed, each running pack whose members
// resume alone is also tried split: stopped, its members trained alone or
// in new packs among themselves, from their checkpoints (each paying
// switch_cost_s), wherever they end first; taken likewise (the two running
// packs whose members end last are tried, two solves each).
ReplanDecision Replan(const Problem& base, const std::vector<TaskProgress>& progress,
                      const Plan& current, double now, const ReplanPolicy& policy,
                      const PackTerms* terms = nullptr);

}  // namespace saturn
