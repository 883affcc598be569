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

// Tasks that trained markedly slower than profiled (the median over
// `tasks` tasks of measured over profiled seconds per step): "tasks
// trained 2.6x slower than profiled (median over 4 tasks): is the machine
// shared with other work?", and where the run was compared with current
// practice (`compared`), " Current practice's time is estimated from the
// same profile, so the comparison above favours it by about that factor."
std::string ContentionWarning(double median, int tasks, bool compared);

// Bytes as the report and docs/finetune.md show a size, in decimal units
// (1 MB = 10^6 bytes): "512 B", "4.2 kB", "16.9 MB", "153 MB", "6.2 GB" (one
// decimal below 100 of the unit, none from 100).
std::string FormatBytes(double bytes);

// A count as the report shows a large one: "10,000" (a comma every three
// digits), "950".
std::string WithCommas(long n);

}  // namespace saturn
