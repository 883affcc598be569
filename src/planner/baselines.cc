#include "planner/baselines.h"

#include "common/format.h"
#include "contracts/baseline_comparison.h"
#include "planner/planner.h"

namespace saturn {
namespace {

constexpr size_t kMaxDrawnTasks = 1000;

}  // namespace

nlohmann::json BaselineMakespans(const Problem& problem, const SolverRegistry& registry) {
  return BaselineMakespans(problem, 0.0, registry);
}

nlohmann::json BaselineMakespans(const Problem& problem, double lower_bound_s,
                                 const SolverRegistry& registry) {
  nlohmann::json out = nlohmann::json::object();
  if (problem.tasks.empty()) return out;
  std::vector<std::string> names = {"current-practice", "optimus", "max", "min"};
  // Mixed GPU types: Gavel's heterogeneity-aware policy too (one LP).
  if (problem.Mixed()) names.push_back("gavel");
  for (const std::string& name : names) {
    if (registry.Find(name) == nullptr) continue;
    PlanRequest request;
    request.solver = name;
    request.known_lower_bound_s = lower_bound_s;
    PlanResult r;
    try {
      r = RunPlanner(problem, request, registry);
    } catch (const std::logic_error& e) {
      // A heuristic that cannot place some task ("fits no node") has no
      // figure here; anything else is a solver bug and stays one.
      if (std::string(e.what()).find("fits no node") == std::string::npos) throw;
      continue;
    }
    if (r.status == SolveStatus::kInfeasible || r.plan.tasks.empty()) continue;
    out[name] = {{"makespan_s", r.plan.makespan_s}};
    // Current practice's whole plan too, for the report's second Gantt
    // (not for huge problems: the plan is kept in every plan file).
    if (name == "current-practice" && problem.tasks.size() <= kMaxDrawnTasks) {
      out[name]["plan"] = PlanToJson(r.plan);
    }
  }
  return out;
}

std::string BaselineLine(const Plan& plan) {
  std::optional<BaselineComparison> c = CompareWithBaseline(plan, "current-practice");
  if (!c) return "";
  double ratio = c->Ratio();
  std::string how = ratio >= 1 ? FormatFixed(ratio, 2) + "x longer"
                               : "Saturn's plan " + FormatFixed(1 / ratio, 2) + "x longer";
  std::string from =
      c->from_s > 0 ? "From " + FormatDuration(c->from_s) + " on the run clock: " : "";
  return from + "Saturn's plan " + FormatDuration(c->plan_s) + "; current practice (each task " +
         "on a whole node, one after another) " + FormatDuration(c->baseline_s) + " (" + how + ")";
}

}  // namespace saturn
