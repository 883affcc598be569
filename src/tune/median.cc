// median: Ray Tune's MedianStoppingRule in steps (see tune/early_stop.h for
// the rule and where it leaves Ray).
//
// The median at step t is over the others' running means up to t. A task's
// mean up to t is fixed once it has evaluated at or past t, so each step the
// rule decides at keeps the means of the tasks past it in a RunningQuantile,
// filled when the step is first asked about and added to as tasks pass it:
// O(log n) per evaluation, not O(n).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "tune/early_stop.h"
#include "tune/running_quantile.h"

namespace saturn {
namespace {

constexpr double kWorst = -std::numeric_limits<double>::infinity();

struct History {
  long last = std::numeric_limits<long>::min();  // step of the last evaluation
  double best = kWorst;                          // higher is better
  std::vector<long> steps;                       // evaluations at steps >= grace
  std::vector<double> sums;                      // running sums of their values
};

// The mean of `h`'s values at steps in [grace, t]; false if it has none.
bool MeanUpTo(const History& h, long t, double* mean) {
  auto count = std::upper_bound(h.steps.begin(), h.steps.end(), t) - h.steps.begin();
  if (count == 0) return false;
  *mean = h.sums[count - 1] / static_cast<double>(count);
  return true;
}

class MedianRule : public StopRule {
 public:
  explicit MedianRule(const EarlyStopSpec& spec)
      : grace_(spec.grace_steps),
        min_samples_(spec.min_samples),
        sign_(spec.maximize() ? 1.0 : -1.0) {}

  bool OnEvaluation(const std::string& task, long step, long total_steps, double value) override {
    History& h = tasks_[task];
    if (step <= h.last) {
      throw std::logic_error("median rule: task " + Quote(task) + " evaluated at step " +
                             std::to_string(step) + " after step " + std::to_string(h.last));
    }
    double v = std::isnan(value) ? kWorst : sign_ * value;
    long previous = h.last;
    h.last = step;
    h.best = std::max(h.best, v);
    if (step >= grace_) {
      h.steps.push_back(step);
      h.sums.push_back((h.sums.empty() ? 0.0 : h.sums.back()) + v);
    }
    bool stop = false;
    if (step >= grace_ && step < total_steps) {
      const RunningQuantile& others = OthersAt(step, &h);
      stop = static_cast<long>(others.size()) >= min_samples_ && h.best < others.Median();
    }
    // This task is now past every cached step in (previous, step].
    for (auto it = cache_.upper_bound(previous); it != cache_.end() && it->first <= step; ++it) {
      double mean;
      if (MeanUpTo(h, it->first, &mean)) it->second.Add(mean);
    }
    return stop;
  }

  std::vector<long> DecisionSteps(long total_steps, long eval_every) const override {
    std::vector<long> steps;
    if (eval_every <= 0) return steps;
    long first = std::max(eval_every, (grace_ + eval_every - 1) / eval_every * eval_every);
    for (long t = first; t < total_steps; t += eval_every) {
      steps.push_back(t);
      if (t > std::numeric_limits<long>::max() - eval_every) break;
    }
    return steps;
  }

 private:
  // The running means up to `t` of the tasks other than `self` that have
  // evaluated at or past t, made from every task's history when t is first
  // asked about; `self` adds itself after deciding.
  const RunningQuantile& OthersAt(long t, const History* self) {
    auto it = cache_.find(t);
    if (it != cache_.end()) return it->second;
    RunningQuantile means(0.5);
    for (const auto& [name, h] : tasks_) {
      double mean;
      if (&h != self && h.last >= t && MeanUpTo(h, t, &mean)) means.Add(mean);
    }
    return cache_.emplace(t, std::move(means)).first->second;
  }

  long grace_;
  long min_samples_;
  double sign_;
  std::unordered_map<std::string, History> tasks_;
  std::map<long, RunningQuantile> cache_;  // by step
};

}  // namespace

std::unique_ptr<StopRule> MakeMedianRule(const EarlyStopSpec& spec) {
  if (spec.grace_steps < 0) {
    throw InputError("", 0, "early_stop.median.grace_steps",
                     "expected an integer >= 0, got " + std::to_string(spec.grace_steps));
  }
  if (spec.min_samples < 1) {
    throw InputError("", 0, "early_stop.median.min_samples",
                     "expected an integer >= 1, got " + std::to_string(spec.min_samples));
  }
  return std::make_unique<MedianRule>(spec);
}

}  // namespace saturn
