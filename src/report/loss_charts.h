// A run's loss curves drawn to be compared: one chart per group of tasks
// (a sweep's tasks together; a task written alone has a chart of its own),
// one y-axis shared by every curve of a chart, each task in its own colour
// (the same as its Gantt bars: PaletteColor by its place in the report), its
// evaluation loss in that colour too, dashed with a marker at each
// evaluation, and a legend that names every task and says which curve is
// which. The dashboard's loss chart shares its axis the same way.
//
//   std::vector<LossSeries> series = ...;  // one per task, in report order
//   html += LossChartsHtml(series);        // an <svg> per group
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report/svg.h"

namespace saturn {

struct LossSeries {
  std::string task;
  std::string group;                           // tasks with the same group share a chart
  std::vector<std::pair<long, double>> train;  // (step, training loss)
  std::vector<std::pair<long, double>> eval;   // (step, evaluation loss)
  TaskColor color;
  std::string note;  // after the name in the legend, e.g. "best"
};

// The groups in order of their first task; each group's series in order.
std::vector<std::vector<const LossSeries*>> GroupLossSeries(const std::vector<LossSeries>& series);

// One SVG chart of a group, titled `title`.
std::string RenderLossChart(const std::string& title, const std::vector<const LossSeries*>& group);

// Every group's chart, titled by its sweep ("sweep mlp: 3 tasks") or, for a
// task alone, by its name; groups without a single point are named in one
// line after the charts ("No loss reported: late (cancelled).").
std::string LossChartsHtml(const std::vector<LossSeries>& series);

}  // namespace saturn
