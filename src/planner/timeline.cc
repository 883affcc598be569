#include "planner/timeline.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace saturn {

NodeTimeline::NodeTimeline(int capacity) : capacity_(capacity) {
  Clear();
}

void NodeTimeline::Clear() {
  steps_.clear();
  steps_.push_back({0.0, 0});
  full_until_ = 0.0;
}

size_t NodeTimeline::StepAt(double t) const {
  auto it = std::upper_bound(steps_.begin(), steps_.end(), t,
                             [](double v, const Step& s) { return v < s.time; });
  return it == steps_.begin() ? 0 : static_cast<size_t>(it - steps_.begin()) - 1;
}

int NodeTimeline::UsedAt(double t) const {
  return steps_[StepAt(t)].used;
}

double NodeTimeline::LastEnd() const {
  return steps_.size() == 1 ? 0.0 : steps_.back().time;
}

double NodeTimeline::EarliestStart(double ready, double duration, int gpus) const {
  return EarliestStartBefore(ready, duration, gpus, std::numeric_limits<double>::infinity());
}

double NodeTimeline::EarliestStartBefore(double ready, double duration, int gpus,
                                         double cutoff) const {
  if (gpus > capacity_) throw std::logic_error("NodeTimeline: task larger than node");
  int limit = capacity_ - gpus;
  // Nothing that needs a GPU starts while every GPU is busy from time 0 on.
  double t = std::max(ready, gpus > 0 ? full_until_ : 0.0);
  size_t i = StepAt(t);
  while (true) {
    if (!(t < cutoff)) return std::numeric_limits<double>::infinity();
    // Find the first step in [t, t+duration) whose usage is too high.
    size_t k = i;
    bool blocked = false;
    while (k < steps_.size() && (k == i || steps_[k].time < t + duration)) {
      if (steps_[k].used > limit) {
        blocked = true;
        break;
      }
      ++k;
    }
    if (!blocked) return t;
    // Restart right after the blocking step.
    i = k + 1;  // the last step always has used == 0, so i stays in range
    t = steps_[i].time;
  }
}

size_t NodeTimeline::SplitAt(double t) {
  size_t i = StepAt(t);
  if (steps_[i].time == t) return i;
  steps_.insert(steps_.begin() + static_cast<long>(i) + 1, Step{t, steps_[i].used});
  return i + 1;
}

void NodeTimeline::Add(double start, double end, int gpus) {
  if (!(end > start)) return;
  size_t first = SplitAt(start);
  size_t last = SplitAt(end);
  for (size_t k = first; k < last; ++k) {
    steps_[k].used += gpus;
    if (steps_[k].used > capacity_) throw std::logic_error("NodeTimeline: capacity exceeded");
  }
  // Usage only grows: the fully busy prefix only lengthens.
  for (size_t k = StepAt(full_until_); k + 1 < steps_.size() && steps_[k].used == capacity_; ++k)
    full_until_ = steps_[k + 1].time;
}

}  // namespace saturn
