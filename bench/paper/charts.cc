#include "bench/paper/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "report/svg.h"

namespace saturn::bench {
namespace {

constexpr double kWidth = 960, kHeight = 440;
constexpr double kLeft = 80, kRight = 190, kTop = 58, kBottom = 90;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

// Okabe-Ito: distinguishable with the common colour-vision deficiencies.
std::string Palette(size_t i) {
  static const char* kColors[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7",
                                  "#56B4E9", "#F0E442", "#000000", "#999999"};
  return kColors[i % (sizeof kColors / sizeof kColors[0])];
}

// 1, 2 or 5 x 10^k, giving about `target` steps over `span`.
double NiceStep(double span, int target) {
  if (!(span > 0)) return 1.0;
  double raw = span / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

std::string Number(double v, double step) {
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

struct Axis {
  double lo = 0, hi = 1, step = 0.2;
  double ToY(double v) const { return kTop + kPlotH * (1 - (v - lo) / (hi - lo)); }
};

// A y axis on round ticks from `lo` (NaN: 0, or below the data if it goes
// negative) to a little above the data (or `hi` if given).
Axis YAxis(double data_lo, double data_hi, double lo, double hi) {
  Axis a;
  a.lo = std::isnan(lo) ? std::min(0.0, data_lo) : lo;
  double top = std::isnan(hi) ? data_hi + 0.08 * (data_hi - a.lo) : hi;
  if (!(top > a.lo)) top = a.lo + 1;
  a.step = NiceStep(top - a.lo, 6);
  a.lo = std::floor(a.lo / a.step + 1e-9) * a.step;
  a.hi = std::isnan(hi) ? a.lo + std::ceil((top - a.lo) / a.step - 1e-9) * a.step : hi;
  return a;
}

void Frame(SvgWriter& svg, const std::string& title, const std::string& subtitle,
           const std::string& y_label, const Axis& y) {
  svg.Text(kLeft, 24, title, 16, "start", "font-weight=\"bold\"");
  if (!subtitle.empty()) svg.Text(kLeft, 42, subtitle, 11, "start", "fill=\"#555\"");
  for (double v = y.lo; v <= y.hi + y.step * 1e-6; v += y.step) {
    double py = y.ToY(v);
    svg.Line(kLeft, py, kLeft + kPlotW, py, "#e5e5e5");
    svg.Text(kLeft - 6, py + 4, Number(v, y.step), 10, "end");
  }
  svg.Line(kLeft, kTop, kLeft, kTop + kPlotH, "#333");
  svg.Line(kLeft, kTop + kPlotH, kLeft + kPlotW, kTop + kPlotH, "#333");
  char rotate[64];
  std::snprintf(rotate, sizeof rotate, "transform=\"rotate(-90 %.1f %.1f)\"", 18.0,
                kTop + kPlotH / 2);
  svg.Text(18, kTop + kPlotH / 2, y_label, 11, "middle", rotate);
}

void Reference(SvgWriter& svg, const Axis& y, double value) {
  if (std::isnan(value) || value < y.lo || value > y.hi) return;
  svg.Line(kLeft, y.ToY(value), kLeft + kPlotW, y.ToY(value), "#444", 1.2,
           "stroke-dasharray=\"5,4\"");
}

void Legend(SvgWriter& svg, const std::vector<std::string>& names) {
  double x = kLeft + kPlotW + 20;
  for (size_t i = 0; i < names.size(); ++i) {
    double y = kTop + 6 + 18.0 * i;
    svg.Rect(x, y, 12, 12, Palette(i));
    svg.Text(x + 18, y + 10, names[i], 11);
  }
}

}  // namespace

std::string RenderBarChart(const BarChart& chart) {
  double lo = 0, hi = 0;
  for (const BarSeries& s : chart.series) {
    for (double v : s.values) {
      if (std::isnan(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!std::isnan(chart.reference)) hi = std::max(hi, chart.reference);
  Axis y = YAxis(lo, hi, std::numeric_limits<double>::quiet_NaN(),
                 std::numeric_limits<double>::quiet_NaN());
  SvgWriter svg(kWidth, kHeight);
  Frame(svg, chart.title, chart.subtitle, chart.y_label, y);
  const double group_w = kPlotW / std::max<size_t>(1, chart.groups.size());
  const double bar_w = group_w * 0.8 / std::max<size_t>(1, chart.series.size());
  // Long group names are drawn slanted so neighbours never overlap.
  bool slant = false;
  for (const std::string& g : chart.groups)
    slant = slant || g.size() * 6.5 > group_w;
  for (size_t g = 0; g < chart.groups.size(); ++g) {
    double gx = kLeft + group_w * g + group_w * 0.1;
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const std::vector<double>& values = chart.series[s].values;
      if (g >= values.size() || std::isnan(values[g])) continue;
      double v = values[g];
      double top = y.ToY(std::max(v, 0.0)), bottom = y.ToY(std::min(v, 0.0));
      svg.Rect(gx + bar_w * s, top, bar_w * 0.92, bottom - top, Palette(s),
               chart.series[s].name + " on " + chart.groups[g] + ": " + Number(v, 0.001));
    }
    double cx = kLeft + group_w * (g + 0.5), ly = kTop + kPlotH + 16;
    if (slant) {
      char rotate[64];
      std::snprintf(rotate, sizeof rotate, "transform=\"rotate(-25 %.1f %.1f)\"", cx, ly);
      svg.Text(cx, ly, chart.groups[g], 10, "end", rotate);
    } else {
      svg.Text(cx, ly, chart.groups[g], 11, "middle");
    }
  }
  Reference(svg, y, chart.reference);
  std::vector<std::string> names;
  for (const BarSeries& s : chart.series)
    names.push_back(s.name);
  Legend(svg, names);
  return svg.Finish();
}

std::string RenderLineChart(const LineChart& chart) {
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  bool first = true;
  for (const LineSeries& s : chart.series) {
    for (const auto& [x, v] : s.points) {
      x_lo = first ? x : std::min(x_lo, x);
      x_hi = first ? x : std::max(x_hi, x);
      y_lo = first ? v : std::min(y_lo, v);
      y_hi = first ? v : std::max(y_hi, v);
      first = false;
    }
  }
  if (!std::isnan(chart.reference)) {
    y_lo = std::min(y_lo, chart.reference);
    y_hi = std::max(y_hi, chart.reference);
  }
  x_lo = std::min(0.0, x_lo);  // times and intervals read best from zero
  if (!(x_hi > x_lo)) x_hi = x_lo + 1;
  // Ratios near 1 read best on an axis that does not start at zero.
  double lo = chart.y_min;
  if (std::isnan(lo) && y_lo > 0) lo = std::max(0.0, y_lo - 0.25 * (y_hi - y_lo));
  Axis y = YAxis(y_lo, y_hi, lo, chart.y_max);
  auto to_x = [&](double x) { return kLeft + kPlotW * (x - x_lo) / (x_hi - x_lo); };
  SvgWriter svg(kWidth, kHeight);
  Frame(svg, chart.title, chart.subtitle, chart.y_label, y);
  double x_step = NiceStep(x_hi - x_lo, 8);
  for (double x = std::ceil(x_lo / x_step) * x_step; x <= x_hi + x_step * 1e-6; x += x_step) {
    svg.Line(to_x(x), kTop + kPlotH, to_x(x), kTop + kPlotH + 4, "#333");
    svg.Text(to_x(x), kTop + kPlotH + 16, Number(x, x_step), 10, "middle");
  }
  svg.Text(kLeft + kPlotW / 2, kTop + kPlotH + 40, chart.x_label, 11, "middle");
  Reference(svg, y, chart.reference);
  for (size_t s = 0; s < chart.series.size(); ++s) {
    std::string points;
    for (const auto& [x, v] : chart.series[s].points) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", to_x(x), y.ToY(v));
      points += buf;
      if (chart.markers) {
        char dot[160];
        std::snprintf(dot, sizeof dot, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
                      to_x(x), y.ToY(v), Palette(s).c_str());
        svg.Raw(dot);
      }
    }
    svg.Polyline(points, Palette(s), 2.0);
  }
  std::vector<std::string> names;
  for (const LineSeries& s : chart.series)
    names.push_back(s.name);
  Legend(svg, names);
  return svg.Finish();
}

}  // namespace saturn::bench
