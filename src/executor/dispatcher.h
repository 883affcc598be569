// Dispatch and jobs (part of `saturn run`, run.h): starts each task's
// worker (or the user's program) on its planned devices as soon as it is
// next on all of them and they are free, reads its step lines, and settles
// its exit: finished, pre-empted with a checkpoint, or failed (retried from
// its last checkpoint up to max_retries times).
//
//   Dispatcher dispatcher(run);
//   dispatcher.Poll();       // progress and exits of running workers
//   dispatcher.Dispatch();   // starts what the plan lets start
//   dispatcher.Preempt(j);   // SIGTERM: the worker checkpoints, then exits
//   dispatcher.Cancel(j);    // the same, and the task ends cancelled
#pragma once

#include <optional>
#include <string>

#include "executor/run_context.h"
#include "launch/worker.h"

namespace saturn {

class Dispatcher {
 public:
  explicit Dispatcher(RunContext& run) : run_(run) {}

  void Poll();
  void Dispatch();
  void Preempt(int j);
  // Stops the task for good (saturn cancel): a running worker checkpoints
  // first; the task ends cancelled and keeps its last checkpoint.
  void Cancel(int j);
  // Whether any worker still runs.
  bool AnyRunning() const;

 private:
  void Start(int j, const Assignment& a);
  WorkerJob MakeJob(int j, const Assignment& a);
  void MarkStarted(int j);
  void ReadProgress(int j);
  void HandleExit(int j, int status);
  std::optional<WorkerExecuteResult> ReadResult(int j, bool was_stopping,
                                                std::string* protocol_error);
  void MarkFinished(int j, const WorkerExecuteResult& result);
  void MarkPreempted(int j, const std::optional<WorkerExecuteResult>& result);
  // A failed attempt: retried from its last checkpoint (waiting again)
  // unless it has failed more than max_retries times.
  void MarkAttemptFailed(int j, int status, const std::string& protocol_error);
  void MarkCancelled(int j, long checkpoint_step);
  long LatestCheckpointOf(int j);

  RunContext& run_;
  int launches_ = 0;
};

}  // namespace saturn
