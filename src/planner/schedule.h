// A solver's answer before GPU ids are given, and its conversion to a plan.
//
// A Schedule holds, per task, the chosen option, node and start time. GPU ids
// are assigned afterwards by interval colouring (tasks in start order take GPUs
// that are free), which never fails for a schedule within node capacity.
//
//   Schedule s(problem.NumTasks());
//   s[j] = {option, node, start};
//   Plan plan = ScheduleToPlan(problem, s, "auto", SolveStatus::kOptimal, lb, 0.3);
#pragma once

#include <string>
#include <vector>

#include "planner/problem.h"
#include "contracts/plan.h"

namespace saturn {

struct Placement {
  int option = -1;
  int node = -1;
  double start = 0.0;
};

using Schedule = std::vector<Placement>;

// Largest end time; 0 for an empty schedule.
double Makespan(const Problem& problem, const Schedule& schedule);
double EndOf(const Problem& problem, const Schedule& schedule, int task);

// Checks options, nodes and per-node capacity at every instant; returns the
// first problem found, or "" if the schedule is sound.
std::string CheckSchedule(const Problem& problem, const Schedule& schedule);

// GPU ids per task. starts_now options keep their gpu_ids; the rest take free
// GPUs in start order: the tightest contiguous run of free GPUs, else the
// ones freed most recently. Throws std::logic_error if the schedule exceeds a
// node's capacity.
std::vector<std::vector<int>> AssignGpuIds(const Problem& problem, const Schedule& schedule);

enum class SolveStatus { kOptimal, kFeasible, kTimeLimit, kInfeasible };
const char* SolveStatusName(SolveStatus status);

Plan ScheduleToPlan(const Problem& problem, const Schedule& schedule, const std::string& solver,
                    SolveStatus status, double lower_bound_s, double solve_time_s);

}  // namespace saturn
