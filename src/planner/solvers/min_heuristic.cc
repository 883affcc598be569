// min: the paper's Min-heuristic. Every task gets the fewest GPUs it can run
// on (often spilling on one GPU); when there are more GPUs than tasks need,
// the spare ones are shared evenly (each task may grow to its fair share,
// total GPUs / tasks). Tasks are list-scheduled longest first.
#include <algorithm>

#include "planner/list_scheduler.h"
#include "planner/solver.h"

namespace saturn {
namespace {

class MinSolver final : public Solver {
 public:
  std::string_view Name() const override { return "min"; }
  std::string_view Description() const override {
    return "fewest GPUs per task, spare GPUs shared evenly, longest first";
  }
  SolveResult Solve(const Problem& problem, const SolveContext&) const override {
    int share = problem.tasks.empty() ? 0 : problem.TotalGpus() / problem.NumTasks();
    std::vector<int> option(problem.tasks.size());
    for (size_t j = 0; j < option.size(); ++j) {
      const Task& task = problem.tasks[j];
      if (int pinned = PinnedOption(task); pinned >= 0) {
        option[j] = pinned;
        continue;
      }
      int smallest = SmallestOption(problem, task);
      int target = std::min(std::max(task.options[smallest].gpus, share), problem.MaxNodeGpus());
      int grown = FastestOptionAtMost(task, target);
      option[j] = grown >= 0 && problem.FitsSomewhere(task.options[grown]) ? grown : smallest;
    }
    SerialDecoder decoder(problem);
    SolveResult result{SolveStatus::kFeasible, {}, 0.0, "", {}, 0.0};
    decoder.Decode(LongestFirst(problem, option), option, &result.schedule);
    return result;
  }
};

}  // namespace

std::unique_ptr<Solver> MakeMinSolver() {
  return std::make_unique<MinSolver>();
}

}  // namespace saturn
