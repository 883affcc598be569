#include "report/gantt.h"

#include <algorithm>
#include <map>

#include "common/format.h"
#include "report/svg.h"

namespace saturn {
namespace {

// Splits sorted GPU ids into runs of consecutive ids: {0,1,2,5} -> {0..2},{5..5}.
std::vector<std::pair<int, int>> Runs(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  std::vector<std::pair<int, int>> runs;
  for (int id : ids) {
    if (!runs.empty() && runs.back().second + 1 == id) {
      runs.back().second = id;
    } else {
      runs.push_back({id, id});
    }
  }
  return runs;
}

// At most `max_chars` characters (UTF-8 code points) of `text`, with "…" if cut.
std::string Truncate(const std::string& text, size_t max_chars) {
  size_t chars = 0, i = 0;
  while (i < text.size()) {
    size_t next = i + 1;
    while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80)
      ++next;
    if (++chars > max_chars - 1 && next < text.size()) return text.substr(0, i) + "…";
    i = next;
  }
  return text;
}

std::string TimeLabel(double seconds, double tick) {
  if (tick >= 3600 && static_cast<long>(tick) % 3600 == 0) {
    return FormatFixed(seconds / 3600, 0) + "h";
  }
  if (tick >= 60 && static_cast<long>(tick) % 60 == 0) return FormatFixed(seconds / 60, 0) + "m";
  return FormatNumber(seconds) + "s";
}

}  // namespace

GanttChart GanttFromPlan(const Plan& plan, const Cluster& cluster, const std::string& title) {
  GanttChart chart;
  chart.title = title;
  chart.subtitle = "solver " + plan.solver + " (" + plan.status + "), makespan " +
                   FormatDuration(plan.makespan_s) + ", lower bound " +
                   FormatDuration(plan.lower_bound_s) + ", " +
                   Plural(static_cast<long>(plan.tasks.size()), "task");
  chart.nodes = cluster.nodes;
  for (const PlanTask& t : plan.tasks) {
    GanttBar bar;
    bar.node = t.node;
    bar.gpu_ids = t.gpu_ids;
    bar.start = t.start_s;
    bar.end = t.end_s;
    bar.label = t.task + " · " + t.technique + " ×" + std::to_string(t.gpus);
    bar.detail = t.task + ": " + t.technique + " on " + std::to_string(t.gpus) + " GPU(s) of " +
                 t.node + ", " + FormatDuration(t.start_s) + " → " + FormatDuration(t.end_s) +
                 " (" + FormatDuration(t.end_s - t.start_s) + ")";
    bar.color_key = t.task;
    chart.bars.push_back(std::move(bar));
  }
  return chart;
}

std::string RenderGanttSvg(const GanttChart& chart) {
  int rows = 0;
  std::map<std::string, int> first_row;
  for (const ClusterNode& n : chart.nodes) {
    first_row[n.name] = rows;
    rows += n.gpus;
  }
  double row_h = rows <= 48 ? 20 : rows <= 160 ? 12 : rows <= 600 ? 7 : 4;
  const double node_gap = rows <= 160 ? 6 : 2;
  const double left = 110, right = 20, top = 56, plot_w = 1100;
  double plot_h = rows * row_h + node_gap * static_cast<double>(chart.nodes.size());
  const double width = left + plot_w + right, height = top + plot_h + 40;
  double end = chart.time_end;
  for (const GanttBar& b : chart.bars)
    end = std::max(end, b.end);
  if (!(end > 0)) end = 1;
  auto x_of = [&](double t) { return left + plot_w * t / end; };
  // y of a GPU row, leaving a gap after each node.
  std::map<std::string, int> node_index;
  for (size_t i = 0; i < chart.nodes.size(); ++i)
    node_index[chart.nodes[i].name] = i;
  auto y_of = [&](const std::string& node, int gpu) {
    return top + (first_row[node] + gpu) * row_h + node_gap * node_index[node];
  };

  SvgWriter svg(width, height);
  svg.Text(left, 20, chart.title, 15, "start", "font-weight=\"bold\"");
  svg.Text(left, 38, chart.subtitle, 11, "start", "fill=\"#555\"");
  double tick = NiceTick(end, 10);
  for (double t = 0; t <= end + 1e-9; t += tick) {
    svg.Line(x_of(t), top, x_of(t), top + plot_h, "#e4e4e4");
    svg.Text(x_of(t), top + plot_h + 14, TimeLabel(t, tick), 10, "middle", "fill=\"#555\"");
  }
  for (const ClusterNode& n : chart.nodes) {
    double y0 = y_of(n.name, 0);
    svg.Rect(left, y0, plot_w, n.gpus * row_h, "#f7f7f7");
    svg.Text(8, y0 + std::min(n.gpus * row_h, 24.0) / 2 + 4, n.name, 11, "start",
             "font-weight=\"bold\"");
    if (row_h >= 12) {
      for (int g = 0; g < n.gpus; ++g) {
        svg.Text(left - 6, y_of(n.name, g) + row_h * 0.7, "gpu " + std::to_string(g), 9, "end",
                 "fill=\"#777\"");
      }
    }
  }
  // Outlines (e.g. the plan) first, so filled bars (the run) sit on top.
  for (int pass = 0; pass < 2; ++pass) {
    for (const GanttBar& b : chart.bars) {
      if (b.outline_only != (pass == 0) || !node_index.count(b.node)) continue;
      for (const auto& [lo, hi] : Runs(b.gpu_ids)) {
        double x = x_of(b.start), w = x_of(b.end) - x;
        double y = y_of(b.node, lo) + 1, h = (hi - lo + 1) * row_h - 2;
        if (b.outline_only) {
          // In a dark shade of the task's colour: each outline names its
          // task's bar, and shows on it where the task ran as planned.
          svg.Rect(x, y, w, h, "none", b.detail,
                   "stroke=\"" + OutlineColorFor(b.color_key) +
                       "\" stroke-dasharray=\"5 2\" stroke-width=\"2\"");
          continue;
        }
        svg.Rect(x, y, w, h, ColorFor(b.color_key), b.detail,
                 "stroke=\"white\" stroke-width=\"0.5\"");
        double font = std::min(10.0, h - 2);
        size_t fits = static_cast<size_t>(w / (font * 0.58));
        if (font >= 7 && fits >= 4) {
          svg.Text(x + 3, y + h / 2 + font * 0.35, Truncate(b.label, fits), font, "start",
                   "fill=\"#111\"");
        }
      }
    }
  }
  return svg.Finish();
}

}  // namespace saturn
