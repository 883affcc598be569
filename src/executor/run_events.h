// The events `saturn run` writes to a run's event log (events.jsonl), one
// named helper per kind, so every event of a kind has the same fields. The
// format is the trace the simulator writes too (spec/events.h).
//
//   state.Append(events::TaskStarted(now, where, /*step=*/40));
//   state.Append(events::RunFinished(now, finished, failed, makespan_s));
#pragma once

#include <string>
#include <vector>

#include "spec/events.h"
#include "spec/plan.h"

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

// The first plan, at run time 0.
Event FirstPlan(const Plan& plan, double profiling_s, double planning_s);
// A re-plan switched plans, pre-empting `preempted`.
Event PlanSwitched(double t, double old_end_s, double new_end_s,
                   const std::vector<std::string>& preempted);
// A resumed run got other nodes; the rest was planned for them.
Event PlanSwitchedForOtherNodes(double t, double new_end_s);
Event Resumed(double t);
Event RunInterrupted(double t);
Event RunFinished(double t, int finished, int failed, double makespan_s);

Event TaskStarted(double t, const TaskPlace& at, long from_step);
Event TaskFinished(double t, const TaskPlace& at, long steps, double loss);
// Evaluated on held-out data after `step` steps (accuracy < 0: none).
Event TaskEvaluated(double t, const TaskPlace& at, long step, double loss, double accuracy,
                    double seconds);
// Pre-empted (a plan switch or an interrupt) with a checkpoint at `step`.
Event TaskPreempted(double t, const TaskPlace& at, long step);
Event TaskFailed(double t, const TaskPlace& at, const std::string& error, int attempt, bool gave_up,
                 long step);
// A damaged checkpoint of `task` at `step` (why: `problem`) was set aside;
// the task continues from `from_step`.
Event CheckpointSkipped(double t, const std::string& task, long step, const std::string& problem,
                        long from_step);
// Cancelled (saturn cancel), keeping its checkpoint at `step`.
Event TaskCancelled(double t, const TaskPlace& at, long step);
// Joined a run that was already going (saturn serve, or a resume whose
// workload added it), with its profiled configurations.
Event TaskArrived(double t, const std::string& task, int configurations);
// A re-plan that took arrivals in.
Event PlanExtended(double t, const std::vector<std::string>& arrived, double new_end_s,
                   const std::vector<std::string>& preempted);

}  // namespace saturn::events
