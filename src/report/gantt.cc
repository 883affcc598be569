#include "report/gantt.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/format.h"
#include "contracts/plan_status.h"
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

std::string TimeLabel(double seconds, double tick) {
  if (tick >= 3600 && static_cast<long>(tick) % 3600 == 0) {
    return FormatFixed(seconds / 3600, 0) + "h";
  }
  if (tick >= 60 && static_cast<long>(tick) % 60 == 0) return FormatFixed(seconds / 60, 0) + "m";
  return FormatNumber(seconds) + "s";
}

// Where a chart's rows and times fall on the page.
struct Layout {
  std::map<std::string, int> first_row, node_index;
  double row_h = 20, node_gap = 6, plot_h = 0, end = 1;
  static constexpr double kLeft = 110, kRight = 20, kTop = 56, kPlotW = kGanttPlotWidth;

  explicit Layout(const GanttChart& chart) {
    int rows = 0;
    for (size_t i = 0; i < chart.nodes.size(); ++i) {
      first_row[chart.nodes[i].name] = rows;
      node_index[chart.nodes[i].name] = static_cast<int>(i);
      rows += chart.nodes[i].gpus;
    }
    row_h = rows <= 48 ? 20 : rows <= 160 ? 12 : rows <= 600 ? 7 : 4;
    node_gap = rows <= 160 ? 6 : 2;
    plot_h = rows * row_h + node_gap * static_cast<double>(chart.nodes.size());
    end = chart.time_end;
    for (const GanttBar& b : chart.bars)
      end = std::max(end, b.end);
    if (!(end > 0)) end = 1;
  }
  double X(double t) const { return kLeft + kPlotW * t / end; }
  // y of a GPU row, leaving a gap after each node.
  double Y(const std::string& node, int gpu) const {
    return kTop + (first_row.at(node) + gpu) * row_h + node_gap * node_index.at(node);
  }
};

void DrawFrame(SvgWriter& svg, const GanttChart& chart, const Layout& at) {
  const double left = Layout::kLeft, top = Layout::kTop;
  svg.Text(left, 20, chart.title, 15, "start", "font-weight=\"bold\"");
  svg.Text(left, 38, chart.subtitle, 11, "start", "fill=\"#555\"");
  double tick = NiceTick(at.end, 10);
  for (double t = 0; t <= at.end + 1e-9; t += tick) {
    svg.Line(at.X(t), top, at.X(t), top + at.plot_h, "#e4e4e4");
    svg.Text(at.X(t), top + at.plot_h + 14, TimeLabel(t, tick), 10, "middle", "fill=\"#555\"");
  }
  for (const ClusterNode& n : chart.nodes) {
    double y0 = at.Y(n.name, 0);
    svg.Rect(left, y0, Layout::kPlotW, n.gpus * at.row_h, "#f7f7f7");
    double name_y = y0 + std::min(n.gpus * at.row_h, 24.0) / 2 + 4;
    // Its GPU type, on every node that has one: under the name where the
    // node's rows leave room, else beside it (a one-device node's row).
    const bool beside = !n.gpu_type.empty() && n.gpus * at.row_h < 26;
    if (beside) {
      svg.Raw("<text x=\"8\" y=\"" + FormatFixed(name_y, 1) +
              "\" font-size=\"11\" text-anchor=\"start\"><title>" +
              XmlEscape(n.name + ": " + Plural(n.gpus, "GPU") + " of " + n.gpu_type) +
              "</title><tspan font-weight=\"bold\">" + XmlEscape(n.name) +
              "</tspan> <tspan font-size=\"9\" fill=\"#555\">" + XmlEscape(n.gpu_type) +
              "</tspan></text>\n");
    } else {
      svg.Text(8, name_y, n.name, 11, "start", "font-weight=\"bold\"");
      if (!n.gpu_type.empty()) svg.Text(8, name_y + 12, n.gpu_type, 9, "start", "fill=\"#555\"");
    }
    if (at.row_h < 12) continue;
    // A name and type beside it that reach the GPU labels leave out a
    // one-device node's "gpu 0" (its row is the node).
    const double label_w = 8 + 6.8 * static_cast<double>(n.name.size()) +
                           5.0 * static_cast<double>(n.gpu_type.size() + 1);
    if (beside && n.gpus == 1 && label_w > left - 36) continue;
    for (int g = 0; g < n.gpus; ++g) {
      svg.Text(left - 6, at.Y(n.name, g) + at.row_h * 0.7, "gpu " + std::to_string(g), 9, "end",
               "fill=\"#777\"");
    }
  }
}

TaskColor ColorOf(const GanttChart& chart, const std::string& key) {
  auto it = chart.colors.find(key);
  if (it != chart.colors.end()) return it->second;
  return {ColorFor(key), OutlineColorFor(key), ""};
}

// "0-1, 7": a task's GPUs as the runs it is drawn in.
std::string RunsText(const std::vector<std::pair<int, int>>& runs) {
  std::string text;
  for (const auto& [lo, hi] : runs) {
    if (!text.empty()) text += ", ";
    text += std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "");
  }
  return text;
}

// The marks of one box of a bar (y, h): from each, the rest of a filled bar
// pales by its fade (a pack with fewer members left), and a tick in the
// task's dark colour (dotted on an outline) carries its tooltip, over a wider
// transparent line that makes it easy to point at. A tick left of
// `text_end` stops short of the label's line (`font` high) to keep it legible.
void DrawMarks(SvgWriter& svg, const Layout& at, const GanttBar& b, const TaskColor& color,
               double y, double h, double text_end, double font) {
  const std::string dash = b.outline_only ? "stroke-dasharray=\"2 2\"" : "";
  for (size_t i = 0; i < b.marks.size(); ++i) {
    const GanttMark& m = b.marks[i];
    if (!(m.t > b.start && m.t < b.end)) continue;
    const double x = at.X(m.t);
    if (!b.outline_only && m.fade > 0) {
      const double next = i + 1 < b.marks.size() ? std::min(b.marks[i + 1].t, b.end) : b.end;
      svg.Rect(x, y, at.X(next) - x, h, "white", "",
               "fill-opacity=\"" + FormatFixed(0.5 * std::min(m.fade, 1.0), 2) + "\"");
    }
    svg.Raw("<g class=\"mark\"><title>" + XmlEscape(m.detail) + "</title>");
    svg.Line(x, y, x, y + h, "transparent", 7);
    if (x < text_end) {
      const double gap_top = y + h / 2 - font * 0.45, gap_bottom = y + h / 2 + font * 0.5;
      if (gap_top > y) svg.Line(x, y, x, gap_top, color.line, 2, dash);
      if (gap_bottom < y + h) svg.Line(x, gap_bottom, x, y + h, color.line, 2, dash);
    } else {
      svg.Line(x, y, x, y + h, color.line, 2, dash);
    }
    svg.Raw("</g>\n");
  }
}

// How many characters (UTF-8 code points) `text` has.
size_t CodePoints(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// What a bar is, in its tooltips: "task" or "pack".
std::string Unit(const GanttBar& b) {
  return b.members > 0 ? "pack" : "task";
}

// One bar: a box per run of consecutive GPUs. A filled bar in parts carries
// the label on every part (and says so in its tooltip); DrawJoins joins them.
void DrawBar(SvgWriter& svg, const GanttChart& chart, const Layout& at, const GanttBar& b) {
  const TaskColor color = ColorOf(chart, b.color_key);
  const std::vector<std::pair<int, int>> runs = Runs(b.gpu_ids);
  const bool parts = runs.size() > 1;
  const std::string title = parts && !b.outline_only
                                ? b.detail + " [one " + Unit(b) + ", drawn in " +
                                      std::to_string(runs.size()) + " parts: GPUs " +
                                      RunsText(runs) + "]"
                                : b.detail;
  double x = at.X(b.start), w = at.X(b.end) - x;
  for (const auto& [lo, hi] : runs) {
    double y = at.Y(b.node, lo) + 1, h = (hi - lo + 1) * at.row_h - 2;
    if (b.outline_only) {
      // In the dark shade of the task's colour: each outline names its
      // task's bar, and shows on it where the task ran as planned.
      svg.Rect(x, y, w, h, "none", title,
               "stroke=\"" + color.line + "\" stroke-dasharray=\"5 2\" stroke-width=\"2\"");
      DrawMarks(svg, at, b, color, y, h, x, 0);
      continue;
    }
    svg.Rect(x, y, w, h, color.fill, title, "stroke=\"white\" stroke-width=\"0.5\"");
    const double font = std::min(10.0, h - 2);
    const size_t fits = static_cast<size_t>((w - 4) / (font * 0.58));
    const bool labelled = font >= 7 && fits >= 4;
    const std::string label = labelled ? Ellipsize(b.label, fits) : "";
    // The label is drawn over the marks; they leave its line clear (its width
    // as the box's fit reckons it, slightly over most text's).
    DrawMarks(svg, at, b, color, y, h, x + 4 + static_cast<double>(CodePoints(label)) * font * 0.58,
              font);
    if (labelled) svg.Text(x + 4, y + h / 2 + font * 0.35, label, font, "start", "fill=\"#111\"");
  }
}

// The connector of a filled bar in parts: a thick line in the task's dark
// colour with a dot on each part, along the bar's end, drawn over whatever
// runs on the GPUs in between, so the parts read as one task, not two. At
// the end rather than the start: tasks often start together (every one at
// 0), where a line would merge with the bars' left edges and cross their
// labels; their ends differ.
void DrawJoins(SvgWriter& svg, const GanttChart& chart, const Layout& at, const GanttBar& b) {
  const std::vector<std::pair<int, int>> runs = Runs(b.gpu_ids);
  if (b.outline_only || runs.size() < 2) return;
  const TaskColor color = ColorOf(chart, b.color_key);
  const double x = at.X(b.end) - std::min(3.0, (at.X(b.end) - at.X(b.start)) / 2);
  for (size_t i = 0; i + 1 < runs.size(); ++i) {
    // From the middle of one part's last row to the middle of the next one's first.
    double y1 = at.Y(b.node, runs[i].second) + at.row_h / 2,
           y2 = at.Y(b.node, runs[i + 1].first) + at.row_h / 2;
    svg.Raw(
        "<g class=\"join\"><title>" +
        XmlEscape(b.label + ": one " + Unit(b) + " on GPUs " + RunsText(runs) + " of " + b.node) +
        "</title>");
    svg.Line(x, y1, x, y2, color.line, 3);
    for (double y : {y1, y2}) {
      svg.Raw("<circle cx=\"" + FormatFixed(x, 1) + "\" cy=\"" + FormatFixed(y, 1) +
              "\" r=\"3.5\" fill=\"" + color.line + "\" stroke=\"white\"/>\n");
    }
    svg.Raw("</g>\n");
  }
}

// Each member's end (name, time) in a pack's bar's tooltip, and a mark
// where members end before the pack (those ending together share one).
void MarkMemberEnds(GanttBar& bar, const std::string& pack,
                    std::vector<std::pair<std::string, double>> ends) {
  const long n = static_cast<long>(ends.size());
  std::stable_sort(ends.begin(), ends.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  for (size_t i = 0, j = 0; i < ends.size(); i = j) {
    const double end = ends[i].second;
    std::string who;
    for (j = i; j < ends.size() && ends[j].second == end; ++j) {
      who += (who.empty() ? "" : ", ") + ends[j].first;
      bar.detail += "\n  " + ends[j].first + ": " + GanttSpan(bar.start, end);
    }
    if (end >= bar.end) continue;
    bar.marks.push_back({end, static_cast<double>(j) / static_cast<double>(n),
                         pack + ": " + who + (j - i > 1 ? " end" : " ends") + " at " +
                             FormatDuration(end) + ", " +
                             Plural(n - static_cast<long>(j), "member") + " left"});
  }
}

// A task that trains alone: its bar, label and tooltip.
GanttBar AloneBar(const PlanTask& t) {
  GanttBar bar;
  bar.node = t.node;
  bar.gpu_ids = t.gpu_ids;
  bar.start = t.start_s;
  bar.end = t.end_s;
  bar.label = t.task + " · " + t.technique + " ×" + std::to_string(t.gpus);
  bar.detail = t.task + ": " + t.technique + " on " + std::to_string(t.gpus) + " GPU(s) of " +
               t.node + ", " + GanttSpan(t.start_s, t.end_s);
  bar.color_key = t.task;
  return bar;
}

// A pack's members (the same node, GPUs and start; plan order) as one bar to
// its last member's end: "pack-1 · 3 tasks · lora ×2: a, b, c" (the names cut
// first where the box is short), each member's end in the tooltip, and a mark
// where members end before the pack (those ending together share one).
GanttBar PackBar(const std::vector<const PlanTask*>& members) {
  const PlanTask& first = *members.front();
  GanttBar bar = AloneBar(first);
  std::string names;
  for (const PlanTask* m : members) {
    bar.end = std::max(bar.end, m->end_s);
    names += (names.empty() ? "" : ", ") + m->task;
  }
  const long n = static_cast<long>(members.size());
  bar.members = static_cast<int>(n);
  const std::string gpus = std::to_string(first.gpus);
  bar.label =
      first.pack + " · " + Plural(n, "task") + " · " + first.technique + " ×" + gpus + ": " + names;
  bar.detail = first.pack + ": " + Plural(n, "task") + " training together, " + first.technique +
               " on " + gpus + " GPU(s) of " + first.node + ", " + GanttSpan(bar.start, bar.end);
  bar.color_key = "pack " + first.pack;
  std::vector<std::pair<std::string, double>> ends;
  for (const PlanTask* m : members)
    ends.push_back({m->task, m->end_s});
  MarkMemberEnds(bar, first.pack, std::move(ends));
  return bar;
}

}  // namespace

std::string GanttSpan(double start, double end) {
  return FormatDuration(start) + " → " + FormatDuration(end) + " (" + FormatDuration(end - start) +
         ")";
}

GanttChart GanttFromPlan(const Plan& plan, const Cluster& cluster, const std::string& title) {
  GanttChart chart;
  chart.title = title;
  chart.subtitle = "solver " + plan.solver + " · " + DescribePlanStatus(plan.status) +
                   " · makespan " + FormatDuration(plan.makespan_s) + " · lower bound " +
                   FormatDuration(plan.lower_bound_s) + " · " +
                   Plural(static_cast<long>(plan.tasks.size()), "task");
  chart.nodes = cluster.nodes;
  // Each bar's tasks in plan order: a task alone, or a pack's members placed
  // together (a member placed elsewhere, which a valid plan has not, gets a
  // bar of its own rather than a wrong place on another's).
  std::vector<std::vector<const PlanTask*>> groups;
  std::map<std::tuple<std::string, std::string, std::vector<int>, double>, size_t> pack_group;
  std::map<std::string, long> packed;  // members by pack name
  for (const PlanTask& t : plan.tasks) {
    if (t.pack.empty()) {
      groups.push_back({&t});
      continue;
    }
    ++packed[t.pack];
    auto [it, added] =
        pack_group.try_emplace({t.pack, t.node, t.gpu_ids, t.start_s}, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(&t);
  }
  if (!packed.empty()) {
    long members = 0;
    for (const auto& [name, count] : packed)
      members += count;
    chart.subtitle += " (" + std::to_string(members) + " in " +
                      Plural(static_cast<long>(packed.size()), "pack") + ")";
  }
  for (const std::vector<const PlanTask*>& group : groups) {
    const PlanTask& t = *group.front();
    GanttBar bar = t.pack.empty() ? AloneBar(t) : PackBar(group);
    if (!chart.colors.count(bar.color_key)) {
      chart.colors[bar.color_key] = PaletteColor(chart.colors.size());
    }
    chart.bars.push_back(std::move(bar));
  }
  return chart;
}

std::vector<GanttBar> GanttFromRun(std::vector<BusyInterval> busy,
                                   const std::map<std::string, std::string>& pack_of) {
  std::stable_sort(busy.begin(), busy.end(),
                   [](const BusyInterval& a, const BusyInterval& b) { return a.start < b.start; });
  auto alone = [](const BusyInterval& b) {
    return GanttBar{
        b.node,
        b.gpu_ids,
        b.start,
        b.end,
        b.task + " · " + b.technique,
        b.task + " (" + b.technique + ") " + GanttSpan(b.start, b.end) + ", " + b.how_it_ended,
        b.task,
        false};
  };
  struct Launch {
    std::string pack;
    std::vector<BusyInterval> members;
    double end = 0.0;
  };
  std::vector<Launch> launches;
  std::map<std::tuple<std::string, std::string, std::vector<int>>, size_t> open;
  std::vector<GanttBar> bars;
  for (const BusyInterval& b : busy) {
    auto pack = pack_of.find(b.task);
    if (pack == pack_of.end()) {
      bars.push_back(alone(b));
      continue;
    }
    auto it = open.find({pack->second, b.node, b.gpu_ids});
    if (it == open.end() || b.start >= launches[it->second].end) {
      it = open.insert_or_assign({pack->second, b.node, b.gpu_ids}, launches.size()).first;
      launches.push_back({pack->second, {}, b.end});
    }
    Launch& launch = launches[it->second];
    launch.members.push_back(b);
    launch.end = std::max(launch.end, b.end);
  }
  for (const Launch& launch : launches) {
    if (launch.members.size() == 1) {
      bars.push_back(alone(launch.members[0]));
      continue;
    }
    const BusyInterval& first = launch.members[0];
    long n = static_cast<long>(launch.members.size());
    GanttBar bar{first.node,
                 first.gpu_ids,
                 first.start,
                 launch.end,
                 launch.pack + " · " + Plural(n, "task") + " · " + first.technique,
                 launch.pack + ": " + Plural(n, "task") + " in one worker (" + first.technique +
                     ") " + GanttSpan(first.start, launch.end),
                 "pack " + launch.pack,
                 false};
    bar.members = static_cast<int>(n);
    std::vector<std::pair<std::string, double>> ends;
    for (const BusyInterval& m : launch.members) {
      // "a", "b (early stopped)", "c (cancelled)"
      std::string how =
          m.how_it_ended.rfind("task_", 0) == 0 ? m.how_it_ended.substr(5) : m.how_it_ended;
      std::replace(how.begin(), how.end(), '_', ' ');
      ends.push_back({m.task + (how == "finished" ? "" : " (" + how + ")"), m.end});
    }
    MarkMemberEnds(bar, launch.pack, std::move(ends));
    bars.push_back(std::move(bar));
  }
  return bars;
}

std::string RenderGanttSvg(const GanttChart& chart) {
  const Layout at(chart);
  SvgWriter svg(Layout::kLeft + Layout::kPlotW + Layout::kRight, Layout::kTop + at.plot_h + 40);
  DrawFrame(svg, chart, at);
  // Filled bars (the run) first, outlines (e.g. the first plan) over them:
  // an outline is a dashed border with no fill, so both stay visible where
  // they overlap (a task moved to other GPUs keeps its planned box in
  // sight); the connectors of bars in parts over both.
  for (bool outline : {false, true}) {
    for (const GanttBar& b : chart.bars) {
      if (b.outline_only == outline && at.node_index.count(b.node)) DrawBar(svg, chart, at, b);
    }
  }
  for (const GanttBar& b : chart.bars) {
    if (at.node_index.count(b.node)) DrawJoins(svg, chart, at, b);
  }
  return svg.Finish();
}

}  // namespace saturn
