#include "executor/run_setup.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "executor/arrivals.h"
#include "executor/replanner.h"
#include "launch/worker.h"
#include "planner/baselines.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"
#include "profiler/profiler.h"
#include "contracts/plan_status.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;

// --fresh: the earlier run in the folder goes to RUN_DIR.old-N, the first N
// free, whole and untouched; refused while a worker of it still runs (a
// live `saturn run` there, or workers a killed one left: they would write
// into the new run's task folders).
void MoveAside(RunContext& run) {
  {
    RunState earlier = RunState::Open(run.site.run_dir, /*create=*/false);
    for (const TaskRecord& t : earlier.Tasks()) {
      if (t.worker_pgid > 0 && ::kill(-t.worker_pgid, 0) == 0) {
        throw InputError(run.site.run_dir, 0, "--fresh",
                         "a worker of the run here still runs (task " + Quote(t.name) +
                             ", process group " + std::to_string(t.worker_pgid) +
                             "); stop that run first (Ctrl-C, or kill -TERM -" +
                             std::to_string(t.worker_pgid) + ")");
      }
    }
  }
  std::error_code ec;
  std::string dir = run.site.run_dir;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  for (int n = 1;; ++n) {
    std::string aside = dir + ".old-" + std::to_string(n);
    if (fs::exists(aside, ec)) continue;
    fs::rename(dir, aside, ec);
    if (ec) {
      throw SystemError("cannot move the earlier run " + run.site.run_dir + " aside to " + aside +
                        ": " + ec.message());
    }
    if (run.options().progress) {
      std::fprintf(stderr, "--fresh: moved the earlier run aside to %s\n", aside.c_str());
    }
    return;
  }
}

// Refuses a run that would clobber another or resume nothing, and the
// workers and cluster it cannot use; opens the run's state.
void CheckAndOpen(RunContext& run) {
  const RunOptions& o = run.options();
  std::error_code ec;
  bool exists = fs::exists(run.site.run_dir + "/state.sqlite", ec);
  if (exists && !o.resume && !o.fresh) {
    throw InputError(run.site.run_dir, 0, "",
                     "a run already lives here; continue it with --resume, start afresh with "
                     "--fresh (the earlier run is moved aside, not deleted) or choose another "
                     "folder with --run-dir");
  }
  if (!exists && o.resume) {
    throw InputError(run.site.run_dir, 0, "--resume", "no run to resume here (no state.sqlite)");
  }
  run.site.worker = o.profiler.worker;
  bool engine_tasks =
      std::any_of(run.tasks.workload().tasks.begin(), run.tasks.workload().tasks.end(),
                  [](const WorkloadTask& t) { return !t.is_command; });
  if (run.site.worker.empty() && engine_tasks) run.site.worker = FindWorkerBinary();
  // Plug-ins load and every task's techniques exist.
  if (engine_tasks) AvailableTechniques(run.tasks.workload(), run.site.worker);
  run.site.backend = MakeBackend(o.backend);
  UseBackendAllocation(run.tasks.workload(), *run.site.backend);
  // Only once every check has passed: a refused run leaves the earlier one.
  if (exists && o.fresh) MoveAside(run);
  MakeDirectories(run.site.run_dir);
  run.site.backend->CheckSharedDir(run.site.run_dir, run.tasks.workload().cluster);
  run.site.state.emplace(RunState::Open(run.site.run_dir, !o.resume));
}

ProfileTable Profile(RunContext& run) {
  const RunOptions& o = run.options();
  if (!o.profile_path.empty()) return LoadProfileFile(o.profile_path, run.tasks.workload().cluster);
  ProfilerOptions p = o.profiler;
  p.worker = run.site.worker;
  p.progress = o.progress;
  p.backend = run.site.backend.get();
  p.checkpoint_every = o.checkpoint_every;
  if (p.work_dir.empty()) p.work_dir = run.site.run_dir + "/trials";
  ProfileRun profiled = RunProfiler(run.tasks.workload(), p);
  if (o.progress) std::fputs(ProfileSummary(run.tasks.workload(), profiled).c_str(), stderr);
  return profiled.table;
}

void ProfileAndPlan(RunContext& run) {
  const Clock& clock = run.clock.base();
  double t0 = clock.Now();
  run.tasks.profile() = Profile(run);
  run.SaveProfile();
  double profiling_s = clock.Now() - t0;
  run.tasks.Build(run.ProfileSource());
  t0 = clock.Now();
  PlanRequest request(run.options().solve);
  // Training waits for this plan: anytime only where the run is long enough
  // for seconds of planning to pay (defaults.h).
  request.anytime = MakespanLowerBound(run.tasks.problem()) >= defaults::kAnytimeFirstPlanFromS;
  request.gap = request.anytime ? defaults::kFirstPlanGap : 0.0;
  Plan plan = RunPlanner(run.tasks.problem(), request).plan;
  double planning_s = clock.Now() - t0;
  plan.extra["baselines"] = BaselineMakespans(run.tasks.problem(), plan.lower_bound_s);
  // Plan times are on the run clock, which starts after profiling and planning.
  run.clock.Start();
  run.FollowFirstPlan(plan, profiling_s, planning_s);
  for (int j = 0; j < run.NumTasks(); ++j)
    run.SaveTask(j);
  run.Emit(events::FirstPlan(0.0, run.plan(), run.planning_s(), run.profiling_s()));
  if (run.options().progress) {
    std::fprintf(stderr, "plan (%s, %s): %s, makespan %s (lower bound %s)\n",
                 run.plan().solver.c_str(), DescribePlanStatus(run.plan().status).c_str(),
                 Plural(static_cast<long>(run.plan().tasks.size()), "task").c_str(),
                 FormatDuration(run.plan().makespan_s).c_str(),
                 FormatDuration(run.plan().lower_bound_s).c_str());
    if (std::string line = BaselineLine(run.plan()); !line.empty()) {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }
}

}  // namespace

void RestoreTasks(RunContext& run) {
  std::map<std::string, TaskRecord> saved;
  for (TaskRecord& r : run.site.state->Tasks())
    saved[r.name] = std::move(r);
  for (int j = 0; j < run.NumTasks(); ++j) {
    LiveTask& l = run.tasks[j];
    const std::string& name = run.tasks.problem().tasks[j].name;
    l.record = saved.count(name) ? saved[name] : TaskRecord{};
    l.record.name = name;
    if (!run.Done(j)) {
      // Running when the orchestrator died: its worker got SIGTERM (and
      // checkpointed); make sure nothing of it is left, resume from disk.
      if (l.record.worker_pgid > 0) ::kill(-l.record.worker_pgid, SIGKILL);
      l.record.status = TaskStatus::kWaiting;
      l.record.worker_pgid = 0;
      if (!run.WorkloadTaskOf(j).is_command) {
        l.record.checkpoint_step = run.NewestCheckpoint(j);
      }
    }
    l.reported.step = l.record.checkpoint_step;
    run.SaveTask(j);
  }
  if (!run.options().progress) return;
  std::string line;
  for (int j = 0; j < run.NumTasks(); ++j) {
    const TaskRecord& r = run.tasks[j].record;
    line += "\n  " + r.name + ": " +
            (run.Done(j) ? std::string(ToString(r.status))
                         : "from step " + std::to_string(r.checkpoint_step) + " of " +
                               std::to_string(run.Steps(j)));
  }
  std::fprintf(stderr, "resuming %s at %s of training:%s\n", Plural(run.NumTasks(), "task").c_str(),
               FormatDuration(run.Now()).c_str(), line.c_str());
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
      throw InputError(run.options().workload_path, t.line, "task " + Quote(t.name),
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
    return it != records.end() &&
           (it->second.first_start_s >= 0 || it->second.checkpoint_step > 0 ||
            it->second.status != TaskStatus::kWaiting);
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

void StartFresh(RunContext& run, const std::string& workload_text);

void Resume(RunContext& run, const std::string& workload_text) {
  RunState& state = *run.site.state;
  // Stopped before its first plan (while profiling): nothing has trained,
  // so it starts over; the trials that finished are in the profile cache.
  if (!state.Get(meta::kPlan)) {
    StartFresh(run, workload_text);
    return;
  }
  std::optional<WorkloadChange> change;
  if (state.Get(meta::kWorkload) != workload_text) {
    change = CompareWithSaved(run, *state.Get(meta::kWorkload));
    // The run resumes with the tasks it keeps; the added ones join below.
    std::erase_if(run.tasks.workload().tasks, [&](const WorkloadTask& t) {
      return std::any_of(change->added.begin(), change->added.end(),
                         [&](const WorkloadTask& a) { return a.name == t.name; });
    });
  }
  // Resumed on other nodes (e.g. a requeued Slurm job): the plan names
  // the old ones, so the remaining work is planned afresh for these.
  std::optional<std::string> saved_cluster = state.Get(meta::kCluster);
  std::string cluster_now = ClusterToYaml(run.tasks.workload().cluster);
  bool moved = saved_cluster && *saved_cluster != cluster_now;
  run.clock.Start(state.ResumeClock());
  if (moved) {
    run.tasks.profile() = ProfileOnNewCluster(run, *saved_cluster);
  } else {
    auto [text, source] = ProfileToResume(run);
    run.tasks.profile() = ParseProfileCsv(text, source, run.tasks.workload().cluster);
  }
  // Rows of the tasks the run keeps (a crash in a resume that added tasks
  // may have left rows of tasks that join again below).
  std::set<std::string> kept;
  for (const WorkloadTask& t : run.tasks.workload().tasks)
    kept.insert(t.name);
  std::erase_if(run.tasks.profile().rows, [&](const ProfileRow& r) {
    return !kept.count(r.task) || (change && change->dropped.count(r.task));
  });
  run.tasks.Build(run.ProfileSource());
  run.RestorePlan();
  RestoreTasks(run);
  run.Emit(events::Resumed(run.Now()));
  if (change) ApplyChange(run, *change, workload_text);
  if (moved) {
    ReplanForOtherNodes(run, cluster_now);
  } else if (!change && UnplannedTasks(run)) {
    ExtendPlan(run, nullptr, {});
  }
}

void StartFresh(RunContext& run, const std::string& workload_text) {
  run.clock.Start();
  std::string cluster = ClusterToYaml(run.tasks.workload().cluster);
  run.site.state->Set(meta::kWorkload, workload_text);
  run.site.state->Set(meta::kCluster, cluster);
  WriteFileAtomic(run.site.run_dir + "/workload.yaml", workload_text);
  WriteFileAtomic(run.site.run_dir + "/cluster.yaml", cluster);
  ProfileAndPlan(run);
}

}  // namespace

void WriteTaskFolders(const RunContext& run) {
  for (size_t k = 0; k < run.tasks.workload().tasks.size(); ++k) {
    std::string dir = run.TaskDir(static_cast<int>(k));
    MakeDirectories(dir + "/checkpoints");
    if (!fs::exists(dir + "/task.json")) {
      WriteFileAtomic(dir + "/task.json", run.tasks.workload().tasks[k].spec.dump(2) + "\n");
    }
  }
}

void SetUpRun(RunContext& run) {
  const RunOptions& o = run.options();
  run.site.run_dir = fs::absolute(o.run_dir.empty() ? DefaultRunDir(o.workload_path) : o.run_dir)
                         .lexically_normal()
                         .string();
  std::string workload_text = ReadFile(o.workload_path);
  run.tasks.workload() = LoadWorkloadFile(o.workload_path, o.plugins, o.max_tasks);
  CheckAndOpen(run);
  if (o.progress) std::fprintf(stderr, "run folder: %s\n", run.site.run_dir.c_str());
  if (o.resume) {
    Resume(run, workload_text);
  } else {
    StartFresh(run, workload_text);
  }
  WriteTaskFolders(run);
  double span = std::max(1.0, run.planned_makespan_s());
  run.SetIntrospection(
      o.interval_s > 0 ? o.interval_s
                       : std::clamp(defaults::kAutoIntervalShare * span,
                                    defaults::kAutoIntervalMinS, defaults::kAutoIntervalMaxS),
      o.threshold_s >= 0 ? o.threshold_s
                         : std::max(defaults::kAutoThresholdShare * span,
                                    defaults::kThresholdSwitchCosts * o.switch_cost_s));
  run.Requeue();
}

}  // namespace saturn
