// The re-planning thread (part of `saturn run`, run.h): every interval
// the remaining work is solved afresh in the background while training goes
// on (replan/replan.h); when the new plan finishes sooner by more than the
// threshold, the run switches to it and pre-empts only the tasks it moves;
// otherwise it follows the current plan re-timed (tasks not started move to
// whichever devices of their node free first), as the simulator does.
//
//   Replanner replanner(run, dispatcher);   // first check one interval from now
//   replanner.Poll();   // each loop turn: applies a finished re-plan or starts a due one
//   replanner.Wait();   // at the end: lets a re-plan in flight finish
#pragma once

#include <algorithm>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "executor/dispatcher.h"
#include "executor/run_context.h"
#include "replan/replan.h"

namespace saturn {

// One re-plan at a time on a background thread, due `interval_s` on `clock`
// after the last one was applied (after construction at first). Knows
// nothing of the run, so tests drive it with a ManualClock.
//
//   BackgroundReplanner b(clock, 10.0);
//   b.Poll([&] { return BackgroundReplanner::Solve([=] { return Replan(...); }); },
//          [&](const ReplanDecision& d) { ... });
class BackgroundReplanner {
 public:
  using Solve = std::function<ReplanDecision()>;

  BackgroundReplanner(const Clock& clock, double interval_s)
      : clock_(clock), interval_s_(interval_s), next_check_(clock.Now() + interval_s) {}

  // Hands a finished re-plan to `apply` and counts the next interval from
  // then; otherwise, when one is due, runs `prepare()`'s solve in the
  // background (prepare runs here, so it may read the run).
  void Poll(const std::function<Solve()>& prepare,
            const std::function<void(const ReplanDecision&)>& apply);
  // The next check is due now (if none is in flight, the next Poll starts it).
  void CheckNow() { next_check_ = std::min(next_check_, clock_.Now()); }
  // Whether a re-plan is in flight.
  bool Busy() const { return pending_.valid(); }
  void Wait();

 private:
  const Clock& clock_;
  double interval_s_;
  double next_check_;
  std::future<ReplanDecision> pending_;
};

class Replanner {
 public:
  Replanner(RunContext& run, Dispatcher& dispatcher)
      : run_(run), dispatcher_(dispatcher), background_(run.clock, run.interval_s()) {}

  void Poll();
  void Wait() { background_.Wait(); }

 private:
  void Apply(const ReplanDecision& d);
  // RunPackTerms, rebuilt when the task set changes or the plan gains or
  // loses packs (null when there are none).
  std::shared_ptr<const PackTerms> Terms();

  RunContext& run_;
  Dispatcher& dispatcher_;
  BackgroundReplanner background_;
  int solving_for_ = -1;  // the task set version the re-plan in flight was solved for
  std::shared_ptr<const PackTerms> terms_;
  int terms_for_ = -1;      // the task set version of terms_
  bool has_packs_ = false;  // whether the plan had packs then
};

// The pack terms of the run's tasks as its profile gives them, when the
// plan has packs or packs may form and two tasks may share one.
std::optional<PackTerms> RunPackTerms(const RunContext& run);
// Under early stopping, where each task's rule may end it before it is
// judged (PackTerms::Member::stops, in the profile's steps, from the run's
// EarlyStopper): how packs of tasks not started are priced
// (planner/packing.h's MemberSteps). RunPackTerms includes them.
void ExpectStops(const RunContext& run, PackTerms& terms);
// The run's re-planning policy (RunContext::NextReplanPolicy) with packs
// formed among arrivals unless --no-pack.
ReplanPolicy RunReplanPolicy(RunContext& run, double time_limit_s);

// The running tasks `plan` puts somewhere other than where they run (they
// started while it was solved).
std::vector<std::string> StartedElsewhere(const RunContext& run, const Plan& plan);

// Follows the decision's plan from now on and pre-empts the running tasks it
// moves (those it pre-empts, and any that started while it was solved
// somewhere other than where it puts them); returns their names.
std::vector<std::string> SwitchTo(RunContext& run, Dispatcher& dispatcher, const ReplanDecision& d);

// What the usual ways would take for the work left now (planner/baselines.h
// on the remaining problem), as ends on the run clock ("makespan_s": now +
// their makespan, "from_s": now): the baselines of a plan adopted while the
// run goes on, so that `saturn serve`'s plan and dashboard compare live.
nlohmann::json LiveBaselines(const RunContext& run);
// Follows a re-plan's `plan` (RunContext::AdoptPlan) with its live baselines.
void AdoptReplan(RunContext& run, Plan plan);

// Plans what is left for the nodes a run resumes on, from the tasks'
// checkpoints (every technique and GPU count resumes from them), and
// records those nodes as the run's.
void ReplanForOtherNodes(RunContext& run, const std::string& cluster_now);

}  // namespace saturn
