// asha: Ray Tune's AsyncHyperBandScheduler with one bracket (see
// tune/early_stop.h for the rule and where it follows Ray).
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/error.h"
#include "tune/early_stop.h"
#include "tune/running_quantile.h"

namespace saturn {
namespace {

class AshaRule : public StopRule {
 public:
  explicit AshaRule(const EarlyStopSpec& spec)
      : grace_(spec.grace_steps),
        factor_(spec.reduction_factor),
        sign_(spec.maximize() ? 1.0 : -1.0) {}

  bool OnEvaluation(const std::string& task, long step, long total_steps, double value) override {
    GrowRungsTo(step);
    // Ray walks the rungs from the top: the highest one reached that has
    // no record of this task is where it is judged (at most one per result).
    for (size_t i = rungs_.size(); i-- > 0;) {
      Rung& rung = rungs_[i];
      if (rung.step > step || rung.recorded.count(task) > 0) continue;
      double higher_better = sign_ * value;
      bool stop =
          step < total_steps && rung.values.size() > 0 && higher_better < rung.values.Percentile();
      rung.recorded.insert(task);
      if (!std::isnan(higher_better)) rung.values.Add(higher_better);
      return stop;
    }
    return false;
  }

  std::vector<long> DecisionSteps(long total_steps, long eval_every) const override {
    std::vector<long> steps;
    if (eval_every <= 0) return steps;
    for (long rung = grace_; rung < total_steps; rung *= factor_) {
      steps.push_back(rung);
      if (rung > std::numeric_limits<long>::max() / factor_) break;
    }
    return steps;
  }

 private:
  struct Rung {
    long step;
    RunningQuantile values;  // higher is better, NaN left out
    std::unordered_set<std::string> recorded;
  };

  // Rungs at grace * factor^k up to `step`, made as evaluations reach them.
  void GrowRungsTo(long step) {
    while (true) {
      long next = grace_;
      if (!rungs_.empty()) {
        long last = rungs_.back().step;
        if (last > std::numeric_limits<long>::max() / factor_) return;
        next = last * factor_;
      }
      if (next > step) return;
      double fraction = (1.0 - 1.0 / static_cast<double>(factor_)) * 100.0 / 100.0;
      rungs_.push_back(Rung{next, RunningQuantile(fraction), {}});
    }
  }

  long grace_;
  long factor_;
  double sign_;
  std::vector<Rung> rungs_;  // ascending steps
};

}  // namespace

std::unique_ptr<StopRule> MakeAshaRule(const EarlyStopSpec& spec) {
  if (spec.grace_steps < 1) {
    throw InputError("", 0, "early_stop.asha.grace_steps",
                     "expected an integer >= 1, got " + std::to_string(spec.grace_steps));
  }
  if (spec.reduction_factor < 2) {
    throw InputError("", 0, "early_stop.asha.reduction_factor",
                     "expected an integer >= 2, got " + std::to_string(spec.reduction_factor));
  }
  return std::make_unique<AshaRule>(spec);
}

}  // namespace saturn
