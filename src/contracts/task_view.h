// Where a task stands, in one vocabulary for every part that shows or keeps
// it: one status enum with one set of words, and one record of the facts
// (TaskState) that the executor's durable state, the service's views, the
// run report and the simulator's results all build on, each adding only
// what is its own (a checkpoint step, an ETA, a loss curve, busy time).
//
// A task's life: submitted (stored, waiting to be profiled) -> profiling ->
// queued (profiled and planned, waiting for its devices) -> running ->
// ended: finished, failed (its error says why), cancelled, or stopped (by
// the workload's early-stopping rule: its checkpoint and curves are kept). A task of
// `saturn run` starts queued (the run profiles before anything else).
//
//   TaskView v;  v.name = "a"; v.status = TaskStatus::kRunning;
//   nlohmann::json j = TaskViewToJson(v);       // Contract 6's Task
//   TaskStatusFromString("waiting");            // kQueued: runs before 2026-12
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

enum class TaskStatus {
  kSubmitted,
  kProfiling,
  kQueued,
  kRunning,
  kFinished,
  kFailed,
  kCancelled,
  kStopped,  // ended early by the workload's early_stop rule (not a failure)
};

// The status's word: "submitted", "profiling", "queued", "running",
// "finished", "failed", "cancelled", "stopped" (the state, report.json, the
// API).
std::string_view ToString(TaskStatus status);
// std::nullopt for a word that is not a status. "waiting", the word run
// states and reports written before the lifecycle had its stages, is queued.
std::optional<TaskStatus> TaskStatusFromString(std::string_view word);
// Finished, failed, cancelled or stopped: nothing more will happen to it.
bool IsEnded(TaskStatus status);

// The facts about a task that every view of it shares.
struct TaskState {
  std::string name;
  TaskStatus status = TaskStatus::kQueued;
  std::string technique;  // where it runs or last ran ("" if never)
  int gpus = 0;
  std::string node;
  std::vector<int> gpu_ids;
  long steps_done = 0;
  int attempts = 0;  // workers started for it: the first, relaunches, retries
  int failures = 0;  // of those, the ones that failed
  std::string error;
  double final_loss = 0.0;
  double start_s = -1.0;  // first start on the run clock (-1: never started)
  double end_s = -1.0;    // when it ended (-1: not ended)
};

// One evaluation on held-out data (a task_evaluated event).
struct EvalPoint {
  long step = 0;
  double loss = 0.0;
  double accuracy = -1.0;     // < 0: none
  double loss_se = -1.0;      // the loss's standard error over its batches; < 0: unknown
  double accuracy_se = -1.0;  // the accuracy's, likewise
};

// Contract 6's evaluation: {"step", "eval_loss"[, "eval_loss_se"][,
// "eval_accuracy"][, "eval_accuracy_se"]}.
nlohmann::json EvalPointToJson(const EvalPoint& e);

// A task as `saturn serve` shows it (Contract 6's Task): its state, and
// what the service knows beside it; unknown values are null.
struct TaskView : TaskState {
  std::optional<long> steps;
  std::optional<double> loss;  // the latest reported
  std::optional<double> eta_s;
  std::optional<double> planned_start_s;
  std::optional<double> submitted_s;
  bool placed = false;  // technique, gpus, node known (where it runs, ran or is planned)
  // The pack it trains, trained or is planned to train in ("" alone).
  std::string pack;
  // The values its sweep varied and its search drew, by dotted path
  // (report/hyperparameters.h); {} for none.
  nlohmann::json hyperparameters = nlohmann::json::object();
  std::optional<EvalPoint> eval;  // its latest evaluation
};

// Contract 6's Task: {"id", "status", "technique", "gpus", "node",
// "gpu_ids", "steps_done", "steps", "eta_s", "planned_start_s", "loss",
// "final_loss", "attempts", "failures", "submitted_s", "error",
// "hyperparameters", "eval"}, and "pack" for a task in a pack.
nlohmann::json TaskViewToJson(const TaskView& view);

}  // namespace saturn
