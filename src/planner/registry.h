// Solvers by name. Built-in solvers are registered in one place,
// RegisterBuiltinSolvers (solvers/builtin.cc): adding a solver is one new file
// and one registration line there.
//
//   const SolverRegistry& reg = BuiltinSolvers();
//   const Solver* s = reg.Find("auto");       // nullptr if unknown
//   reg.Get("milp");                           // InputError listing known names
//
// A solver may use others from the registry it is registered in (auto runs
// the baselines), so a registry stays where it was made: it is neither
// copied nor moved. Names follow common/registry.h's one rule.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry.h"
#include "planner/solver.h"

namespace saturn {

class SolverRegistry : public Registry<Solver> {
 public:
  SolverRegistry() : Registry("solver", "--solver") {}
};

void RegisterBuiltinSolvers(SolverRegistry& registry);
// The `auto` solver, comparing its plan with the baselines (current-practice,
// max, min, optimus, random) that `registry` holds; registry must outlive it.
std::unique_ptr<Solver> MakeAutoSolver(const SolverRegistry& registry);
// The registry with every built-in solver, built once.
const SolverRegistry& BuiltinSolvers();

}  // namespace saturn
