// What the same tasks would take the usual ways, from the same profile: the
// paper's baselines, each a cheap heuristic (planner/solvers/): current
// practice (each task alone on all GPUs of a node, one after another), and
// Optimus, max and min; on a cluster of several GPU types also Gavel's
// heterogeneity-aware policy (gavel). Every plan Saturn makes carries them,
// so a user sees in its own output what the tool saved.
//
//   plan.extra["baselines"] = BaselineMakespans(problem, plan.lower_bound_s);
//   std::fprintf(stderr, "%s\n", BaselineLine(plan).c_str());
//   // "Saturn's plan 41.0s; current practice (...) 1m07s (1.63x longer)"
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "planner/problem.h"
#include "planner/registry.h"
#include "contracts/plan.h"

namespace saturn {

// {"current-practice": {"makespan_s": ..., "plan": {Contract 3}}, "optimus":
// {"makespan_s": ...}, ...}: solver names as keys (current practice's plan
// whole, for drawing); a baseline that cannot plan the problem is left out.
nlohmann::json BaselineMakespans(const Problem& problem,
                                 const SolverRegistry& registry = BuiltinSolvers());
// The same beside a plan of the problem whose lower bound is `lower_bound_s`
// (its lower_bound_s): current practice's plan carries the best bound known,
// not a weaker one of its own (a bound is the problem's, whatever solver ran).
//   plan.extra["baselines"] = BaselineMakespans(problem, plan.lower_bound_s);
nlohmann::json BaselineMakespans(const Problem& problem, double lower_bound_s,
                                 const SolverRegistry& registry = BuiltinSolvers());

// "Saturn's plan X; current practice Y (Z x longer)", or "" when the plan
// records no current-practice baseline. Both from when the plan was made
// (contracts/baseline_comparison.h), which a plan made later than a run's
// start says first: "From 1m32s on the run clock: Saturn's plan ...".
std::string BaselineLine(const Plan& plan);

}  // namespace saturn
