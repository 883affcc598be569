#include "executor/run_events.h"

#include <utility>

namespace saturn::events {
namespace {

using nlohmann::json;

Event RunEvent(double t, const char* kind, json extra = json::object()) {
  Event e;
  e.t = t;
  e.kind = kind;
  e.extra = std::move(extra);
  return e;
}

Event TaskEvent(double t, const char* kind, const TaskPlace& at, json extra) {
  Event e = RunEvent(t, kind, std::move(extra));
  e.task = at.task;
  e.technique = at.technique;
  e.gpus = at.gpus;
  e.node = at.node;
  e.gpu_ids = at.gpu_ids;
  return e;
}

}  // namespace

Event FirstPlan(const Plan& plan, double profiling_s, double planning_s) {
  return RunEvent(0.0, "plan",
                  {{"makespan_s", plan.makespan_s},
                   {"solver", plan.solver},
                   {"status", plan.status},
                   {"profiling_s", profiling_s},
                   {"planning_s", planning_s}});
}

Event PlanSwitched(double t, double old_end_s, double new_end_s,
                   const std::vector<std::string>& preempted) {
  return RunEvent(t, "plan_switched",
                  {{"old_end_s", old_end_s}, {"new_end_s", new_end_s}, {"preempted", preempted}});
}

Event PlanSwitchedForOtherNodes(double t, double new_end_s) {
  return RunEvent(t, "plan_switched",
                  {{"new_end_s", new_end_s}, {"preempted", json::array()}, {"why", "other nodes"}});
}

Event Resumed(double t) {
  return RunEvent(t, "resumed");
}

Event RunInterrupted(double t) {
  return RunEvent(t, "run_interrupted");
}

Event RunFinished(double t, int finished, int failed, double makespan_s) {
  return RunEvent(t, "run_finished",
                  {{"finished", finished}, {"failed", failed}, {"makespan_s", makespan_s}});
}

Event TaskStarted(double t, const TaskPlace& at, long from_step) {
  return TaskEvent(t, "task_started", at, {{"step", from_step}});
}

Event TaskFinished(double t, const TaskPlace& at, long steps, double loss) {
  return TaskEvent(t, "task_finished", at, {{"steps", steps}, {"loss", loss}});
}

Event TaskEvaluated(double t, const TaskPlace& at, long step, double loss, double accuracy,
                    double seconds) {
  json extra = {{"step", step}, {"eval_loss", loss}, {"eval_s", seconds}};
  if (accuracy >= 0) extra["eval_accuracy"] = accuracy;
  return TaskEvent(t, "task_evaluated", at, std::move(extra));
}

Event TaskPreempted(double t, const TaskPlace& at, long step) {
  return TaskEvent(t, "task_stopped", at, {{"reason", "preempted"}, {"step", step}});
}

Event TaskFailed(double t, const TaskPlace& at, const std::string& error, int attempt, bool gave_up,
                 long step) {
  return TaskEvent(t, "task_failed", at,
                   {{"error", error}, {"attempt", attempt}, {"gave_up", gave_up}, {"step", step}});
}

Event TaskCancelled(double t, const TaskPlace& at, long step) {
  return TaskEvent(t, "task_cancelled", at, {{"step", step}});
}

Event TaskArrived(double t, const std::string& task, int configurations) {
  return TaskEvent(t, "task_arrived", TaskPlace{task, "", 0, "", {}},
                   {{"configurations", configurations}});
}

Event PlanExtended(double t, const std::vector<std::string>& arrived, double new_end_s,
                   const std::vector<std::string>& preempted) {
  return RunEvent(t, "plan_switched",
                  {{"why", "arrivals"},
                   {"arrived", arrived},
                   {"new_end_s", new_end_s},
                   {"preempted", preempted}});
}

Event CheckpointSkipped(double t, const std::string& task, long step, const std::string& problem,
                        long from_step) {
  Event e = RunEvent(t, "checkpoint_skipped",
                     {{"step", step}, {"problem", problem}, {"from_step", from_step}});
  e.task = task;
  return e;
}

}  // namespace saturn::events
