// One quantile of a growing set of numbers, as numpy computes it, in
// O(log n) per number: the early-stopping rules' cutoffs (ASHA's percentile
// of a rung, the median rule's median) over thousands of tasks.
//
//   RunningQuantile top_half(0.5);
//   for (double v : {0.9, 0.5, 0.4}) top_half.Add(v);
//   top_half.Percentile();   // 0.5, as np.percentile([0.9, 0.5, 0.4], 50)
//   top_half.Median();       // 0.5, as np.median
//
// Numbers are only added (a rung's records stay). Two heaps hold the numbers
// at and below the quantile's lower neighbour and those above it, so both
// neighbours are at hand.
#pragma once

#include <cstddef>
#include <functional>
#include <queue>
#include <vector>

namespace saturn {

class RunningQuantile {
 public:
  // `fraction` in [0, 1]: 0.5 is the median, (1 - 1/R) ASHA's cutoff.
  explicit RunningQuantile(double fraction) : fraction_(fraction) {}

  // NaN is the caller's to leave out (numpy's nanpercentile does).
  void Add(double value);
  size_t size() const { return below_.size() + above_.size(); }

  // np.percentile(values, fraction * 100) with the default (linear) method:
  // virtual index (n - 1) * fraction between its two neighbours, numpy's
  // lerp. size() must be > 0.
  double Percentile() const;
  // np.median(values): the middle number, or the mean of the two middle
  // ones. Meant for fraction 0.5; size() must be > 0.
  double Median() const;

 private:
  // How many of `n` numbers sit in below_: through the lower neighbour.
  size_t BelowCount(size_t n) const;

  double fraction_;
  std::priority_queue<double> below_;                                             // max on top
  std::priority_queue<double, std::vector<double>, std::greater<double>> above_;  // min on top
};

}  // namespace saturn
