// Local search on (task order, option per task), decoded by SerialDecoder:
// late-acceptance hill climbing (LAHC), which needs no temperature tuning.
// Moves change a task's option, move a task earlier in the order, or swap two
// tasks; half of them target a task that ends at the makespan (the critical
// one). Ties in makespan are broken by the mean end time, so the search keeps
// moving work earlier on plateaus. Effort is counted in decoder evaluations
// (deterministic for a seed); the deadline only cuts a climb short.
//
//   LocalSearch search(problem, deadline, /*target=*/lower_bound, seed);
//   Candidate best; Cost best_cost;
//   search.Run(start, 2000, &best, &best_cost);
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/clock.h"
#include "planner/construct.h"
#include "planner/list_scheduler.h"
#include "planner/problem.h"
#include "planner/schedule.h"

namespace saturn {

// Solutions compare by makespan, then by mean end time.
struct Cost {
  double makespan = 0.0;
  double mean_end = 0.0;
  double Scalar() const { return makespan + 1e-3 * mean_end; }
  bool BetterThan(const Cost& o) const {
    if (makespan < o.makespan * (1 - 1e-12)) return true;
    if (makespan > o.makespan * (1 + 1e-12)) return false;
    return mean_end < o.mean_end * (1 - 1e-12);
  }
};

class LocalSearch {
 public:
  LocalSearch(const Problem& problem, const Deadline& deadline, double target, uint64_t seed);

  // Decodes `c`; writes the schedule if `schedule` is not null.
  Cost Evaluate(const Candidate& c, Schedule* schedule);
  // Runs LAHC from `start` for `iterations`; updates best/best_cost.
  void Run(Candidate start, long iterations, Candidate* best, Cost* best_cost);
  // `moves` random moves away from `c` (the kick of iterated local search).
  Candidate Perturb(Candidate c, int moves);

  // Whether `c` meets the target (the bound, or the gap target): search stops.
  bool Optimal(const Cost& c) const { return c.makespan <= lower_bound_ * (1 + 1e-9); }
  void set_target(double target) { lower_bound_ = target; }
  bool stopped_by_time() const { return stopped_by_time_; }
  long evaluations() const { return evaluations_; }

 private:
  struct Undo {
    enum Kind { kNone, kOption, kMove, kSwap } kind = kNone;
    int a = 0, b = 0;  // task and old option, or positions
  };

  int Uniform(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  Undo Move(Candidate& c, const std::vector<int>& critical);
  static void MoveElement(std::vector<int>& v, int from, int to);
  void Revert(Candidate& c, const Undo& u);
  void Consider(const Candidate& c, const Cost& cost, Candidate* best, Cost* best_cost);

  const Problem& problem_;
  SerialDecoder decoder_;
  const Deadline& deadline_;
  double lower_bound_;  // the target: search stops once a plan meets it
  std::mt19937_64 rng_;
  std::vector<std::vector<int>> useful_;
  Schedule scratch_;
  long evaluations_ = 0;
  bool stopped_by_time_ = false;
};

}  // namespace saturn
