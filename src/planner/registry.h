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
// copied nor moved.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "planner/solver.h"

namespace saturn {

class SolverRegistry {
 public:
  SolverRegistry() = default;
  SolverRegistry(const SolverRegistry&) = delete;
  SolverRegistry& operator=(const SolverRegistry&) = delete;

  void Register(std::unique_ptr<Solver> solver);
  const Solver* Find(std::string_view name) const;
  // Like Find, but an unknown name is an InputError naming the known ones.
  const Solver& Get(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::vector<std::unique_ptr<Solver>> solvers_;
};

void RegisterBuiltinSolvers(SolverRegistry& registry);
// The `auto` solver, comparing its plan with the baselines (current-practice,
// max, min, optimus, random) that `registry` holds; registry must outlive it.
std::unique_ptr<Solver> MakeAutoSolver(const SolverRegistry& registry);
// The registry with every built-in solver, built once.
const SolverRegistry& BuiltinSolvers();

}  // namespace saturn
