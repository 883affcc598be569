// Helpers for planner tests: small hand-made problems, seeded random
// problems, and an exhaustive optimum that shares no code with the solvers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/problem.h"

namespace saturn::testing {

// Problem with the given node sizes and tasks given as
// {name, {{technique, gpus, runtime}, ...}}.
struct OptionSpec {
  std::string technique;
  int gpus;
  double runtime;
};
Problem MakeProblem(const std::vector<int>& node_gpus,
                    const std::vector<std::pair<std::string, std::vector<OptionSpec>>>& tasks);

// Random moldable tasks: 1..max_options GPU counts per task with runtimes
// that shrink sub-linearly in GPUs; integer runtimes if `integral`.
Problem RandomProblem(uint64_t seed, int tasks, const std::vector<int>& node_gpus, int max_options,
                      bool integral);

// RandomProblem's tasks on nodes of `types` GPU types (node n of type
// node_types[n]): each task has its options on every type whose nodes are
// large enough, type t running them about 1.6^t times as fast as type 0 (each
// task by its own factor).
Problem RandomMixedProblem(uint64_t seed, int tasks, const std::vector<int>& node_gpus,
                           const std::vector<int>& node_types, int types, bool integral);

// The optimal makespan by exhaustive search over left-justified schedules
// (tasks placed in start order, each starting at 0 or at the end of an earlier
// task on its node). For tiny problems only.
double BruteForceOptimum(const Problem& problem);

}  // namespace saturn::testing
