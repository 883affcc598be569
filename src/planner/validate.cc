#include "planner/validate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/format.h"

namespace saturn {
namespace {

// Times are sums of runtimes; allow for rounding in them and in JSON text.
double Tolerance(double scale) {
  return 1e-6 + 1e-9 * std::abs(scale);
}

// Two times for a message, to the millisecond (30115.8, not
// 30115.800000000003), or in full where that would show them equal.
std::pair<std::string, std::string> TwoTimes(double a, double b) {
  std::string x = FormatMilliseconds(a), y = FormatMilliseconds(b);
  if (x == y) return {FormatNumber(a), FormatNumber(b)};
  return {x, y};
}

// Holds what the checks share: name lookups, the tolerance, the tasks seen,
// and busy intervals per (node, gpu).
class PlanChecker {
 public:
  PlanChecker(const Problem& problem, const Plan& plan)
      : problem_(problem), plan_(plan), tol_(Tolerance(std::max(1.0, std::abs(plan.makespan_s)))) {
    for (int j = 0; j < problem.NumTasks(); ++j)
      task_index_[problem.tasks[j].name] = j;
    for (int n = 0; n < problem.NumNodes(); ++n)
      node_index_[problem.nodes[n].name] = n;
  }

  std::vector<std::string> Run() {
    if (plan_.status == "infeasible") {
      if (!plan_.tasks.empty()) Fail("an infeasible plan must not list tasks");
      return errors_;
    }
    for (const PlanTask& t : plan_.tasks)
      CheckTask(t);
    CheckNoneMissing();
    CheckNoOverlaps();
    CheckTotals();
    return errors_;
  }

 private:
  void Fail(const std::string& message) { errors_.push_back(message); }

  void CheckTask(const PlanTask& t) {
    std::string who = "task '" + t.task + "'";
    auto ti = task_index_.find(t.task);
    if (ti == task_index_.end()) {
      Fail(who + " is not in the profile");
      return;
    }
    if (!seen_.insert(t.task).second) {
      Fail(who + " appears more than once");
      return;
    }
    auto ni = node_index_.find(t.node);
    if (ni == node_index_.end()) {
      Fail(who + ": node '" + t.node + "' is not in the cluster");
      return;
    }
    const int node = ni->second;
    CheckOption(who, problem_.tasks[ti->second], t, node);
    if (t.start_s < -tol_) Fail(who + ": start_s is negative");
    CheckGpuIds(who, t, node);
    max_end_ = std::max(max_end_, t.end_s);
  }

  // The option the plan task runs, or nullptr: same technique and GPU count,
  // honouring a pinned node and starts_now, with the profiled runtime.
  const Option* MatchingOption(const Task& task, const PlanTask& t, int node) const {
    for (const Option& o : task.options) {
      if (o.technique != t.technique || o.gpus != t.gpus) continue;
      if (o.node >= 0 && o.node != node) continue;
      if (o.type >= 0 && o.type != problem_.nodes[node].type) continue;
      if (o.starts_now) {
        std::vector<int> kept = o.gpu_ids, given = t.gpu_ids;
        std::sort(kept.begin(), kept.end());
        std::sort(given.begin(), given.end());
        if (std::abs(t.start_s) > tol_ || kept != given) continue;
      }
      if (std::abs((t.end_s - t.start_s) - o.runtime_s) > Tolerance(o.runtime_s + t.end_s)) {
        continue;
      }
      return &o;
    }
    return nullptr;
  }

  // An option of (t's technique, GPU count) of another GPU type than the
  // node's, whose runtime t's times match: t was planned for another type.
  const Option* OtherTypeOption(const Task& task, const PlanTask& t, int node) const {
    for (const Option& o : task.options) {
      if (o.technique != t.technique || o.gpus != t.gpus) continue;
      if (o.type < 0 || o.type == problem_.nodes[node].type) continue;
      if (std::abs((t.end_s - t.start_s) - o.runtime_s) <= Tolerance(o.runtime_s + t.end_s)) {
        return &o;
      }
    }
    return nullptr;
  }

  void CheckOption(const std::string& who, const Task& task, const PlanTask& t, int node) {
    if (MatchingOption(task, t, node)) return;
    if (const Option* other = OtherTypeOption(task, t, node)) {
      Fail(who + ": (" + t.technique + ", " + std::to_string(t.gpus) + " GPUs) of type " +
           GpuTypeLabel(problem_.TypeName(other->type)) + " may not run on node '" + t.node +
           "' (its GPUs are " + GpuTypeLabel(problem_.TypeName(problem_.nodes[node].type)) + ")");
      return;
    }
    // The row on this node (one pinned here first), else any with the same
    // technique and GPU count.
    const Option* row = nullptr;
    bool here = false;
    for (const Option& o : task.options) {
      if (o.technique != t.technique || o.gpus != t.gpus) continue;
      const bool on_node =
          (o.node < 0 || o.node == node) && (o.type < 0 || o.type == problem_.nodes[node].type);
      if (!row || (on_node && !here)) {
        row = &o;
        here = on_node;
      }
    }
    const double took = t.end_s - t.start_s;
    if (!row) {
      Fail(who + ": (" + t.technique + ", " + std::to_string(t.gpus) +
           " GPUs) is not a feasible configuration in the profile");
    } else if (!here) {
      const std::string& type = problem_.TypeName(problem_.nodes[node].type);
      Fail(who + ": (" + t.technique + ", " + std::to_string(t.gpus) +
           " GPUs) may not run on node '" + t.node + "'" +
           (problem_.Mixed() ? " (its GPUs are " + GpuTypeLabel(type) +
                                   "; the profile has no such row for that type)"
                             : ""));
    } else if (row->starts_now &&
               std::abs(took - row->runtime_s) <= Tolerance(row->runtime_s + t.end_s)) {
      Fail(who + ": is running and must keep its start (0) and GPUs");
    } else {
      auto [ran, profiled] = TwoTimes(took, row->runtime_s);
      Fail(who + ": end_s - start_s = " + ran + " s does not equal the profiled runtime of (" +
           t.technique + ", " + std::to_string(t.gpus) + " GPUs) on this node, " + profiled + " s");
    }
  }

  // As many distinct ids as GPUs, each on the node; records the busy intervals.
  void CheckGpuIds(const std::string& who, const PlanTask& t, int node) {
    const int node_gpus = problem_.nodes[node].gpus;
    if (static_cast<int>(t.gpu_ids.size()) != t.gpus) {
      Fail(who + ": has " + std::to_string(t.gpu_ids.size()) + " gpu_ids but gpus is " +
           std::to_string(t.gpus));
    }
    std::set<int> distinct(t.gpu_ids.begin(), t.gpu_ids.end());
    if (distinct.size() != t.gpu_ids.size()) Fail(who + ": gpu_ids has duplicates");
    for (int g : t.gpu_ids) {
      if (g < 0 || g >= node_gpus) {
        Fail(who + ": gpu id " + std::to_string(g) + " is outside node '" + t.node + "' (0.." +
             std::to_string(node_gpus - 1) + ")");
        continue;
      }
      busy_[{node, g}].emplace_back(t.start_s, t.end_s, t.task);
    }
  }

  void CheckNoneMissing() {
    for (const Task& task : problem_.tasks) {
      if (!seen_.count(task.name)) Fail("task '" + task.name + "' is missing from the plan");
    }
  }

  void CheckNoOverlaps() {
    for (auto& [key, intervals] : busy_) {
      std::sort(intervals.begin(), intervals.end());
      for (size_t i = 1; i < intervals.size(); ++i) {
        const auto& [s0, e0, a] = intervals[i - 1];
        const auto& [s1, e1, b] = intervals[i];
        if (s1 < e0 - tol_) {
          auto [starts, ends] = TwoTimes(s1, e0);
          Fail("GPU " + std::to_string(key.second) + " of node '" + problem_.nodes[key.first].name +
               "' runs '" + a + "' and '" + b + "' at the same time ('" + b + "' starts at " +
               starts + " s, before '" + a + "' ends at " + ends + " s)");
        }
      }
    }
  }

  void CheckTotals() {
    if (std::abs(plan_.makespan_s - max_end_) > tol_) {
      auto [makespan, end] = TwoTimes(plan_.makespan_s, max_end_);
      Fail("makespan_s " + makespan + " is not the largest end_s " + end);
    }
    if (plan_.lower_bound_s > plan_.makespan_s + tol_) {
      auto [bound, makespan] = TwoTimes(plan_.lower_bound_s, plan_.makespan_s);
      Fail("lower_bound_s " + bound + " exceeds makespan_s " + makespan);
    }
    if (plan_.lower_bound_s < 0) Fail("lower_bound_s is negative");
  }

  const Problem& problem_;
  const Plan& plan_;
  const double tol_;
  std::map<std::string, int> task_index_;
  std::map<std::string, int> node_index_;
  std::vector<std::string> errors_;
  std::set<std::string> seen_;
  double max_end_ = 0.0;
  std::map<std::pair<int, int>, std::vector<std::tuple<double, double, std::string>>> busy_;
};

}  // namespace

std::vector<std::string> ValidatePlan(const Problem& problem, const Plan& plan) {
  return PlanChecker(problem, plan).Run();
}

}  // namespace saturn
