#include "contracts/event_kinds.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace saturn::events {
namespace {

using nlohmann::json;

bool Listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Every event is made here: its extra fields must be the kind's (FieldsOf),
// so the table and the functions below cannot drift apart.
Event Make(double t, EventKind kind, const TaskPlace* at, json extra) {
  const EventFields& fields = FieldsOf(kind);
  for (const std::string& name : fields.fields) {
    if (!extra.contains(name)) throw std::logic_error("event field missing: " + name);
  }
  for (const auto& [name, value] : extra.items()) {
    if (!Listed(fields.fields, name) && !Listed(fields.run_only, name)) {
      throw std::logic_error("event field not in its kind's list: " + name);
    }
  }
  Event e;
  e.t = t;
  e.kind = kind;
  e.extra = std::move(extra);
  if (at != nullptr && fields.task) {
    e.task = at->task;
    if (fields.place) {
      e.technique = at->technique;
      e.gpus = at->gpus;
      e.node = at->node;
      e.gpu_ids = at->gpu_ids;
    }
  }
  return e;
}

Event Named(double t, EventKind kind, const std::string& task, json extra) {
  TaskPlace at{task, "", 0, "", {}};
  return Make(t, kind, &at, std::move(extra));
}

// The step where a run counts them.
void AddStep(json& extra, const char* field, long step) {
  if (step >= 0) extra[field] = step;
}

const char* WhyName(SwitchWhy why) {
  switch (why) {
    case SwitchWhy::kIntrospection:
      return "introspection";
    case SwitchWhy::kArrivals:
      return "arrivals";
    case SwitchWhy::kOtherNodes:
      return "other nodes";
  }
  return "";
}

}  // namespace

Event FirstPlan(double t, const Plan& plan, double planning_s, double profiling_s) {
  json extra = {{"makespan_s", plan.makespan_s}, {"solver", plan.solver}, {"status", plan.status}};
  if (planning_s >= 0) extra["planning_s"] = planning_s;
  if (profiling_s >= 0) extra["profiling_s"] = profiling_s;
  return Make(t, EventKind::kPlan, nullptr, std::move(extra));
}

Event PlanSwitched(double t, SwitchWhy why, double old_end_s, double new_end_s,
                   const std::vector<std::string>& preempted,
                   const std::vector<std::string>& arrived) {
  return Make(t, EventKind::kPlanSwitched, nullptr,
              {{"why", WhyName(why)},
               {"old_end_s", old_end_s},
               {"new_end_s", new_end_s},
               {"preempted", preempted},
               {"arrived", arrived}});
}

Event Resumed(double t) {
  return Make(t, EventKind::kResumed, nullptr, json::object());
}

Event RunInterrupted(double t) {
  return Make(t, EventKind::kRunInterrupted, nullptr, json::object());
}

Event RunFinished(double t, int finished, int failed, double makespan_s) {
  return Make(t, EventKind::kRunFinished, nullptr,
              {{"finished", finished}, {"failed", failed}, {"makespan_s", makespan_s}});
}

Event TaskArrived(double t, const std::string& task, int configurations) {
  return Named(t, EventKind::kTaskArrived, task, {{"configurations", configurations}});
}

Event TaskStarted(double t, const TaskPlace& at, Progress from) {
  json extra = {{"done", from.done}};
  AddStep(extra, "step", from.step);
  return Make(t, EventKind::kTaskStarted, &at, std::move(extra));
}

Event TaskEvaluated(double t, const TaskPlace& at, const EvalPoint& e, double seconds) {
  json extra = EvalPointToJson(e);
  extra["eval_s"] = seconds;
  return Make(t, EventKind::kTaskEvaluated, &at, std::move(extra));
}

std::optional<EvalPoint> EvalPointOf(const Event& e) {
  if (e.kind != EventKind::kTaskEvaluated || !e.extra.contains("step") ||
      !e.extra.contains("eval_loss"))
    return std::nullopt;
  auto number = [&](const char* key, double absent) {
    if (!e.extra.contains(key)) return absent;
    return e.extra[key].is_number() ? e.extra[key].get<double>() : NAN;
  };
  return EvalPoint{e.extra["step"].get<long>(), number("eval_loss", 0.0),
                   number("eval_accuracy", -1.0), number("eval_loss_se", -1.0),
                   number("eval_accuracy_se", -1.0)};
}

Event TaskPreempted(double t, const TaskPlace& at, Progress at_stop) {
  json extra = {{"reason", "preempted"}, {"done", at_stop.done}};
  AddStep(extra, "step", at_stop.step);
  return Make(t, EventKind::kTaskStopped, &at, std::move(extra));
}

Event TaskFinished(double t, const TaskPlace& at, long steps, double loss) {
  json extra = json::object();
  AddStep(extra, "steps", steps);
  if (steps >= 0) extra["loss"] = loss;
  return Make(t, EventKind::kTaskFinished, &at, std::move(extra));
}

Event TaskFailed(double t, const TaskPlace& at, const std::string& error, int attempt, bool gave_up,
                 long step) {
  json extra = {{"error", error}, {"attempt", attempt}, {"gave_up", gave_up}};
  AddStep(extra, "step", step);
  return Make(t, EventKind::kTaskFailed, &at, std::move(extra));
}

Event TaskCancelled(double t, const TaskPlace& at, long step) {
  json extra = json::object();
  AddStep(extra, "step", step);
  return Make(t, EventKind::kTaskCancelled, &at, std::move(extra));
}

Event TaskEarlyStopped(double t, const TaskPlace& at, const std::string& rule,
                       const std::string& metric, double value, long eval_step, long step) {
  json extra = {{"rule", rule}, {"metric", metric}, {"value", value}, {"eval_step", eval_step}};
  AddStep(extra, "step", step);
  return Make(t, EventKind::kTaskEarlyStopped, &at, std::move(extra));
}

Event CheckpointSkipped(double t, const std::string& task, long step, const std::string& problem,
                        long from_step) {
  return Named(t, EventKind::kCheckpointSkipped, task,
               {{"step", step}, {"problem", problem}, {"from_step", from_step}});
}

Event TaskProgress(double t, const std::string& task, long step, long steps, double loss) {
  return Named(t, EventKind::kProgress, task, {{"step", step}, {"steps", steps}, {"loss", loss}});
}

}  // namespace saturn::events
