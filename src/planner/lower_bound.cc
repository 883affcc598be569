#include "planner/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace saturn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct NodeClasses {
  std::vector<int> sizes;        // distinct node sizes, ascending
  std::vector<double> capacity;  // GPUs on nodes of size >= sizes[k]
  std::vector<int> nodes_from;   // number of nodes of size >= sizes[k]
};

NodeClasses ClassesOf(const Problem& problem) {
  NodeClasses c;
  for (const NodeSlots& n : problem.nodes)
    c.sizes.push_back(n.gpus);
  std::sort(c.sizes.begin(), c.sizes.end());
  c.sizes.erase(std::unique(c.sizes.begin(), c.sizes.end()), c.sizes.end());
  for (int s : c.sizes) {
    double cap = 0;
    int count = 0;
    for (const NodeSlots& n : problem.nodes) {
      cap += n.gpus >= s ? n.gpus : 0;
      count += n.gpus >= s ? 1 : 0;
    }
    c.capacity.push_back(cap);
    c.nodes_from.push_back(count);
  }
  return c;
}

// Smallest node class whose nodes have at least `gpus` GPUs.
int ClassOf(const NodeClasses& classes, int gpus) {
  return static_cast<int>(std::lower_bound(classes.sizes.begin(), classes.sizes.end(), gpus) -
                          classes.sizes.begin());
}

// A task's options that fit somewhere, sorted by runtime, with running
// summaries: the options admissible for a makespan t are a prefix (runtime
// <= t), so everything BoundAt needs of them is one look-up.
struct TaskOptions {
  std::vector<double> runtime;     // ascending
  std::vector<double> min_area;    // least GPU-seconds of the prefix
  std::vector<int> min_class;      // smallest node class of the prefix
  std::vector<bool> always_big;    // every prefix option is big on every node it fits
  std::vector<int> min_free_gpus;  // fewest GPUs of the prefix's unpinned options (INT_MAX: none)
  std::vector<std::pair<size_t, int>> pinned;  // (position, node) of options pinned to a node
  // Mixed GPU types only: per prefix, the least GPU-seconds on each type
  // (+inf: no admissible option runs there).
  std::vector<std::vector<double>> type_area;
};

TaskOptions SummariseTask(const Problem& problem, const NodeClasses& classes, const Task& task) {
  struct One {
    double runtime, area;
    int node_class;
    bool big;
    int gpus, node, type;
  };
  const int largest = classes.sizes.empty() ? 0 : classes.sizes.back();
  std::vector<One> fits;
  for (const Option& o : task.options) {
    // Fits somewhere (Problem::FitsSomewhere, without its loop over nodes).
    if (o.node >= 0 ? o.gpus > problem.nodes[o.node].gpus : o.gpus > largest) continue;
    // Big: more than half of every node it fits (two never share a node).
    bool big = o.node >= 0 ? 2 * o.gpus > problem.nodes[o.node].gpus : 2 * o.gpus > largest;
    int type = o.node >= 0 ? problem.nodes[o.node].type : o.type;
    fits.push_back(
        {o.runtime_s, o.gpus * o.runtime_s, ClassOf(classes, o.gpus), big, o.gpus, o.node, type});
  }
  std::stable_sort(fits.begin(), fits.end(),
                   [](const One& a, const One& b) { return a.runtime < b.runtime; });
  TaskOptions t;
  for (const One& o : fits) {
    bool first = t.runtime.empty();
    t.runtime.push_back(o.runtime);
    t.min_area.push_back(first ? o.area : std::min(t.min_area.back(), o.area));
    t.min_class.push_back(first ? o.node_class : std::min(t.min_class.back(), o.node_class));
    t.always_big.push_back(first ? o.big : (t.always_big.back() && o.big));
    int free_gpus = o.node >= 0 ? std::numeric_limits<int>::max() : o.gpus;
    t.min_free_gpus.push_back(first ? free_gpus : std::min(t.min_free_gpus.back(), free_gpus));
    if (o.node >= 0) t.pinned.push_back({t.runtime.size() - 1, o.node});
    if (problem.Mixed()) {
      std::vector<double> area =
          first ? std::vector<double>(problem.types.size(), kInf) : t.type_area.back();
      for (size_t k = 0; k < area.size(); ++k) {
        if (o.type < 0 || o.type == static_cast<int>(k)) area[k] = std::min(area[k], o.area);
      }
      t.type_area.push_back(std::move(area));
    }
  }
  return t;
}

// Mixed GPU types: a bound from the fractional assignment of work to types.
// Each task j needs a_jt GPU-seconds if it runs on type t, and type t has
// cap_t GPUs; for any weights u >= 0 with sum u = 1, LP duality gives
//   T >= sum_j min_t (u_t / cap_t) a_jt
// (the min over the types j can use). Every u is valid; the best of a grid
// over the simplex (and its corners) is taken, which is within a few percent
// of the LP's optimum for a handful of types (coarser for thousands of tasks).
double TypeBound(const std::vector<std::vector<double>>& areas, const std::vector<double>& cap) {
  const int k = static_cast<int>(cap.size());
  // Flat: task j's area on type t at j * k + t (+inf: it cannot run there).
  std::vector<double> flat;
  flat.reserve(areas.size() * static_cast<size_t>(k));
  for (const std::vector<double>& a : areas)
    flat.insert(flat.end(), a.begin(), a.end());
  // The finest grid with at most ~2,000 points and ~500,000 (point, task,
  // type) terms, so that large problems stay cheap (it runs per candidate T).
  const double budget = std::max(
      3.0, std::min(2000.0, 5e5 / std::max<double>(1.0, static_cast<double>(flat.size()))));
  auto points = [&](int r) {
    double c = 1;
    for (int i = 1; i < k; ++i)
      c = c * (r + i) / i;
    return c;
  };
  int steps = 1;
  while (steps < 64 && points(steps + 1) <= budget)
    ++steps;
  double best = 0.0;
  std::vector<int> u(static_cast<size_t>(k), 0);
  std::vector<double> w(static_cast<size_t>(k), 0.0);
  // Every composition of `steps` into k parts.
  std::function<void(int, int)> walk = [&](int i, int left) {
    if (i == k - 1) {
      u[static_cast<size_t>(i)] = left;
      for (int t = 0; t < k; ++t) {
        double c = cap[static_cast<size_t>(t)];
        w[static_cast<size_t>(t)] = c > 0 ? u[static_cast<size_t>(t)] / (steps * c) : kInf;
      }
      double total = 0.0;
      for (size_t at = 0; at < flat.size(); at += static_cast<size_t>(k)) {
        double least = kInf;
        for (int t = 0; t < k; ++t) {
          double a = flat[at + static_cast<size_t>(t)];
          if (a < kInf) least = std::min(least, w[static_cast<size_t>(t)] * a);
        }
        total += least;
      }
      if (total < kInf) best = std::max(best, total);
      return;
    }
    for (int v = 0; v <= left; ++v) {
      u[static_cast<size_t>(i)] = v;
      walk(i + 1, left - v);
    }
  };
  walk(0, steps);
  return best;
}

struct Summary {
  NodeClasses classes;
  std::vector<TaskOptions> tasks;
  std::vector<double> type_capacity;  // GPUs per type (mixed types only)
};

// The smallest makespan >= t that conditions (b) and (c) allow when every task
// uses its admissible options for runtime <= t; +inf if a task has none.
double BoundAt(const Problem& problem, const Summary& s, double t) {
  const NodeClasses& classes = s.classes;
  std::vector<double> area_by_class(classes.sizes.size(), 0.0);
  double big_runtime = 0.0;
  int big_free_gpus = std::numeric_limits<int>::max();  // unpinned big options fit nodes >= this
  std::vector<int> big_pinned;                          // nodes pinned big options use
  std::vector<std::vector<double>> type_areas;
  for (const TaskOptions& task : s.tasks) {
    const size_t k = static_cast<size_t>(
        std::upper_bound(task.runtime.begin(), task.runtime.end(), t) - task.runtime.begin());
    if (k == 0) return kInf;
    area_by_class[task.min_class[k - 1]] += task.min_area[k - 1];
    if (!task.type_area.empty()) type_areas.push_back(task.type_area[k - 1]);
    if (!task.always_big[k - 1]) continue;
    big_runtime += task.runtime[0];
    big_free_gpus = std::min(big_free_gpus, task.min_free_gpus[k - 1]);
    for (const auto& [position, node] : task.pinned) {
      if (position < k) big_pinned.push_back(node);
    }
  }
  double bound = t;
  // (b): tasks needing class >= k must fit into the capacity of classes >= k.
  double suffix_area = 0.0;
  for (int k = static_cast<int>(classes.sizes.size()) - 1; k >= 0; --k) {
    suffix_area += area_by_class[k];
    bound = std::max(bound, suffix_area / classes.capacity[k]);
  }
  // (c): at most one "big" task per node at a time, on the nodes that can
  // host one (nodes of >= big_free_gpus GPUs, and the pinned ones).
  int hosts = 0;
  const int from = ClassOf(classes, big_free_gpus);
  if (from < static_cast<int>(classes.sizes.size())) hosts = classes.nodes_from[from];
  std::sort(big_pinned.begin(), big_pinned.end());
  big_pinned.erase(std::unique(big_pinned.begin(), big_pinned.end()), big_pinned.end());
  for (int n : big_pinned) {
    if (problem.nodes[n].gpus < big_free_gpus) ++hosts;
  }
  if (hosts > 0) bound = std::max(bound, big_runtime / hosts);
  if (!s.type_capacity.empty()) bound = std::max(bound, TypeBound(type_areas, s.type_capacity));
  return bound;
}

}  // namespace

double MakespanLowerBound(const Problem& problem) {
  if (problem.tasks.empty()) return 0.0;
  Summary s;
  s.classes = ClassesOf(problem);
  if (problem.Mixed()) {
    s.type_capacity.assign(problem.types.size(), 0.0);
    for (const NodeSlots& n : problem.nodes)
      s.type_capacity[static_cast<size_t>(n.type)] += n.gpus;
  }
  std::vector<double> runtimes;
  for (const Task& task : problem.tasks) {
    s.tasks.push_back(SummariseTask(problem, s.classes, task));
    runtimes.insert(runtimes.end(), s.tasks.back().runtime.begin(), s.tasks.back().runtime.end());
  }
  std::sort(runtimes.begin(), runtimes.end());
  runtimes.erase(std::unique(runtimes.begin(), runtimes.end()), runtimes.end());
  if (runtimes.empty()) return kInf;
  // Interval k is [runtimes[k], runtimes[k+1]); admissible sets are constant on
  // it. It holds the answer if its bound is below the next runtime. That test
  // is monotone in k, so binary search for the first such interval.
  auto answer_in = [&](size_t k, double* value) {
    double b = BoundAt(problem, s, runtimes[k]);
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
