#include "contracts/task_view.h"

namespace saturn {
namespace {

constexpr TaskStatus kAll[] = {TaskStatus::kSubmitted, TaskStatus::kProfiling, TaskStatus::kQueued,
                               TaskStatus::kRunning,   TaskStatus::kFinished,  TaskStatus::kFailed,
                               TaskStatus::kCancelled, TaskStatus::kStopped};

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string_view ToString(TaskStatus status) {
  switch (status) {
    case TaskStatus::kSubmitted:
      return "submitted";
    case TaskStatus::kProfiling:
      return "profiling";
    case TaskStatus::kQueued:
      return "queued";
    case TaskStatus::kRunning:
      return "running";
    case TaskStatus::kFinished:
      return "finished";
    case TaskStatus::kFailed:
      return "failed";
    case TaskStatus::kCancelled:
      return "cancelled";
    case TaskStatus::kStopped:
      return "stopped";
  }
  return "queued";
}

std::optional<TaskStatus> TaskStatusFromString(std::string_view word) {
  if (word == "waiting") return TaskStatus::kQueued;
  for (TaskStatus s : kAll) {
    if (ToString(s) == word) return s;
  }
  return std::nullopt;
}

bool IsEnded(TaskStatus status) {
  return status == TaskStatus::kFinished || status == TaskStatus::kFailed ||
         status == TaskStatus::kCancelled || status == TaskStatus::kStopped;
}

nlohmann::json TaskViewToJson(const TaskView& v) {
  using nlohmann::json;
  bool finished = v.status == TaskStatus::kFinished;
  json out = {{"id", v.name},
              {"status", std::string(ToString(v.status))},
              {"technique", v.placed ? json(v.technique) : json()},
              {"gpus", v.placed ? json(v.gpus) : json()},
              {"node", v.placed ? json(v.node) : json()},
              {"gpu_ids", v.placed ? json(v.gpu_ids) : json::array()},
              {"steps_done", v.steps_done},
              {"steps", OrNull(v.steps)},
              {"eta_s", OrNull(v.eta_s)},
              {"planned_start_s", OrNull(v.planned_start_s)},
              {"loss", OrNull(v.loss)},
              {"final_loss", finished ? json(v.final_loss) : json()},
              {"attempts", v.attempts},
              {"failures", v.failures},
              {"submitted_s", OrNull(v.submitted_s)},
              {"error", v.error}};
  out["hyperparameters"] = v.hyperparameters;
  out["eval"] = v.eval ? EvalPointToJson(*v.eval) : json();
  if (!v.pack.empty()) out["pack"] = v.pack;
  return out;
}

nlohmann::json EvalPointToJson(const EvalPoint& e) {
  nlohmann::json out = {{"step", e.step}, {"eval_loss", e.loss}};
  if (e.loss_se >= 0) out["eval_loss_se"] = e.loss_se;
  if (e.accuracy >= 0) out["eval_accuracy"] = e.accuracy;
  if (e.accuracy_se >= 0) out["eval_accuracy_se"] = e.accuracy_se;
  return out;
}

}  // namespace saturn
