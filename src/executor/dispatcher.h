// Dispatch and jobs (part of `saturn run`, run.h): starts each task's
// worker (or the user's program) on its planned devices as soon as it is
// next on all of them and they are free, reads its step lines, and settles
// its exit: finished, pre-empted with a checkpoint, or failed (retried from
// its last checkpoint up to max_retries times).
//
// Packs (planner/packing.h): the plan's members of a pack start together in
// one worker (engine/pack.h) on the pack's devices, held by the first member
// dispatched (the pack's host), from the pack's folder packs/<pack>/. A
// member that ends, or that its rule or saturn cancel stops (asked of the
// worker: RequestLeave), leaves the pack and the worker trains on without
// it (dispatcher_leave.cc); each member settles as a task of its own when
// it leaves or when the worker exits: its checkpoint and trained model move
// into its folder, its loss curve is its own, and it ends finished,
// stopped, cancelled or queued to continue. Members left standing at one
// step (a pack split by a re-plan, stopped, or killed) go on as a pack
// again where the plan packs them, from their own checkpoints; the members
// of a pack whose worker failed continue alone (so that a failing member
// fails alone, with its reason), as do those that cannot start as one.
//
//   Dispatcher dispatcher(run);
//   dispatcher.Poll();       // progress and exits of running workers
//   dispatcher.Dispatch();   // starts what the plan lets start
//   dispatcher.Preempt(j);   // SIGTERM: the worker checkpoints, then exits
//   dispatcher.Cancel(j);    // the same, and the task ends cancelled
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

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
  WorkerRequest RequestFor(int j, const Assignment& a, const std::string& dir);
  WorkerJob MakeJob(int j, const Assignment& a);
  // Packs (dispatcher_packs.cc).
  enum class PackStart { kAlone, kStarted, kWait };
  // Starts task j's planned pack with j as host, when j trains in one.
  PackStart StartPack(int j, const Assignment& a);
  std::vector<int> PackMembers(const std::string& pack) const;
  // The step a pack of `members` starts from, or -1 if it cannot start as one.
  long PackStartStep(const std::string& pack, const std::vector<int>& members);
  std::string PackDir(const std::string& pack) const;
  bool IsPackHost(int j) const;
  std::vector<int> MembersHostedBy(int host) const;
  void AdoptPackedCheckpoint(int m, const std::string& dir);
  // The task of member `k` (its place in the pack's task file) of the pack
  // `host` runs, or -1.
  int PackMemberAt(int host, long k) const;
  void HandlePackExit(int host, int status);
  // Member `k` of the pack `host` runs ended at `step` and left it, which
  // trains on: settled now from what the worker wrote for it. Returns the
  // pack's host after it (another member where it was the host).
  int SettleLeftMember(int host, long k, long step);
  // Asks the worker of the pack task j trains in to let j leave (it stops
  // for good) while the others train on; false where j is not in a running
  // pack with others still in (then its worker is stopped: Preempt).
  bool RequestLeave(int j);
  // The pack's worker and devices pass from its host `from` (which ends
  // while the others train on) to member `to`; false (nothing changes)
  // where `to` has no option of the pack's technique, GPU count and type.
  bool MovePackHost(int from, int to);
  void SettleMember(int m, const std::string& dir, const nlohmann::json& member,
                    const WorkerExecuteResult& result);
  long FiguresFromCheckpoint(int m);
  bool EndIfStoppedForGood(int m, long step);
  std::string PackKnobs(int j, const Assignment& a, const std::vector<int>& members);
  void SplitFailedPack(int host, const std::vector<int>& members, int status,
                       const std::string& protocol_error);
  void MarkStarted(int j);
  // Its worker's new lines; `settle_left`: members that left a pack (its
  // worker's left_member lines) settle now (else at the pack's exit).
  void ReadProgress(int j, bool settle_left = true);
  void HandleExit(int j, int status);
  std::optional<WorkerExecuteResult> ReadResult(int j, bool was_stopping,
                                                std::string* protocol_error);
  void MarkFinished(int j, const WorkerExecuteResult& result);
  void MarkPreempted(int j, const std::optional<WorkerExecuteResult>& result);
  // A failed attempt: retried from its last checkpoint (waiting again)
  // unless it has failed more than max_retries times.
  void MarkAttemptFailed(int j, int status, const std::string& protocol_error);
  void MarkCancelled(int j, long checkpoint_step);
  // Its early_stop rule stops it after evaluation `e`: its worker is
  // stopped with a checkpoint; MarkEarlyStopped settles it at its exit.
  void StopEarlyIfRuled(int j, const EvalReport& e);
  void MarkEarlyStopped(int j, long checkpoint_step);
  // A step's loss that is not finite: the worker is stopped with a
  // checkpoint; MarkDiverged fails the task at its exit, without a retry.
  void StopDiverged(int j, const StepReport& r);
  // Why a task whose training loss became non-finite at `step` failed.
  static std::string DivergedReason(double loss, long step);
  void MarkDiverged(int j, const std::string& why);
  long LatestCheckpointOf(int j);

  RunContext& run_;
  int launches_ = 0;
};

}  // namespace saturn
