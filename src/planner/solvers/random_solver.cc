// random: the paper's random baseline. A seeded random option per task (among
// those that fit some node) and a random order, list-scheduled.
#include <algorithm>
#include <numeric>
#include <random>

#include "planner/list_scheduler.h"
#include "planner/solver.h"

namespace saturn {
namespace {

class RandomSolver final : public Solver {
 public:
  std::string_view Name() const override { return "random"; }
  std::string_view Description() const override {
    return "random configuration and order (seeded)";
  }
  SolveResult Solve(const Problem& problem, const SolveContext& ctx) const override {
    std::mt19937_64 rng(ctx.seed);
    std::vector<int> option(problem.tasks.size());
    for (size_t j = 0; j < option.size(); ++j) {
      std::vector<int> fitting;
      const Task& task = problem.tasks[j];
      if (int pinned = PinnedOption(task); pinned >= 0) {
        option[j] = pinned;
        continue;
      }
      for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
        if (problem.FitsSomewhere(task.options[o]) && !task.options[o].starts_now) {
          fitting.push_back(o);
        }
      }
      if (fitting.empty()) fitting.push_back(SmallestOption(problem, task));
      option[j] = fitting[std::uniform_int_distribution<size_t>(0, fitting.size() - 1)(rng)];
    }
    std::vector<int> order(problem.tasks.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    SerialDecoder decoder(problem);
    SolveResult result{SolveStatus::kFeasible, {}, 0.0, "", {}, 0.0};
    decoder.Decode(order, option, &result.schedule);
    return result;
  }
};

}  // namespace

std::unique_ptr<Solver> MakeRandomSolver() {
  return std::make_unique<RandomSolver>();
}

}  // namespace saturn
