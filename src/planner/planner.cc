#include "planner/planner.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "planner/lower_bound.h"
#include "planner/validate.h"

namespace saturn {

PlanResult RunPlanner(const Problem& problem, const PlanRequest& request,
                      const SolverRegistry& registry) {
  const Solver& solver = registry.Get(request.solver);
  SteadyClock steady;
  const Clock& clock = request.clock ? *request.clock : steady;
  double started = clock.Now();

  SolveContext ctx(request);
  ctx.clock = &clock;
  ctx.lower_bound = MakespanLowerBound(problem);
  ctx.warm_start = request.warm_start;
  ctx.on_progress = request.on_progress;
  SolveResult result = solver.Solve(problem, ctx);

  PlanResult out;
  out.status = result.status;
  // The bound of the problem, whichever solver ran: the best one known.
  double bound = std::max({ctx.lower_bound, result.lower_bound, request.known_lower_bound_s});
  if (result.status != SolveStatus::kInfeasible) {
    std::string problem_found = CheckSchedule(problem, result.schedule);
    if (!problem_found.empty()) {
      throw std::logic_error("solver " + std::string(solver.Name()) +
                             " returned an invalid schedule: " + problem_found);
    }
    double makespan = Makespan(problem, result.schedule);
    bound = std::min(bound, makespan);
    if (makespan <= bound * (1 + 1e-9)) out.status = SolveStatus::kOptimal;
    out.schedule = std::move(result.schedule);
  }
  out.plan = ScheduleToPlan(problem, out.schedule, std::string(solver.Name()), out.status, bound,
                            clock.Now() - started);
  if (!result.note.empty()) out.plan.extra["note"] = result.note;
  if (!result.improvements.empty()) {
    nlohmann::json steps = nlohmann::json::array();
    for (const Improvement& i : result.improvements) {
      steps.push_back({{"time_s", i.time_s},
                       {"work", i.work},
                       {"makespan_s", i.makespan},
                       {"bound_s", i.bound}});
    }
    out.plan.extra["improvements"] = std::move(steps);
    out.plan.extra["work"] = result.work;
  }
  out.improvements = std::move(result.improvements);
  std::vector<std::string> errors = ValidatePlan(problem, out.plan);
  if (!errors.empty()) {
    throw std::logic_error("solver " + std::string(solver.Name()) +
                           " produced an invalid plan: " + errors.front());
  }
  return out;
}

}  // namespace saturn
