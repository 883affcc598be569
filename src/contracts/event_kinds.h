// The events of a run's trace, one function per kind, used by the executor
// (saturn run, saturn serve) and the simulator alike: each kind's fields are
// written here only, and are the ones FieldsOf (spec/events.h) lists.
//
//   state.Append(events::TaskStarted(now, where, {.done = 0.4, .step = 40}));
//   trace.push_back(events::TaskStopped(now, where, {.done = 0.4}));  // simulator
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/task_view.h"

namespace saturn::events {

// A task and the configuration it runs in; only the name when it has not
// been placed yet.
struct TaskPlace {
  std::string task;
  std::string technique;
  int gpus = 0;
  std::string node;
  std::vector<int> gpu_ids;
};

// How far a task is: the fraction of its work done and, for a run's tasks,
// the step (-1: the simulator's tasks are fractions of work, without steps).
struct Progress {
  double done = 0.0;
  long step = -1;
};

// Why a plan was switched (plan_switched's "why").
enum class SwitchWhy { kIntrospection, kArrivals, kOtherNodes };

// The first plan; the seconds spent planning and profiling (a run's; the
// simulator's traces leave them out, so that a seed gives the same trace).
Event FirstPlan(double t, const Plan& plan, double planning_s = -1.0, double profiling_s = -1.0);
// A re-plan switched plans, pre-empting `preempted`; `arrived`: the tasks it
// took in (why kArrivals).
Event PlanSwitched(double t, SwitchWhy why, double old_end_s, double new_end_s,
                   const std::vector<std::string>& preempted,
                   const std::vector<std::string>& arrived = {});
Event Resumed(double t);
Event RunInterrupted(double t);
Event RunFinished(double t, int finished, int failed, double makespan_s);

// Joined a run that was already going, with its profiled configurations.
Event TaskArrived(double t, const std::string& task, int configurations);
Event TaskStarted(double t, const TaskPlace& at, Progress from);
// Evaluated on held-out data after e.step steps (accuracy < 0: none; a
// standard error < 0: none, one batch), in `seconds`.
Event TaskEvaluated(double t, const TaskPlace& at, const EvalPoint& e, double seconds);
// The evaluation a task_evaluated event logged; nullopt for another kind or
// one without its step and loss. JSON has no NaN: a diverged evaluation's
// null metric reads as NaN.
std::optional<EvalPoint> EvalPointOf(const Event& e);
// Pre-empted (a plan switch or an interrupt) with a checkpoint at `at_stop`.
Event TaskPreempted(double t, const TaskPlace& at, Progress at_stop);
// `steps` and `loss` < 0: not known (the simulator).
Event TaskFinished(double t, const TaskPlace& at, long steps = -1, double loss = -1.0);
Event TaskFailed(double t, const TaskPlace& at, const std::string& error, int attempt, bool gave_up,
                 long step);
// Cancelled (saturn cancel), keeping its checkpoint at `step`.
Event TaskCancelled(double t, const TaskPlace& at, long step);
// Stopped by the workload's early-stopping `rule` after the evaluation at
// `eval_step`, whose `metric` was `value`; its checkpoint at `step` (a few
// steps later: the worker finished the step it was in) is kept.
Event TaskEarlyStopped(double t, const TaskPlace& at, const std::string& rule,
                       const std::string& metric, double value, long eval_step, long step);
// A damaged checkpoint of `task` at `step` (why: `problem`) was set aside;
// the task continues from `from_step`.
Event CheckpointSkipped(double t, const std::string& task, long step, const std::string& problem,
                        long from_step);
// saturn serve's stream: a task's latest step of `steps`.
Event TaskProgress(double t, const std::string& task, long step, long steps, double loss);

}  // namespace saturn::events
