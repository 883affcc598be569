// optimus: the paper's Optimus*-greedy. Every task starts on its smallest
// feasible GPU count; then, while GPUs remain unallocated (the sum of the
// tasks' GPUs is below the cluster's), the task whose runtime drops the most
// by moving to its next larger GPU count gets it. Tasks are then
// list-scheduled longest first.
#include <limits>

#include "planner/list_scheduler.h"
#include "planner/solver.h"

namespace saturn {
namespace {

// The fastest option with the next GPU count above `gpus` that fits a node.
int NextLarger(const Problem& problem, const Task& task, int gpus) {
  int next = std::numeric_limits<int>::max();
  for (const Option& o : task.options) {
    if (o.gpus > gpus && o.gpus < next && problem.FitsSomewhere(o) && !o.starts_now) {
      next = o.gpus;
    }
  }
  return next == std::numeric_limits<int>::max() ? -1 : FastestOptionWithGpus(task, next);
}

class OptimusSolver final : public Solver {
 public:
  std::string_view Name() const override { return "optimus"; }
  std::string_view Description() const override {
    return "Optimus*-greedy: grow the task whose runtime drops most, one step at a time";
  }
  SolveResult Solve(const Problem& problem, const SolveContext&) const override {
    std::vector<int> option(problem.tasks.size());
    int allocated = 0;
    for (size_t j = 0; j < option.size(); ++j) {
      int pinned = PinnedOption(problem.tasks[j]);
      option[j] = pinned >= 0 ? pinned : SmallestOption(problem, problem.tasks[j]);
      allocated += problem.tasks[j].options[option[j]].gpus;
    }
    int total = problem.TotalGpus();
    while (true) {
      int best_task = -1, best_option = -1;
      double best_gain = 0.0;
      for (size_t j = 0; j < option.size(); ++j) {
        const Task& task = problem.tasks[j];
        const Option& now = task.options[option[j]];
        if (now.starts_now) continue;
        int next = NextLarger(problem, task, now.gpus);
        if (next < 0) continue;
        const Option& o = task.options[next];
        double gain = now.runtime_s - o.runtime_s;
        if (allocated + o.gpus - now.gpus > total || gain <= best_gain) continue;
        best_gain = gain;
        best_task = static_cast<int>(j);
        best_option = next;
      }
      if (best_task < 0) break;
      allocated += problem.tasks[best_task].options[best_option].gpus -
                   problem.tasks[best_task].options[option[best_task]].gpus;
      option[best_task] = best_option;
    }
    SerialDecoder decoder(problem);
    SolveResult result{SolveStatus::kFeasible, {}, 0.0, "", {}, 0.0};
    decoder.Decode(LongestFirst(problem, option), option, &result.schedule);
    return result;
  }
};

}  // namespace

std::unique_ptr<Solver> MakeOptimusSolver() {
  return std::make_unique<OptimusSolver>();
}

}  // namespace saturn
