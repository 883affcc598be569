// The one interface every SPASE solver implements, and the options they share.
//
// A solver returns how it ended (SolveStatus: proven optimal, feasible without
// proof, stopped by the time limit, or infeasible) apart from whether the call
// worked (an exception means a bug).
//
// Effort, three ways (auto; the other solvers have fixed effort):
//  - bounded (the default): the solver's default effort x `work_scale`,
//    deterministic for a seed; the time limit is only a safety net;
//  - `work_limit` > 0: exactly that much work (work units, see below),
//    deterministic for a seed on any machine, as CP-SAT's deterministic time;
//  - `anytime`: keeps improving until the time limit, unless the gap to the
//    bound closes (or meets `gap`) first; not reproducible across machines.
// A work unit is 10^6 (task, node) placements tried by the decoder: on one
// core of this project's 2-core machine about 20 units a second.
//
//   SolveContext ctx;
//   ctx.time_limit_s = 2;
//   SolveResult r = solver.Solve(problem, ctx);
//   if (r.status != SolveStatus::kInfeasible) use(r.schedule);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/defaults.h"
#include "planner/problem.h"
#include "planner/schedule.h"

namespace saturn {

// How to solve: one record from `saturn run` and `saturn serve` (RunOptions::
// solve) through re-planning (ReplanPolicy) and the planner's front door
// (PlanRequest) to the solver (SolveContext), each of which is one; copied
// whole, so no setting is lost on the way. (`saturn plan` and `saturn
// simulate` fill a PlanRequest or ReplanPolicy from their own flags.)
struct SolveOptions {
  std::string solver = "auto";  // the registry's name (planner/registry.h)
  double time_limit_s = defaults::kSolverTimeLimitS;
  uint64_t seed = 0;
  int threads = 1;
  // Deterministic effort scale: 1 is the default effort; tests use less.
  double work_scale = 1.0;
  // Keep searching until the time limit while the gap is open (see above).
  bool anytime = false;
  // Deterministic effort in work units; 0: none (bounded or anytime decides).
  double work_limit = 0.0;
  // Stop once (makespan - bound) / makespan <= gap; 0: only at the bound.
  double gap = 0.0;
};

// What a solver is called with: the options, and what the planner adds.
struct SolveContext : SolveOptions {
  SolveContext() = default;
  explicit SolveContext(const SolveOptions& options) : SolveOptions(options) {}

  const Clock* clock = nullptr;  // defaults to a steady clock
  // The caller's lower bound (MakespanLowerBound), so solvers need not redo it.
  double lower_bound = 0.0;
  // A known feasible schedule to start from (re-planning), or empty.
  Schedule warm_start;
  // Called with (best makespan so far, best bound so far) as the solver goes.
  std::function<void(double, double)> on_progress;
};

// One step of the incumbent's history: when (seconds since the solve began
// and work units spent) the best plan improved, and to what.
struct Improvement {
  double time_s = 0.0;
  double work = 0.0;
  double makespan = 0.0;
  double bound = 0.0;
};

struct SolveResult {
  SolveStatus status = SolveStatus::kInfeasible;
  Schedule schedule;
  double lower_bound = 0.0;  // the best bound the solver knows (>= ctx.lower_bound)
  std::string note;          // how it went, for humans (e.g. "CBC stopped at 60 s, gap 12%")
  std::vector<Improvement> improvements;  // the incumbent over time (auto), oldest first
  double work = 0.0;                      // work units spent (auto)
};

class Solver {
 public:
  virtual ~Solver() = default;
  virtual std::string_view Name() const = 0;
  virtual std::string_view Description() const = 0;
  virtual SolveResult Solve(const Problem& problem, const SolveContext& ctx) const = 0;
};

}  // namespace saturn
