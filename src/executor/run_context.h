// What the parts of a Run share (run.h describes the whole): the
// run's options, its clock, where it lives and its durable state, its tasks
// (task_set.h: the workload, profile and problem, each task's live state and
// placement), and the plan it follows. Set up by run_setup.h; the dispatcher starts
// and watches workers (dispatcher.h), the re-planner switches plans
// (replanner.h), and progress.h reads it for re-plans, progress lines and the
// report.
//
//   RunContext run(options, clock);
//   SetUpRun(run);
//   run.tasks[0].record.status;   // a task's live state (task_set.h)
//   run.Emit(events::Resumed(run.Now()));
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "contracts/event_kinds.h"
#include "contracts/plan.h"
#include "executor/early_stopper.h"
#include "executor/run_options.h"
#include "executor/run_state.h"
#include "executor/task_set.h"
#include "launch/backend.h"
#include "replan/dispatch.h"
#include "replan/replan.h"
#include "report/best.h"

namespace saturn {

// The run clock: seconds of training so far, counted on an injected clock
// from Start(offset_s), where offset_s is the time a resumed run had reached.
class RunClock final : public Clock {
 public:
  explicit RunClock(const Clock& clock) : clock_(&clock) {}
  double Now() const override { return offset_s_ + (clock_->Now() - start_); }
  void Start(double offset_s = 0.0) {
    offset_s_ = offset_s;
    start_ = clock_->Now();
  }
  // The clock it counts on (e.g. to time profiling and planning).
  const Clock& base() const { return *clock_; }

 private:
  const Clock* clock_;
  double start_ = 0.0;
  double offset_s_ = 0.0;
};

// Where the run lives and what it runs with: set once by SetUpRun or
// SetUpService (run_setup.h).
struct RunSite {
  std::string run_dir;
  std::string worker;  // the saturn-worker binary ("" when only users' programs run)
  std::unique_ptr<LaunchBackend> backend;
  std::optional<RunState> state;  // the run's durable state (run_state.h)
};

// The run's clock, where it lives, its tasks (task_set.h), and the plan it
// follows. The plan, its history and the run's settings change only through
// the methods below, which keep the state and the plan files in step.
class RunContext {
 public:
  RunContext(const RunOptions& options, const Clock& clock) : clock(clock), options_(options) {}

  RunClock clock;
  RunSite site;
  TaskSet tasks;
  EarlyStopper stopper;  // the workloads' early_stop rules, fed every evaluation
  Evals evals;           // every task's evaluations by step, as logged (the service's views)
  // A task ended early (its rule stopped it): re-plan at the next turn, not
  // an interval later, so its devices and the work it left are planned.
  bool replan_soon = false;

  const RunOptions& options() const { return options_; }
  double Now() const { return clock.Now(); }

  // --- Introspection (re-planning while training) ---
  double interval_s() const { return interval_s_; }
  double threshold_s() const { return threshold_s_; }
  void SetIntrospection(double interval_s, double threshold_s) {
    interval_s_ = interval_s;
    threshold_s_ = threshold_s;
  }
  // Re-planning settings with `time_limit_s`; each call gets its own seed.
  ReplanPolicy NextReplanPolicy(double time_limit_s);

  // --- The plan followed ---
  const Plan& plan() const { return plan_; }
  // The per-device queues of the plan, for dispatch.
  PlanQueues& queues() { return queues_; }
  // The first plan's makespan (0 before there is one), the latest estimate
  // of the end, and how many times the run switched plans.
  double planned_makespan_s() const { return planned_makespan_s_; }
  double estimated_end_s() const { return estimated_end_s_; }
  int switches() const { return switches_; }
  // What making the first plan cost.
  double profiling_s() const { return profiling_s_; }
  double planning_s() const { return planning_s_; }
  // Follows the run's first plan (saved as plan-0.json and into the state).
  void FollowFirstPlan(const Plan& plan, double profiling_s, double planning_s);
  // Follows the plan the state saved, with its history (a resumed run, a
  // restarted service); none if it saved none.
  void RestorePlan();
  // Follows `next` from now on (saved as plan-<switches>.json); the first
  // plan of a run that had none (the service's first arrivals).
  void AdoptPlan(const Plan& next);
  // Follows the current plan re-timed (a kept re-plan's: the same tasks in
  // the same order, on other devices of their nodes): not a switch, the
  // plan's baselines kept; saved into the state for a resume.
  void FollowRetimed(Plan retimed);
  // The plan followed without these tasks (they left the run).
  void DropFromPlan(const std::set<std::string>& names);
  void SetEstimatedEnd(double end_s) { estimated_end_s_ = end_s; }
  // Rebuilds the dispatch queues from the plan followed.
  void Requeue();

  // --- Tasks ---
  int NumTasks() const { return tasks.size(); }
  const WorkloadTask& WorkloadTaskOf(int j) const { return tasks.WorkloadTaskOf(j); }
  long Steps(int j) const { return WorkloadTaskOf(j).steps; }
  // The task's folder under tasks/, by workload task index.
  std::string TaskDir(int workload_task) const;
  std::string TaskDirOf(int j) const { return TaskDir(tasks.WorkloadIndexOf(j)); }
  bool Running(int j) const;
  bool Done(int j) const;
  bool AllDone() const;
  // The task with where it runs or last ran.
  events::TaskPlace Where(int j) const;
  // Saves task j's record, with where it runs or last ran.
  void SaveTask(int j);
  // How far task j is at `step` (events' step and done).
  events::Progress ProgressAt(int j, long step) const {
    return {Steps(j) > 0 ? static_cast<double>(step) / static_cast<double>(Steps(j)) : 0.0, step};
  }
  // The problem again after the workload's tasks and the profile changed
  // (TaskSet::Rebuild); the profile is saved and each new task's record.
  void RebuildTasks();
  // The profile's source for messages: --profile's file or the run's.
  std::string ProfileSource() const;
  // Saves the profile into the state and as profile.csv.
  void SaveProfile();
  // The profile saved (its CSV text and where it came from for messages),
  // or nothing if none was.
  std::optional<std::pair<std::string, std::string>> SavedProfile();
  // The step of engine task j's newest good checkpoint (0: none), as its
  // worker will load it (protocol/checkpoint_files.h), once no worker of it
  // runs: leftovers of interrupted writes are removed, and each damaged
  // checkpoint skipped is set aside and logged (checkpoint_skipped).
  long NewestCheckpoint(int j);

  // --- Events ---
  // Logs the event, then tells the listener (saturn serve streams them).
  void Emit(const Event& event);
  void SetEventListener(std::function<void(const Event&)> listener) {
    on_event_ = std::move(listener);
  }

 private:
  void SavePlan(int index);

  RunOptions options_;
  double interval_s_ = 0.0;
  double threshold_s_ = 0.0;
  Plan plan_;
  PlanQueues queues_;
  double planned_makespan_s_ = 0.0;
  double estimated_end_s_ = 0.0;
  double profiling_s_ = 0.0;
  double planning_s_ = 0.0;
  int switches_ = 0;
  int replans_ = 0;
  std::function<void(const Event&)> on_event_;
};

}  // namespace saturn
