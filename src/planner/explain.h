// Why a plan gave a task the configuration it did, in a few words for the
// report's task table: its fastest configuration, the only one that runs, or
// what it gives up and why (fewer GPUs than its fastest, so that tasks run
// side by side; another GPU type while the faster one is busy).
//
//   std::string why = WhyThisOption(problem, j, schedule[j].option);
//   // "fastest: ddp x4 would be 1.6x faster on 2x the GPUs; fewer GPUs let tasks run side by side"
#pragma once

#include <string>

#include "planner/problem.h"

namespace saturn {

std::string WhyThisOption(const Problem& problem, int task, int option);

}  // namespace saturn
