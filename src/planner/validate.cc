#include "planner/validate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/format.h"

namespace saturn {
namespace {

// Times are sums of runtimes; allow for rounding in them and in JSON text.
double Tolerance(double scale) {
  return 1e-6 + 1e-9 * std::abs(scale);
}

}  // namespace

std::vector<std::string> ValidatePlan(const Problem& problem, const Plan& plan) {
  std::vector<std::string> errors;
  auto fail = [&](const std::string& message) { errors.push_back(message); };

  if (plan.status == "infeasible") {
    if (!plan.tasks.empty()) fail("an infeasible plan must not list tasks");
    return errors;
  }
  std::map<std::string, int> task_index;
  for (int j = 0; j < problem.NumTasks(); ++j)
    task_index[problem.tasks[j].name] = j;
  std::map<std::string, int> node_index;
  for (int n = 0; n < problem.NumNodes(); ++n)
    node_index[problem.nodes[n].name] = n;

  double scale = std::max(1.0, std::abs(plan.makespan_s));
  double tol = Tolerance(scale);
  std::set<std::string> seen;
  double max_end = 0.0;
  // Busy intervals per (node, gpu).
  std::map<std::pair<int, int>, std::vector<std::tuple<double, double, std::string>>> busy;

  for (const PlanTask& t : plan.tasks) {
    std::string who = "task '" + t.task + "'";
    auto ti = task_index.find(t.task);
    if (ti == task_index.end()) {
      fail(who + " is not in the profile");
      continue;
    }
    if (!seen.insert(t.task).second) {
      fail(who + " appears more than once");
      continue;
    }
    const Task& task = problem.tasks[ti->second];
    auto ni = node_index.find(t.node);
    if (ni == node_index.end()) {
      fail(who + ": node '" + t.node + "' is not in the cluster");
      continue;
    }
    int node = ni->second;
    const Option* match = nullptr;
    for (const Option& o : task.options) {
      if (o.technique != t.technique || o.gpus != t.gpus) continue;
      if (o.node >= 0 && o.node != node) continue;
      if (o.starts_now) {
        std::vector<int> kept = o.gpu_ids, given = t.gpu_ids;
        std::sort(kept.begin(), kept.end());
        std::sort(given.begin(), given.end());
        if (std::abs(t.start_s) > tol || kept != given) continue;
      }
      if (std::abs((t.end_s - t.start_s) - o.runtime_s) > Tolerance(o.runtime_s + t.end_s)) {
        continue;
      }
      match = &o;
      break;
    }
    if (!match) {
      bool row_exists = false;
      for (const Option& o : task.options) {
        row_exists = row_exists || (o.technique == t.technique && o.gpus == t.gpus);
      }
      if (!row_exists) {
        fail(who + ": (" + t.technique + ", " + std::to_string(t.gpus) +
             " GPUs) is not a feasible configuration in the profile");
      } else {
        fail(who + ": end_s - start_s = " + FormatNumber(t.end_s - t.start_s) +
             " does not equal the profiled runtime of (" + t.technique + ", " +
             std::to_string(t.gpus) + " GPUs) on this node");
      }
    }
    if (t.start_s < -tol) fail(who + ": start_s is negative");
    int node_gpus = problem.nodes[node].gpus;
    if (static_cast<int>(t.gpu_ids.size()) != t.gpus) {
      fail(who + ": has " + std::to_string(t.gpu_ids.size()) + " gpu_ids but gpus is " +
           std::to_string(t.gpus));
    }
    std::set<int> distinct(t.gpu_ids.begin(), t.gpu_ids.end());
    if (distinct.size() != t.gpu_ids.size()) fail(who + ": gpu_ids has duplicates");
    for (int g : t.gpu_ids) {
      if (g < 0 || g >= node_gpus) {
        fail(who + ": gpu id " + std::to_string(g) + " is outside node '" + t.node + "' (0.." +
             std::to_string(node_gpus - 1) + ")");
        continue;
      }
      busy[{node, g}].emplace_back(t.start_s, t.end_s, t.task);
    }
    max_end = std::max(max_end, t.end_s);
  }
  for (const Task& task : problem.tasks) {
    if (!seen.count(task.name)) fail("task '" + task.name + "' is missing from the plan");
  }
  for (auto& [key, intervals] : busy) {
    std::sort(intervals.begin(), intervals.end());
    for (size_t i = 1; i < intervals.size(); ++i) {
      const auto& [s0, e0, a] = intervals[i - 1];
      const auto& [s1, e1, b] = intervals[i];
      if (s1 < e0 - tol) {
        fail("GPU " + std::to_string(key.second) + " of node '" + problem.nodes[key.first].name +
             "' runs '" + a + "' and '" + b + "' at the same time (" + FormatNumber(s1) + " < " +
             FormatNumber(e0) + ")");
      }
    }
  }
  if (std::abs(plan.makespan_s - max_end) > tol) {
    fail("makespan_s " + FormatNumber(plan.makespan_s) + " is not the largest end_s " +
         FormatNumber(max_end));
  }
  if (plan.lower_bound_s > plan.makespan_s + tol) {
    fail("lower_bound_s " + FormatNumber(plan.lower_bound_s) + " exceeds makespan_s " +
         FormatNumber(plan.makespan_s));
  }
  if (plan.lower_bound_s < 0) fail("lower_bound_s is negative");
  return errors;
}

}  // namespace saturn
