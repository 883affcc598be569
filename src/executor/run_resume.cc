// Continuing a run from its state (part of run_setup.h): the same code for a
// resumed `saturn run` and a restarted `saturn serve`. Every task continues
// from its newest checkpoint; a run resumed on other nodes (a requeued Slurm
// job) plans the rest afresh for them; a resumed workload may add tasks.
#include <signal.h>

#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "executor/arrivals.h"
#include "executor/replanner.h"
#include "executor/run_setup.h"
#include "profiler/profiler.h"
#include "protocol/checkpoint_files.h"

namespace saturn {
namespace {

// The newest step of `dir`'s checkpoint-N folders that have a meta.json,
// read only (what --resume says; the dispatcher verifies the checkpoint
// when the pack starts).
long NewestListedCheckpoint(const std::string& dir) {
  long newest = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const long step = CheckpointStepOf(e.path().filename().string());
    if (step > newest && std::filesystem::exists(e.path() / "meta.json", ec)) newest = step;
  }
  return newest;
}

}  // namespace

void RestoreTasks(RunContext& run) {
  std::map<std::string, TaskRecord> saved;
  for (TaskRecord& r : run.site.state->Tasks())
    saved[r.name] = std::move(r);
  // The pack each task is planned in: a task that started trained in it.
  std::map<std::string, std::string> planned_pack;
  // A task that ended in a pack is no longer in the plan: its pack's folder
  // lists it (the report shows it; new packs are named after it).
  std::map<std::string, std::string> ended_in;
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator(run.site.run_dir + "/packs", ec)) {
    std::string list = (dir.path() / "members.json").string();
    if (!std::filesystem::exists(list, ec)) continue;
    nlohmann::json members = nlohmann::json::parse(ReadFile(list), nullptr, false);
    if (!members.is_array()) continue;
    for (const nlohmann::json& name : members)
      if (name.is_string()) ended_in[name.get<std::string>()] = dir.path().filename().string();
  }
  for (const PlanTask& p : run.plan().tasks)
    if (!p.pack.empty()) planned_pack[p.task] = p.pack;
  for (int j = 0; j < run.NumTasks(); ++j) {
    LiveTask& l = run.tasks[j];
    const std::string& name = run.tasks.problem().tasks[j].name;
    l.record = saved.count(name) ? saved[name] : TaskRecord{};
    l.record.name = name;
    if (!run.Done(j)) {
      // Running when the orchestrator died: its worker got SIGTERM (and
      // checkpointed); make sure nothing of it is left, resume from disk.
      if (l.record.worker_pgid > 0) ::kill(-l.record.worker_pgid, SIGKILL);
      l.record.status = TaskStatus::kQueued;
      l.record.worker_pgid = 0;
      if (!run.WorkloadTaskOf(j).is_command) {
        l.record.checkpoint_step = run.NewestCheckpoint(j);
      }
    }
    l.reported.step = l.record.checkpoint_step;
    if (auto pack = planned_pack.find(name); pack != planned_pack.end() && l.record.start_s >= 0)
      l.pack = pack->second;
    else if (auto folder = ended_in.find(name); folder != ended_in.end() && run.Done(j))
      l.pack = folder->second;
    run.SaveTask(j);
  }
  if (!run.options().progress) return;
  std::string line;
  int ended = 0;
  for (int j = 0; j < run.NumTasks(); ++j) {
    const TaskRecord& r = run.tasks[j].record;
    ended += run.Done(j);
    // A member of a pack goes on from the pack's checkpoint of it, which
    // may be newer than its own.
    const std::string& pack = run.tasks[j].pack;
    long from = r.checkpoint_step;
    if (!run.Done(j) && !pack.empty()) {
      from = std::max(from, NewestListedCheckpoint(run.site.run_dir + "/packs/" + pack +
                                                   "/checkpoints/" + r.name));
    }
    line +=
        "\n  " + r.name + ": " +
        (run.Done(j) ? std::string(ToString(r.status))
                     : "from step " + std::to_string(from) + " of " + std::to_string(run.Steps(j)));
    if (!run.Done(j) && !pack.empty()) line += " (in " + pack + ")";
  }
  std::fprintf(stderr, "resuming at %s of training: %s to continue, %d ended:%s\n",
               FormatDuration(run.Now()).c_str(), Plural(run.NumTasks() - ended, "task").c_str(),
               ended, line.c_str());
}

namespace {

// The profile a run saved, as CSV text and where it is from.
std::pair<std::string, std::string> ProfileToResume(RunContext& run) {
  auto saved = run.SavedProfile();
  if (!saved)
    throw InputError(run.site.run_dir + "/profile.csv", 0, "", "missing: nothing to resume with");
  return *saved;
}

// The run's profile, its rows limited to what fits the nodes the run
// resumes on (it was checked against `saved_cluster`, the old ones).
ProfileTable ProfileOnNewCluster(RunContext& run, const std::string& saved_cluster) {
  auto [text, source] = ProfileToResume(run);
  Cluster old =
      ParseCluster(YAML::Load(saved_cluster), run.site.run_dir + "/state.sqlite", "cluster");
  ProfileTable table = ParseProfileCsv(text, source, old);
  int max_gpus = run.tasks.workload().cluster.MaxGpusPerNode();
  std::erase_if(table.rows, [&](const ProfileRow& r) { return r.gpus > max_gpus; });
  for (const WorkloadTask& t : run.tasks.workload().tasks) {
    bool any = std::any_of(table.rows.begin(), table.rows.end(),
                           [&](const ProfileRow& r) { return r.task == t.name && r.feasible; });
    if (!any) {
      throw InputError(run.tasks.workload().source, t.line, "task " + Quote(t.name),
                       "was profiled for larger nodes than this run resumes on (the largest "
                       "has " +
                           std::to_string(max_gpus) + " GPUs); resume it on nodes like:\n" +
                           saved_cluster);
    }
  }
  return table;
}

// What a resumed workload changes: the tasks it adds join the run (as do
// tasks it changes that have not started: they re-enter as new); changing or
// removing a task that has started is refused, naming those tasks.
struct WorkloadChange {
  std::vector<WorkloadTask> added;
  std::set<std::string> dropped;  // saved tasks that leave the run (removed or re-entering)
};

WorkloadChange CompareWithSaved(RunContext& run, const std::string& saved_text) {
  const std::string& path = run.options().workload_path;
  Workload saved = ParseWorkload(saved_text, path, run.tasks.workload().base_dir,
                                 run.options().plugins, run.options().max_tasks);
  std::map<std::string, TaskRecord> records;
  for (TaskRecord& r : run.site.state->Tasks())
    records[r.name] = std::move(r);
  auto started = [&](const std::string& name) {
    auto it = records.find(name);
    return it != records.end() && (it->second.start_s >= 0 || it->second.checkpoint_step > 0 ||
                                   it->second.status != TaskStatus::kQueued);
  };
  std::map<std::string, const WorkloadTask*> now;
  for (const WorkloadTask& t : run.tasks.workload().tasks)
    now[t.name] = &t;
  WorkloadChange change;
  std::string refused;
  for (const WorkloadTask& old : saved.tasks) {
    auto it = now.find(old.name);
    if (it != now.end() && it->second->spec == old.spec) continue;
    if (started(old.name)) {
      refused += (refused.empty() ? "" : ", ") + old.name +
                 (it == now.end() ? " (removed)" : " (changed)");
    } else {
      change.dropped.insert(old.name);
    }
  }
  if (!refused.empty()) {
    throw InputError(
        path, 0, "",
        "the workload changes tasks that have started since this run began: " + refused +
            "; a resumed run may add tasks and change those that have not started "
            "(or start a new run with another --run-dir)");
  }
  std::set<std::string> saved_names;
  for (const WorkloadTask& t : saved.tasks)
    saved_names.insert(t.name);
  for (const WorkloadTask& t : run.tasks.workload().tasks) {
    if (!saved_names.count(t.name) || change.dropped.count(t.name)) change.added.push_back(t);
  }
  return change;
}

// Takes in what a changed workload adds, drops what it removed or changed
// before it started, and plans the rest afresh.
void ApplyChange(RunContext& run, const WorkloadChange& change, const std::string& workload_text) {
  run.DropFromPlan(change.dropped);
  std::vector<std::string> names;
  if (!change.added.empty()) {
    if (run.options().progress) {
      std::string names;
      for (const WorkloadTask& t : change.added)
        names += (names.empty() ? "" : ", ") + t.name;
      std::fprintf(stderr, "the workload adds %s (%s): profiling and planning them in\n",
                   Plural(static_cast<long>(change.added.size()), "task").c_str(), names.c_str());
    }
    ProfileRun profiled = ProfileArrivals(run, change.added, nullptr);
    if (run.options().progress) {
      Workload batch = run.tasks.workload();
      batch.tasks = change.added;
      std::fputs(ProfileSummary(batch, profiled).c_str(), stderr);
    }
    JoinRun(run, change.added, profiled.table);
    for (const WorkloadTask& t : change.added)
      names.push_back(t.name);
  }
  ExtendPlan(run, nullptr, names);
  // Last: a crash before this resumes with the same change again.
  run.site.state->Set(meta::kWorkload, workload_text);
  WriteFileAtomic(run.site.run_dir + "/workload.yaml", workload_text);
}

// Whether a task that is not done is missing from the plan followed.
bool UnplannedTasks(const RunContext& run) {
  std::set<std::string> planned;
  for (const PlanTask& t : run.plan().tasks)
    planned.insert(t.task);
  for (int j = 0; j < run.NumTasks(); ++j) {
    if (!run.Done(j) && !planned.count(run.tasks.problem().tasks[j].name)) return true;
  }
  return false;
}

}  // namespace

bool ContinueFromState(RunContext& run, const std::set<std::string>& dropped) {
  RunState& state = *run.site.state;
  // Resumed on other nodes (e.g. a requeued Slurm job): the plan names
  // the old ones, so the remaining work is planned afresh for these.
  std::optional<std::string> saved_cluster = state.Get(meta::kCluster);
  std::string cluster_now = ClusterToYaml(run.tasks.workload().cluster);
  bool moved = saved_cluster && *saved_cluster != cluster_now;
  run.clock.Start(state.ResumeClock());
  const std::vector<Event> events = state.Events();
  run.stopper.Replay(events, run.tasks.workload());
  run.evals = EvalsOf(events);
  if (moved) {
    run.tasks.profile() = ProfileOnNewCluster(run, *saved_cluster);
  } else if (!run.tasks.workload().tasks.empty()) {
    auto [text, source] = ProfileToResume(run);
    run.tasks.profile() = ParseProfileCsv(text, source, run.tasks.workload().cluster);
  }
  // Rows of the tasks the run keeps (a crash in a resume that added tasks
  // may have left rows of tasks that join again afterwards).
  std::set<std::string> kept;
  for (const WorkloadTask& t : run.tasks.workload().tasks)
    kept.insert(t.name);
  std::erase_if(run.tasks.profile().rows,
                [&](const ProfileRow& r) { return !kept.count(r.task) || dropped.count(r.task); });
  run.tasks.Build(run.ProfileSource());
  run.RestorePlan();
  RestoreTasks(run);
  run.Emit(events::Resumed(run.Now()));
  return moved;
}

void PlanTheRest(RunContext& run, bool moved) {
  if (moved) {
    ReplanForOtherNodes(run, ClusterToYaml(run.tasks.workload().cluster));
  } else if (UnplannedTasks(run)) {
    ExtendPlan(run, nullptr, {});
  }
}

void ResumeWorkload(RunContext& run, const std::string& workload_text) {
  RunState& state = *run.site.state;
  std::optional<WorkloadChange> change;
  if (state.Get(meta::kWorkload) != workload_text) {
    change = CompareWithSaved(run, *state.Get(meta::kWorkload));
    // The run resumes with the tasks it keeps; the added ones join below.
    std::erase_if(run.tasks.workload().tasks, [&](const WorkloadTask& t) {
      return std::any_of(change->added.begin(), change->added.end(),
                         [&](const WorkloadTask& a) { return a.name == t.name; });
    });
  }
  bool moved = ContinueFromState(run, change ? change->dropped : std::set<std::string>{});
  if (change) ApplyChange(run, *change, workload_text);
  if (moved || !change) PlanTheRest(run, moved);
}

std::vector<WorkloadTask> RestartService(RunContext& run) {
  RunState& state = *run.site.state;
  Workload& workload = run.tasks.workload();
  std::vector<WorkloadTask> latest;  // the newest submission of each name wins
  for (const Submission& s : state.Submissions()) {
    Workload w = ParseStoredSubmission(run, s);
    for (const std::string& p : w.plugins) {
      if (std::find(workload.plugins.begin(), workload.plugins.end(), p) ==
          workload.plugins.end()) {
        workload.plugins.push_back(p);
      }
    }
    for (WorkloadTask& t : w.tasks) {
      std::erase_if(latest, [&](const WorkloadTask& o) { return o.name == t.name; });
      latest.push_back(std::move(t));
    }
  }
  // Tasks that had joined (their profile was saved) continue; the others are
  // profiled again unless they were cancelled.
  std::set<std::string> profiled;
  if (auto saved = run.SavedProfile()) {
    std::optional<std::string> saved_cluster = state.Get(meta::kCluster);
    Cluster on = saved_cluster ? ParseCluster(YAML::Load(*saved_cluster),
                                              run.site.run_dir + "/state.sqlite", "cluster")
                               : workload.cluster;
    for (const std::string& name : ParseProfileCsv(saved->first, saved->second, on).TaskNames())
      profiled.insert(name);
  }
  std::map<std::string, TaskRecord> records;
  for (TaskRecord& r : state.Tasks())
    records[r.name] = std::move(r);
  std::vector<WorkloadTask> again;
  for (WorkloadTask& t : latest) {
    if (profiled.count(t.name)) {
      workload.tasks.push_back(std::move(t));
    } else if (!records.count(t.name) || records[t.name].status != TaskStatus::kCancelled) {
      again.push_back(std::move(t));
    }
  }
  bool moved = ContinueFromState(run, {});
  // Cancellations asked for before the restart whose task had not ended.
  nlohmann::json cancels = nlohmann::json::parse(state.Get(meta::kCancelRequests).value_or("[]"));
  for (int j = 0; j < run.NumTasks(); ++j) {
    TaskRecord& r = run.tasks[j].record;
    if (run.Done(j) || std::find(cancels.begin(), cancels.end(), r.name) == cancels.end()) continue;
    r.status = TaskStatus::kCancelled;
    r.end_s = run.Now();
    run.SaveTask(j);
    run.Emit(events::TaskCancelled(run.Now(), run.Where(j), r.checkpoint_step));
  }
  if (run.NumTasks() > 0 && !run.AllDone()) {
    if (moved) {
      PlanTheRest(run, moved);
    } else {
      ExtendPlan(run, nullptr, {});
    }
  }
  if (!moved) state.Set(meta::kCluster, ClusterToYaml(workload.cluster));
  return again;
}

}  // namespace saturn
