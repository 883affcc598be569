#include "planner/problem.h"

#include <algorithm>
#include <map>

namespace saturn {

int Problem::TotalGpus() const {
  int total = 0;
  for (const NodeSlots& n : nodes)
    total += n.gpus;
  return total;
}

int Problem::MaxNodeGpus() const {
  int best = 0;
  for (const NodeSlots& n : nodes)
    best = std::max(best, n.gpus);
  return best;
}

bool Problem::FitsSomewhere(const Option& option) const {
  for (int n = 0; n < NumNodes(); ++n) {
    if (Fits(option, n)) return true;
  }
  return false;
}

const std::string& Problem::TypeName(int type) const {
  static const std::string kNone;
  return type >= 0 && static_cast<size_t>(type) < types.size() ? types[type] : kNone;
}

Problem ProblemFromProfile(const ProfileTable& profile, const Cluster& cluster) {
  Problem problem;
  problem.types = cluster.GpuTypes();
  auto type_of = [&](const std::string& name) {
    auto it = std::find(problem.types.begin(), problem.types.end(), name);
    if (it != problem.types.end()) return static_cast<int>(it - problem.types.begin());
    // An untyped row of a one-type cluster (CheckProfile refuses the rest).
    return problem.types.size() == 1 && name.empty() ? 0 : -2;
  };
  for (const ClusterNode& n : cluster.nodes)
    problem.nodes.push_back({n.name, n.gpus, type_of(n.gpu_type)});
  std::map<std::string, int> index;
  for (const std::string& name : profile.TaskNames()) {
    index[name] = problem.NumTasks();
    problem.tasks.push_back({name, {}});
  }
  for (const ProfileRow& r : profile.rows) {
    if (!r.feasible) continue;
    Option o;
    o.technique = r.technique;
    o.gpus = r.gpus;
    o.runtime_s = r.runtime_s;
    o.type = type_of(r.gpu_type);
    if (o.type < -1) continue;  // a type no node has: no node runs it
    problem.tasks[index[r.task]].options.push_back(std::move(o));
  }
  return problem;
}

std::vector<int> UsefulOptions(const Task& task) {
  std::vector<int> kept;
  const auto& opts = task.options;
  for (int i = 0; i < static_cast<int>(opts.size()); ++i) {
    const Option& a = opts[i];
    bool pinned = a.node >= 0 || a.starts_now;
    bool dominated = false;
    for (int k = 0; k < static_cast<int>(opts.size()) && !pinned && !dominated; ++k) {
      const Option& b = opts[k];
      if (k == i || b.node >= 0 || b.starts_now || b.type != a.type) continue;
      bool no_worse = b.gpus <= a.gpus && b.runtime_s <= a.runtime_s;
      bool better = b.gpus < a.gpus || b.runtime_s < a.runtime_s;
      // Equal options: keep the first only.
      dominated = no_worse && (better || k < i);
    }
    if (!dominated) kept.push_back(i);
  }
  return kept;
}

int FastestOptionWithGpus(const Task& task, int gpus) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(task.options.size()); ++i) {
    const Option& o = task.options[i];
    if (o.gpus != gpus || o.starts_now) continue;
    if (best < 0 || o.runtime_s < task.options[best].runtime_s) best = i;
  }
  return best;
}

int FastestOptionAtMost(const Task& task, int max_gpus) {
  int count = 0;
  for (const Option& o : task.options) {
    if (o.gpus <= max_gpus && !o.starts_now) count = std::max(count, o.gpus);
  }
  return count == 0 ? -1 : FastestOptionWithGpus(task, count);
}

int FastestOptionOnNode(const Problem& problem, const Task& task, int node) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(task.options.size()); ++i) {
    const Option& o = task.options[i];
    if (o.starts_now || !problem.Fits(o, node)) continue;
    const Option* b = best < 0 ? nullptr : &task.options[best];
    if (!b || o.gpus > b->gpus || (o.gpus == b->gpus && o.runtime_s < b->runtime_s)) best = i;
  }
  return best;
}

int SmallestOption(const Problem& problem, const Task& task) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(task.options.size()); ++i) {
    const Option& o = task.options[i];
    if (o.starts_now || !problem.FitsSomewhere(o)) continue;
    const Option* b = best < 0 ? nullptr : &task.options[best];
    if (!b || o.gpus < b->gpus || (o.gpus == b->gpus && o.runtime_s < b->runtime_s)) best = i;
  }
  return best;
}

Problem WithoutOptionsAtLeast(const Problem& problem, double makespan) {
  Problem capped = problem;
  const double cut = makespan * (1 - 1e-12);
  for (Task& task : capped.tasks) {
    bool shorter = false;
    for (const Option& o : task.options)
      shorter = shorter || o.runtime_s < cut;
    if (!shorter) continue;
    for (Option& o : task.options) {
      if (o.runtime_s >= cut) o.runtime_s = std::max(o.runtime_s, 2 * makespan);
    }
  }
  return capped;
}

int PinnedOption(const Task& task) {
  for (int i = 0; i < static_cast<int>(task.options.size()); ++i) {
    if (task.options[i].starts_now) return i;
  }
  return -1;
}

}  // namespace saturn
