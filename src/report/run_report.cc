#include "report/run_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/format.h"
#include "common/fs.h"
#include "report/gantt.h"
#include "report/svg.h"

namespace saturn {
namespace {

using nlohmann::json;

// A small line chart of one loss curve.
std::string LossChart(const std::string& task, const std::vector<std::pair<long, double>>& points) {
  const double w = 340, h = 190, left = 48, right = 10, top = 26, bottom = 30;
  SvgWriter svg(w, h);
  svg.Text(left, 16, task, 12, "start", "font-weight=\"bold\"");
  if (points.empty()) {
    svg.Text(w / 2, h / 2, "no loss reported", 11, "middle", "fill=\"#888\"");
    return svg.Finish();
  }
  double max_step = std::max<double>(1, points.back().first);
  double lo = points[0].second, hi = points[0].second;
  for (const auto& [s, l] : points) {
    lo = std::min(lo, l);
    hi = std::max(hi, l);
  }
  if (hi - lo < 1e-12) hi = lo + 1;
  auto x = [&](double s) { return left + (w - left - right) * s / max_step; };
  auto y = [&](double l) { return top + (h - top - bottom) * (1 - (l - lo) / (hi - lo)); };
  svg.Line(left, top, left, h - bottom, "#999");
  svg.Line(left, h - bottom, w - right, h - bottom, "#999");
  svg.Text(left - 4, y(hi) + 4, FormatFixed(hi, 3), 9, "end", "fill=\"#555\"");
  svg.Text(left - 4, y(lo) + 4, FormatFixed(lo, 3), 9, "end", "fill=\"#555\"");
  svg.Text(w - right, h - bottom + 14, "step " + std::to_string(static_cast<long>(max_step)), 9,
           "end", "fill=\"#555\"");
  std::string pts;
  for (const auto& [s, l] : points)
    pts += FormatFixed(x(s), 1) + "," + FormatFixed(y(l), 1) + " ";
  svg.Polyline(pts, ColorFor(task), 1.8);
  return svg.Finish();
}

}  // namespace

json WriteRunReport(const RunReportInput& in) {
  int switches = 0;
  for (const Event& e : in.events)
    switches += e.kind == "plan_switched";
  double ratio = in.first_plan.makespan_s > 0 ? in.makespan_s / in.first_plan.makespan_s : 0.0;
  json report = {{"workload", in.workload},       {"run_dir", in.run_dir},
                 {"makespan_s", in.makespan_s},   {"planned_makespan_s", in.first_plan.makespan_s},
                 {"actual_over_planned", ratio},  {"plan_switches", switches},
                 {"profiling_s", in.profiling_s}, {"planning_s", in.planning_s},
                 {"tasks", json::array()}};
  for (const RunReportTask& t : in.tasks) {
    json losses = json::array();
    for (const auto& [s, l] : t.losses)
      losses.push_back({s, l});
    report["tasks"].push_back({{"task", t.name},
                               {"status", t.status},
                               {"technique", t.technique},
                               {"gpus", t.gpus},
                               {"node", t.node},
                               {"start_s", t.start_s},
                               {"end_s", t.end_s},
                               {"steps", t.steps},
                               {"steps_done", t.steps_done},
                               {"final_loss", t.final_loss},
                               {"attempts", t.attempts},
                               {"error", t.error},
                               {"loss_curve", losses}});
  }
  WriteFileAtomic(in.run_dir + "/report.json", report.dump(2) + "\n");

  // HTML: Gantt (actual filled, first plan dashed), loss curves, task table.
  GanttChart chart;
  chart.title = "Saturn run: actual (filled) vs first plan (dashed)";
  chart.subtitle = "makespan " + FormatDuration(in.makespan_s) + " vs planned " +
                   FormatDuration(in.first_plan.makespan_s) + ", " + std::to_string(switches) +
                   " plan switches";
  chart.nodes = in.cluster.nodes;
  for (const BusyInterval& b : BusyIntervals(in.events, in.makespan_s)) {
    chart.bars.push_back({b.node, b.gpu_ids, b.start, b.end, b.task + " · " + b.technique,
                          b.task + " (" + b.technique + ") " + FormatDuration(b.start) + " → " +
                              FormatDuration(b.end) + ", " + b.how_it_ended,
                          b.task, false});
  }
  for (GanttBar bar : GanttFromPlan(in.first_plan, in.cluster, "").bars) {
    bar.outline_only = true;
    chart.bars.push_back(std::move(bar));
  }
  std::string html =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>Saturn run report</title>"
      "<style>body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}"
      "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px;font-size:13px}"
      "th{background:#f4f4f4}.curves{display:flex;flex-wrap:wrap;gap:8px}"
      ".failed{color:#b00}</style></head><body>\n<h1>Saturn run report</h1>\n<p>Workload <code>" +
      XmlEscape(in.workload) + "</code>: actual makespan <b>" + FormatDuration(in.makespan_s) +
      "</b>, first plan " + FormatDuration(in.first_plan.makespan_s) + " (ratio " +
      FormatFixed(ratio, 3) + "), " + std::to_string(switches) + " plan switches, profiling " +
      FormatDuration(in.profiling_s) + ", planning " + FormatDuration(in.planning_s) + ".</p>\n" +
      RenderGanttSvg(chart) + "\n<h2>Loss curves</h2>\n<div class=\"curves\">\n";
  for (const RunReportTask& t : in.tasks)
    html += LossChart(t.name, t.losses);
  html +=
      "</div>\n<h2>Tasks</h2>\n<table><tr><th>task</th><th>status</th><th>technique</th>"
      "<th>GPUs</th><th>node</th><th>start</th><th>end</th><th>steps</th><th>final loss</th>"
      "<th>attempts</th><th>error</th></tr>\n";
  for (const RunReportTask& t : in.tasks) {
    html += std::string("<tr") + (t.status == "failed" ? " class=\"failed\"" : "") + "><td>" +
            XmlEscape(t.name) + "</td><td>" + t.status + "</td><td>" + XmlEscape(t.technique) +
            "</td><td>" + std::to_string(t.gpus) + "</td><td>" + XmlEscape(t.node) + "</td><td>" +
            FormatDuration(t.start_s) + "</td><td>" + FormatDuration(t.end_s) + "</td><td>" +
            std::to_string(t.steps_done) + "/" + std::to_string(t.steps) + "</td><td>" +
            FormatFixed(t.final_loss, 4) + "</td><td>" + std::to_string(t.attempts) + "</td><td>" +
            XmlEscape(t.error) + "</td></tr>\n";
  }
  html += "</table>\n</body></html>\n";
  WriteFileAtomic(in.run_dir + "/report.html", html);
  return report;
}

}  // namespace saturn
