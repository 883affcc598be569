// Why a plan gave a task the configuration it did, in a few words for the
// report's task table: its fastest configuration, the only one that fits,
// kept running where it was, or what it gives up and why (fewer GPUs than
// its fastest, another GPU type, a slower technique).
//
// With the plan, a reason says what the faster configuration would have
// done there: with every other task where the plan puts it, it would have
// waited for devices and ended later ("fewer GPUs than its fastest (ddp x4
// would end later, at 2m10s instead of 1m40s: other tasks need the
// devices)"), or it would not have, and the task does not set the plan's
// end. Without the plan (or for a plan of over kMaxExplainedPlanTasks
// tasks) the reason gives the speed it gives up.
//
//   std::string why = WhyThisOption(problem, j, schedule[j].option, &plan);
#pragma once

#include <string>

#include "contracts/plan.h"
#include "planner/problem.h"

namespace saturn {

// Past this many tasks a reason does not look for where a faster
// configuration would fit (quadratic in a node's tasks).
constexpr size_t kMaxExplainedPlanTasks = 500;

// `plan`: the plan the task ran under (its entry names the task with the
// option's technique and GPU count), or nullptr.
std::string WhyThisOption(const Problem& problem, int task, int option, const Plan* plan = nullptr);

}  // namespace saturn
