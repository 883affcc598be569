// current-practice: what users do by hand today (the paper's baseline). Each
// task runs alone on all GPUs of one node with its best technique there, one
// after another in the order given; several nodes work in parallel, each
// task going to the node where it finishes first.
#include "planner/list_scheduler.h"
#include "planner/solver.h"

#include <numeric>

namespace saturn {
namespace {

class CurrentPracticeSolver final : public Solver {
 public:
  std::string_view Name() const override { return "current-practice"; }
  std::string_view Description() const override {
    return "each task alone on a whole node, best technique, in input order";
  }
  SolveResult Solve(const Problem& problem, const SolveContext&) const override {
    std::vector<int> order(problem.tasks.size());
    std::iota(order.begin(), order.end(), 0);
    return {SolveStatus::kFeasible, WholeNodeSchedule(problem, order), 0.0, "", {}, 0.0};
  }
};

}  // namespace

std::unique_ptr<Solver> MakeCurrentPracticeSolver() {
  return std::make_unique<CurrentPracticeSolver>();
}

}  // namespace saturn
