// The one place where built-in solvers are registered. To add a solver: write
// solvers/<name>.cc defining Make<Name>Solver(), declare it here and register
// it below.
#include "planner/registry.h"

namespace saturn {

std::unique_ptr<Solver> MakeMilpSolver();
std::unique_ptr<Solver> MakeSaturnMilpSolver();
std::unique_ptr<Solver> MakeCurrentPracticeSolver();
std::unique_ptr<Solver> MakeMaxSolver();
std::unique_ptr<Solver> MakeMinSolver();
std::unique_ptr<Solver> MakeRandomSolver();
std::unique_ptr<Solver> MakeOptimusSolver();
std::unique_ptr<Solver> MakeGavelSolver();
std::unique_ptr<Solver> MakeTypeBlindSolver();

void RegisterBuiltinSolvers(SolverRegistry& registry) {
  registry.Register(MakeAutoSolver(registry));
  registry.Register(MakeMilpSolver());
  registry.Register(MakeSaturnMilpSolver());
  registry.Register(MakeCurrentPracticeSolver());
  registry.Register(MakeMaxSolver());
  registry.Register(MakeMinSolver());
  registry.Register(MakeRandomSolver());
  registry.Register(MakeOptimusSolver());
  registry.Register(MakeGavelSolver());
  registry.Register(MakeTypeBlindSolver());
}

}  // namespace saturn
