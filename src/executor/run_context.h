// What the parts of `saturn run` share (executor.h describes the whole): the
// run's options, its clock, the workload and its problem, the durable state,
// and where each task stands. Set up by run_setup.h; the dispatcher starts
// and watches workers (dispatcher.h), the re-planner switches plans
// (replanner.h), and progress.h reads it for re-plans, progress lines and the
// report.
//
//   RunContext run(options, clock);
//   SetUpRun(run);
//   run.Emit(events::Resumed(run.Now()));
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "executor/executor.h"
#include "executor/placements.h"
#include "executor/run_state.h"
#include "launch/backend.h"
#include "planner/problem.h"
#include "replan/dispatch.h"
#include "spec/event_kinds.h"
#include "spec/plan.h"
#include "spec/profile.h"
#include "spec/workload.h"

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

// One task of the run as it stands; `record` is what the state keeps
// (where it runs is the run's Placements; SaveTask copies it into the record).
struct LiveTask {
  TaskRecord record;
  long step = 0;  // steps done (last report)
  std::deque<double> recent_step_s;
  double last_loss = 0.0;
  std::optional<Process> process;
  bool stopping = false;
  bool cancelling = false;  // stopping to be cancelled, not to move
  double stop_requested = 0.0;
};

struct RunContext {
  RunContext(const RunOptions& o, const Clock& clock) : options(o), clock(clock) {}

  RunOptions options;
  RunClock clock;
  std::string run_dir;
  Workload workload;
  std::optional<RunState> state;
  std::unique_ptr<LaunchBackend> backend;
  std::string worker;
  ProfileTable profile;
  Problem problem;
  std::vector<int> workload_index;  // problem task j is workload task workload_index[j]
  std::vector<LiveTask> tasks;      // per problem task
  // Where each task runs and who holds each device (tasks, or profiling
  // trials of arrivals): the one record of placement.
  Placements placements;
  PlanQueues queues;
  Plan plan;
  double planned_makespan_s = 0.0;
  double estimated_end_s = 0.0;
  // Introspection, set up by SetUpRun (--interval/--threshold or auto,
  // common/defaults.h) or by the service.
  double interval_s = 0.0;
  double threshold_s = 0.0;
  double profiling_s = 0.0;
  double planning_s = 0.0;
  int switches = 0;
  int replans = 0;
  // Counts changes of the task set (arrivals): a re-plan solved for an older
  // set is dropped.
  int task_set_version = 0;
  // Told every event after it is logged (saturn serve streams them).
  std::function<void(const Event&)> on_event;

  double Now() const { return clock.Now(); }
  int NumTasks() const { return problem.NumTasks(); }
  const WorkloadTask& WorkloadTaskOf(int j) const { return workload.tasks[workload_index[j]]; }
  long Steps(int j) const { return WorkloadTaskOf(j).steps; }
  // The task's folder under tasks/, by workload task index.
  std::string TaskDir(int workload_task) const;
  std::string TaskDirOf(int j) const { return TaskDir(workload_index[j]); }
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
  void Emit(const Event& event) {
    state->Append(event);
    if (on_event) on_event(event);
  }
  // Writes the plan followed as plan-<index>.json and into the state.
  void SavePlan(int index);
  // Follows `next` from now on (saved as plan-<switches>.json).
  void AdoptPlan(const Plan& next);
  // Rebuilds the dispatch queues from the current plan.
  void Requeue();
  // Saves `profile` into the state and as profile.csv.
  void SaveProfile();
  // The profile saved (its CSV text and where it came from for messages),
  // or nothing if none was.
  std::optional<std::pair<std::string, std::string>> SavedProfile();
  // The step of engine task j's newest good checkpoint (0: none), as its
  // worker will load it (protocol/checkpoint_files.h), once no worker of it
  // runs: leftovers of interrupted writes are removed, and each damaged
  // checkpoint skipped is set aside and logged (checkpoint_skipped).
  long NewestCheckpoint(int j);
};

}  // namespace saturn
