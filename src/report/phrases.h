// Sentences the terminal and the report share, as pure functions so that
// their wording is tested where it is made.
//
//   std::string s = PlanEndsClause(10.1, 6.5, 6.5);
//   // "plan ends ~now (estimate 6.5s, running 3.6s late; first plan 6.5s)"
#pragma once

#include <string>

namespace saturn {

// The progress line's end of the plan, at `now_s` on the run clock: "plan
// ends ~6.5s (first plan 6.5s)" while the estimate is ahead; once it is
// past (tasks run longer than planned and no re-plan moved it yet), "plan
// ends ~now (estimate 6.5s, running 3.6s late; first plan 6.5s)" rather
// than a time already gone.
std::string PlanEndsClause(double now_s, double estimate_s, double first_plan_s);

// A run against current practice (each task alone on a whole node, one
// after another), estimated from the same profile.
struct SpeedupFigures {
  double current_practice_s = 0;  // current practice's makespan, estimated
  double run_s = 0;               // the run's makespan (training)
  double setup_s = 0;             // profiling and planning before it
  double planned_speedup = 0;     // what the first plan promised
};

// What the run saved, after "current practice ... would take ~X
// (estimated ...): ". Where it did: "this run was 1.75x faster (1.31x
// faster counting profiling and planning; the plan promised 2.24x
// faster)". Where training was faster but profiling cost more than it
// saved, that in plain words, with both figures, and when profiling pays
// off: "training was 1.16x faster, but counting profiling and planning
// (1m20s) this run took 1.89x as long as current practice (...):
// profiling cost more than the plan saved. It pays off when the profile
// cache holds the trials (a re-run of these tasks profiles almost nothing)
// and for longer training (profiling does not grow with steps: from about
// 2.4x this run's steps); the plan promised 2.24x faster". Where training
// itself was slower, its figures plainly. `html`: "&times;" for "x" and
// the figures that answer in bold.
std::string SpeedupVerdict(const SpeedupFigures& f, bool html);

}  // namespace saturn
