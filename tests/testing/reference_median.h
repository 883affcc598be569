// The median stopping rule written in the tests from its definition,
// independent of src/tune: the reference the executor's stops under
// `early_stop: {median: ...}` are checked against (fed the evaluations in
// the order they were logged).
//
//   test::ReferenceMedian median(/*grace=*/2, /*min_samples=*/2, /*steps=*/16);
//   if (median.Stops("t1", 4, 0.7)) ...
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace saturn::test {

// Ray Tune's MedianStoppingRule counted in steps, for a loss (lower is
// better): at an evaluation at step s (grace <= s < the task's steps), a
// task stops if its best loss so far is worse than the median (numpy's:
// the middle two averaged) of the other tasks' mean losses over their
// evaluations at steps in [grace, s], counting only tasks that have
// evaluated at or past s, and only when there are at least min_samples.
class ReferenceMedian {
 public:
  ReferenceMedian(long grace, long min_samples, long steps)
      : grace_(grace), min_samples_(min_samples), steps_(steps) {}

  bool Stops(const std::string& task, long step, double loss) {
    history_[task].push_back({step, loss});
    if (step < grace_ || step >= steps_) return false;
    std::vector<double> means;
    for (const auto& [other, evals] : history_) {
      if (other == task || evals.back().first < step) continue;
      double sum = 0.0;
      int n = 0;
      for (const auto& [s, v] : evals) {
        if (s >= grace_ && s <= step) sum += v, ++n;
      }
      if (n > 0) means.push_back(sum / n);
    }
    if (static_cast<long>(means.size()) < min_samples_) return false;
    std::sort(means.begin(), means.end());
    size_t m = means.size();
    double median = m % 2 ? means[m / 2] : (means[m / 2 - 1] + means[m / 2]) / 2.0;
    double best = loss;
    for (const auto& [s, v] : history_[task])
      best = std::min(best, v);
    return best > median;
  }

 private:
  long grace_, min_samples_, steps_;
  std::map<std::string, std::vector<std::pair<long, double>>> history_;
};

}  // namespace saturn::test
