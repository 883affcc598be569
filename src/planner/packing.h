// Packs in the plan: several LoRA tasks over one frozen base that train in
// one worker (engine/pack.h), the base held once, every member's rows in one
// pass. Which tasks share a pack is a decision of the plan (pack_search.h);
// this file holds what that decision rests on: the profile's pack columns,
// a pack's runtime, and the problem whose tasks are packs.
//
// Profile columns (Contract 2 amendment; all optional, on a task's rows):
//   pack_class   tasks with the same non-empty value may share a pack (same
//                base, architecture, precision and optimizer state kind);
//   pack_rows    rows (samples) this task sends through the base per step;
//   pack_step_s  "ROWS:SECONDS ..." (ascending ROWS): the step time of a pack
//                whose members together send ROWS rows per step, measured on
//                this row's technique, GPU count and type. A pack needing
//                more rows than the last point does not fit the device;
//   pack_start_s "ROWS:SECONDS ..." (optional, like pack_step_s; the first
//                point the member alone): what starting such a pack costs
//                (launch, data, building its trainer, first steps' extra);
//   pack_knobs   "ROWS:KNOBS ..." (optional): the technique's settings each
//                measured size ran with, which the executor gives a pack
//                (PackKnobsAt);
//   step_s, steps (existing) the task's own step time and step count.
//
// A pack's runtime follows its members: with members' steps s1 <= s2 <= ...
// (under early stopping, MemberSteps: where the rule is expected to stop them),
// all members step together until s1, then the rest (fewer rows, faster
// steps) until s2, and so on; member i ends when its steps are done. Step
// time at R rows is linear between the measured points (the first point's
// time below it). The curve is measured with copies of one member; a
// member whose own step_s differs from its curve's first point at the same
// rows (another LoRA rank or targets) adds the difference to every step it
// is in (its adapters are its own: their cost adds), so a member left alone
// steps at its own step_s; and a pack steps no faster than its slowest
// member alone. A launch's fixed costs (start, checkpoints) are those of
// its members' largest: runtime_s - steps x step_s of each member's row,
// plus what pack_start_s says a start at the pack's rows costs beyond its
// first point's (beyond its last point: its last value), paid once: a
// member that ends, or that its early_stop: rule stops, leaves and the
// others go on in the same worker (worker/pack_job.h; an array's:
// engine/array.h).
//
//   PackTerms terms = PackTermsFromProfile(profile, problem, "profile.csv");
//   PackedProblem packed = BuildPackedProblem(problem, terms, {{0, 1, 2}, {3}});
//   Plan plan = ExpandPackedPlan(problem, packed, RunPlanner(packed.problem, req).plan);
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "contracts/plan.h"
#include "contracts/profile.h"
#include "planner/problem.h"

namespace saturn {

// What the profile says about packing each task of a problem.
struct PackTerms {
  struct Member {
    std::string cls;  // "": trains alone
    double rows = 1.0;
    double steps = 0.0;  // under early stopping: its expected steps (stops' mean)
    // Under early stopping (empty otherwise): where its rule ends it, as
    // (steps, probability) ascending (tune/early_stop.h's
    // StopStepDistribution), which MemberSteps prices a pack's members on.
    std::vector<std::pair<double, double>> stops;
    int group = 0;  // how many tasks the rule judges together (0: as many as share a pack)
    std::string stop_group = {};  // which tasks those are (members of one draw share it)
  };
  // Per option of a task: its own step time and its class's pack curve.
  struct Curve {
    double step_s = 0.0;
    std::vector<std::pair<double, double>> points;  // (rows, step seconds), ascending
    std::vector<std::pair<double, double>> start;   // (rows, start seconds); may be empty
  };
  std::vector<Member> tasks;               // per problem task
  std::vector<std::vector<Curve>> curves;  // [task][option]

  // Whether some class has at least two tasks (a pack could form).
  bool Any() const;
  // Whether tasks a and b may share a pack.
  bool Compatible(int a, int b) const;
};

// Reads the pack columns of `profile` for the tasks and options of `problem`
// (built from the same profile by ProblemFromProfile). Empty terms (no class)
// when the profile has no pack_class column. InputError naming `source`, the
// line and the column for a bad value.
PackTerms PackTermsFromProfile(const ProfileTable& profile, const Problem& problem,
                               std::string_view source);

// The steps each of `members` trains in a pack of them, in their order:
// its `steps`, or, for the c members that share one `stop_group` (n =
// `group` tasks judged together, one `stops`), the expected i-th lowest of c of the group
// drawn without replacement (the i-th of them in `members` order gets the
// i-th lowest), where the group's n tasks end at the means of n equal
// strata of probability of `stops`: the pack's members leave one by one as
// the rule stops them, and the last one's steps, not the mean's, are how
// long the pack lasts. The pack's expected runtime is linear in these, so
// where members send equal rows it is exact for that model. A pack of one
// gets the mean; a pack of the whole group the strata's means.
std::vector<double> MemberSteps(const PackTerms& terms, const std::vector<int>& members);

// Each task whose `stops` are known: its `steps` their mean (its expected
// steps, as a first plan's runtimes count them).
void StepsAtStopsMean(PackTerms& terms);

// The technique's settings (its `knobs`, a JSON object's text) a pack of
// `rows` rows runs with, from a row's `pack_knobs` ("ROWS:KNOBS ...",
// ascending, KNOBS a JSON object without spaces: what each measured pack
// size ran with): those of the fewest ROWS at or above `rows` (what fit
// that many rows fits fewer), the last point's beyond them; "" when `text`
// is empty. InputError naming `source`, `line` and the column for a
// malformed value.
std::string PackKnobsAt(const std::string& text, double rows, std::string_view source = "",
                        int line = 0);

// The option of `task` a pack run with option `key` runs it under: the same
// technique, GPU count and type (not pinned to a node or start), or -1.
int MatchingOption(const Task& task, const Option& key);
// The option of `task` (of `problem`) a plan entry names: its technique,
// GPU count and type (any type when the entry names none), not pinned; or -1.
int OptionOf(const Problem& problem, const Task& task, const PlanTask& t);

// Step time of `curve` at `rows` rows per step; < 0 beyond its last point.
double PackStepAt(const PackTerms::Curve& curve, double rows);
// A curve's value at `rows`: linear between its points, its first below
// them; < 0 beyond its last point or when it has none.
double CurveAt(const std::vector<std::pair<double, double>>& points, double rows);

// A pack of `members` (task indices) run with option `key` (technique, GPU
// count, type): each member's end after the start, in the order of
// `members`; empty if some member has no such option or the pack does not
// fit (more rows than measured).
std::vector<double> PackMemberEnds(const Problem& problem, const PackTerms& terms,
                                   const std::vector<int>& members, const Option& key);
// PackMemberEnds with each member's steps given (`steps`, in `members`
// order: where each really leaves, e.g. where its rule stopped it) in place
// of MemberSteps; `*launch_s` (if not null): the time before the first
// step. Packs of two or more members.
std::vector<double> PackMemberEndsAt(const Problem& problem, const PackTerms& terms,
                                     const std::vector<int>& members, const Option& key,
                                     const std::vector<double>& steps, double* launch_s);
// One step of all `members` together with option `key`, as PackMemberEnds
// steps them before any leaves (the curve at their rows, each member's own
// adapters added, no faster than the slowest alone); < 0 where
// PackMemberEnds is empty. For explaining a pack (DescribePacks).
double PackStepOfAll(const Problem& problem, const PackTerms& terms,
                     const std::vector<int>& members, const Option& key);

// A partition of a problem's tasks: groups of task indices, one per pack (a
// group of one trains alone).
using Packing = std::vector<std::vector<int>>;
// Every task alone.
Packing Unpacked(int tasks);

// The problem whose tasks are the packing's groups: a group of one is its
// task unchanged, a larger one is named "pack-N" (N counting packs in
// order) and has an option for each (technique, gpus, type) every member
// has and the pack fits, its runtime the last member's end.
struct PackedProblem {
  Problem problem;
  Packing groups;
  // [group][option]: each member's end after the start (groups of one: empty).
  std::vector<std::vector<std::vector<double>>> ends;
};
PackedProblem BuildPackedProblem(const Problem& problem, const PackTerms& terms,
                                 const Packing& packing);

// A plan of `packed.problem` as a plan of the original tasks: each member of
// a pack gets the pack's placement, its own end_s and `pack` = the pack's name.
Plan ExpandPackedPlan(const Problem& problem, const PackedProblem& packed, Plan plan);

// The packing a plan records (tasks sharing a `pack`), as groups of task
// indices of `problem`; tasks the plan does not list are left out.
Packing PackingOfPlan(const Problem& problem, const Plan& plan);

}  // namespace saturn
