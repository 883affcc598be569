// The tasks of a run (part of `saturn run` and `saturn serve`, run.h),
// kept in step: the workload's tasks, their profile, the problem the planner
// sees, each task's live state and where it runs. Problem task j is workload
// task WorkloadIndexOf(j); live state and placements are indexed like the
// problem.
//
// Before Build the workload and profile are the set-up's to fill (a fresh
// run, a resume, a restarted service). Afterwards the set changes only
// whole: the caller adds or removes tasks of the workload and rows of the
// profile, then Rebuild renumbers the live state and placements so that
// every task still there keeps its state and devices.
//
//   TaskSet tasks;
//   tasks.workload() = LoadWorkloadFile(path);
//   tasks.profile() = profiled;
//   tasks.Build(cluster_path);             // InputError if the two disagree
//   tasks[0].record.status;                // task 0's live state
//   tasks.placements().Place(0, a);        // where it runs
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "common/process.h"
#include "contracts/profile.h"
#include "contracts/workload.h"
#include "executor/run_state.h"
#include "executor/shared_placements.h"
#include "planner/problem.h"

namespace saturn {

// What a task's worker reported on its step lines since it started.
struct WorkerReports {
  long step = 0;  // steps done (the last report)
  std::deque<double> recent_step_s;
  double last_loss = 0.0;
};

// A stop asked of a task's running worker: it checkpoints, then exits; the
// task moves (a plan switch) or ends cancelled or stopped.
struct StopOrder {
  bool pending = false;
  bool cancel = false;  // stopping to be cancelled, not to move
  // Stopping for good by its early_stop rule, after the evaluation at
  // `early_step` whose metric was `early_value`.
  bool early = false;
  long early_step = 0;
  double early_value = 0.0;
  // Stopping for good because its training loss stopped being finite: why.
  std::string diverged;
  double since_s = 0.0;
};

// One task of the run as it stands; `record` is what the state keeps
// (where it runs is the set's Placements; RunContext::SaveTask copies it
// into the record).
struct LiveTask {
  TaskRecord record;
  WorkerReports reported;
  std::optional<Process> process;
  StopOrder stop;
  // While it trains in a pack (executor/dispatcher.h): the pack's name and
  // the task whose `process` and devices the pack's worker holds (the pack's
  // host, itself for one member); -1 otherwise.
  std::string pack;
  int pack_host = -1;
  // It trains alone from now on although the plan packs it: its pack failed
  // (so a failing member fails alone), or the pack cannot resume as one.
  bool unpacked = false;
};

class TaskSet {
 public:
  Workload& workload() { return workload_; }
  const Workload& workload() const { return workload_; }
  ProfileTable& profile() { return profile_; }
  const ProfileTable& profile() const { return profile_; }
  const Problem& problem() const { return problem_; }
  SharedPlacements& placements() { return placements_; }
  const SharedPlacements& placements() const { return placements_; }

  int size() const { return problem_.NumTasks(); }
  LiveTask& operator[](int j) { return live_[static_cast<size_t>(j)]; }
  const LiveTask& operator[](int j) const { return live_[static_cast<size_t>(j)]; }
  std::vector<LiveTask>::iterator begin() { return live_.begin(); }
  std::vector<LiveTask>::iterator end() { return live_.end(); }
  std::vector<LiveTask>::const_iterator begin() const { return live_.begin(); }
  std::vector<LiveTask>::const_iterator end() const { return live_.end(); }

  // The task whose worker and devices task j trains on: its pack's host
  // while it is (or last was) in a pack, else itself.
  int HolderOf(int j) const {
    int host = live_[static_cast<size_t>(j)].pack_host;
    return host >= 0 ? host : j;
  }
  int WorkloadIndexOf(int j) const { return workload_index_[static_cast<size_t>(j)]; }
  const WorkloadTask& WorkloadTaskOf(int j) const {
    return workload_.tasks[static_cast<size_t>(WorkloadIndexOf(j))];
  }
  // Problem task index of a task name, or -1.
  int IndexOf(const std::string& name) const;
  // Counts changes of the set after the first Build: a re-plan solved for
  // an older set is dropped.
  int version() const { return version_; }

  // The problem from the profile for the workload's tasks; every task's
  // live state starts afresh and every device is free. InputError naming
  // `profile_source` when the profile's tasks are not the workload's.
  void Build(const std::string& profile_source);
  // The problem again after tasks were added to or removed from the
  // workload and profile: each remaining task keeps its live state and its
  // devices (a running task may not leave); returns the new tasks' indices.
  std::vector<int> Rebuild(const std::string& profile_source);

 private:
  void BuildProblem(const std::string& profile_source);

  Workload workload_;
  ProfileTable profile_;
  Problem problem_;
  std::vector<int> workload_index_;
  std::vector<LiveTask> live_;
  SharedPlacements placements_;
  int version_ = 0;
};

}  // namespace saturn
