// milp: our exact formulation (planner/flow_milp.h) on CBC, warm-started from
// the best constructive plan. Status is optimal only when CBC proves it.
#include <algorithm>

#include "planner/construct.h"
#include "planner/flow_milp.h"
#include "planner/list_scheduler.h"
#include "planner/solver.h"

namespace saturn {
namespace {

class MilpSolver final : public Solver {
 public:
  std::string_view Name() const override { return "milp"; }
  std::string_view Description() const override {
    return "exact resource-flow MILP on CBC, warm-started from a heuristic";
  }
  SolveResult Solve(const Problem& problem, const SolveContext& ctx) const override {
    SolveResult result;
    if (problem.tasks.empty()) return {SolveStatus::kOptimal, {}, 0.0, "", {}, 0.0};
    Schedule incumbent = ctx.warm_start;
    SerialDecoder decoder(problem);
    for (const Candidate& c : ConstructiveCandidates(problem, ctx.lower_bound)) {
      Schedule s;
      decoder.Decode(c.order, c.option, &s);
      if (incumbent.empty() || Makespan(problem, s) < Makespan(problem, incumbent)) {
        incumbent = std::move(s);
      }
      break;  // candidates come best first
    }
    MipOptions options;
    options.time_limit_s = ctx.time_limit_s;
    options.threads = ctx.threads;
    FlowMilpOutcome r = SolveFlowMilp(problem, incumbent, ctx.lower_bound, options);
    result.schedule = std::move(r.schedule);
    result.lower_bound = r.bound;
    result.status = r.optimal ? SolveStatus::kOptimal : SolveStatus::kTimeLimit;
    result.note = "CBC: " + std::to_string(r.variables) + " variables, " +
                  std::to_string(r.constraints) + " constraints, " + std::to_string(r.nodes) +
                  " nodes";
    return result;
  }
};

}  // namespace

std::unique_ptr<Solver> MakeMilpSolver() {
  return std::make_unique<MilpSolver>();
}

}  // namespace saturn
