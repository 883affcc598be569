// Gantt charts of plans and runs as standalone SVG: one row per GPU, grouped
// by node, one box per task (per contiguous run of its GPUs) labelled with
// task, technique and GPU count when it fits, and a hover tooltip always.
// Rows shrink as the cluster grows, so 100+ tasks on many nodes stay legible.
// Outline-only bars draw a second timeline (e.g. planned under actual).
//
//   GanttChart chart = GanttFromPlan(plan, cluster, "Saturn plan");
//   std::string svg = RenderGanttSvg(chart);
#pragma once

#include <string>
#include <vector>

#include "spec/cluster.h"
#include "spec/plan.h"

namespace saturn {

struct GanttBar {
  std::string node;
  std::vector<int> gpu_ids;
  double start = 0.0;
  double end = 0.0;
  std::string label;      // drawn inside the box when it fits
  std::string detail;     // tooltip
  std::string color_key;  // bars with the same key share a colour
  bool outline_only = false;
};

struct GanttChart {
  std::string title;
  std::string subtitle;
  std::vector<ClusterNode> nodes;
  std::vector<GanttBar> bars;
  double time_end = 0.0;  // 0: the largest bar end
};

GanttChart GanttFromPlan(const Plan& plan, const Cluster& cluster, const std::string& title);
std::string RenderGanttSvg(const GanttChart& chart);

}  // namespace saturn
