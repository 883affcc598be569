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
//   RunReportInput in; ... (from the run's state and event log)
//   nlohmann::json report = WriteRunReport(in);
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/task_view.h"
#include "report/hyperparameters.h"

namespace saturn {

// A task as the report shows it: where it stands (contracts/task_view.h)
// and what the report draws beside it.
struct RunReportTask : TaskState {
  long steps = 0;
  std::vector<std::pair<long, double>> losses;  // (step, loss)
  // The name the task was written under: the tasks of one sweep share it
  // (the report names the best of each by final evaluation loss).
  std::string sweep;
  // The values its sweep varied (report/hyperparameters.h, SweptValues):
  // report.json's "hyperparameters" and a column each in the task table.
  HyperParameters hyperparameters;
  // Why it got its configuration, in a few words (planner/explain.h); "" if
  // it never ran.
  std::string why;
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

// Writes report.json and report.html into in.run_dir; returns the JSON.
nlohmann::json WriteRunReport(const RunReportInput& in);

}  // namespace saturn
