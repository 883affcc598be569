// Packs in a run (part of the dispatcher, dispatcher.h): the plan's members
// of a pack start in one worker and settle, when it exits, as tasks of their
// own.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/format.h"
#include "common/fs.h"
#include "executor/dispatcher.h"
#include "executor/progress.h"
#include "launch/command_task.h"
#include "planner/packing.h"
#include "protocol/checkpoint_files.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The pack task `name` is planned in, "" if none.
std::string PlannedPack(const Plan& plan, const std::string& name) {
  for (const PlanTask& p : plan.tasks)
    if (p.task == name) return p.pack;
  return "";
}

std::vector<std::string> NamesOf(const RunContext& run, const std::vector<int>& members) {
  std::vector<std::string> names;
  for (int m : members)
    names.push_back(run.tasks[m].record.name);
  return names;
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A pack member's loss per step as the worker wrote them: JSON has no NaN
// or inf, so a diverged step's loss is null.
std::vector<double> MemberLosses(const json& member) {
  std::vector<double> out;
  auto it = member.find("losses");
  if (it == member.end() || !it->is_array()) return out;
  for (const json& v : *it)
    out.push_back(v.is_number() ? v.get<double>() : kNan);
  return out;
}

// Moves `from` over `to` (a folder or a file), replacing what is there.
void MoveOver(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::exists(from, ec)) return;
  fs::remove_all(to, ec);
  fs::create_directories(to.parent_path(), ec);
  fs::rename(from, to);
}

// `to` made a copy of folder `from` (its files hard-linked where the file
// system allows: a checkpoint's files are never written again).
void LinkTree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::remove_all(to, ec);
  fs::create_directories(to);
  for (const fs::directory_entry& e : fs::directory_iterator(from)) {
    fs::path target = to / e.path().filename();
    if (e.is_directory()) {
      LinkTree(e.path(), target);
    } else if (fs::create_hard_link(e.path(), target, ec); ec) {
      fs::copy_file(e.path(), target);
    }
  }
}

}  // namespace

std::string Dispatcher::PackDir(const std::string& pack) const {
  return run_.site.run_dir + "/packs/" + pack;
}

bool Dispatcher::IsPackHost(int j) const {
  return run_.tasks[j].pack_host == j;
}

std::vector<int> Dispatcher::MembersHostedBy(int host) const {
  std::vector<int> members;
  for (int m = 0; m < run_.NumTasks(); ++m)
    if (run_.tasks[m].pack_host == host && run_.tasks[m].record.status == TaskStatus::kRunning)
      members.push_back(m);
  return members;
}

int Dispatcher::PackMemberAt(int host, long k) const {
  std::error_code ec;
  std::string path = PackDir(run_.tasks[host].pack) + "/members.json";
  if (!fs::exists(path, ec)) return -1;
  json names = json::parse(ReadFile(path), nullptr, false);
  if (!names.is_array() || k < 0 || k >= static_cast<long>(names.size()) ||
      !names[static_cast<size_t>(k)].is_string())
    return -1;
  int m = run_.tasks.IndexOf(names[static_cast<size_t>(k)].get<std::string>());
  return m >= 0 && run_.tasks[m].pack_host == host ? m : -1;
}

// The plan's members of `pack` that have not ended and still train packed,
// in plan order (the pack's rows: member 0's batch first).
std::vector<int> Dispatcher::PackMembers(const std::string& pack) const {
  std::vector<int> members;
  for (const PlanTask& p : run_.plan().tasks) {
    if (p.pack != pack) continue;
    int m = run_.tasks.IndexOf(p.task);
    if (m < 0 || run_.Done(m) || run_.tasks[m].unpacked) continue;
    members.push_back(m);
  }
  return members;
}

// A pack resumes from its own newest checkpoint when it holds these very
// members and no member has trained beyond it alone; a fresh pack starts
// where every member stands: at 0, or at the step members that trained
// apart all stand at, from their own checkpoints (linked into its folder,
// where the worker makes the pack's from them). Otherwise -1: they train
// alone.
long Dispatcher::PackStartStep(const std::string& pack, const std::vector<int>& members) {
  std::string dir = PackDir(pack);
  json names = NamesOf(run_, members);
  long newest = 0;
  std::error_code ec;
  if (fs::exists(dir + "/members.json", ec) &&
      json::parse(ReadFile(dir + "/members.json")) == names) {
    RemoveCheckpointLeftovers(dir + "/checkpoints");
    newest = FindNewestCheckpoint(dir + "/checkpoints").step;
  } else {
    // Another set of members trained here (some of them, with others that
    // left it: a run killed after one ended): each member's own newest
    // checkpoint there goes to its folder; the pack's own serve none of
    // these (its logs stay, appended to).
    for (int m : members) {
      AdoptPackedCheckpoint(m, dir);
      long& own = run_.tasks[m].record.checkpoint_step;
      own = std::max(own, LatestCheckpointOf(m));
    }
    fs::remove_all(dir + "/checkpoints", ec);
  }
  long ahead = 0;
  for (int m : members)
    ahead = std::max(ahead, run_.tasks[m].record.checkpoint_step);
  if (ahead > newest) {
    if (!MembersStandTogether(run_, members)) return -1;
    const std::string at = "/checkpoint-" + std::to_string(ahead);
    for (int m : members) {
      LinkTree(run_.TaskDirOf(m) + "/checkpoints" + at,
               dir + "/checkpoints/" + run_.tasks[m].record.name + at);
    }
    newest = ahead;
  }
  MakeDirectories(dir + "/checkpoints");
  WriteFileAtomic(dir + "/members.json", names.dump() + "\n");
  return newest;
}

// The technique's settings for a pack of `members` run as assignment `a`
// of its host `j`: those its profile row's pack_knobs give the members'
// rows together (planner/packing.h's PackKnobsAt); without them, the
// worker's defaults.
std::string Dispatcher::PackKnobs(int j, const Assignment& a, const std::vector<int>& members) {
  const ProfileTable& profile = run_.tasks.profile();
  const Problem& problem = run_.tasks.problem();
  const Option& option = problem.tasks[j].options[a.option];
  const ProfileRow* row = profile.Find(run_.tasks[j].record.name, option.technique, option.gpus,
                                       problem.TypeName(option.type));
  if (!row) return "";
  double rows = 0.0;
  for (int m : members) {
    const ProfileRow* own = profile.Find(run_.tasks[m].record.name, option.technique, option.gpus,
                                         problem.TypeName(option.type));
    std::string text = own ? profile.Extra(*own, "pack_rows") : "";
    rows += text.empty() ? 1.0 : std::atof(text.c_str());
  }
  return PackKnobsAt(profile.Extra(*row, "pack_knobs"), rows, run_.ProfileSource(), row->line);
}

Dispatcher::PackStart Dispatcher::StartPack(int j, const Assignment& a) {
  LiveTask& l = run_.tasks[j];
  std::string pack = PlannedPack(run_.plan(), l.record.name);
  if (pack.empty() || l.unpacked) return PackStart::kAlone;
  std::vector<int> members = PackMembers(pack);
  bool all_queued = std::all_of(members.begin(), members.end(), [&](int m) {
    return run_.tasks[m].record.status == TaskStatus::kQueued;
  });
  long from = members.size() >= 2 && all_queued ? PackStartStep(pack, members) : -1;
  if (from < 0) {
    // One member left, or members that cannot continue together: alone.
    for (int m : members)
      run_.tasks[m].unpacked = true;
    l.unpacked = true;
    return PackStart::kAlone;
  }
  if (!run_.tasks.placements().Place(j, a)) return PackStart::kWait;
  std::string dir = PackDir(pack);
  json spec = {{"pack", json::array()}};
  // The pack trains each member to its own end: one that ends leaves it
  // (settled then: SettleLeftMember) and the others train on in the same
  // worker (worker/pack_job.h; an array's: engine/array.h).
  long to_step = 0;
  for (int m : members) {
    json member = run_.WorkloadTaskOf(m).spec;
    member["name"] = run_.tasks[m].record.name;
    spec["pack"].push_back(std::move(member));
    to_step = std::max(to_step, run_.Steps(m));
  }
  WriteFileAtomic(dir + "/task.json", spec.dump(2) + "\n");
  for (int m : members) {  // asked of an earlier worker that did not get to it
    std::error_code ec;
    fs::remove(dir + "/checkpoints/" + run_.tasks[m].record.name + "/leave", ec);
  }
  WorkerRequest call = RequestFor(j, a, dir);
  // Members that evaluate keep their best models in their own folders, as
  // alone (worker/pack_job.h: a pack's --best-dir holds the task folders;
  // they share one select:, PackClassOf).
  const bool evaluates = std::any_of(members.begin(), members.end(), [&](int m) {
    return run_.WorkloadTaskOf(m).spec.contains("eval");
  });
  call.best_dir = evaluates ? run_.site.run_dir + "/tasks" : "";
  if (evaluates) {
    const SelectSpec& select = run_.WorkloadTaskOf(members[0]).select;
    call.select = select.metric + (select.maximize ? ":max" : ":min");
  }
  call.knobs = PackKnobs(j, a, members);
  call.from_step = from;
  call.to_step = to_step;
  call.checkpoint_every = CheckpointInterval(to_step, run_.options().checkpoint_every);
  const ClusterNode& node = run_.tasks.workload().cluster.nodes[a.node];
  WorkerJob job =
      TaskJob(spec, run_.site.worker, call, JobTarget{node.name, a.gpu_ids, call.gpus, ""});
  job.pipe_stdout = true;
  job.stderr_path = dir + "/worker.log";
  try {
    l.process.emplace(run_.site.backend->Start(job));
  } catch (...) {
    run_.tasks.placements().Undo(j);
    throw;
  }
  RunState::Batch batch(*run_.site.state);  // hundreds of an array's members at once
  for (int m : members) {
    LiveTask& member = run_.tasks[m];
    member.stop = StopOrder{};
    member.pack = pack;
    member.pack_host = j;
    member.reported = WorkerReports{};
    member.reported.step = from;
    member.record.status = TaskStatus::kRunning;
    member.record.worker_pgid = l.process->pid();
    ++member.record.attempts;
    if (member.record.start_s < 0) member.record.start_s = run_.Now();
    run_.SaveTask(m);
    run_.Emit(events::TaskStarted(run_.Now(), run_.Where(m), run_.ProgressAt(m, from)));
  }
  if (run_.options().progress) {
    std::fprintf(stderr, "%s: %s train together from step %ld\n", pack.c_str(),
                 Plural(static_cast<long>(members.size()), "task").c_str(), from);
  }
  return PackStart::kStarted;
}

void Dispatcher::HandlePackExit(int host, int status) {
  LiveTask& h = run_.tasks[host];
  std::string dir = PackDir(h.pack);
  std::vector<int> members = MembersHostedBy(host);
  ReadProgress(host, /*settle_left=*/false);  // the result settles them all
  run_.tasks.placements().Free(host);
  bool was_stopping = h.stop.pending;
  h.process.reset();
  std::optional<WorkerExecuteResult> result;
  std::string protocol_error;
  if (ExitedCleanly(status)) {
    try {
      result = ReadExecuteResult(dir + "/result.json");
    } catch (const std::exception& e) {
      protocol_error = e.what();
    }
  }
  for (int m : members) {
    run_.tasks[m].record.worker_pgid = 0;
    run_.tasks[m].stop.pending = false;
  }
  // Each member's entry of the result, by name (the pack's order is the plan's).
  std::map<std::string, const json*> by_name;
  if (result) {
    for (const json& e : result->members)
      by_name[e.value("name", "")] = &e;
  }
  std::vector<const json*> entries;
  for (int m : members) {
    auto it = by_name.find(run_.tasks[m].record.name);
    if (it != by_name.end()) entries.push_back(it->second);
  }
  RunState::Batch batch(*run_.site.state);  // hundreds of an array's members at once
  if (result && entries.size() == members.size()) {
    for (size_t i = 0; i < members.size(); ++i)
      SettleMember(members[i], dir, *entries[i], *result);
  } else if (was_stopping) {
    // Killed after the grace period: no member wrote its own checkpoint at
    // the stop. Each takes the newest own one the worker wrote at the pack's
    // periodic checkpoints (the pack's newest is at the same step): the
    // pack resumes from its own where the plan keeps these members together
    // in it, and a member that goes on otherwise (a re-plan split it, or
    // the pack cannot start again) goes on from that one.
    const std::string pack = h.pack;
    bool kept = true;
    for (int m : members)
      kept = kept && PlannedPack(run_.plan(), run_.tasks[m].record.name) == pack;
    for (int m : members) {
      AdoptPackedCheckpoint(m, dir);
      if (EndIfStoppedForGood(m, FiguresFromCheckpoint(m))) continue;
      MarkPreempted(m, std::nullopt);
      if (!kept) run_.tasks[m].reported.step = run_.tasks[m].record.checkpoint_step;
    }
    if (!kept && run_.options().progress) {
      std::fprintf(stderr,
                   "%s was killed before its members checkpointed; they go on from their own "
                   "last checkpoints\n",
                   pack.c_str());
    }
  } else {
    SplitFailedPack(host, members, status, protocol_error);
  }
}

// Member m's own files out of the pack's folder into its own (its
// checkpoint at the pack's last step, its trained model and adapters), its
// own loss curve, and its end: finished, cancelled, or queued to go on.
void Dispatcher::SettleMember(int m, const std::string& dir, const json& member,
                              const WorkerExecuteResult& result) {
  LiveTask& l = run_.tasks[m];
  const std::string& name = l.record.name;
  std::string own = run_.TaskDirOf(m);
  long step = member.value("completed_steps", result.completed_steps);  // an array's: its own
  fs::path theirs = fs::path(dir) / "checkpoints" / name;
  MoveOver(theirs / ("checkpoint-" + std::to_string(step)),
           fs::path(own) / "checkpoints" / ("checkpoint-" + std::to_string(step)));
  std::error_code ec;
  fs::remove_all(theirs, ec);
  PruneCheckpoints(own + "/checkpoints", step, run_.options().keep_checkpoints);
  for (const char* file : {"model.pt", "adapters.pt"})
    MoveOver(fs::path(dir) / name / file, fs::path(own) / file);
  fs::remove_all(fs::path(dir) / name, ec);
  std::vector<double> losses = MemberLosses(member);
  long from_step = step - static_cast<long>(losses.size());
  long every = std::max(1L, run_.Steps(m) / 500);
  std::vector<std::pair<long, double>> curve;
  for (size_t i = 0; i < losses.size(); ++i) {
    long s = from_step + static_cast<long>(i);
    if (s % every == 0) curve.push_back({s, losses[i]});
  }
  run_.site.state->AddLosses(name, curve);
  // An array trains on past a member's non-finite loss (a learning rate too
  // high): the member fails as a task alone that diverged.
  for (size_t i = 0; i < losses.size(); ++i) {
    if (std::isfinite(losses[i])) continue;
    l.stop.cancel = l.stop.early = false;  // it fails, diverged, whatever else stopped it
    MarkDiverged(m, DivergedReason(losses[i], from_step + static_cast<long>(i) + 1));
    return;
  }
  if (member.contains("eval_loss")) {  // an array member's held-out loss at its end
    const json& eval = member["eval_loss"];
    const EvalPoint point{step, eval.is_number() ? eval.get<double>() : kNan,
                          member.value("eval_accuracy", -1.0)};
    run_.Emit(events::TaskEvaluated(run_.Now(), run_.Where(m), point, 0.0));
    run_.evals[name][step] = point;
  }
  l.record.steps_done = step;
  l.reported.step = step;
  if (!losses.empty()) l.reported.last_loss = losses.back();
  // The pack's figures without its members' entries and per-step losses
  // (an array's result holds hundreds of members: copying it whole for each
  // took most of settling them).
  WorkerExecuteResult own_result;
  own_result.preempted = result.preempted;
  own_result.checkpoint = result.checkpoint;
  own_result.peak_memory_bytes = result.peak_memory_bytes;
  own_result.resident_bytes = result.resident_bytes;
  own_result.final_loss = losses.empty() ? 0.0 : losses.back();
  own_result.completed_steps = step;  // an array's member: its own (0 if it had not ended)
  if (step >= run_.Steps(m)) {
    // A cancel or a stop that came too late: finished wins, as alone.
    l.stop.cancel = l.stop.early = false;
    MarkFinished(m, own_result);
  } else if (!EndIfStoppedForGood(m, step)) {
    MarkPreempted(m, own_result);
  }
}

// A member of a pack that did not settle it (killed after its grace
// period, or failed): its steps and last loss are those of its newest own
// checkpoint (its meta.json's loss), which it returns the step of.
long Dispatcher::FiguresFromCheckpoint(int m) {
  LiveTask& l = run_.tasks[m];
  const long step = LatestCheckpointOf(m);
  if (step <= 0) return step;
  l.record.steps_done = std::max(l.record.steps_done, step);
  const std::string meta =
      run_.TaskDirOf(m) + "/checkpoints/checkpoint-" + std::to_string(step) + "/meta.json";
  std::error_code ec;
  if (!fs::exists(meta, ec)) return step;
  json j = json::parse(ReadFile(meta), nullptr, false);
  if (j.is_object() && j.contains("loss") && j["loss"].is_number())
    l.reported.last_loss = j["loss"].get<double>();
  return step;
}

// A member its pack's worker stopped for good, cancelled (saturn cancel) or
// stopped early (its early_stop: rule), ends so with its checkpoint at
// `step`; false for a member that goes on.
bool Dispatcher::EndIfStoppedForGood(int m, long step) {
  StopOrder& stop = run_.tasks[m].stop;
  if (stop.cancel) {
    stop.cancel = stop.early = false;
    MarkCancelled(m, step);
    return true;
  }
  if (stop.early) {
    stop.early = false;
    MarkEarlyStopped(m, step);
    return true;
  }
  return false;
}

// Member m's newest own checkpoint that its pack's worker wrote beside the
// pack's (at each of the pack's periodic checkpoints), moved into its own
// folder when newer than its own newest: where it goes on from when the
// pack failed or was killed without settling its members.
void Dispatcher::AdoptPackedCheckpoint(int m, const std::string& dir) {
  const fs::path theirs = fs::path(dir) / "checkpoints" / run_.tasks[m].record.name;
  std::error_code ec;
  if (!fs::exists(theirs, ec)) return;
  RemoveCheckpointLeftovers(theirs.string());
  long step = FindNewestCheckpoint(theirs.string()).step;
  const std::string own = run_.TaskDirOf(m) + "/checkpoints";
  if (step > 0 && step > FindNewestCheckpoint(own).step) {
    MoveOver(theirs / ("checkpoint-" + std::to_string(step)),
             fs::path(own) / ("checkpoint-" + std::to_string(step)));
    PruneCheckpoints(own, step, run_.options().keep_checkpoints);
  }
  fs::remove_all(theirs, ec);
}

// The pack's worker failed: nobody knows which member made it fail, so each
// member is queued to train alone from its own checkpoint, without a
// failure counted against it; a member that fails alone fails with its
// own reason.
void Dispatcher::SplitFailedPack(int host, const std::vector<int>& members, int status,
                                 const std::string& protocol_error) {
  std::string dir = PackDir(run_.tasks[host].pack);
  std::string tail = LastLines(dir + "/worker.log", 8);
  std::string how = protocol_error.empty() ? DescribeExit(status)
                                           : "its result breaks the protocol: " + protocol_error;
  std::string why = "its pack " + run_.tasks[host].pack + " failed (" + how +
                    (tail.empty() ? "" : ": " + tail) + "); it continues alone";
  for (int m : members) {
    LiveTask& l = run_.tasks[m];
    l.unpacked = true;
    AdoptPackedCheckpoint(m, dir);  // the newest the worker wrote for it
    if (EndIfStoppedForGood(m, FiguresFromCheckpoint(m))) continue;
    TaskRecord& r = l.record;
    r.status = TaskStatus::kQueued;
    r.error = why;
    r.checkpoint_step = LatestCheckpointOf(m);
    run_.SaveTask(m);
    run_.Emit(events::TaskFailed(run_.Now(), run_.Where(m), r.error, r.failures, false,
                                 r.checkpoint_step));
  }
  if (run_.options().progress) {
    std::fprintf(stderr, "%s failed (%s); its %s continue alone\n", run_.tasks[host].pack.c_str(),
                 how.c_str(), Plural(static_cast<long>(members.size()), "task").c_str());
  }
}

}  // namespace saturn
