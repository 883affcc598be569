// report.html's task table, a row per task (status, where it ran and why,
// its hyper-parameters, losses, evaluation, attempts, disk, error), and the
// per-task facts report.json shares with it.
//
//   std::string html = TaskTableHtml(in, rows, evals, best_of, colors);
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "report/best.h"
#include "report/run_report.h"
#include "report/svg.h"

namespace saturn {

// Whether the cluster names its nodes' GPU types: then each task says the
// type it ran on ("gpu_type"; "" where it never ran).
bool NamesTypes(const Cluster& cluster);

// The GPU type of the node a task ran on ("" if it never ran or the node
// has none).
std::string TypeOf(const Cluster& cluster, const RunReportTask& t);

// Whether `t` is its sweep's best (`best_of`: sweep -> task).
bool IsBest(const RunReportTask& t, const std::map<std::string, std::string>& best_of);

// The hyper-parameters' columns of `tasks`: every swept field of any, in the
// order the tasks name them; headed by the short key the task names use
// ("lr"), or the whole path where two fields share one.
std::vector<std::pair<std::string, std::string>> HyperParameterColumns(
    const std::vector<const RunReportTask*>& tasks);

// A task's value in a hyper-parameter column: the one its sweep gave it,
// else its own setting as written (a task of no sweep, or of a sweep that
// varied other fields); null where it has none.
nlohmann::json ColumnValue(const RunReportTask& t, const std::string& path);

// "<h2>Tasks</h2>" and the table of `rows` (tasks of `in`; none: no table),
// evaluation columns where `evals` has any, accuracy where any has one; then
// the line on the disk all the run's tasks' folders take.
std::string TaskTableHtml(const RunReportInput& in, const std::vector<const RunReportTask*>& rows,
                          const Evals& evals, const std::map<std::string, std::string>& best_of,
                          const std::map<std::string, TaskColor>& colors);

}  // namespace saturn
