// A lower bound on the optimal makespan, cheap enough for every plan.
//
// For a candidate makespan T each task may only use options with runtime <= T.
// T is infeasible if
//   (a) some task has no such option (the longest-task bound),
//   (b) the least GPU-seconds of the tasks exceed the GPU-seconds available,
//       counted for every node size class s: tasks whose admissible options
//       only fit nodes of >= s GPUs must fit in those nodes' area (the GPU-area
//       bound, made aware of heterogeneous nodes), or
//   (c) the tasks that use more than half of any node they fit on (two can
//       never share a node) need more than T on every node that can host them,
//   (d) with mixed GPU types, no fractional split of each task's GPU-seconds
//       over the types it can run on (at that type's GPU-seconds) fits every
//       type's GPUs in T (LP duality: weighted areas, best of a grid).
// The bound is the smallest T passing all four; it is found exactly by a
// binary search over the intervals between distinct runtimes.
//
//   double lb = MakespanLowerBound(problem);
#pragma once

#include "planner/problem.h"

namespace saturn {

double MakespanLowerBound(const Problem& problem);

}  // namespace saturn
