// Solvers by name. Built-in solvers are registered in one place,
// RegisterBuiltinSolvers (solvers/builtin.cc): adding a solver is one new file
// and one registration line there.
//
//   const SolverRegistry& reg = BuiltinSolvers();
//   const Solver* s = reg.Find("auto");       // nullptr if unknown
//   reg.Get("milp");                           // InputError listing known names
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "planner/solver.h"

namespace saturn {

class SolverRegistry {
 public:
  void Register(std::unique_ptr<Solver> solver);
  const Solver* Find(std::string_view name) const;
  // Like Find, but an unknown name is an InputError naming the known ones.
  const Solver& Get(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::vector<std::unique_ptr<Solver>> solvers_;
};

void RegisterBuiltinSolvers(SolverRegistry& registry);
// The registry with every built-in solver, built once.
const SolverRegistry& BuiltinSolvers();

}  // namespace saturn
