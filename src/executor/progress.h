// Progress and report input (part of `saturn run`, run.h): what the run
// knows about its tasks, read for a re-plan (measured progress and
// slowdowns), for the progress lines on stderr, and for the run's summary
// and report.json / report.html at the end.
//
//   std::vector<TaskProgress> now = Snapshot(run);   // for replan/replan.h
//   PrintProgress(run);
//   RunSummary s = Summarize(run, interrupted);
//   if (!s.interrupted) nlohmann::json report = WriteReport(run, s);
#pragma once

#include <vector>

#include "executor/run.h"
#include "executor/run_context.h"
#include "replan/replan.h"
#include "report/run_report.h"

namespace saturn {

std::vector<TaskProgress> Snapshot(const RunContext& run);
// Whether a pack's members (task indices) all stand at one step beyond 0
// with their own checkpoint there: members that trained apart (a pack
// split, or stopped after members left) then start as one pack from
// those (Dispatcher::StartPack; the worker makes the pack's checkpoint).
bool MembersStandTogether(const RunContext& run, const std::vector<int>& members);
void PrintProgress(const RunContext& run);
RunSummary Summarize(const RunContext& run, bool interrupted);
// Writes report.json and report.html into the run directory (a service's:
// its state so far, its running tasks ending now). Returns report.json's
// content.
nlohmann::json WriteReport(RunContext& run, const RunSummary& summary);
// The number of the run's first plan file (plan-<n>.json): 0 for a run, a
// service's first arrivals' for a service; -1 before any.
int FirstPlanIndex(const RunContext& run);
// Each task's swept and sampled values (report/hyperparameters.h), in the
// run's task order.
std::vector<HyperParameters> HyperParametersOf(const RunContext& run);
// The tasks as the report names them, with their state (for the best of
// each sweep, report/best.h), and their kept best models (read from their
// folders) where `best_models`.
std::vector<RunReportTask> ReportTasks(const RunContext& run, bool best_models = true);
// The run's task indices in the order the report and `saturn status` list
// them: each early-stopping group's tasks in the order written (the reader
// shuffles them: early_stop's order), in the places the group holds; every
// other task where it is.
std::vector<size_t> WrittenOrder(const RunContext& run);
// `items`, one per task in the run's order, in WrittenOrder.
template <typename T>
std::vector<T> InWrittenOrder(const RunContext& run, std::vector<T> items) {
  std::vector<T> listed;
  listed.reserve(items.size());
  for (size_t j : WrittenOrder(run))
    listed.push_back(std::move(items[j]));
  return listed;
}

}  // namespace saturn
