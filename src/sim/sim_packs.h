// Packs in the simulator (sim/simulator.h, SimOptions::packs).
//
// The simulator schedules units: a task alone, or a pack of the packing
// (planner/packing.h), which holds its devices from its start to its last
// member's end. Its members step together and leave one by one, at their
// own steps or where their early_stop: rule stops them (as in a real run:
// worker/pack_job.h), and the rest then step faster: the pack's model at
// the steps each member really trains. A unit's work is a fraction of its
// runtime, as a task's is; when a member is stopped sooner than its steps,
// the pack's runtime shrinks and what it has done becomes a larger
// fraction of it (SimPackRun::EndAt). A pack restarted under another
// option goes on from the same step. Re-planning keeps the packs as units.
//
//   SimUnits units = MakeSimUnits(base, truth, arrival, terms, packing);
//   SimPackRun& pack = *units.packs[u];
//   double f = pack.FractionAt(option, 120);   // where the pack reaches step 120
//   std::vector<double> r = pack.EndAt(i, 120);  // member i's steps end at 120
//   pack.Leave(i);                               // and it is out
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "contracts/task_view.h"
#include "planner/packing.h"
#include "planner/planner.h"
#include "planner/problem.h"
#include "sim/sim_early_stop.h"

namespace saturn {

// Which tasks train in packs, and the model of their steps.
struct SimPacking {
  // The base tasks' terms (PackTermsFromProfile): steps as trained to the
  // end (where each member's rule may stop it, the simulator adds from
  // SimOptions::early_stop: ExpectPackStops).
  PackTerms terms;
  Packing packing;  // groups of base task indices; a group of one trains alone
};

// One pack unit: its members, where each leaves, and its timeline under
// each of the unit's options.
class SimPackRun {
 public:
  // `unit`: the pack's task of the units' problem (its options: keys of
  // technique, GPU count and type); `base` and `terms` must outlive it.
  SimPackRun(const Problem& base, const PackTerms& terms, std::vector<int> members,
             const Task& unit);

  size_t Size() const { return members_.size(); }
  int Member(size_t i) const { return members_[i]; }
  bool In(size_t i) const { return in_[i]; }
  bool AnyIn() const { return std::find(in_.begin(), in_.end(), true) != in_.end(); }
  // Where member i leaves (its steps, or where it was stopped), in the
  // profile's steps; a workload step is Scale(i) of them.
  double Steps(size_t i) const { return steps_[i]; }
  double Scale(size_t i) const { return scale_[i]; }
  double Natural(size_t i) const { return natural_[i]; }  // its steps, to its end
  void SetScale(size_t i, double scale) { scale_[i] = scale; }
  // The unit's believed runtime with option o, with the steps as they stand.
  double Runtime(int o) const { return timelines_[static_cast<size_t>(o)].runtime; }
  // The fraction of option o's runtime at which the pack reaches `step`.
  double FractionAt(int o, double step) const;
  // The pack's step at fraction f of option o's runtime.
  double StepAt(int o, double f) const;
  // Member i leaves at `step`, before its own end (its rule stopped it):
  // the new runtime over the old, per option.
  std::vector<double> EndAt(size_t i, double step);
  // Each member's end after the start with option o when each trains
  // `steps[i]` (belief; PackMemberEndsAt).
  std::vector<double> MemberEnds(int o, const std::vector<double>& steps) const;
  // Member i has left (its end, or its stop).
  void Leave(size_t i) { in_[i] = false; }
  // The fraction of option o's runtime the pack is expected to take in all
  // when each member in trains `expected[i]` steps (at least `now_step`).
  double ExpectedFraction(int o, std::vector<double> expected, double now_step) const;
  // Where MemberSteps expects each member to leave (its rule's stops, as the
  // planner priced the pack), in the profile's steps.
  const std::vector<double>& Planned() const { return planned_; }

 private:
  struct Timeline {
    double launch = 0.0;
    std::vector<std::pair<double, double>> points;  // (step, time), ascending
    double runtime = 0.0;
  };
  Timeline Time(const Option& key, const std::vector<double>& steps) const;

  const Problem& base_;
  const PackTerms& terms_;
  std::vector<Option> keys_;  // per unit option
  std::vector<int> members_;
  std::vector<double> steps_, natural_, scale_, planned_;
  std::vector<bool> in_;
  std::vector<Timeline> timelines_;  // per unit option
};

// The packs a simulation runs, chosen once by the planner (PlanWithPacks)
// on what it believes: under early stopping (`early_stop` not empty) each
// task's expected work, a pack's members priced where their rule may stop
// them, as `saturn run` plans. Only tasks that arrive together (`arrival`,
// per task; empty: all at 0) share a pack: a pack starts when its last
// member arrives, and the simulator does not pack arrivals as they come.
// Null when no pack forms. `described`: the packs as `saturn plan`
// describes them (DescribePacks).
std::shared_ptr<const SimPacking> ChooseSimPacks(const Problem& believed, PackTerms terms,
                                                 const std::vector<SimEarlyStop>& early_stop,
                                                 const std::vector<double>& arrival,
                                                 const PlanRequest& request,
                                                 std::string* described);

// What a simulation schedules: the packing's groups (BuildPackedProblem's
// problem, packs named pack-N), or the base tasks themselves.
struct SimUnits {
  Problem problem;
  // [unit][option]: a pack's truth is its belief times its members' mean
  // truth / belief (over each member's options).
  std::vector<std::vector<double>> truth;
  std::vector<double> arrival;                     // a pack's: its last member's
  std::vector<double> base_arrival;                // [base task]
  std::vector<std::vector<int>> members;           // [unit]: base task indices
  std::vector<std::unique_ptr<SimPackRun>> packs;  // [unit]; null: alone
};

// `packing` without a group of two: every base task a unit of its own.
// `terms` must outlive the result.
SimUnits MakeSimUnits(const Problem& base, const std::vector<std::vector<double>>& truth,
                      const std::vector<double>& arrival, const PackTerms& terms,
                      const Packing& packing);

}  // namespace saturn
