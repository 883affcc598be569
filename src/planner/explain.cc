#include "planner/explain.h"

#include <algorithm>
#include <map>
#include <optional>

#include "common/format.h"

namespace saturn {
namespace {

std::string Name(const Problem& problem, const Option& o) {
  std::string type = problem.Mixed() ? " on " + GpuTypeLabel(problem.TypeName(o.type)) : "";
  return o.technique + " x" + std::to_string(o.gpus) + type;
}

// The plan's entry for the task, if it runs the option there.
const PlanTask* EntryOf(const Plan* plan, const Problem& problem, const Task& t, const Option& o) {
  if (plan == nullptr || plan->tasks.size() > kMaxExplainedPlanTasks) return nullptr;
  for (const PlanTask& e : plan->tasks) {
    if (e.task != t.name || e.technique != o.technique || e.gpus != o.gpus) continue;
    // On a node of the option's type.
    for (const NodeSlots& n : problem.nodes) {
      if (n.name == e.node && (o.type < 0 || n.type == o.type)) return &e;
    }
  }
  return nullptr;
}

// When `alt` would end at the earliest, with every other task where the
// plan puts it: on a node it fits, at the plan's start or when a task there
// ends, for as long as the entry's share of the chosen option's runtime
// (a later plan plans what is left). nullopt: no node for it.
std::optional<double> EarliestEnd(const Problem& problem, const Plan& plan, const PlanTask& entry,
                                  const Option& chosen, const Option& alt) {
  const double share = chosen.runtime_s > 0 ? (entry.end_s - entry.start_s) / chosen.runtime_s : 1;
  const double length = alt.runtime_s * share;
  double begin = entry.start_s;
  for (const PlanTask& e : plan.tasks)
    begin = std::min(begin, e.start_s);
  std::optional<double> best;
  for (int n = 0; n < problem.NumNodes(); ++n) {
    if (!problem.Fits(alt, n)) continue;
    const NodeSlots& node = problem.nodes[static_cast<size_t>(n)];
    // The node's GPUs in use over time, as steps: time -> change.
    std::map<double, int> change;
    std::vector<double> candidates = {begin};
    for (const PlanTask& e : plan.tasks) {
      if (e.node != node.name || e.task == entry.task) continue;
      change[e.start_s] += e.gpus;
      change[e.end_s] -= e.gpus;
      if (e.end_s > begin) candidates.push_back(e.end_s);
    }
    std::sort(candidates.begin(), candidates.end());
    // Whether alt fits from `start` for its length: the GPUs in use when
    // it starts and at every change before it ends leave it enough.
    auto fits_from = [&](double start) {
      int used = 0;
      auto it = change.begin();
      for (; it != change.end() && it->first <= start; ++it)
        used += it->second;
      if (used + alt.gpus > node.gpus) return false;
      for (; it != change.end() && it->first < start + length; ++it) {
        used += it->second;
        if (used + alt.gpus > node.gpus) return false;
      }
      return true;
    };
    for (double start : candidates) {
      if (best && start + length >= *best) break;
      if (fits_from(start)) {
        best = start + length;
        break;
      }
    }
  }
  return best;
}

}  // namespace

std::string WhyThisOption(const Problem& problem, int task, int option, const Plan* plan) {
  const Task& t = problem.tasks[static_cast<size_t>(task)];
  const Option& chosen = t.options[static_cast<size_t>(option)];
  if (chosen.starts_now) return "kept running where it was";
  const Option* fastest = nullptr;
  int usable = 0;
  for (const Option& o : t.options) {
    if (o.starts_now || !problem.FitsSomewhere(o)) continue;
    ++usable;
    if (!fastest || o.runtime_s < fastest->runtime_s) fastest = &o;
  }
  if (usable <= 1) return "only configuration that fits these devices";
  if (!fastest || fastest->runtime_s >= chosen.runtime_s * (1 - 1e-9)) {
    return "fastest configuration";
  }
  const bool more_gpus = fastest->gpus > chosen.gpus;
  const bool other_type = problem.Mixed() && fastest->type != chosen.type;
  const std::string what = more_gpus    ? "fewer GPUs than its fastest"
                           : other_type ? "not its fastest GPU type"
                                        : "not its fastest configuration";
  const std::string alt = Name(problem, *fastest);
  const std::string speed = FormatFixed(chosen.runtime_s / fastest->runtime_s, 2) + "x faster";
  const PlanTask* entry = EntryOf(plan, problem, t, chosen);
  if (entry == nullptr) {
    if (more_gpus) {
      return what + " (" + alt + " would be " + speed + " on " +
             FormatFixed(1.0 * fastest->gpus / chosen.gpus, 1) +
             "x the GPUs): the plan runs tasks side by side";
    }
    return what + " (" + alt + " would be " + speed + "): it fits the plan better";
  }
  const std::optional<double> end = EarliestEnd(problem, *plan, *entry, chosen, *fastest);
  const double eps = 1e-6 * std::max(1.0, entry->end_s);
  const std::string held =
      other_type ? "other tasks hold those GPUs" : "other tasks need the devices";
  if (!end) return what + " (" + alt + " has no node free for it: " + held + ")";
  if (*end > entry->end_s + eps) {
    return what + " (" + alt + " would end later, at " + FormatDuration(*end) + " instead of " +
           FormatDuration(entry->end_s) + ": " + held + ")";
  }
  if (*end >= entry->end_s - eps) {
    return what + " (" + alt + " would end no sooner, also at " + FormatDuration(*end) + ": " +
           held + ")";
  }
  if (entry->end_s >= plan->makespan_s - eps) {
    // It ends last: the run ends sooner only if no other task ends then too,
    // and only a plan not proven optimal can have missed that.
    const std::string sooner = what + " (" + alt + " could end it at " + FormatDuration(*end) +
                               " instead of " + FormatDuration(entry->end_s);
    for (const PlanTask& other : plan->tasks) {
      if (other.task != entry->task && other.end_s >= plan->makespan_s - eps) {
        return sooner + ", but the run would not end sooner: " + other.task + " also ends at " +
               FormatDuration(plan->makespan_s) + ")";
      }
    }
    if (plan->status == "optimal") return sooner + ")";
    return sooner + ": a shorter plan the solver did not find" +
           (plan->status.empty() ? "" : " (its plan is " + plan->status + ", not proven optimal)") +
           ")";
  }
  return what + " (" + alt + " would be " + speed +
         "; this task does not set the plan's end, so either serves)";
}

}  // namespace saturn
