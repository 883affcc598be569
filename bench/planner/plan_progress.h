// What a re-planning benchmark reports at a check: every task's progress at
// time `now` if it ran as `plan` says, its runtime off by a factor drawn in
// [1 - noise, 1 + noise] (seeded). A task alone that runs is slowed by that
// factor (TaskProgress::slowdown) and has a checkpoint; a pack's members
// (PlanTask::pack) carry the pack's name, their work done off by the
// factor, and only the first of them that started holds the devices
// (`running`), as the executor's Snapshot reports them.
//
//   std::vector<TaskProgress> p = ProgressAt(problem, plan, now, 0.02, seed);
#pragma once

#include <cstdint>
#include <vector>

#include "contracts/plan.h"
#include "planner/problem.h"
#include "replan/replan.h"

namespace saturn::bench {

std::vector<TaskProgress> ProgressAt(const Problem& problem, const Plan& plan, double now,
                                     double noise, uint64_t seed);

}  // namespace saturn::bench
