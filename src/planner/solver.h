// The one interface every SPASE solver implements, and the options they share.
//
// A solver returns how it ended (SolveStatus: proven optimal, feasible without
// proof, stopped by the time limit, or infeasible) apart from whether the call
// worked (an exception means a bug). Solvers are deterministic for a given
// seed as long as the wall-clock limit does not cut them short: effort is
// bounded by `work_limit` (iterations, nodes), time is only a safety net.
//
//   SolveContext ctx{.time_limit_s = 2, .seed = 7};
//   SolveResult r = solver.Solve(problem, ctx);
//   if (r.status != SolveStatus::kInfeasible) use(r.schedule);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/defaults.h"
#include "planner/problem.h"
#include "planner/schedule.h"

namespace saturn {

struct SolveContext {
  double time_limit_s = defaults::kSolverTimeLimitS;
  uint64_t seed = 0;
  int threads = 1;
  // Deterministic effort scale: 1 is the default effort; tests use less.
  double work_scale = 1.0;
  const Clock* clock = nullptr;  // defaults to a steady clock
  // The caller's lower bound (MakespanLowerBound), so solvers need not redo it.
  double lower_bound = 0.0;
  // A known feasible schedule to start from (re-planning), or empty.
  Schedule warm_start;
  // Called with (best makespan so far, best bound so far) as the solver goes.
  std::function<void(double, double)> on_progress;
};

struct SolveResult {
  SolveStatus status = SolveStatus::kInfeasible;
  Schedule schedule;
  double lower_bound = 0.0;  // the best bound the solver knows (>= ctx.lower_bound)
  std::string note;          // how it went, for humans (e.g. "CBC stopped at 60 s, gap 12%")
};

class Solver {
 public:
  virtual ~Solver() = default;
  virtual std::string_view Name() const = 0;
  virtual std::string_view Description() const = 0;
  virtual SolveResult Solve(const Problem& problem, const SolveContext& ctx) const = 0;
};

}  // namespace saturn
