// A histogram of losses, one per group of a table (report/groups_summary.h):
// about 24 bins on nice edges (fewer for a few groups), on a log scale where
// the losses span more than two decades (a few groups that fit badly beside
// many that fit well), and its SVG with axes, each bar's range and count in
// its tooltip.
//
//   LossHistogram h = HistogramOf({0.12, 0.5, 3.1});
//   std::string svg = RenderHistogramSvg(h, "Held-out loss per group", "3 groups");
#pragma once

#include <string>
#include <vector>

namespace saturn {

// Bins from the smallest loss to the largest: edges[i] to edges[i + 1] is
// bin i (the last includes its upper edge).
struct LossHistogram {
  bool log_scale = false;
  std::vector<double> edges;  // bins + 1, ascending
  std::vector<long> counts;   // per bin
  long Total() const;
};

// From this ratio of the largest loss to the smallest (> 0) up, the bins
// are even on a log scale.
constexpr double kLogScaleSpan = 100.0;

// The bins of `losses` (finite; the caller counts the rest): about 2 sqrt(n)
// of n, at least 8 and at most 24 (from 144 losses: 20 to 30 bins), on 1,
// 2, 2.5, 4 or 5 x 10^k steps, or on a log scale from more than two
// decades, a whole number of bins per decade. No losses: no bins.
LossHistogram HistogramOf(const std::vector<double>& losses);

// The histogram as an SVG: a bar (rect class "bin", data-count) per bin
// with a count, titled `title`, `subtitle` under it (what it counts and what
// it leaves out); the x axis names its scale ("held-out loss (log scale)").
std::string RenderHistogramSvg(const LossHistogram& h, const std::string& title,
                               const std::string& subtitle);

}  // namespace saturn
