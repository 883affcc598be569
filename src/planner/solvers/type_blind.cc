// type-blind: Saturn as if every GPU were of one type, the baseline of a
// mixed cluster. It plans (with auto) a problem where every node is of the
// median type (each task's options are that type's rows), then runs the plan
// on the real types: each task keeps its technique, GPU count, node and
// GPUs, takes the runtime of that configuration on its node's real type, and
// starts when it is next on all of its GPUs and they are free (as the
// executor dispatches a plan). The median type is the one whose typical
// speed is in the middle: types are ranked by the median, over tasks, of
// their fastest runtime at the task's smallest GPU count. On a cluster of one
// type it is auto.
#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "planner/registry.h"
#include "planner/schedule.h"
#include "planner/solver.h"

namespace saturn {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The fastest unpinned option of `task` with `gpus` GPUs that runs on a node
// of type `type` (and on `node` when it is >= 0), or -1.
int FastestOn(const Problem& problem, const Task& task, int gpus, int type, int node,
              const std::string& technique = "") {
  int best = -1;
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& c = task.options[o];
    if (c.starts_now || c.gpus != gpus || (!technique.empty() && c.technique != technique)) {
      continue;
    }
    bool fits = false;
    for (int n = 0; n < problem.NumNodes() && !fits; ++n) {
      fits = (node < 0 || n == node) && problem.nodes[n].type == type && problem.Fits(c, n);
    }
    if (fits && (best < 0 || c.runtime_s < task.options[best].runtime_s)) best = o;
  }
  return best;
}

int MedianType(const Problem& problem, int types) {
  std::vector<std::pair<double, int>> speed;
  for (int t = 0; t < types; ++t) {
    std::vector<double> runtimes;
    for (const Task& task : problem.tasks) {
      int smallest = 1 << 30;
      for (const Option& o : task.options)
        smallest = std::min(smallest, o.gpus);
      int o = FastestOn(problem, task, smallest, t, -1);
      if (o >= 0) runtimes.push_back(task.options[o].runtime_s);
    }
    if (!runtimes.empty()) speed.push_back({Median(runtimes), t});
  }
  if (speed.empty()) throw std::logic_error("type-blind: no task runs on any type");
  std::sort(speed.begin(), speed.end());
  return speed[(speed.size() - 1) / 2].second;
}

class TypeBlindSolver final : public Solver {
 public:
  std::string_view Name() const override { return "type-blind"; }
  std::string_view Description() const override {
    return "auto's plan as if every GPU were the median type, run on the real types";
  }
  SolveResult Solve(const Problem& problem, const SolveContext& ctx) const override {
    const Solver* planner = BuiltinSolvers().Find("auto");
    int types = 1;
    for (const NodeSlots& n : problem.nodes)
      types = std::max(types, n.type + 1);
    if (types == 1) return planner->Solve(problem, ctx);
    const int median = MedianType(problem, types);
    // The blind problem: every node of one type, each task with the median
    // type's options (pinned ones kept as they are).
    Problem blind = problem;
    for (NodeSlots& n : blind.nodes)
      n.type = 0;
    blind.types.clear();
    std::vector<std::vector<int>> back(problem.tasks.size());
    for (size_t j = 0; j < problem.tasks.size(); ++j) {
      const Task& task = problem.tasks[j];
      Task& b = blind.tasks[j];
      b.options.clear();
      for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
        const Option& c = task.options[o];
        if (!c.starts_now && c.node < 0 && c.type >= 0 && c.type != median) continue;
        b.options.push_back(c);
        b.options.back().type = -1;
        back[j].push_back(o);
      }
      if (b.options.empty()) {
        // No row on the median type: the task's options on any type.
        for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
          b.options.push_back(task.options[o]);
          b.options.back().type = -1;
          back[j].push_back(o);
        }
      }
    }
    SolveContext inner = ctx;
    inner.lower_bound = 0.0;
    inner.warm_start.clear();
    SolveResult planned = planner->Solve(blind, inner);
    if (planned.status == SolveStatus::kInfeasible) return planned;
    return {SolveStatus::kFeasible,
            RunOnRealTypes(problem, blind, back, planned.schedule),
            0.0,
            "planned on the median type " + GpuTypeName(problem, median),
            {},
            planned.work};
  }

 private:
  static std::string GpuTypeName(const Problem& problem, int type) {
    const std::string& name = problem.TypeName(type);
    return name.empty() ? "(unnamed)" : name;
  }

  // Task `task` on the node and option where it ends first, on the GPUs of
  // that node that free first (updating `free`).
  static Placement Elsewhere(const Problem& problem, const Task& task,
                             std::vector<std::vector<double>>& free) {
    Placement best;
    double best_end = 0.0;
    for (int n = 0; n < problem.NumNodes(); ++n) {
      std::vector<double> times = free[static_cast<size_t>(n)];
      std::sort(times.begin(), times.end());
      for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
        const Option& c = task.options[static_cast<size_t>(o)];
        if (c.starts_now || !problem.Fits(c, n)) continue;
        double start = times[static_cast<size_t>(c.gpus - 1)];
        if (best.node < 0 || start + c.runtime_s < best_end) {
          best = {o, n, start};
          best_end = start + c.runtime_s;
        }
      }
    }
    if (best.node < 0) throw std::logic_error("type-blind: " + task.name + " fits no node");
    std::vector<double>& times = free[static_cast<size_t>(best.node)];
    std::vector<size_t> order(times.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return times[a] < times[b]; });
    for (int g = 0; g < task.options[static_cast<size_t>(best.option)].gpus; ++g)
      times[order[static_cast<size_t>(g)]] = best_end;
    return best;
  }

  // The blind plan run on the real types (see the top).
  static Schedule RunOnRealTypes(const Problem& problem, const Problem& blind,
                                 const std::vector<std::vector<int>>& back, const Schedule& plan) {
    std::vector<std::vector<int>> ids = AssignGpuIds(blind, plan);
    std::vector<int> order(plan.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return plan[a].start < plan[b].start; });
    std::vector<std::vector<double>> free(problem.nodes.size());
    for (size_t n = 0; n < problem.nodes.size(); ++n)
      free[n].assign(static_cast<size_t>(problem.nodes[n].gpus), 0.0);
    Schedule real(plan.size());
    for (int j : order) {
      const Placement& p = plan[j];
      const Option& chosen = blind.tasks[j].options[p.option];
      int option = back[j][p.option];
      const Task& task = problem.tasks[j];
      if (!problem.Fits(task.options[option], p.node)) {
        // The same configuration on this node's real type, else the fastest
        // with as many GPUs there.
        int type = problem.nodes[p.node].type;
        option = FastestOn(problem, task, chosen.gpus, type, p.node, chosen.technique);
        if (option < 0) option = FastestOn(problem, task, chosen.gpus, type, p.node);
      }
      if (option < 0) {
        // Its type cannot run it at all (no row: out of memory there): it
        // goes where it can finish first, on the GPUs freed first.
        real[j] = Elsewhere(problem, task, free);
        continue;
      }
      double start = 0.0;
      for (int g : ids[j])
        start = std::max(start, free[p.node][static_cast<size_t>(g)]);
      if (task.options[option].starts_now) start = 0.0;
      for (int g : ids[j])
        free[p.node][static_cast<size_t>(g)] = start + task.options[option].runtime_s;
      real[j] = {option, p.node, start};
    }
    return real;
  }
};

}  // namespace

std::unique_ptr<Solver> MakeTypeBlindSolver() {
  return std::make_unique<TypeBlindSolver>();
}

}  // namespace saturn
