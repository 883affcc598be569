#include "planner/registry.h"

namespace saturn {

namespace {

// Built in place: solvers keep a reference to the registry they are in.
struct BuiltinRegistry {
  BuiltinRegistry() { RegisterBuiltinSolvers(registry); }
  SolverRegistry registry;
};

}  // namespace

const SolverRegistry& BuiltinSolvers() {
  static const BuiltinRegistry builtin;
  return builtin.registry;
}

}  // namespace saturn
