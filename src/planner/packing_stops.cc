// Members of a pack under early stopping (planner/packing.h): where the rule
// is expected to stop each of a draw from its group (MemberSteps).
#include <algorithm>
#include <utility>
#include <vector>

#include "planner/packing.h"

namespace saturn {

namespace {

// The mean steps of each of n equal strata of probability of `stops`
// (ascending): the distribution's mass between cumulative probabilities
// j/n and (j+1)/n, times its steps, over the stratum's 1/n; one walk.
std::vector<double> StrataMeans(const std::vector<std::pair<double, double>>& stops, int n) {
  std::vector<double> v(static_cast<size_t>(n), 0.0);
  size_t k = 0;
  double below = 0.0;  // probability of the stops before stops[k]
  for (int j = 0; j < n; ++j) {
    const double lo = static_cast<double>(j) / n, hi = static_cast<double>(j + 1) / n;
    while (k + 1 < stops.size() && below + stops[k].second <= lo)
      below += stops[k++].second;
    double sum = 0.0, at = below;
    for (size_t m = k; m < stops.size() && at < hi; at += stops[m++].second)
      sum += stops[m].first * std::max(0.0, std::min(at + stops[m].second, hi) - std::max(at, lo));
    v[static_cast<size_t>(j)] = sum * n;
  }
  return v;
}

// The members of one early-stopping draw (MemberSteps): indices into
// `members` of those sharing members[a]'s stop group, rule outlook and
// group size, in `members` order.
std::vector<size_t> SameDraw(const PackTerms& terms, const std::vector<int>& members, size_t a) {
  const PackTerms::Member& first = terms.tasks[members[a]];
  std::vector<size_t> same;
  if (first.stops.empty()) return same;
  for (size_t b = 0; b < members.size(); ++b) {
    const PackTerms::Member& m = terms.tasks[members[b]];
    if (m.stop_group == first.stop_group && m.stops == first.stops && m.group == first.group)
      same.push_back(b);
  }
  return same;
}

}  // namespace

std::vector<double> MemberSteps(const PackTerms& terms, const std::vector<int>& members) {
  std::vector<double> steps;
  for (int j : members)
    steps.push_back(terms.tasks[j].steps);
  std::vector<bool> done(members.size(), false);
  for (size_t a = 0; a < members.size(); ++a) {
    if (done[a]) continue;
    const std::vector<size_t> same = SameDraw(terms, members, a);  // a is its first
    if (same.empty()) continue;
    const PackTerms::Member& first = terms.tasks[members[a]];
    const int c = static_cast<int>(same.size());
    const int n = std::max(first.group, c);
    // The group's n tasks end, in expectation, at the n strata's means
    // (v_0 <= ... <= v_{n-1}); the pack's c are c of them drawn without
    // replacement: its i-th lowest (from 0) is the group's j-th with
    // probability w(j) = C(j, i) C(n-1-j, c-1-i) / C(n, c), j = i .. n-c+i.
    const std::vector<double> v = StrataMeans(first.stops, n);
    for (int i = 0; i < c; ++i) {
      // w(i) = C(n-1-i, c-1-i) / C(n, c), then w(j+1) / w(j) =
      // (j+1) / (j+1-i) x (n-c+i-j) / (n-1-j).
      double w = 1.0;
      for (int t = 0; t < c; ++t)  // C(n-1-i, c-1-i) / C(n, c), as a product
        w *= (t < c - 1 - i ? static_cast<double>(n - 1 - i - t) / (c - 1 - i - t) : 1.0) *
             static_cast<double>(c - t) / (n - t);
      double sum = 0.0;
      for (int j = i; j <= n - c + i; ++j) {
        sum += v[static_cast<size_t>(j)] * w;
        if (j < n - c + i)
          w *= static_cast<double>(j + 1) / (j + 1 - i) * (n - c + i - j) / (n - 1 - j);
      }
      steps[same[static_cast<size_t>(i)]] = sum;
      done[same[static_cast<size_t>(i)]] = true;
    }
  }
  return steps;
}

}  // namespace saturn
