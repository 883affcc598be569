// A Run: the executor's one public face, behind `saturn run` and `saturn
// serve`. Built from a source — a workload file (a new run, --resume,
// --fresh) or the service's stored submissions (a new service, or one
// restarted on its state folder) — it profiles (through the cache), plans,
// trains every task on its planned devices in plan order, re-plans while
// training, and owns each task's life:
//
//   submitted -> profiling -> queued -> running -> finished | failed | cancelled | stopped
//
// (contracts/task_view.h), with the reason it ended. A resumed run and a
// restarted service go through the same code: every task continues from
// its last checkpoint, and a run resumed on other nodes (a requeued Slurm
// job) is planned afresh for them.
//
// Workers start as soon as all their planned devices are free and they are
// next on each; no device ever runs two tasks. Every interval the run
// re-solves for the remaining work in a background thread and switches when
// the new plan finishes sooner by more than the threshold, pre-empting only
// the tasks whose assignment changes (the worker checkpoints, then resumes
// under its new technique and GPU count). A failed worker is retried from its
// last checkpoint up to max_retries times. All state is in the run's folder
// (run_state.h). Time is read from an injected Clock.
//
// Threads: Drive() runs on the caller's thread and owns the run; Submit,
// Cancel and the views are called from its hooks (the same thread).
// CheckSubmission may be called from any thread.
//
//   auto run = Run::OpenWorkload(options, clock);     // InputError on bad input
//   RunHooks hooks;  hooks.stop = [] { return StopRequested().load(); };
//   RunSummary s = run->Drive(hooks);
//
//   auto service = Run::OpenService(source, options, clock);
//   hooks.each_turn = handle_requests;  hooks.after_turn = publish;
//   service->Drive(hooks);
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/task_view.h"
#include "contracts/workload.h"
#include "executor/run_options.h"
#include "executor/run_state.h"

namespace saturn {

struct RunSummary {
  std::string run_dir;
  int finished = 0;
  int failed = 0;
  int stopped = 0;                  // ended early by the workload's early_stop rule
  double makespan_s = 0.0;          // wall seconds of training (run clock)
  double planned_makespan_s = 0.0;  // the first plan's
  int plan_switches = 0;
  double profiling_s = 0.0;
  double planning_s = 0.0;
  bool interrupted = false;  // stopped before every task ended; resumable
  // For each sweep with evaluation, the task with the lowest final evaluation
  // loss: report.json's "best" entries ({sweep, task, final_eval_loss, ...}).
  std::vector<nlohmann::json> best;
  // What current practice would take, estimated from the profile, and the
  // speed-ups: report.json's "current_practice" (null without it).
  nlohmann::json current_practice;
};

// What a driver adds to the run; every hook may be empty. All run on
// Drive()'s thread.
struct RunHooks {
  std::function<void()> each_turn;   // first in every turn (the service's requests)
  std::function<void()> after_turn;  // last in every turn (the service's views)
  std::function<bool()> stop;        // leave now: every worker checkpoints, resumable
};

// The answer to a submission or a cancellation.
struct RunAnswer {
  enum Kind { kDone, kBadInput, kConflict, kNotFound } kind = kDone;
  std::string error;                        // why, for anything but kDone
  std::vector<std::string> tasks;           // Submit: the tasks' names
  long submission = 0;                      // Submit: its number, from 1
  TaskStatus status = TaskStatus::kQueued;  // Cancel: where the task stands now
};

class Run {
 public:
  // `saturn run options.workload_path`: sets up a new run, resumes one
  // (options.resume) or moves an earlier one aside (options.fresh), then
  // profiles and plans. InputError on bad input or a run that cannot resume.
  static std::unique_ptr<Run> OpenWorkload(const RunOptions& options, const Clock& clock);
  // `saturn serve`: the submissions stored in source.state_dir (none: a new
  // service), on source.cluster_path's cluster or the backend's allocation.
  // Tasks that had joined continue from their checkpoints; the others are
  // profiled again (the cache answers most trials).
  static std::unique_ptr<Run> OpenService(const ServiceSource& source, const RunOptions& options,
                                          const Clock& clock);
  ~Run();

  // Trains until every task has ended (a workload's run) or hooks.stop()
  // says so; then every worker still running checkpoints and the run is
  // resumable. A workload's run that ended writes its report.
  RunSummary Drive(const RunHooks& hooks);

  // A submitted workload (Contract 5, YAML or JSON) checked and read for the
  // run's cluster: a workload without a `cluster` gets the run's, one with
  // its own is read as written, then runs on the run's. Any thread.
  // InputError for a bad workload, SystemError when this machine refuses.
  Workload CheckSubmission(const Submission& submission) const;
  // Stores the submission durably, then queues its tasks for profiling.
  // kConflict for a task name the run has (unless that task was cancelled:
  // the new one replaces it).
  RunAnswer Submit(Submission submission, Workload workload);
  // A running task checkpoints, then ends cancelled keeping its checkpoint;
  // a task not yet running ends cancelled now. kConflict if it has ended
  // otherwise, kNotFound for a name the run does not have.
  RunAnswer Cancel(const std::string& task);

  // Every task the run knows, in every stage of its life.
  std::vector<TaskView> Tasks() const;
  // A task's loss curve so far, (step, loss).
  std::vector<std::pair<long, double>> Losses(const std::string& task);
  // A task's evaluations so far, by step.
  std::vector<EvalPoint> Evaluations(const std::string& task) const;
  // The best of each sweep so far, every task's latest evaluation ranked
  // (report/best.h's entries, Ranking::kSoFar).
  nlohmann::json BestSoFar() const;
  // Writes report.json and report.html of the run so far into its folder
  // (the service's state folder): running tasks end there now.
  void WriteReportNow();
  const Plan& CurrentPlan() const;
  double Now() const;
  // The events logged so far, and every one logged from now on.
  std::vector<Event> PastEvents();
  void Subscribe(std::function<void(const Event&)> listener);

 private:
  struct Impl;
  explicit Run(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// `saturn run`: opens the workload's run and drives it until every task has
// ended or SIGTERM/SIGINT (then every worker checkpoints).
RunSummary RunWorkload(const RunOptions& options);

// The run directory `saturn run` uses for a workload by default: under
// saturn-runs/, named after the file's path from the current folder (from /
// outside it) without its extension, parts joined by '-':
// "examples/quickstart/workload.yaml" -> "saturn-runs/examples-quickstart-workload".
// Two workload files never share one.
std::string DefaultRunDir(const std::string& workload_path);

}  // namespace saturn
