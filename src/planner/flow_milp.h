// Our exact MILP for SPASE: a resource-flow formulation (after Artigues et
// al., 2003) with one GPU "commodity" per node, solved by CBC.
//
// Why this formulation and not the paper's: the paper gives every GPU its own
// start-time and occupancy variables and a big-M disjunction per GPU and pair
// of tasks, so the LP relaxation is empty of information and every permutation
// of identical GPUs is a separate, equally good branch. Here GPUs are counted,
// not named (exact: a schedule within each node's capacity can always be given
// GPU ids, see schedule.h), so that symmetry is gone:
//   x[j,o,n]  task j runs option o on node n (only non-dominated options that fit)
//   S_j, C    start times and makespan
//   z[i,j]    i ends before j starts (S_j >= S_i + p_i - UB (1 - z[i,j]))
//   f[i,j,n]  GPUs handed from i to j on node n when i ends (<= cap * z[i,j]);
//             every task receives exactly its GPU count on its node, from the
//             node's pool or from tasks that ended before it, and passes on at
//             most that many; a node's pool holds its GPUs.
// plus valid inequalities that tighten the relaxation: C >= our combinatorial
// lower bound, GPU-seconds per node <= GPUs x C, two tasks that each hold more
// than half of a node are ordered, and identical nodes are used in order
// (symmetry breaking). Big-M is the incumbent's makespan, which a warm start
// from the constructive heuristics provides, so CBC starts with a good plan
// and only has to improve or prove it.
//
//   FlowMilpOutcome r = SolveFlowMilp(problem, incumbent, lower_bound, {.time_limit_s = 5});
#pragma once

#include <string>

#include "planner/mip.h"
#include "planner/problem.h"
#include "planner/schedule.h"

namespace saturn {

struct FlowMilpOutcome {
  bool has_solution = false;
  Schedule schedule;   // compacted, at least as good as the incumbent
  double bound = 0.0;  // proven lower bound
  bool optimal = false;
  bool hit_limit = false;
  long nodes = 0;
  int variables = 0;
  int constraints = 0;
};

// `incumbent` must be a feasible schedule; it is the warm start and sets big-M.
FlowMilpOutcome SolveFlowMilp(const Problem& problem, const Schedule& incumbent, double lower_bound,
                              const MipOptions& options);

// Rough count of variables the model would have; callers use it to decide
// whether the exact model is worth trying.
long FlowMilpSize(const Problem& problem);

}  // namespace saturn
