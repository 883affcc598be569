// max: the paper's Max-heuristic. Like current practice, every task gets all
// GPUs of a node with its best technique there, but tasks go longest first
// (LPT), which balances several nodes better than input order.
#include <algorithm>
#include <numeric>

#include "planner/list_scheduler.h"
#include "planner/solver.h"

namespace saturn {
namespace {

class MaxSolver final : public Solver {
 public:
  std::string_view Name() const override { return "max"; }
  std::string_view Description() const override {
    return "each task alone on a whole node, best technique, longest first";
  }
  SolveResult Solve(const Problem& problem, const SolveContext&) const override {
    int largest = problem.MaxNodeGpus();
    std::vector<double> runtime(problem.tasks.size());
    for (size_t j = 0; j < runtime.size(); ++j) {
      int o = FastestOptionAtMost(problem.tasks[j], largest);
      runtime[j] = o < 0 ? 0.0 : problem.tasks[j].options[o].runtime_s;
    }
    std::vector<int> order(problem.tasks.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return runtime[a] > runtime[b]; });
    return {SolveStatus::kFeasible, WholeNodeSchedule(problem, order), 0.0, "", {}, 0.0};
  }
};

}  // namespace

std::unique_ptr<Solver> MakeMaxSolver() {
  return std::make_unique<MaxSolver>();
}

}  // namespace saturn
