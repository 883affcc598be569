#include "report/loss_charts.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/format.h"

namespace saturn {
namespace {

// Two charts side by side on a report 1400 px wide.
constexpr double kLeft = 56, kPlotW = 360, kTop = 34, kPlotH = 200, kBottom = 34;
constexpr double kLegendX = kLeft + kPlotW + 22, kLegendW = 200, kLegendRow = 16;
// A legend name's lines: as many characters as fit beside the sample, and
// the line step of a name wrapped onto more.
constexpr size_t kLegendChars = 28;
constexpr double kLegendWrapRow = 12.5;
constexpr double kWidth = kLegendX + kLegendW;
constexpr size_t kMaxPoints = 600;  // per curve: more adds nothing a chart this wide shows

std::string StepLabel(double step) {
  if (step >= 10000 && std::fmod(step, 1000) == 0) return FormatNumber(step / 1000) + "k";
  return FormatNumber(step);
}

// Every k-th point (and the last), at most kMaxPoints of them.
std::vector<std::pair<long, double>> Thinned(const std::vector<std::pair<long, double>>& points) {
  if (points.size() <= kMaxPoints) return points;
  size_t every = (points.size() + kMaxPoints - 1) / kMaxPoints;
  std::vector<std::pair<long, double>> out;
  for (size_t i = 0; i < points.size(); i += every)
    out.push_back(points[i]);
  if (out.back() != points.back()) out.push_back(points.back());
  return out;
}

// The shared axes of a group: steps from 0, losses over every curve's points.
struct Axes {
  double max_step = 1, lo = INFINITY, hi = -INFINITY, y_step = 1;

  explicit Axes(const std::vector<const LossSeries*>& group) {
    for (const LossSeries* s : group) {
      for (const auto* points : {&s->train, &s->eval}) {
        for (const auto& [step, loss] : *points) {
          max_step = std::max<double>(max_step, step);
          lo = std::min(lo, loss);
          hi = std::max(hi, loss);
        }
      }
    }
    if (!(hi >= lo)) lo = 0, hi = 1;
    if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
    y_step = NiceAxisStep(hi - lo, 5);
    lo = std::floor(lo / y_step + 1e-9) * y_step;
    hi = std::ceil(hi / y_step - 1e-9) * y_step;
  }
  double X(double step) const { return kLeft + kPlotW * step / max_step; }
  double Y(double loss) const { return kTop + kPlotH * (hi - loss) / (hi - lo); }
};

std::string Points(const Axes& axes, const std::vector<std::pair<long, double>>& points) {
  std::string out;
  for (const auto& [step, loss] : points)
    out += FormatFixed(axes.X(step), 1) + "," + FormatFixed(axes.Y(loss), 1) + " ";
  return out;
}

// The attribute of a dashed line; "" for a solid one.
std::string Dash(const std::string& dash) {
  return dash.empty() ? "" : "stroke-dasharray=\"" + dash + "\"";
}

void DrawAxes(SvgWriter& svg, const Axes& axes) {
  const long y_ticks = std::lround((axes.hi - axes.lo) / axes.y_step);
  for (long k = 0; k <= y_ticks; ++k) {
    double v = axes.lo + static_cast<double>(k) * axes.y_step;
    svg.Line(kLeft, axes.Y(v), kLeft + kPlotW, axes.Y(v), "#e6e6e6");
    svg.Text(kLeft - 5, axes.Y(v) + 3.5, AxisTickLabel(v, axes.y_step), 9.5, "end",
             "fill=\"#555\"");
  }
  const double x_step = std::max(1.0, std::round(NiceAxisStep(axes.max_step, 5)));
  for (long k = 0; static_cast<double>(k) * x_step <= axes.max_step + 1e-9; ++k) {
    double s = static_cast<double>(k) * x_step;
    if (axes.X(s) > kLeft + kPlotW - 30) break;  // leave room for the axis name
    svg.Line(axes.X(s), kTop + kPlotH, axes.X(s), kTop + kPlotH + 4, "#999");
    svg.Text(axes.X(s), kTop + kPlotH + 15, StepLabel(s), 9.5, "middle", "fill=\"#555\"");
  }
  svg.Text(kLeft + kPlotW, kTop + kPlotH + 15, "step", 9.5, "end", "fill=\"#555\"");
  svg.Text(14, kTop + kPlotH / 2, "loss", 9.5, "middle",
           "fill=\"#555\" transform=\"rotate(-90 14 " + FormatFixed(kTop + kPlotH / 2, 1) + ")\"");
  svg.Line(kLeft, kTop, kLeft, kTop + kPlotH, "#999");
  svg.Line(kLeft, kTop + kPlotH, kLeft + kPlotW, kTop + kPlotH, "#999");
}

// Training loss solid (or the task's dash), evaluation loss dashed and
// thicker with a marker at each evaluation, both in the task's colour.
void DrawCurves(SvgWriter& svg, const Axes& axes, const LossSeries& s) {
  const std::string task = XmlEscape(s.task);
  if (!s.train.empty()) {
    svg.Raw("<polyline class=\"train\" data-task=\"" + task + "\" points=\"" +
            Points(axes, Thinned(s.train)) + "\" fill=\"none\" stroke=\"" + s.color.line +
            "\" stroke-width=\"1.8\" stroke-linejoin=\"round\" " + Dash(s.color.dash) + "><title>" +
            task + ": training loss</title></polyline>\n");
  }
  if (s.eval.empty()) return;
  svg.Raw("<g class=\"eval\" data-task=\"" + task + "\"><title>" + task +
          ": evaluation loss</title><polyline points=\"" + Points(axes, s.eval) +
          "\" fill=\"none\" stroke=\"" + s.color.line +
          "\" stroke-width=\"2.4\" stroke-dasharray=\"6 3\"/>");
  if (s.eval.size() <= 60) {
    for (const auto& [step, loss] : s.eval) {
      svg.Raw("<circle cx=\"" + FormatFixed(axes.X(step), 1) + "\" cy=\"" +
              FormatFixed(axes.Y(loss), 1) + "\" r=\"3.4\" fill=\"" + s.color.line +
              "\" stroke=\"white\" stroke-width=\"1.2\"/>");
    }
  }
  svg.Raw("</g>\n");
}

// A legend sample: a short line in `stroke` (dashed as given), with an
// evaluation's marker on it when `marker`.
void Sample(SvgWriter& svg, double y, const std::string& stroke, const std::string& dash,
            bool marker) {
  svg.Line(kLegendX, y, kLegendX + 26, y, stroke, 1.8, Dash(dash));
  if (marker) {
    svg.Raw("<circle cx=\"" + FormatFixed(kLegendX + 13, 1) + "\" cy=\"" + FormatFixed(y, 1) +
            "\" r=\"3.4\" fill=\"" + stroke + "\" stroke=\"white\" stroke-width=\"1.2\"/>");
  }
}

// What a legend entry says after the name: its note, or that it has no loss.
std::string LegendNote(const LossSeries& s) {
  return s.train.empty() && s.eval.empty() ? "no loss reported" : s.note;
}

// A task's name in the legend, whole: in lines of at most kLegendChars,
// broken after a '-', '_' or '.' where one is near the end of a line (else
// where the line is full); the note (if any) on the last line where it
// fits, else on a line of its own ("" name then).
std::vector<std::pair<std::string, std::string>> LegendLines(const LossSeries& s) {
  std::vector<std::pair<std::string, std::string>> lines;  // name part, note
  std::string rest = s.task;
  while (rest.size() > kLegendChars) {
    size_t cut = kLegendChars;
    for (size_t i = kLegendChars; i > kLegendChars / 2; --i) {
      if (rest[i - 1] == '-' || rest[i - 1] == '_' || rest[i - 1] == '.') {
        cut = i;
        break;
      }
    }
    // Never inside a UTF-8 character.
    while (cut > 1 && (static_cast<unsigned char>(rest[cut]) & 0xC0) == 0x80)
      --cut;
    lines.push_back({rest.substr(0, cut), ""});
    rest = rest.substr(cut);
  }
  const std::string note = LegendNote(s);
  if (note.empty() || rest.size() + 1 + note.size() <= kLegendChars) {
    lines.push_back({rest, note});
  } else {
    lines.push_back({rest, ""});
    lines.push_back({"", note});
  }
  return lines;
}

// The legend's height below kTop: its key rows and every task's lines.
double LegendHeight(const std::vector<const LossSeries*>& group) {
  bool evaluates =
      std::any_of(group.begin(), group.end(), [](const LossSeries* s) { return !s->eval.empty(); });
  double h = 4 + (evaluates ? kLegendRow : 0) + kLegendRow * 0.5;
  for (const LossSeries* s : group)
    h += kLegendRow + kLegendWrapRow * static_cast<double>(LegendLines(*s).size() - 1);
  return h;
}

void DrawLegend(SvgWriter& svg, const std::vector<const LossSeries*>& group) {
  bool evaluates =
      std::any_of(group.begin(), group.end(), [](const LossSeries* s) { return !s->eval.empty(); });
  double y = kTop + 4;
  Sample(svg, y, "#444", "", false);
  svg.Text(kLegendX + 32, y + 3.5, "training loss", 10, "start", "fill=\"#444\"");
  if (evaluates) {
    y += kLegendRow;
    Sample(svg, y, "#444", "6 3", true);
    svg.Text(kLegendX + 32, y + 3.5, "evaluation loss", 10, "start", "fill=\"#444\"");
  }
  y += kLegendRow * 0.5;
  for (const LossSeries* s : group) {
    y += kLegendRow;
    // The task's training line, with the evaluation marker when it evaluates.
    Sample(svg, y, s->color.line, s->color.dash, !s->eval.empty());
    // Its whole name, wrapped; a tooltip names it too.
    const std::string x = FormatFixed(kLegendX + 32, 1);
    std::string text = "<text class=\"legend\" data-task=\"" + XmlEscape(s->task) + "\" x=\"" + x +
                       "\" y=\"" + FormatFixed(y + 3.5, 1) +
                       "\" font-size=\"10.5\" fill=\"#222\"><title>" + XmlEscape(s->task) +
                       "</title>";
    const auto lines = LegendLines(*s);
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto& [name, note] = lines[i];
      // A line after the first: a tspan of its own, back at the left.
      if (i > 0) {
        text +=
            "<tspan class=\"wrap\" x=\"" + x + "\" dy=\"" + FormatFixed(kLegendWrapRow, 1) + "\">";
        y += kLegendWrapRow;
      }
      text += XmlEscape(name);
      if (!note.empty()) {
        text += "<tspan fill=\"#777\">" + std::string(name.empty() ? "" : " ") + XmlEscape(note) +
                "</tspan>";
      }
      if (i > 0) text += "</tspan>";
    }
    svg.Raw(text + "</text>\n");
  }
}

}  // namespace

std::vector<std::vector<const LossSeries*>> GroupLossSeries(const std::vector<LossSeries>& series) {
  std::vector<std::vector<const LossSeries*>> groups;
  std::map<std::string, size_t> index;
  for (const LossSeries& s : series) {
    auto [it, added] = index.emplace(s.group.empty() ? s.task : s.group, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(&s);
  }
  return groups;
}

std::string RenderLossChart(const std::string& title, const std::vector<const LossSeries*>& group) {
  double legend_h = kTop + LegendHeight(group) + 10;
  SvgWriter svg(kWidth, std::max(kTop + kPlotH + kBottom, legend_h));
  svg.Text(kLeft, 18, title, 12.5, "start", "font-weight=\"bold\"");
  const Axes axes(group);
  DrawAxes(svg, axes);
  bool any = false;
  for (const LossSeries* s : group) {
    DrawCurves(svg, axes, *s);
    any = any || !s->train.empty() || !s->eval.empty();
  }
  if (!any) {
    svg.Text(kLeft + kPlotW / 2, kTop + kPlotH / 2, "no loss reported", 11, "middle",
             "fill=\"#888\"");
  }
  DrawLegend(svg, group);
  return svg.Finish();
}

std::string LossChartsHtml(const std::vector<LossSeries>& series) {
  std::string html, silent;
  for (const auto& group : GroupLossSeries(series)) {
    const LossSeries& first = *group.front();
    if (std::all_of(group.begin(), group.end(),
                    [](const LossSeries* s) { return s->train.empty() && s->eval.empty(); })) {
      for (const LossSeries* s : group) {  // an empty chart says nothing: a line says it
        silent += std::string(silent.empty() ? "" : ", ") + "<b>" + XmlEscape(s->task) + "</b>" +
                  (s->note.empty() ? "" : " (" + XmlEscape(s->note) + ")");
      }
      continue;
    }
    bool sweep = group.size() > 1 || (!first.group.empty() && first.group != first.task);
    std::string title =
        sweep ? "sweep " + first.group + ": " + Plural(static_cast<long>(group.size()), "task")
              : first.task;
    html += RenderLossChart(title, group) + "\n";
  }
  if (!silent.empty()) html += "<p class=\"no-loss\">No loss reported: " + silent + ".</p>\n";
  return html;
}

}  // namespace saturn
