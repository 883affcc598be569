// The simulator's inside (sim/simulator.h is its interface): one Simulation
// per Simulate call. simulator.cc runs units (tasks alone, packs as one);
// simulation_packs.cc follows the members of a pack (sim/sim_packs.h).
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "contracts/event_kinds.h"
#include "replan/dispatch.h"
#include "replan/placements.h"
#include "sim/sim_packs.h"
#include "sim/simulator.h"

namespace saturn::sim_detail {

// A unit's state: a task alone, or a pack.
struct SimTask {
  bool arrived = false;
  bool finished = false;
  bool running = false;
  double done = 0.0;  // fraction done at `from` (the start of the current segment)
  int option = -1;
  int node = -1;
  std::vector<int> gpu_ids;
  double segment_start = 0.0;
  double dead_until = 0.0;
  double from = 0.0;  // progress counts from here (>= dead_until; later once rescaled)
  double slowdown = 1.0;
  int version = 0;  // invalidates completion events of earlier segments
};

// A unit's end; or (decision) the moment it reaches its next early-stopping
// decision, at fraction `at` of its work; or, for a member of a pack
// (`member` >= 0), that member's end or (decision) its decision at pack
// step `at`.
struct Completion {
  double time;
  int task;
  int version;
  bool decision = false;
  double at = 0.0;
  // Decisions at the same moment (tasks started together at one speed)
  // come in a random order, as real workers' evaluations would.
  uint64_t tie = 0;
  int member = -1;
  bool operator>(const Completion& o) const {
    if (time != o.time) return time > o.time;
    return tie != o.tie ? tie > o.tie : task > o.task;
  }
};

class Simulation {
 public:
  Simulation(const Problem& base, const std::vector<std::vector<double>>& truth,
             const std::vector<double>& arrival, const SimOptions& options);
  SimResult Run();

 private:
  double DoneAt(int j, double t) const;
  double TimeAt(int j, double fraction) const;  // a running unit's
  void ReportProgress() const;
  void Emit(Event e) {
    if (opt_.record_events) result_.events.push_back(std::move(e));
  }
  // Task j (unit, or base task `name` of unit j) where it runs or ran last.
  events::TaskPlace Where(int j, const std::string* name = nullptr) const;
  void RecordBusy(int delta);
  void Start(int j, const Assignment& a);
  void PushDecision(int j, double t, double from);
  bool Decide(const Completion& c);
  std::vector<int> EndSegment(int j);
  // Unit j ends (`how`: finished or stopped): its segment, its result row;
  // returns the GPUs it held (the caller starts what is next on them,
  // after the unit's own events).
  std::vector<int> EndUnit(int j, TaskStatus how);
  void StartNextOn(int node, const std::vector<int>& freed);
  void Finish(int j);
  void Preempt(int j);
  void TryStart(int j);
  void Adopt(const Plan& plan);
  std::vector<TaskProgress> Progress();
  void InitialPlan();
  void Check(bool tick);
  void Finalise();
  // The base task a unit alone is.
  int Base(int j) const { return units_.members[static_cast<size_t>(j)].front(); }

  // simulation_packs.cc: the members of pack units.
  SimPackRun* PackOf(int j) const { return units_.packs[static_cast<size_t>(j)].get(); }
  void PushMemberEvents(int j);
  // A member's end or decision; whether the pack ended (its last member stopped).
  bool MemberEvent(const Completion& c);
  void MemberLeaves(int j, size_t i, TaskStatus how);
  // Where each member is expected to leave (its rule's outlook), in the
  // profile's steps; the fraction of the pack's runtime that makes.
  std::vector<double> ExpectedMemberSteps(int j) const;
  double PackExpected(int j) const;
  // A plan of the units as `saturn plan` lists packs: each member with the
  // pack's placement, its own end and `pack`.
  Plan MembersPlan(Plan plan) const;
  // An event for each member in, given its place and how far it is (a
  // fraction of its own steps).
  void EmitForMembers(int j, const std::function<Event(const events::TaskPlace&, double)>& make);
  void FinishMembers(int j);
  std::vector<SimTaskResult> BaseResults() const;

  const Problem& base_;
  PackTerms pack_terms_;  // the packs' terms, each member's stops from its rule
  SimUnits units_;
  Problem& p_ = units_.problem;  // what is scheduled: the units
  std::vector<std::vector<double>>& truth_ = units_.truth;
  std::vector<double>& arrival_ = units_.arrival;
  SimOptions opt_;
  std::vector<SimTask> s_;
  std::unordered_map<std::string, int> task_index_;
  int arrived_ = 0, finished_count_ = 0;
  Plan current_;
  Placements placements_;
  std::vector<std::string> arrived_since_check_;  // arrivals not yet planned in
  PlanQueues queues_;
  SimStoppers stoppers_;
  std::mt19937_64 ties_{opt_.policy.seed ^ 0x7e5u};
  std::function<bool(int)> finished_ = [this](int j) { return s_[j].finished; };
  std::function<bool(int, int)> gpu_free_ = [this](int n, int g) {
    return placements_.DeviceFree(n, g);
  };
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> completions_;
  double now_ = 0.0;
  int busy_gpus_ = 0;
  std::vector<std::pair<double, int>> busy_steps_;
  SimResult result_;                    // its tasks: the units' until Finalise
  std::vector<SimTaskResult> members_;  // per base task: pack members' rows
};

}  // namespace saturn::sim_detail
