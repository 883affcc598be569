// Gantt charts of plans and runs as standalone SVG: one row per GPU, grouped
// by node, one box per task (per contiguous run of its GPUs) labelled with
// task, technique and GPU count when it fits, and a hover tooltip always.
// A task on GPUs that are not next to each other (0, 1 and 7) is one task
// drawn in parts: each part carries the label and a connector joins them.
// Rows shrink as the cluster grows, so 100+ tasks on many nodes stay legible.
// Outline-only bars draw a second timeline (e.g. the plan, dashed, over the
// run's filled bars: drawn after them, so neither hides the other).
// Times in tooltips read as the terminal prints them (FormatDuration).
// A pack (several tasks training in one worker, PlanTask::pack) is one bar
// from its start to its last member's end, labelled with the pack, its
// member count and names; a tick marks each member that ends earlier, and
// the bar pales a step after each (fewer members left on the GPUs).
//
//   GanttChart chart = GanttFromPlan(plan, cluster, "Saturn plan");
//   std::string svg = RenderGanttSvg(chart);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "report/svg.h"

namespace saturn {

// A time inside a bar marked with a tick, e.g. where members of a pack end
// before the pack does: `detail` (its tooltip) says whose end; `fade` is the
// share of the bar's work gone from then on (0..1), drawn paler the more.
struct GanttMark {
  double t = 0.0;
  double fade = 0.0;
  std::string detail;
};

struct GanttBar {
  std::string node;
  std::vector<int> gpu_ids;
  double start = 0.0;
  double end = 0.0;
  std::string label;      // drawn inside the box when it fits
  std::string detail;     // tooltip
  std::string color_key;  // bars with the same key share a colour
  bool outline_only = false;
  std::vector<GanttMark> marks = {};  // in time order, inside (start, end)
  int members = 0;                    // a pack's member count; 0: one task
};

// The width of a chart's time axis in pixels (the SVG adds its margins).
constexpr double kGanttPlotWidth = 1100;

struct GanttChart {
  std::string title;
  std::string subtitle;
  std::vector<ClusterNode> nodes;
  std::vector<GanttBar> bars;
  double time_end = 0.0;  // 0: the largest bar end
  // Colours by color_key, e.g. a report's tasks in order so that its Gantt
  // and its loss charts agree; a key not here gets ColorFor(key).
  std::map<std::string, TaskColor> colors;
};

// "0.0s → 2h47m (2h47m)": a bar's time for its tooltip, both ends and the
// length in FormatDuration, as `saturn plan` and `saturn run` print times.
std::string GanttSpan(double start, double end);

// A bar per plan entry, coloured by the plan's order (PaletteColor); the
// members of a pack (the same pack, node, GPUs and start) share one bar.
GanttChart GanttFromPlan(const Plan& plan, const Cluster& cluster, const std::string& title);
// The bars of a run as it went (BusyIntervals, contracts/events.h): each
// task's time alone, and each launch of a pack (`pack_of`: task -> pack; its
// members' intervals overlapping on its devices) as one bar to its last
// member's end. A member's time alone, before or after its pack, is its own.
std::vector<GanttBar> GanttFromRun(std::vector<BusyInterval> busy,
                                   const std::map<std::string, std::string>& pack_of);
std::string RenderGanttSvg(const GanttChart& chart);

}  // namespace saturn
