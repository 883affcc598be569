// Tasks that join a run while it trains (part of the executor, run.h):
// tasks submitted to `saturn serve`, and tasks a resumed workload adds. Each
// batch is profiled (the cache first) on devices no task holds — lent one
// trial at a time through the run's Placements, so a trial waits for a free device
// rather than share one — while the others train; then its tasks join the run
// and the remaining work is re-planned with running tasks pinned: the fresh
// plan is adopted unless it is worse, and only the tasks it moves are
// pre-empted (replan/replan.h).
//
//   Arrivals arrivals(run, dispatcher);
//   arrivals.Add(tasks);            // profiled in the background
//   for (auto& r : arrivals.Poll()) ... // each loop turn: joins profiled batches
//
//   // At set-up, with nothing running: profile and join at once.
//   JoinRun(run, tasks, ProfileArrivals(run, tasks).table);
#pragma once

#include <deque>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "executor/dispatcher.h"
#include "executor/run_context.h"
#include "profiler/profiler.h"

namespace saturn {

// Profiles `tasks` on the run's cluster, with the run's worker, cache and
// backend; `devices`, when given, lends the devices trials run on.
// InputError when a task has no feasible configuration.
ProfileRun ProfileArrivals(const RunContext& run, const std::vector<WorkloadTask>& tasks,
                           TrialDevices* devices);

// Adds `tasks` (names new to the run) with their profile rows to the run:
// the problem is rebuilt keeping every task's live state, their folders are
// written, each gets a task_arrived event.
void JoinRun(RunContext& run, const std::vector<WorkloadTask>& tasks, const ProfileTable& profiled);

// Takes finished, failed or cancelled tasks out of the run (a cancelled
// task submitted again with other settings starts afresh): their folders are
// moved aside to tasks/<name>.left-<n>.
void LeaveRun(RunContext& run, const std::set<std::string>& names);

// Re-plans what is left with running tasks pinned and follows the result;
// pre-empts (through `dispatcher`, which may be null when nothing runs) the
// tasks it moves. `arrived` names the tasks that just joined (for the event).
void ExtendPlan(RunContext& run, Dispatcher* dispatcher, const std::vector<std::string>& arrived);

class Arrivals {
 public:
  Arrivals(RunContext& run, Dispatcher& dispatcher) : run_(run), dispatcher_(dispatcher) {}
  ~Arrivals() { Wait(); }

  // Queues a batch; profiling starts in the background when the previous
  // batch's has finished.
  void Add(std::vector<WorkloadTask> tasks);

  struct Rejected {
    std::string task;
    std::string reason;
  };
  // Each loop turn: joins a profiled batch and re-plans; returns the tasks
  // of a batch whose profiling failed (they do not join).
  std::vector<Rejected> Poll();

  // Takes a task out of the queue before its profiling starts; false if it
  // is not queued (being profiled, or unknown).
  bool Remove(const std::string& task);
  // Names submitted and waiting to be profiled, and being profiled.
  std::vector<std::string> Submitted() const;
  std::vector<std::string> Profiling() const;
  bool Busy() const { return !queue_.empty() || pending_.valid(); }
  void Wait();

 private:
  RunContext& run_;
  Dispatcher& dispatcher_;
  std::deque<std::vector<WorkloadTask>> queue_;
  std::vector<WorkloadTask> profiling_;
  std::future<ProfileRun> pending_;
};

}  // namespace saturn
