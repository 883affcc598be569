#include "report/loss_histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/format.h"
#include "report/svg.h"

namespace saturn {
namespace {

// Bins for n losses: 2 sqrt(n), from 8 (a few groups) to 24 (from 144).
double TargetBins(size_t n) {
  return std::clamp(std::round(2 * std::sqrt(static_cast<double>(n))), 8.0, 24.0);
}
// Room for a bin's index lost to rounding (0.3 / 0.1 = 2.9999999999999996).
constexpr double kSlack = 1e-9;

constexpr double kLeft = 56, kPlotW = 540, kRight = 20, kTop = 50, kPlotH = 190, kBottom = 50;

// A loss in a tooltip or tick: three significant digits.
std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// About `target` bins on a log scale, a whole number a decade, from the one
// holding lo to the one holding hi.
LossHistogram LogBins(double lo, double hi, double target) {
  LossHistogram h;
  h.log_scale = true;
  const double a = std::log10(lo), b = std::log10(hi);
  const double k = std::max(1.0, std::round(target / (b - a)));
  const long first = static_cast<long>(std::floor(a * k + kSlack));
  long last = static_cast<long>(std::ceil(b * k - kSlack));
  if (last <= first) last = first + 1;
  for (long i = first; i <= last; ++i)
    h.edges.push_back(std::pow(10.0, static_cast<double>(i) / k));
  return h;
}

// Even bins on the step of 1, 2, 2.5, 4 or 5 x 10^k whose count is nearest
// `target`.
LossHistogram LinearBins(double lo, double hi, double target) {
  if (hi - lo <= 0) {
    const double pad = lo != 0 ? std::fabs(lo) * 0.05 : 0.5;
    lo -= pad;
    hi += pad;
  }
  const double e = std::floor(std::log10((hi - lo) / target));
  double step = 0, best = INFINITY;
  for (double exponent : {e - 1, e, e + 1}) {
    for (double m : {1.0, 2.0, 2.5, 4.0, 5.0}) {
      const double s = m * std::pow(10.0, exponent);
      const double bins = std::ceil(hi / s - kSlack) - std::floor(lo / s + kSlack);
      if (std::fabs(bins - target) < best) best = std::fabs(bins - target), step = s;
    }
  }
  LossHistogram h;
  const long first = static_cast<long>(std::floor(lo / step + kSlack));
  long last = static_cast<long>(std::ceil(hi / step - kSlack));
  if (last <= first) last = first + 1;
  for (long i = first; i <= last; ++i)
    h.edges.push_back(static_cast<double>(i) * step);
  return h;
}

// Where a loss falls between the first edge (0) and the last (1).
double Fraction(const LossHistogram& h, double v) {
  const double lo = h.edges.front(), hi = h.edges.back();
  if (h.log_scale) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return (v - lo) / (hi - lo);
}

double X(const LossHistogram& h, double v) {
  return kLeft + kPlotW * Fraction(h, v);
}

// Ticks: each decade labelled (and 2 to 9 times it unlabelled) on a log
// scale, about six nice steps on a linear one.
void DrawXAxis(SvgWriter& svg, const LossHistogram& h) {
  const double y = kTop + kPlotH, lo = h.edges.front(), hi = h.edges.back();
  auto tick = [&](double v, bool labelled, const std::string& text) {
    svg.Line(X(h, v), y, X(h, v), y + (labelled ? 5 : 3), "#999");
    if (labelled) svg.Text(X(h, v), y + 16, text, 9.5, "middle", "fill=\"#555\"");
  };
  if (h.log_scale) {
    for (double d = std::floor(std::log10(lo)); d <= std::ceil(std::log10(hi)); ++d) {
      for (int m = 1; m < 10; ++m) {
        const double v = m * std::pow(10.0, d);
        if (v < lo * (1 - kSlack) || v > hi * (1 + kSlack)) continue;
        tick(v, m == 1, d >= -4 && d <= 5 ? FormatNumber(std::pow(10.0, d)) : "1e" + Short(d));
      }
    }
  } else {
    const double step = NiceAxisStep(hi - lo, 6);
    for (double v = std::ceil(lo / step - kSlack) * step; v <= hi + step * kSlack; v += step)
      tick(v, true, AxisTickLabel(v, step));
  }
  svg.Line(kLeft, y, kLeft + kPlotW, y, "#999");
  svg.Text(kLeft + kPlotW / 2, y + 34,
           h.log_scale ? "held-out loss (log scale: the losses span more than two decades)"
                       : "held-out loss",
           10.5, "middle", "fill=\"#333\"");
}

// Counts from 0 up, whole numbers.
double DrawYAxis(SvgWriter& svg, long most) {
  const double step = std::max(1.0, std::round(NiceAxisStep(std::max(1L, most), 4)));
  const double top = std::max(step, std::ceil(static_cast<double>(most) / step) * step);
  for (double c = 0; c <= top + kSlack; c += step) {
    const double y = kTop + kPlotH * (1 - c / top);
    svg.Line(kLeft, y, kLeft + kPlotW, y, "#e6e6e6");
    svg.Text(kLeft - 5, y + 3.5, FormatNumber(c), 9.5, "end", "fill=\"#555\"");
  }
  svg.Line(kLeft, kTop, kLeft, kTop + kPlotH, "#999");
  const std::string mid = FormatFixed(kTop + kPlotH / 2, 1);
  svg.Text(14, kTop + kPlotH / 2, "groups", 10.5, "middle",
           "fill=\"#333\" transform=\"rotate(-90 14 " + mid + ")\"");
  return top;
}

}  // namespace

long LossHistogram::Total() const {
  long total = 0;
  for (long c : counts)
    total += c;
  return total;
}

LossHistogram HistogramOf(const std::vector<double>& losses) {
  if (losses.empty()) return {};
  const auto [lo, hi] = std::minmax_element(losses.begin(), losses.end());
  const double target = TargetBins(losses.size());
  LossHistogram h = *lo > 0 && *hi / *lo > kLogScaleSpan ? LogBins(*lo, *hi, target)
                                                         : LinearBins(*lo, *hi, target);
  const long bins = static_cast<long>(h.edges.size()) - 1;
  h.counts.assign(static_cast<size_t>(bins), 0);
  const double span = h.log_scale ? std::log10(h.edges.back()) - std::log10(h.edges.front())
                                  : h.edges.back() - h.edges.front();
  for (double v : losses) {
    const double at =
        h.log_scale ? std::log10(v) - std::log10(h.edges.front()) : v - h.edges.front();
    long bin = static_cast<long>(std::floor(at / span * static_cast<double>(bins) + kSlack));
    ++h.counts[static_cast<size_t>(std::clamp(bin, 0L, bins - 1))];
  }
  return h;
}

std::string RenderHistogramSvg(const LossHistogram& h, const std::string& title,
                               const std::string& subtitle) {
  SvgWriter svg(kLeft + kPlotW + kRight, kTop + kPlotH + kBottom);
  svg.Text(kLeft, 20, title, 14, "start", "font-weight=\"bold\"");
  svg.Text(kLeft, 37, subtitle, 10.5, "start", "fill=\"#555\"");
  if (h.counts.empty()) {
    svg.Text(kLeft + kPlotW / 2, kTop + kPlotH / 2, "no group has a held-out loss", 12, "middle",
             "fill=\"#777\"");
    return svg.Finish();
  }
  const double top = DrawYAxis(svg, *std::max_element(h.counts.begin(), h.counts.end()));
  const double bar_w = kPlotW / static_cast<double>(h.counts.size());
  for (size_t i = 0; i < h.counts.size(); ++i) {
    const long n = h.counts[i];
    if (n == 0) continue;
    const double bar_h = kPlotH * static_cast<double>(n) / top;
    svg.Rect(kLeft + bar_w * static_cast<double>(i) + 0.5, kTop + kPlotH - bar_h, bar_w - 1, bar_h,
             "#6b9bd1",
             Short(h.edges[i]) + " to " + Short(h.edges[i + 1]) + ": " + Plural(n, "group"),
             "class=\"bin\" data-count=\"" + std::to_string(n) + "\"");
  }
  DrawXAxis(svg, h);
  return svg.Finish();
}

}  // namespace saturn
