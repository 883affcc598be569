// The planner's front door: one place that runs any solver, times it, gives
// it the lower bound, checks its schedule, assigns GPU ids and validates the
// resulting plan (a solver bug becomes a clear internal error, never a bad
// plan on disk).
//
//   PlanRequest req(options);   // SolveOptions (planner/solver.h)
//   PlanResult r = RunPlanner(problem, req);
//   WriteFileAtomic(path, PlanToJson(r.plan).dump(2));
#pragma once

#include <string>

#include "common/defaults.h"
#include "planner/registry.h"
#include "planner/solver.h"
#include "contracts/plan.h"

namespace saturn {

// The options, and what a caller adds to a solve.
struct PlanRequest : SolveOptions {
  PlanRequest() = default;
  explicit PlanRequest(const SolveOptions& options) : SolveOptions(options) {}

  const Clock* clock = nullptr;
  // A lower bound on this problem's optimum proved elsewhere (another
  // solver's plan of it): the plan reports the best bound known, the largest
  // of this, MakespanLowerBound and the solver's own. 0: none.
  double known_lower_bound_s = 0.0;
  Schedule warm_start;
  std::function<void(double, double)> on_progress;
};

struct PlanResult {
  Plan plan;
  SolveStatus status = SolveStatus::kInfeasible;
  Schedule schedule;
  std::vector<Improvement> improvements;  // the incumbent over time (also in plan.extra)
};

// The plan's extra fields (Contract 4 allows them): "note" (the solver's
// summary), "improvements" ([{time_s, work, makespan_s, bound_s}], auto) and
// "work" (work units spent, auto).
// Throws InputError for an unknown solver name; std::logic_error if a solver
// returns an invalid schedule.
PlanResult RunPlanner(const Problem& problem, const PlanRequest& request,
                      const SolverRegistry& registry = BuiltinSolvers());

}  // namespace saturn
