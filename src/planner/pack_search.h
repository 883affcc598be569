// Choosing packs together with the plan.
//
// Which tasks share a pack changes every other decision: a pack is one task
// to the solvers, with its own options (techniques, GPU counts, runtimes
// from packing.h's model). SearchPackings searches packings, each scored by
// the plan the constructive scheduler (construct.h) makes of it (ties: least
// GPU time). PlanWithPacks then solves the few best packings (on problems
// of up to 8 tasks also the few of least lower bound: the constructive
// score misjudges some) with the requested solver and effort, and the
// unpacked problem beside them, and keeps the shortest plan, so packing
// never lengthens a plan by the solver's own estimate. When the best
// packing's constructive plan is already shorter than the unpacked
// problem's lower bound (a table's thousands of groups in arrays), the
// unpacked problem is solved at a short fixed effort, for the comparison
// only.
//
//   PackedPlanResult r = PlanWithPacks(problem, terms, request, /*allow_packs=*/true);
//   WriteFileAtomic("plan.json", PlanToJson(r.result.plan).dump(2));
#pragma once

#include <string>
#include <vector>

#include "planner/packing.h"
#include "planner/planner.h"

namespace saturn {

// Makespan of the best constructive plan of a packing (+inf if some group
// has no option) and its GPU-seconds; what ChoosePacking compares.
struct PackingScore {
  double makespan = 0.0;
  double area = 0.0;
  bool operator<(const PackingScore& o) const;
};
PackingScore ScorePacking(const Problem& problem, const PackTerms& terms, const Packing& packing);

// How many of the best-scored packings PlanWithPacks solves in full (on
// small problems, beside as many of least lower bound).
constexpr int kPackingsSolved = 3;

// The `keep` best packings found (best first; distinct), searched three
// ways, each scored by ScorePacking: each class cut into p packs of
// members of similar step counts (the best p: every p up to 32, then p
// growing by a fifth), greedy merging (classes of up to 32 tasks), then hill
// climbing from both (moving a task to another pack or alone, swapping two).
// Chunking also tries the longest few tasks apart (one pack, or each alone
// when 2 or 4), the rest in one to three packs or about as many as were best
// without: the cut that a class of skewed lengths (a Zipf table's groups)
// needs.
// `evaluations` (if not null) counts scored packings.
std::vector<Packing> SearchPackings(const Problem& problem, const PackTerms& terms, int keep,
                                    int* evaluations = nullptr);

// The best of SearchPackings. `evaluations` (if not null) counts scored packings.
Packing ChoosePacking(const Problem& problem, const PackTerms& terms, int* evaluations = nullptr);

// `packing` with group b merged into group a (a < b).
Packing Merged(const Packing& packing, int a, int b);

struct PackedPlanResult {
  // The plan of the original tasks (members carry `pack`); when packs formed,
  // its schedule is of the packed problem (BuildPackedProblem(packing)).
  PlanResult result;
  Packing packing;  // Unpacked(...) when packs did not shorten the plan
  // The plan without packs, by the same solver and effort (0 if not solved:
  // packs not allowed or not possible).
  double unpacked_makespan_s = 0.0;
  int evaluations = 0;
  // Packings solved in full: a candidate whose lower bound is not below the
  // best plan's makespan so far (the unpacked one's first) is not: it could
  // not be kept.
  int packings_solved = 0;
};

// Plans `problem` choosing packs when `allow_packs` and the terms allow any;
// otherwise exactly RunPlanner. In anytime mode the solves share the time
// limit. The plan's extra "packs" lists each pack (name,
// members, technique, gpus, runtime) and "unpacked_makespan_s" the plan it
// beat; its lower bound is that of the chosen packing.
PackedPlanResult PlanWithPacks(const Problem& problem, const PackTerms& terms,
                               const PlanRequest& request, bool allow_packs);

// What the packs are and why, a line each, for `saturn plan` and the run's
// summary: "pack-1: 4 tasks (a, b, c, d), fsdp on 2 GPUs, 1h02m; a step of
// all 4 takes 0.62 s, alone they take 1.20 s together; with pack-2 as well
// the plan would take 1h20m". Then the plan without packs, or why none
// formed ("no pack shortened the plan", "--no-pack"). "" when no two tasks
// could share a pack.
std::string DescribePacks(const Problem& problem, const PackTerms& terms,
                          const PackedPlanResult& result, bool no_pack);

}  // namespace saturn
