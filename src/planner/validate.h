// The independent plan checker. It trusts no solver: given the problem (the
// profile and cluster) and a plan, it checks every rule of Contract 3 and
// returns one message per violation (empty when the plan is valid).
//
// Rules: every task exactly once and nothing else; (task, technique, gpus) is
// an option of the task (honouring pinned nodes and starts_now); end_s - start_s
// equals its runtime; start_s >= 0; the node exists; gpu_ids are distinct,
// within the node's range and as many as gpus; no GPU runs two tasks at
// overlapping times; makespan_s is the largest end_s; lower_bound_s <= makespan_s.
// An "infeasible" plan must list no tasks.
//
//   std::vector<std::string> errors = ValidatePlan(problem, plan);
//   if (!errors.empty()) ... // each message names the task and the rule
#pragma once

#include <string>
#include <vector>

#include "contracts/plan.h"
#include "planner/problem.h"

namespace saturn {

std::vector<std::string> ValidatePlan(const Problem& problem, const Plan& plan);

// A plan that may have packs (tasks sharing a `pack`; planner/packing.h):
// each pack's members must be of one class and share technique, GPUs, node,
// gpu_ids and start; each member's end_s is what the pack model gives; the
// pack must fit (its rows within what was measured). Then the plan with each
// pack as one task is checked by the rules above. A plan without packs is
// checked exactly as ValidatePlan(problem, plan).
struct PackTerms;
std::vector<std::string> ValidatePlan(const Problem& problem, const PackTerms& terms,
                                      const Plan& plan);

}  // namespace saturn
