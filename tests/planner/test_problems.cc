#include "tests/planner/test_problems.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace saturn::testing {

Problem MakeProblem(const std::vector<int>& node_gpus,
                    const std::vector<std::pair<std::string, std::vector<OptionSpec>>>& tasks) {
  Problem p;
  for (size_t n = 0; n < node_gpus.size(); ++n) {
    p.nodes.push_back({"node" + std::to_string(n), node_gpus[n]});
  }
  for (const auto& [name, options] : tasks) {
    Task t;
    t.name = name;
    for (const OptionSpec& o : options)
      t.options.push_back({o.technique, o.gpus, o.runtime});
    p.tasks.push_back(std::move(t));
  }
  return p;
}

Problem RandomProblem(uint64_t seed, int tasks, const std::vector<int>& node_gpus, int max_options,
                      bool integral) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int max_gpus = *std::max_element(node_gpus.begin(), node_gpus.end());
  Problem p;
  for (size_t n = 0; n < node_gpus.size(); ++n) {
    p.nodes.push_back({"node" + std::to_string(n), node_gpus[n]});
  }
  for (int t = 0; t < tasks; ++t) {
    Task task;
    task.name = "t" + std::to_string(t);
    double base = integral ? std::floor(5 + 60 * unit(rng)) : 50 + 5000 * unit(rng);
    double efficiency = 0.5 + 0.5 * unit(rng);  // parallel efficiency per doubling
    int options = 1 + static_cast<int>(unit(rng) * max_options);
    int min_gpus = 1 + static_cast<int>(unit(rng) * std::min(2, max_gpus));
    for (int k = 0; k < options; ++k) {
      int gpus = std::min(max_gpus, min_gpus << k);
      if (k > 0 && gpus == task.options.back().gpus) break;
      double runtime = base / std::pow(2 * efficiency, std::log2(gpus));
      if (integral) runtime = std::max(1.0, std::round(runtime));
      const char* technique = k % 2 ? "fsdp" : "ddp";
      task.options.push_back({technique, gpus, runtime});
    }
    p.tasks.push_back(std::move(task));
  }
  return p;
}

Problem RandomMixedProblem(uint64_t seed, int tasks, const std::vector<int>& node_gpus,
                           const std::vector<int>& node_types, int types, bool integral) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Problem base = RandomProblem(seed, tasks, node_gpus, 3, integral);
  Problem p;
  for (int t = 0; t < types; ++t)
    p.types.push_back("type" + std::to_string(t));
  for (size_t n = 0; n < node_gpus.size(); ++n)
    p.nodes.push_back({"node" + std::to_string(n), node_gpus[n], node_types[n]});
  // Type t is about 1.6^t times as fast as type 0, each task by its own factor.
  for (const Task& task : base.tasks) {
    Task typed{task.name, {}};
    for (int t = 0; t < types; ++t) {
      double speed = std::pow(1.6, t) * (0.7 + 0.6 * unit(rng));
      int largest = 0;
      for (size_t n = 0; n < node_gpus.size(); ++n) {
        if (node_types[n] == t) largest = std::max(largest, node_gpus[n]);
      }
      for (Option o : task.options) {
        if (o.gpus > largest) continue;
        o.runtime_s /= speed;
        if (integral) o.runtime_s = std::max(1.0, std::round(o.runtime_s));
        o.type = t;
        typed.options.push_back(o);
      }
    }
    p.tasks.push_back(std::move(typed));
  }
  return p;
}

namespace {

struct Placed {
  int node;
  int gpus;
  double start;
  double end;
};

struct Search {
  const Problem& p;
  std::vector<bool> done;
  std::vector<Placed> placed;
  double best = std::numeric_limits<double>::infinity();

  bool FitsAt(int node, int gpus, double start, double end) const {
    // Usage changes only at starts, so check at `start` and every placed
    // start inside the window.
    std::vector<double> points = {start};
    for (const Placed& q : placed) {
      if (q.node == node && q.start > start && q.start < end) points.push_back(q.start);
    }
    for (double t : points) {
      int used = gpus;
      for (const Placed& q : placed) {
        if (q.node == node && q.start <= t && t < q.end) used += q.gpus;
      }
      if (used > p.nodes[node].gpus) return false;
    }
    return true;
  }

  void Recurse(double last_start, int last_task, double makespan) {
    if (makespan >= best) return;
    if (placed.size() == p.tasks.size()) {
      best = makespan;
      return;
    }
    for (int j = 0; j < p.NumTasks(); ++j) {
      if (done[j]) continue;
      for (const Option& o : p.tasks[j].options) {
        for (int n = 0; n < p.NumNodes(); ++n) {
          if (o.gpus > p.nodes[n].gpus) continue;
          if (o.type >= 0 && o.type != p.nodes[n].type) continue;  // another GPU type
          std::vector<double> starts = {0.0};
          for (const Placed& q : placed) {
            if (q.node == n) starts.push_back(q.end);
          }
          std::sort(starts.begin(), starts.end());
          starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
          for (double s : starts) {
            // Enumerate in (start, task index) order only.
            if (s < last_start || (s == last_start && j < last_task)) continue;
            double e = s + o.runtime_s;
            if (!FitsAt(n, o.gpus, s, e)) continue;
            done[j] = true;
            placed.push_back({n, o.gpus, s, e});
            Recurse(s, j, std::max(makespan, e));
            placed.pop_back();
            done[j] = false;
          }
        }
      }
    }
  }
};

}  // namespace

double BruteForceOptimum(const Problem& problem) {
  Search s{problem, std::vector<bool>(problem.tasks.size(), false), {}};
  s.Recurse(0.0, -1, 0.0);
  return s.best;
}

}  // namespace saturn::testing
