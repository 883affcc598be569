// Re-planning a plan that has packs (replan.h's Replan, given PackTerms).
//
// Packs are kept as units: each pack with two or more members left is one
// task of the remaining problem, its options the pack's model
// (planner/packing.h) over what its members have left (members not started
// under early stopping: MemberSteps, where their rule may end them; the
// others their expected work left). A pack not started
// may move, start elsewhere or later, like any task; a running pack keeps
// running where it runs (its one option, pinned). Tasks alone are as
// BuildRemainingProblem makes them. What packs there are comes from each
// task's TaskProgress::pack; arrivals that may share a pack are packed
// with each other first (PackArrivals); Replan also tries packs not
// started regrouped (PackArrivals with `regroup`) and running packs split
// (SplitPack: stopped at a checkpoint, their members alone or in new packs
// among themselves).
//
//   PackedRemaining packed = PackRemaining(base, terms, progress, remaining, policy);
//   Plan current_packed = PackPlan(current, packed);
//   ... re-plan packed.remaining ...
//   Plan plan = UnpackPlan(packed, chosen, plan_of_packed);
#pragma once

#include <set>
#include <string>
#include <vector>

#include "contracts/plan.h"
#include "planner/packing.h"
#include "planner/schedule.h"
#include "replan/replan.h"

namespace saturn {

struct PackedRemaining {
  RemainingProblem remaining;  // its tasks: the packs and the tasks alone
  // Per task of `remaining`: the names of its members (one for a task
  // alone), and for a pack each member's end after the start per option.
  std::vector<std::vector<std::string>> members;
  std::vector<std::vector<std::vector<double>>> ends;  // [task][option][member]
  // Per task: the pack's name ("" alone). The pack's task is named
  // "[pack] NAME", which no task's name can be (a task may be named pack-1).
  std::vector<std::string> pack;

  bool IsPack(int k) const { return members[static_cast<size_t>(k)].size() > 1; }
};

// The N of a pack named "pack-N" (0 for any other name).
int PackNumber(const std::string& name);

// Whether some pack has two or more members left.
bool AnyPackLeft(const std::vector<TaskProgress>& progress);

// Arrivals (tasks that arrived, have not started, have no progress and are
// in neither `current` nor a pack) that may share a pack with each other
// (the same pack_class; under early stopping only those whose terms say
// where their rule may end them, PackTerms::Member::stops, each counted
// for its expected work) are
// packed as the planner packs a first plan (ChoosePacking, kept only when
// it beats every arrival alone on their own), their packs named "pack-N"
// after the highest N among `progress`'s and `current`'s packs and
// `numbered_to` (a name no pack or task has). Sets their `pack`; returns
// how many packs formed.
// With `regroup`, every task of a pack not started (no member running or
// trained) counts as an arrival too: its pack is formed afresh.
int PackArrivals(const Problem& base, const PackTerms& terms, const Plan& current,
                 std::vector<TaskProgress>& progress, bool regroup = false, int numbered_to = 0);

// The member sets of the packs no member of which runs or trained (each
// sorted, task indices), to compare two groupings.
std::set<std::vector<int>> PacksNotStarted(const std::vector<TaskProgress>& progress);

// The running packs with two or more members left, every one of which
// resumes from its own checkpoint when stopped (TaskProgress::resumes_alone):
// the packs a re-plan may split.
std::vector<std::string> SplittablePacks(const std::vector<TaskProgress>& progress);

// `progress` as it stands once running pack `pack` is stopped at its next
// checkpoint: its members out of it, none running, each to resume from its
// own checkpoint (paying a restart, as a pre-empted task does): alone, or
// with `repack` in new packs among themselves (they stand at one step) as
// ChoosePacking packs what they have left, when that beats them alone and
// is not one pack of them all (new names, as PackArrivals names them).
std::vector<TaskProgress> SplitPack(const Problem& base, const PackTerms& terms,
                                    const Plan& current, std::vector<TaskProgress> progress,
                                    const std::string& pack, bool repack, int numbered_to = 0);

// The remaining problem with packs as units; `remaining` is
// BuildRemainingProblem(base, progress, policy).
PackedRemaining PackRemaining(const Problem& base, const PackTerms& terms,
                              const std::vector<TaskProgress>& progress,
                              const RemainingProblem& remaining, const ReplanPolicy& policy);

// `plan` (a plan of the base tasks, members carrying `pack`) as a plan of
// the packed problem: one entry per pack left (its first member's
// placement, its last member's end); other entries unchanged.
Plan PackPlan(const Plan& plan, const PackedRemaining& packed);

// A plan of the packed problem (schedule `chosen`) as a plan of the base
// tasks: each member of a pack gets the pack's placement, its own end and
// `pack` = the pack's name.
Plan UnpackPlan(const PackedRemaining& packed, const Schedule& chosen, Plan plan);

}  // namespace saturn
