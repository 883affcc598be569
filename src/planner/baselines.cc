#include "planner/baselines.h"

#include "common/format.h"
#include "planner/planner.h"

namespace saturn {

nlohmann::json BaselineMakespans(const Problem& problem, const SolverRegistry& registry) {
  nlohmann::json out = nlohmann::json::object();
  if (problem.tasks.empty()) return out;
  for (const char* name : {"current-practice", "optimus", "max", "min"}) {
    if (registry.Find(name) == nullptr) continue;
    PlanRequest request;
    request.solver = name;
    PlanResult r;
    try {
      r = RunPlanner(problem, request, registry);
    } catch (const std::logic_error&) {
      continue;  // it cannot plan this problem (a task without a whole-node configuration)
    }
    if (r.status == SolveStatus::kInfeasible || r.plan.tasks.empty()) continue;
    out[name] = {{"makespan_s", r.plan.makespan_s}};
    // Current practice's whole plan too, for the report's second Gantt.
    if (std::string(name) == "current-practice") out[name]["plan"] = PlanToJson(r.plan);
  }
  return out;
}

std::string BaselineLine(const Plan& plan) {
  std::optional<double> cp = BaselineMakespan(plan, "current-practice");
  if (!cp || plan.makespan_s <= 0) return "";
  double ratio = *cp / plan.makespan_s;
  return "Saturn's plan " + FormatDuration(plan.makespan_s) + "; current practice (each task on " +
         "a whole node, one after another) " + FormatDuration(*cp) + " (" + FormatFixed(ratio, 2) +
         "x " + (ratio >= 1 ? "longer" : "shorter") + ")";
}

}  // namespace saturn
