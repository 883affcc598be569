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

namespace saturn {

std::vector<TaskProgress> Snapshot(const RunContext& run);
void PrintProgress(const RunContext& run);
RunSummary Summarize(const RunContext& run, bool interrupted);
// Writes report.json and report.html into the run directory.
// Returns report.json's content.
nlohmann::json WriteReport(RunContext& run, const RunSummary& summary);

}  // namespace saturn
