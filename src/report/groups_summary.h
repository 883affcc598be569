// The report of a run's table tasks (docs/groups.md: one task per group of
// a table, its variants the group's sweep "<task>@<group>"), summarised so
// that 10,000 groups read at a glance: report.html's "Groups" section (a
// table of every group's tasks sortable by any column, a histogram of the
// groups' held-out losses, the slowest groups) and report.json's "groups".
//
// A group's held-out loss is its chosen task's final evaluation loss: its
// sweep's best (report/best.h) or its one task. A group's wall time is its
// tasks' (first start to end) summed; its steps likewise.
//
//   Evals evals = EvalsOf(in.events);
//   GroupsSummary groups = SummariseGroups(in.tasks, evals, best_of);
//   if (!groups.groups.empty()) report["groups"] = GroupsJson(groups);
//   html += GroupsHtml(groups);
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/best.h"
#include "report/loss_histogram.h"
#include "report/run_report.h"

namespace saturn {

// More table tasks than this and report.html summarises them: loss charts
// for the kChartedGroups groups of highest held-out loss only, the groups
// table in place of their rows in the task table, the Best models list
// without the groups' sweeps.
constexpr size_t kSummariseGroupTasksOver = 50;
constexpr size_t kChartedGroups = 6;
// The "slowest groups" list's length.
constexpr size_t kSlowestGroups = 10;

// A table task as the groups table shows it.
struct GroupTaskRow {
  const RunReportTask* task = nullptr;
  const EvalPoint* eval = nullptr;  // its final evaluation: held-out loss, accuracy
  bool best = false;                // its group's best of several
};

struct ReportGroup {
  std::string group;         // its value in the group_by column
  std::string sweep;         // "<task as written>@<group>"
  std::vector<size_t> rows;  // its tasks in GroupsSummary::rows
  bool has_eval_loss = false;
  double eval_loss = 0.0;  // its chosen task's held-out loss (may be NaN or inf)
  double wall_s = -1.0;    // its tasks' wall seconds summed; < 0: none ran
  long train_rows = 0;
  long steps = 0;  // its tasks' steps summed
};

struct GroupsSummary {
  std::vector<GroupTaskRow> rows;   // every table task, in the run's order
  std::vector<ReportGroup> groups;  // in the order of their first task
  bool summarised = false;          // more than kSummariseGroupTasksOver table tasks
  bool accuracy = false;            // some task's final evaluation has an accuracy
  LossHistogram histogram;          // the groups' finite held-out losses
  long without_eval_loss = 0;       // groups without a held-out loss
  long nonfinite_eval_loss = 0;     // groups whose held-out loss is NaN or infinite
  std::vector<size_t> slowest;      // groups, longest wall time first (at most kSlowestGroups)
};

// The table tasks of `tasks` (those with a group) by group; none: no groups.
GroupsSummary SummariseGroups(const std::vector<RunReportTask>& tasks, const Evals& evals,
                              const std::map<std::string, std::string>& best_of);

// report.json's "groups": {count, tasks, summarised, with_eval_loss,
// without_eval_loss, nonfinite_eval_loss, eval_loss_histogram: {scale,
// edges, counts}, slowest: [{group, sweep, wall_s, train_rows, steps}]}.
nlohmann::json GroupsJson(const GroupsSummary& s);

// The sweeps of the `n` groups of highest held-out loss (a NaN or infinite
// one highest), highest first; groups without one are left out.
std::vector<std::string> WorstGroupSweeps(const GroupsSummary& s, size_t n);

// report.html's "Groups" section: the histogram and the slowest groups side
// by side, then the table of every table task in a box that scrolls under
// its header, sorted by a click on a column's header (numbers as numbers,
// empty cells last; again: the other way; an arrow marks the column) by a
// few lines of script; its style in a <style> of its own. "" without groups.
std::string GroupsHtml(const GroupsSummary& s);

}  // namespace saturn
