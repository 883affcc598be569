// The harness's charts as standalone SVG: grouped bars (one bar per series
// in each group, e.g. per solver per instance) and lines (e.g. utilisation
// over time). Series take fixed, colour-blind-safe colours by position, so
// the same solver keeps its colour when every chart lists solvers in the
// same order. Values that are NaN are left out (a solver that was skipped).
//
//   BarChart c{.title = "Makespan / lower bound", .groups = {"txt-8", "img-8"}};
//   c.series.push_back({"auto", {1.03, 1.05}});
//   WriteFileAtomic("out/paper/fig5.svg", RenderBarChart(c));
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace saturn::bench {

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per group
};

struct BarChart {
  std::string title;
  std::string subtitle;
  std::string y_label;
  std::vector<std::string> groups{};
  std::vector<BarSeries> series{};
  double reference = std::numeric_limits<double>::quiet_NaN();  // dashed line, e.g. 1.0
};

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

struct LineChart {
  std::string title;
  std::string subtitle;
  std::string x_label;
  std::string y_label;
  std::vector<LineSeries> series{};
  bool markers = false;  // dots at the points (few points per series)
  double y_min = std::numeric_limits<double>::quiet_NaN();  // NaN: from the data
  double y_max = std::numeric_limits<double>::quiet_NaN();
  double reference = std::numeric_limits<double>::quiet_NaN();
};

std::string RenderBarChart(const BarChart& chart);
std::string RenderLineChart(const LineChart& chart);

}  // namespace saturn::bench
