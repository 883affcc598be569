// Fast constructive plans: the starting points of `auto` and the warm start
// of `milp`.
//
// The main idea is dual approximation for moldable tasks: for a target
// makespan T, give every task its least GPU-seconds option among those that
// finish within T; at the smallest T the lower bound allows, total area and
// the longest task both fit in T, and list scheduling turns that allotment
// into a plan. Several targets and two task orders are tried; the best wins.
//
//   std::vector<Candidate> seeds = ConstructiveCandidates(problem, lower_bound);
//   // seeds[0] is the best: seeds[0].makespan, seeds[0].order, seeds[0].option
#pragma once

#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"

namespace saturn {

// A solution in the form local search works on: a task order and an option
// per task, turned into a schedule by SerialDecoder.
struct Candidate {
  std::vector<int> order;
  std::vector<int> option;
  double makespan = 0.0;
};

// For target makespan `target`: per task, the option with the least GPU
// area whose runtime is <= target (the fastest option if none is).
std::vector<int> AllotmentForTarget(const Problem& problem, double target);

// Distinct candidates from several targets and orders, best first.
std::vector<Candidate> ConstructiveCandidates(const Problem& problem, double lower_bound);

// A candidate that reproduces a known schedule (order by start time).
Candidate CandidateFromSchedule(const Problem& problem, const Schedule& schedule);

}  // namespace saturn
