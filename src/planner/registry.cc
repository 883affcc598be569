#include "planner/registry.h"

#include <stdexcept>

#include "common/error.h"

namespace saturn {

void SolverRegistry::Register(std::unique_ptr<Solver> solver) {
  if (Find(solver->Name())) {
    throw std::logic_error("solver registered twice: " + std::string(solver->Name()));
  }
  solvers_.push_back(std::move(solver));
}

const Solver* SolverRegistry::Find(std::string_view name) const {
  for (const auto& s : solvers_) {
    if (s->Name() == name) return s.get();
  }
  return nullptr;
}

const Solver& SolverRegistry::Get(std::string_view name) const {
  if (const Solver* s = Find(name)) return *s;
  std::string known;
  for (const std::string& n : Names())
    known += (known.empty() ? "" : ", ") + n;
  throw InputError("", 0, "--solver",
                   "unknown solver " + Quote(name) + "; expected one of: " + known);
}

std::vector<std::string> SolverRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& s : solvers_)
    names.emplace_back(s->Name());
  return names;
}

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
