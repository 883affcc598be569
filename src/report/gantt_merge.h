// A Gantt of very many bars (10,000 groups of a table each trained alone,
// `--no-pack`) made readable and light: where a chart has more than
// kMaxGanttBars bars, each device lane's (a node's GPUs a bar is on; filled
// bars and outlines apart) runs of bars under kNarrowBarPx wide and under
// kMergeGapPx apart become one grey bar, "N tasks", whose tooltip names its
// first and last tasks and their span. Bars wide enough to read stay as
// they are; a chart of fewer bars is left alone.
//
//   GanttMerge merged = MergeNarrowBars(chart);
//   html += RenderGanttSvg(chart) + MergedBarsNote(merged);
#pragma once

#include <cstddef>
#include <string>

#include "report/gantt.h"

namespace saturn {

constexpr size_t kMaxGanttBars = 1000;
constexpr double kNarrowBarPx = 6, kMergeGapPx = 2;
// The colour key of a merged bar (its colour is set in the chart).
constexpr const char* kMergedBarKey = "merged bars";

struct GanttMerge {
  long before = 0;  // bars in the chart
  long merged = 0;  // of those, the ones merged
  long into = 0;    // the merged bars they became
};

GanttMerge MergeNarrowBars(GanttChart& chart, size_t max_bars = kMaxGanttBars);

// The line under a chart that says what was merged; "" if nothing was.
std::string MergedBarsNote(const GanttMerge& m);

}  // namespace saturn
