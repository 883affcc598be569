#include "planner/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace saturn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct NodeClasses {
  std::vector<int> sizes;        // distinct node sizes, ascending
  std::vector<double> capacity;  // GPUs on nodes of size >= sizes[k]
};

NodeClasses ClassesOf(const Problem& problem) {
  NodeClasses c;
  for (const NodeSlots& n : problem.nodes)
    c.sizes.push_back(n.gpus);
  std::sort(c.sizes.begin(), c.sizes.end());
  c.sizes.erase(std::unique(c.sizes.begin(), c.sizes.end()), c.sizes.end());
  for (int s : c.sizes) {
    double cap = 0;
    for (const NodeSlots& n : problem.nodes)
      cap += n.gpus >= s ? n.gpus : 0;
    c.capacity.push_back(cap);
  }
  return c;
}

// The smallest makespan >= t that conditions (b) and (c) allow when every task
// uses its admissible options for runtime <= t; +inf if a task has none.
double BoundAt(const Problem& problem, const NodeClasses& classes, double t) {
  std::vector<double> area_by_class(classes.sizes.size(), 0.0);
  double big_runtime = 0.0;
  std::vector<bool> node_hosts_big(problem.nodes.size(), false);
  for (const Task& task : problem.tasks) {
    double min_area = kInf;
    double min_runtime = kInf;
    int min_class = static_cast<int>(classes.sizes.size());
    bool always_big = true;
    bool any = false;
    for (const Option& o : task.options) {
      if (o.runtime_s > t) continue;
      bool fits = false;
      for (int n = 0; n < problem.NumNodes(); ++n) {
        if (!problem.Fits(o, n)) continue;
        fits = true;
        if (2 * o.gpus <= problem.nodes[n].gpus) always_big = false;
      }
      if (!fits) continue;
      any = true;
      min_area = std::min(min_area, o.gpus * o.runtime_s);
      min_runtime = std::min(min_runtime, o.runtime_s);
      // Smallest node class this option fits.
      int k =
          static_cast<int>(std::lower_bound(classes.sizes.begin(), classes.sizes.end(), o.gpus) -
                           classes.sizes.begin());
      min_class = std::min(min_class, k);
    }
    if (!any) return kInf;
    area_by_class[min_class] += min_area;
    if (always_big) {
      big_runtime += min_runtime;
      for (const Option& o : task.options) {
        if (o.runtime_s > t) continue;
        for (int n = 0; n < problem.NumNodes(); ++n) {
          if (problem.Fits(o, n)) node_hosts_big[n] = true;
        }
      }
    }
  }
  double bound = t;
  // (b): tasks needing class >= k must fit into the capacity of classes >= k.
  double suffix_area = 0.0;
  for (int k = static_cast<int>(classes.sizes.size()) - 1; k >= 0; --k) {
    suffix_area += area_by_class[k];
    bound = std::max(bound, suffix_area / classes.capacity[k]);
  }
  // (c): at most one "big" task per node at a time.
  int hosts = static_cast<int>(std::count(node_hosts_big.begin(), node_hosts_big.end(), true));
  if (hosts > 0) bound = std::max(bound, big_runtime / hosts);
  return bound;
}

}  // namespace

double MakespanLowerBound(const Problem& problem) {
  if (problem.tasks.empty()) return 0.0;
  std::vector<double> runtimes;
  for (const Task& task : problem.tasks) {
    for (const Option& o : task.options) {
      if (problem.FitsSomewhere(o)) runtimes.push_back(o.runtime_s);
    }
  }
  std::sort(runtimes.begin(), runtimes.end());
  runtimes.erase(std::unique(runtimes.begin(), runtimes.end()), runtimes.end());
  if (runtimes.empty()) return kInf;
  NodeClasses classes = ClassesOf(problem);
  // Interval k is [runtimes[k], runtimes[k+1]); admissible sets are constant on
  // it. It holds the answer if its bound is below the next runtime. That test
  // is monotone in k, so binary search for the first such interval.
  auto answer_in = [&](size_t k, double* value) {
    double b = BoundAt(problem, classes, runtimes[k]);
    *value = b;
    return k + 1 == runtimes.size() || b < runtimes[k + 1];
  };
  size_t lo = 0, hi = runtimes.size() - 1;
  double value = kInf;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    double v;
    if (answer_in(mid, &v)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  answer_in(lo, &value);
  return value;
}

}  // namespace saturn
