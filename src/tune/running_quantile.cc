#include "tune/running_quantile.h"

#include <cmath>

namespace saturn {

size_t RunningQuantile::BelowCount(size_t n) const {
  double virtual_index = static_cast<double>(n - 1) * fraction_;
  return static_cast<size_t>(std::floor(virtual_index)) + 1;
}

void RunningQuantile::Add(double value) {
  if (below_.empty() || value <= below_.top()) {
    below_.push(value);
  } else {
    above_.push(value);
  }
  size_t want = BelowCount(size());
  while (below_.size() > want) {
    above_.push(below_.top());
    below_.pop();
  }
  while (below_.size() < want && !above_.empty()) {
    below_.push(above_.top());
    above_.pop();
  }
}

double RunningQuantile::Percentile() const {
  double virtual_index = static_cast<double>(size() - 1) * fraction_;
  double gamma = virtual_index - std::floor(virtual_index);
  double a = below_.top();
  double b = above_.empty() ? a : above_.top();
  // numpy's _lerp: from the nearer end, so that gamma 1 gives b exactly.
  double diff = b - a;
  return gamma >= 0.5 ? b - diff * (1 - gamma) : a + diff * gamma;
}

double RunningQuantile::Median() const {
  if (size() % 2 == 1 || above_.empty()) return below_.top();
  return (below_.top() + above_.top()) / 2;
}

}  // namespace saturn
