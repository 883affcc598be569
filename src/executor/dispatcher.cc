#include "executor/dispatcher.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "common/format.h"
#include "launch/command_task.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;

void AppendText(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "a");
  if (!f) return;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

}  // namespace

WorkerRequest Dispatcher::RequestFor(int j, const Assignment& a, const std::string& dir) {
  const LiveTask& l = run_.tasks[j];
  const WorkloadTask& task = run_.WorkloadTaskOf(j);
  const Option& option = run_.tasks.problem().tasks[j].options[a.option];
  const ClusterNode& node = run_.tasks.workload().cluster.nodes[a.node];
  WorkerRequest call;
  call.mode = WorkerMode::kExecute;
  call.task_path = dir + "/task.json";
  call.technique = option.technique;
  call.gpus = option.gpus;
  call.out_path = dir + "/result.json";
  call.device_kind = node.device;
  if (node.device != "cuda") call.device_ids = a.gpu_ids;
  call.memory_gib = node.gpu_memory_gib.value_or(0.0);
  call.threads = node.threads_per_gpu;
  call.from_step = l.record.checkpoint_step;
  call.to_step = task.steps;
  call.checkpoint_dir = dir + "/checkpoints";
  call.checkpoint_every = CheckpointInterval(task.steps, run_.options().checkpoint_every);
  call.keep_checkpoints = run_.options().keep_checkpoints;
  call.save_model = dir + "/model.pt";
  if (task.spec.contains("eval")) {
    // The model of its best evaluation so far, by its workload's select:.
    call.best_dir = dir + "/best";
    call.select = task.select.metric + (task.select.maximize ? ":max" : ":min");
  }
  if (run_.site.backend->LaunchesRanks() && option.gpus > 1) {
    call.rank_from_env = true;
    call.rendezvous = dir + "/rendezvous-" + std::to_string(++launches_);
  }
  call.plugins = run_.tasks.workload().plugins;
  std::error_code ec;
  fs::remove(call.out_path, ec);
  return call;
}

WorkerJob Dispatcher::MakeJob(int j, const Assignment& a) {
  const WorkloadTask& task = run_.WorkloadTaskOf(j);
  const Option& option = run_.tasks.problem().tasks[j].options[a.option];
  const ClusterNode& node = run_.tasks.workload().cluster.nodes[a.node];
  std::string dir = run_.TaskDirOf(j);
  WorkerRequest call = RequestFor(j, a, dir);
  if (const ProfileRow* row = run_.tasks.profile().Find(
          task.name, option.technique, option.gpus, run_.tasks.problem().TypeName(option.type))) {
    call.knobs = run_.tasks.profile().Extra(*row, "knobs");
  }
  WorkerJob job =
      TaskJob(task.spec, run_.site.worker, call, JobTarget{node.name, a.gpu_ids, option.gpus, ""});
  job.pipe_stdout = true;
  job.stderr_path = dir + "/worker.log";
  return job;
}

void Dispatcher::Start(int j, const Assignment& a) {
  if (StartPack(j, a) != PackStart::kAlone) return;
  // A profiling trial of an arrival holds one of the devices: start later.
  if (!run_.tasks.placements().Place(j, a)) return;
  try {
    run_.tasks[j].process.emplace(run_.site.backend->Start(MakeJob(j, a)));
  } catch (...) {
    run_.tasks.placements().Undo(j);
    throw;
  }
  MarkStarted(j);
}

void Dispatcher::MarkStarted(int j) {
  LiveTask& l = run_.tasks[j];
  l.stop.pending = false;
  l.pack_host = -1;
  l.reported.step = l.record.checkpoint_step;
  l.reported.recent_step_s.clear();
  l.record.status = TaskStatus::kRunning;
  l.record.worker_pgid = l.process->pid();
  ++l.record.attempts;
  if (l.record.start_s < 0) l.record.start_s = run_.Now();
  run_.SaveTask(j);
  run_.Emit(
      events::TaskStarted(run_.Now(), run_.Where(j), run_.ProgressAt(j, l.record.checkpoint_step)));
}

void Dispatcher::ReadProgress(int j, bool settle_left) {
  LiveTask& l = run_.tasks[j];
  // A pack's lines are the pack's: its loss is the sum of its members' own
  // (each member's curve comes with the pack's result), its steps theirs.
  bool pack = IsPackHost(j);
  std::vector<int> members = pack ? MembersHostedBy(j) : std::vector<int>{};
  std::string lines;
  std::vector<MemberLeftReport> left;
  while (auto line = l.process->ReadLine(0.0)) {
    lines += *line + "\n";
    if (MemberLeftReport r; pack && ParseMemberLeftLine(*line, &r)) {
      left.push_back(r);
      continue;
    }
    if (EvalReport e; ParseEvalLine(*line, &e)) {
      const EvalPoint point{e.steps_done, e.loss, e.accuracy, e.loss_se, e.accuracy_se};
      // A pack's member's own evaluation is that member's, and its rule
      // judges it: a member stopped stops its pack, which goes on without
      // it (dispatcher_packs.cc).
      int whose = pack && e.member >= 0 ? PackMemberAt(j, e.member) : pack ? -1 : j;
      run_.Emit(
          events::TaskEvaluated(run_.Now(), run_.Where(whose >= 0 ? whose : j), point, e.seconds));
      if (whose >= 0) run_.evals[run_.tasks[whose].record.name][e.steps_done] = point;
      if (whose >= 0) StopEarlyIfRuled(whose, e);
      continue;
    }
    StepReport r;
    if (!ParseStepLine(*line, &r)) continue;
    l.reported.step = r.step + 1;
    l.reported.last_loss = r.loss;
    if (r.step_s > 0) {
      l.reported.recent_step_s.push_back(r.step_s);
      if (l.reported.recent_step_s.size() > 20) l.reported.recent_step_s.pop_front();
    }
    if (pack) continue;  // its members' progress below, once for all its lines
    if (!std::isfinite(r.loss)) StopDiverged(j, r);
    long every = std::max(1L, run_.Steps(j) / 500);
    if (r.step % every == 0 || l.reported.step == run_.Steps(j)) {
      run_.site.state->AddLoss(l.record.name, r.step, r.loss);
    }
  }
  if (lines.empty()) return;
  AppendText((pack ? PackDir(l.pack) : run_.TaskDirOf(j)) + "/worker.out", lines);
  for (int m : members) {
    run_.tasks[m].reported.step = l.reported.step;
    run_.tasks[m].reported.recent_step_s = l.reported.recent_step_s;
  }
  // Last: settling the host passes the pack's worker to another member.
  if (!settle_left) return;
  int host = j;
  for (const MemberLeftReport& r : left)
    host = SettleLeftMember(host, r.member, r.steps_done);
}

// Diverged (a learning rate too high, most often): retrying from its last
// checkpoint would diverge again, so the task fails now, once its worker
// has checkpointed.
void Dispatcher::StopDiverged(int j, const StepReport& r) {
  LiveTask& l = run_.tasks[j];
  if (!l.stop.diverged.empty() || l.stop.cancel || l.stop.early) return;
  l.stop.diverged = DivergedReason(r.loss, r.step);
  Preempt(j);
}

std::string Dispatcher::DivergedReason(double loss, long step) {
  std::string what = std::isnan(loss) ? "nan" : loss > 0 ? "inf" : "-inf";
  return "diverged: its training loss is " + what + " at step " + std::to_string(step) +
         " (a lower learning rate may train)";
}

void Dispatcher::StopEarlyIfRuled(int j, const EvalReport& e) {
  LiveTask& l = run_.tasks[j];
  // (A pack's member that has left it and ended is judged no more.)
  if (l.stop.early || l.stop.cancel || l.record.status != TaskStatus::kRunning) return;
  std::optional<EarlyStopper::Stop> stop =
      run_.stopper.OnEvaluation(run_.WorkloadTaskOf(j), e.steps_done, e.loss, e.accuracy);
  if (!stop) return;
  // The worker checkpoints and exits; its exit settles the task as stopped.
  // In a pack, the member leaves at its next step and the others train on;
  // its left_member line settles it (dispatcher_packs.cc).
  if (!RequestLeave(j)) Preempt(j);
  l.stop.early = true;
  l.stop.early_step = e.steps_done;
  l.stop.early_value = stop->value;
}

// The worker's result, if it left one; a result that breaks the protocol
// is a failure, described in `*protocol_error`.
std::optional<WorkerExecuteResult> Dispatcher::ReadResult(int j, bool was_stopping,
                                                          std::string* protocol_error) {
  const LiveTask& l = run_.tasks[j];
  if (run_.WorkloadTaskOf(j).is_command) {
    // A user's program: a clean exit after SIGTERM is a checkpoint at the
    // last step it reported; otherwise it ran to the end.
    WorkerExecuteResult result;
    result.completed_steps = was_stopping ? l.reported.step : run_.Steps(j);
    result.final_loss = l.reported.last_loss;
    result.preempted = was_stopping;
    return result;
  }
  try {
    return ReadExecuteResult(run_.TaskDirOf(j) + "/result.json");
  } catch (const std::exception& e) {
    *protocol_error = e.what();
    return std::nullopt;
  }
}

void Dispatcher::HandleExit(int j, int status) {
  if (IsPackHost(j)) return HandlePackExit(j, status);
  LiveTask& l = run_.tasks[j];
  ReadProgress(j);
  run_.tasks.placements().Free(j);
  l.record.worker_pgid = 0;
  l.record.steps_done = l.reported.step;
  bool was_stopping = l.stop.pending;
  bool cancelled = l.stop.cancel;
  bool early = l.stop.early;
  std::string diverged = std::move(l.stop.diverged);
  l.stop.pending = false;
  l.stop.cancel = false;
  l.stop.early = false;
  l.stop.diverged.clear();
  l.process.reset();
  std::string protocol_error;
  std::optional<WorkerExecuteResult> result;
  if (ExitedCleanly(status)) result = ReadResult(j, was_stopping, &protocol_error);
  if (result && result->completed_steps >= run_.Steps(j)) {
    MarkFinished(j, *result);
  } else if (cancelled) {
    MarkCancelled(j, result ? result->completed_steps : LatestCheckpointOf(j));
  } else if (!diverged.empty()) {
    MarkDiverged(j, diverged);
  } else if (early) {
    MarkEarlyStopped(j, result ? result->completed_steps : LatestCheckpointOf(j));
  } else if (result || was_stopping) {
    if (!protocol_error.empty() && run_.options().progress) {
      std::fprintf(stderr,
                   "task %s: stopped, but its result breaks the protocol (%s); it continues "
                   "from its last checkpoint\n",
                   l.record.name.c_str(), protocol_error.c_str());
    }
    MarkPreempted(j, result);
  } else {
    MarkAttemptFailed(j, status, protocol_error);
  }
}

void Dispatcher::MarkFinished(int j, const WorkerExecuteResult& result) {
  TaskRecord& r = run_.tasks[j].record;
  r.status = TaskStatus::kFinished;
  r.checkpoint_step = result.completed_steps;
  r.final_loss = result.final_loss;
  r.end_s = run_.Now();
  r.error.clear();
  run_.site.state->AddLoss(r.name, run_.Steps(j) - 1, result.final_loss);
  run_.SaveTask(j);
  run_.Emit(events::TaskFinished(run_.Now(), run_.Where(j), run_.Steps(j), result.final_loss));
}

// A user's program keeps checkpoints in its own format: Saturn only knows
// the steps it reported at pre-emptions.
long Dispatcher::LatestCheckpointOf(int j) {
  if (run_.WorkloadTaskOf(j).is_command) return run_.tasks[j].record.checkpoint_step;
  return run_.NewestCheckpoint(j);
}

void Dispatcher::MarkPreempted(int j, const std::optional<WorkerExecuteResult>& result) {
  TaskRecord& r = run_.tasks[j].record;
  r.status = TaskStatus::kQueued;
  r.checkpoint_step = result ? result->completed_steps : LatestCheckpointOf(j);
  // Alone, it goes on from there (a worker killed after the grace period
  // may have reported steps beyond it): what re-plans see. A pack's member
  // keeps its steps: the pack resumes from its own checkpoint, which its
  // members' folders do not hold.
  if (run_.tasks[j].pack_host < 0) run_.tasks[j].reported.step = r.checkpoint_step;
  run_.SaveTask(j);
  run_.Emit(
      events::TaskPreempted(run_.Now(), run_.Where(j), run_.ProgressAt(j, r.checkpoint_step)));
}

void Dispatcher::MarkAttemptFailed(int j, int status, const std::string& protocol_error) {
  TaskRecord& r = run_.tasks[j].record;
  r.status = TaskStatus::kQueued;
  ++r.failures;
  std::string tail = LastLines(run_.TaskDirOf(j) + "/worker.log", 8);
  std::string how = protocol_error.empty() ? DescribeExit(status)
                                           : "the worker exited 0 but its result breaks the "
                                             "protocol: " +
                                                 protocol_error;
  r.error = how + (tail.empty() ? "" : ": " + tail);
  r.checkpoint_step = LatestCheckpointOf(j);
  bool give_up = r.failures > run_.options().max_retries;
  if (give_up) {
    r.status = TaskStatus::kFailed;
    r.end_s = run_.Now();
  }
  run_.SaveTask(j);
  run_.Emit(events::TaskFailed(run_.Now(), run_.Where(j), r.error, r.failures, give_up,
                               r.checkpoint_step));
  if (run_.options().progress) {
    std::fprintf(stderr, "task %s failed (%s, attempt %d; %s): %s\n", r.name.c_str(),
                 Plural(r.failures, "failure").c_str(), r.attempts,
                 give_up ? "giving up" : "will retry", how.c_str());
  }
}

void Dispatcher::MarkDiverged(int j, const std::string& why) {
  TaskRecord& r = run_.tasks[j].record;
  r.status = TaskStatus::kFailed;
  ++r.failures;
  r.error = why;
  r.checkpoint_step = LatestCheckpointOf(j);
  r.end_s = run_.Now();
  run_.SaveTask(j);
  run_.replan_soon = true;
  run_.Emit(events::TaskFailed(run_.Now(), run_.Where(j), r.error, r.failures, /*give_up=*/true,
                               r.checkpoint_step));
  if (run_.options().progress) std::fprintf(stderr, "task %s %s\n", r.name.c_str(), why.c_str());
}

void Dispatcher::MarkCancelled(int j, long checkpoint_step) {
  TaskRecord& r = run_.tasks[j].record;
  r.status = TaskStatus::kCancelled;
  r.checkpoint_step = checkpoint_step;
  r.end_s = run_.Now();
  run_.SaveTask(j);
  run_.Emit(events::TaskCancelled(run_.Now(), run_.Where(j), checkpoint_step));
}

void Dispatcher::MarkEarlyStopped(int j, long checkpoint_step) {
  LiveTask& l = run_.tasks[j];
  TaskRecord& r = l.record;
  const EarlyStopSpec& spec = run_.WorkloadTaskOf(j).early_stop;
  r.status = TaskStatus::kStopped;
  r.checkpoint_step = checkpoint_step;
  r.final_loss = l.reported.last_loss;
  r.end_s = run_.Now();
  run_.SaveTask(j);
  run_.replan_soon = true;
  run_.Emit(events::TaskEarlyStopped(run_.Now(), run_.Where(j), spec.rule, spec.metric,
                                     l.stop.early_value, l.stop.early_step, checkpoint_step));
  if (run_.options().progress) {
    std::fprintf(stderr, "task %s stopped early by %s after step %ld (%s %s)\n", r.name.c_str(),
                 spec.rule.c_str(), l.stop.early_step, spec.metric.c_str(),
                 FormatLoss(l.stop.early_value).c_str());
  }
}

void Dispatcher::Cancel(int j) {
  LiveTask& l = run_.tasks[j];
  if (run_.Done(j)) return;
  if (l.record.status == TaskStatus::kRunning) {
    // In a pack: this member leaves at its next step, ends cancelled, and
    // the others train on (dispatcher_packs.cc).
    if (!RequestLeave(j)) Preempt(run_.tasks.HolderOf(j));
    l.stop.cancel = true;
    return;
  }
  MarkCancelled(j, l.record.checkpoint_step);
}

void Dispatcher::Poll() {
  for (int j = 0; j < run_.NumTasks(); ++j) {
    LiveTask& l = run_.tasks[j];
    if (l.record.status != TaskStatus::kRunning || !l.process) continue;
    ReadProgress(j);
    if (!l.process) continue;  // its pack's worker passed to another member
    if (auto status = l.process->Poll()) {
      HandleExit(j, *status);
      continue;
    }
    if (l.stop.pending && run_.Now() - l.stop.since_s > run_.options().stop_grace_s) {
      run_.site.backend->Kill(*l.process);
    }
  }
}

void Dispatcher::Dispatch() {
  auto gpu_free = [&](int n, int g) { return run_.tasks.placements().DeviceFree(n, g); };
  auto done = [&](int j) { return run_.Done(j); };
  for (int j : run_.queues().Order()) {
    if (run_.tasks[j].record.status != TaskStatus::kQueued) continue;
    if (run_.queues().CanStart(j, gpu_free, done)) Start(j, *run_.queues().Get(j));
  }
}

void Dispatcher::Preempt(int j) {
  j = run_.tasks.HolderOf(j);
  LiveTask& l = run_.tasks[j];
  if (l.record.status != TaskStatus::kRunning || l.stop.pending) return;
  l.stop.pending = true;
  l.stop.since_s = run_.Now();
  run_.site.backend->Stop(*l.process);
}

bool Dispatcher::AnyRunning() const {
  return std::any_of(run_.tasks.begin(), run_.tasks.end(),
                     [](const LiveTask& l) { return l.record.status == TaskStatus::kRunning; });
}

}  // namespace saturn
