// The planner's front door: one place that runs any solver, times it, gives
// it the lower bound, checks its schedule, assigns GPU ids and validates the
// resulting plan (a solver bug becomes a clear internal error, never a bad
// plan on disk).
//
//   PlanRequest req{.solver = "auto", .time_limit_s = 2, .seed = 1};
//   PlanResult r = RunPlanner(problem, req);
//   WriteFileAtomic(path, PlanToJson(r.plan).dump(2));
#pragma once

#include <string>

#include "common/defaults.h"
#include "planner/registry.h"
#include "planner/solver.h"
#include "spec/plan.h"

namespace saturn {

struct PlanRequest {
  std::string solver = "auto";
  double time_limit_s = defaults::kSolverTimeLimitS;
  uint64_t seed = 0;
  int threads = 1;
  double work_scale = 1.0;
  bool anytime = false;     // see SolveContext: use the time limit while the gap is open
  double work_limit = 0.0;  // deterministic effort in work units; 0: none
  double gap = 0.0;         // stop once (makespan - bound) / makespan <= gap
  const Clock* clock = nullptr;
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
