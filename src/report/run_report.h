// The report of a run, written into its run directory when it ends:
// report.json (per task: configuration, start, end, steps, final loss,
// attempts and any error; makespan planned vs actual; plan switches) and
// report.html (Gantt of the actual timeline with the first plan's dashed
// over it, the loss
// curves with a chart per sweep (loss_charts.h), and the task table; each
// task in one colour throughout).
//
// Evaluation (tasks with `eval:`) comes from the event log's
// task_evaluated events: per task its evaluation curve ("eval_curve":
// [{step, loss, accuracy?}]), drawn dashed and marked over the training loss, and
// "final_eval_loss" (the evaluation after the last step; null until the
// task has finished). "best" names, for each sweep (the tasks written as
// one task), the task with the lowest final evaluation loss among those
// that have one.
//
// Contention: each task's measured wall seconds per step, over its runs that
// ended with a known step (started -> stopped or finished), against the
// profiled seconds per step of the configurations it ran in (the profile's
// runtime over its steps, launch and checkpoints included as a run's are):
// per task "slowdown_vs_profile" (null where it did not run or no
// configuration it ran in has a pace), and the run's
// "slowdown_vs_profile": {"median", "tasks", "warning"} (null where no task
// has one; "warning" is ContentionWarning's sentence from a median of
// kMarkedSlowdown up, else null), also said under the headline.
//
// Groups (docs/groups.md): a table task's "group" and "train_rows", and
// the run's "groups" (report/groups_summary.h: the count, the histogram of
// the groups' held-out losses, the slowest groups) where it has table
// tasks; report.html's "Groups" section, and from more than
// kSummariseGroupTasksOver table tasks the groups summarised: loss charts of
// the worst few groups only, no task-table row or best-models line per
// group. A Gantt of more than kMaxGanttBars bars merges those too narrow to
// read (report/gantt_merge.h).
//
// Disk: each task's "disk_bytes" (its task folder: checkpoints kept,
// model.pt, adapters.pt, ...; null where unknown), the run's "disk_bytes"
// (their sum), a column of the task table and a line under it.
//
//   RunReportInput in; ... (from the run's state and event log)
//   nlohmann::json report = WriteRunReport(in);
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/early_stop.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/task_view.h"
#include "report/hyperparameters.h"

namespace saturn {

// A configuration a task may run in, on a node, and its profiled seconds
// per step.
struct ProfiledPace {
  std::string technique;
  int gpus = 0;
  std::string node;
  double s_per_step = 0.0;
  // What a launch costs whatever its steps (start-up, loading, the last
  // checkpoint): a run of n steps is profiled at fixed_s + n x s_per_step.
  double fixed_s = 0.0;
};

// A task as the report shows it: where it stands (contracts/task_view.h)
// and what the report draws beside it.
struct RunReportTask : TaskState {
  long steps = 0;
  std::vector<std::pair<long, double>> losses;  // (step, loss)
  // The name the task was written under: the tasks of one sweep share it
  // (the report names the best of each by final evaluation loss).
  std::string sweep;
  // The values its sweep varied and its search drew (report/
  // hyperparameters.h, SweptValues): report.json's "hyperparameters" and a
  // column each in the task table.
  HyperParameters hyperparameters;
  // Its settings as written (WorkloadTask::spec): the task table shows a
  // task's own value in every hyper-parameter column, swept or not
  // (report.json's "hyperparameter_values").
  nlohmann::json settings = nlohmann::json::object();
  // What "best" means among its sweep's tasks (its workload's select:).
  SelectSpec select;
  // Its profiled paces (the configurations it may run in), for
  // "slowdown_vs_profile"; none: not known.
  std::vector<ProfiledPace> profiled;
  // Bytes of its task folder; < 0: not known.
  long long disk_bytes = -1;
  // Why it got its configuration, in a few words (planner/explain.h); "" if
  // it never ran.
  std::string why;
  // Its best evaluation's model, kept as it trained (protocol/best_model.h):
  // null, or {step, metric, mode, value} of tasks/<name>/best/.
  nlohmann::json best_model;
  // The pack it trained in last ("" alone): report.json's "pack"; the
  // actual Gantt chart draws a pack's members as one bar.
  std::string pack;
  // A table task's group (WorkloadTask::group; "" for any other task) and
  // its group's training rows (its spec's data.train_rows): report.json's
  // "group" and "train_rows", and the report's groups summary
  // (report/groups_summary.h).
  std::string group;
  long train_rows = 0;
};

struct RunReportInput {
  std::string workload;
  std::string run_dir;
  Cluster cluster;
  Plan first_plan;
  double makespan_s = 0.0;
  double profiling_s = 0.0;
  double planning_s = 0.0;
  std::vector<RunReportTask> tasks;
  std::vector<Event> events;
};

// From this median slowdown over tasks up, the report and `saturn run`'s
// summary warn that tasks ran markedly slower than profiled.
constexpr double kMarkedSlowdown = 1.5;

// Writes report.json and report.html into in.run_dir; returns the JSON.
nlohmann::json WriteRunReport(const RunReportInput& in);

}  // namespace saturn
