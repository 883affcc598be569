#include "executor/run_setup.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "contracts/plan_status.h"
#include "executor/arrivals.h"
#include "executor/replanner.h"
#include "executor/run.h"
#include "launch/worker.h"
#include "planner/baselines.h"
#include "planner/lower_bound.h"
#include "planner/pack_search.h"
#include "planner/planner.h"
#include "profiler/profiler.h"

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

// What a new run writes into its folder before it trains: removed again
// when it is refused before training (nothing of the user's is touched).
void RemoveRunFiles(const std::string& dir) {
  std::error_code ec;
  for (const char* name :
       {"state.sqlite", "state.sqlite-journal", "state.sqlite-wal", "state.sqlite-shm",
        "events.jsonl", "workload.yaml", "cluster.yaml", "profile.csv", "trials", "tasks"}) {
    fs::remove_all(fs::path(dir) / name, ec);
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("plan-", 0) == 0 && entry.path().extension() == ".json") {
      fs::remove(entry.path(), ec);
    }
  }
}

// The worker, the launch backend and the cluster (a Slurm allocation's
// where the workload's cluster comes from one), checked before anything is
// written; then `before_writing`, the run's folder, and its state. The same
// for `saturn run` and `saturn serve`.
void OpenSite(RunContext& run, bool create, const std::function<void()>& before_writing) {
  const RunOptions& o = run.options();
  Workload& w = run.tasks.workload();
  run.site.worker = o.profiler.worker;
  bool engine_tasks = std::any_of(w.tasks.begin(), w.tasks.end(),
                                  [](const WorkloadTask& t) { return !t.is_command; });
  if (run.site.worker.empty()) {
    try {
      run.site.worker = FindWorkerBinary();
    } catch (const std::exception&) {
      // No engine here: only users' own programs (command tasks) can run; an
      // engine task is refused with FindWorkerBinary's reason.
      if (engine_tasks) throw;
    }
  }
  // Plug-ins load and every task's techniques exist.
  if (engine_tasks) AvailableTechniques(w, run.site.worker);
  run.site.backend = MakeBackend(o.backend);
  UseBackendAllocation(w, *run.site.backend);
  if (before_writing) before_writing();
  MakeDirectories(run.site.run_dir);
  run.site.backend->CheckSharedDir(run.site.run_dir, w.cluster);
  run.site.state.emplace(RunState::Open(run.site.run_dir, create));
}

// Whether the run in `dir` never started training: it stopped or was
// refused before its first plan (profiling found a task that fits nowhere,
// a trial failed, Ctrl-C). Such a folder holds nothing to keep.
bool NeverTrained(const std::string& dir) {
  RunState earlier = RunState::Open(dir, /*create=*/false);
  return !earlier.Get(meta::kPlan).has_value();
}

// Refuses a run that would clobber another or resume nothing, and the
// workers and cluster it cannot use; opens the run's state.
void CheckAndOpen(RunContext& run) {
  const RunOptions& o = run.options();
  std::error_code ec;
  bool exists = fs::exists(run.site.run_dir + "/state.sqlite", ec);
  bool reuse = exists && !o.resume && !o.fresh && NeverTrained(run.site.run_dir);
  if (exists && !o.resume && !o.fresh && !reuse) {
    throw InputError(run.site.run_dir, 0, "",
                     "a run already lives here; continue it with --resume, start afresh with "
                     "--fresh (the earlier run is moved aside, not deleted) or choose another "
                     "folder with --run-dir");
  }
  if (!exists && o.resume) {
    throw InputError(run.site.run_dir, 0, "--resume", "no run to resume here (no state.sqlite)");
  }
  // Only once every check has passed: a refused run leaves the earlier one.
  OpenSite(run, !o.resume, [&] {
    if (exists && o.fresh) MoveAside(run);
    if (reuse) {
      if (o.progress) {
        std::fprintf(stderr, "the run here never started training; starting it afresh\n");
      }
      RemoveRunFiles(run.site.run_dir);
    }
  });
}

ProfileTable Profile(RunContext& run) {
  const RunOptions& o = run.options();
  if (!o.profile_path.empty()) return LoadProfileFile(o.profile_path, run.tasks.workload().cluster);
  ProfilerOptions p = o.profiler;
  p.worker = run.site.worker;
  p.progress = o.progress;
  p.backend = run.site.backend.get();
  p.checkpoint_every = o.checkpoint_every;
  p.packs = o.pack;
  if (p.work_dir.empty()) p.work_dir = run.site.run_dir + "/trials";
  ProfileRun profiled = RunProfiler(run.tasks.workload(), p);
  if (o.progress) std::fputs(ProfileSummary(run.tasks.workload(), profiled).c_str(), stderr);
  return profiled.table;
}

// `saturn run` trains what it plans, so a row the profiler could only
// estimate because its devices would need more memory than this machine has
// (the worker's estimate says "cannot run here") is no option for it: such
// rows become infeasible (the saved profile keeps them, for `saturn plan`).
// A task left with no feasible row is an input error that says where it can
// be planned.
void KeepRowsThatTrainHere(RunContext& run) {
  ProfileTable& table = run.tasks.profile();
  if (table.ExtraColumn("estimated_from") < 0) return;
  std::map<std::string, int> feasible_left;
  std::map<std::string, std::string> why;
  for (ProfileRow& row : table.rows) {
    if (!row.feasible) continue;
    std::string from = table.Extra(row, "estimated_from");
    size_t at = from.find("cannot run here");
    if (at == std::string::npos) {
      ++feasible_left[row.task];
      continue;
    }
    feasible_left.emplace(row.task, 0);
    row.feasible = false;
    if (why[row.task].empty()) why[row.task] = from.substr(at);
  }
  for (const auto& [task, left] : feasible_left) {
    if (left > 0) continue;
    throw InputError(run.tasks.workload().source, 0, "tasks",
                     "task " + Quote(task) + " cannot train on this machine (" + why[task] +
                         "): `saturn run` trains for real; plan it without training with "
                         "`saturn plan` on this run's profile.csv (docs/estimates.md), and train "
                         "it where its devices are");
  }
}

// The problem with each task's expected work under its early_stop rule
// (executor/early_stopper.h): the first plan, and current practice beside
// it, count on the work the rule is expected to leave.
Problem ExpectedWorkProblem(const RunContext& run, bool* any) {
  Problem problem = run.tasks.problem();
  *any = false;
  for (int j = 0; j < run.NumTasks(); ++j) {
    double f = run.stopper.ExpectedFraction(run.WorkloadTaskOf(j), run.tasks.workload());
    if (f >= 1.0) continue;
    *any = true;
    for (Option& o : problem.tasks[static_cast<size_t>(j)].options)
      o.runtime_s = ScaledRuntime(run.tasks.profile(), problem, j, o, f);
  }
  return problem;
}

// Under early stopping, each task's pack terms: where its rule may end it
// (planner/packing.h's MemberSteps prices a pack's members on it), and its
// expected steps, as the problem's runtimes count them.
void ExpectStopsAndSteps(const RunContext& run, PackTerms& terms) {
  ExpectStops(run, terms);
  StepsAtStopsMean(terms);
}

void ProfileAndPlan(RunContext& run) {
  const Clock& clock = run.clock.base();
  double t0 = clock.Now();
  run.tasks.profile() = Profile(run);
  run.SaveProfile();
  KeepRowsThatTrainHere(run);
  double profiling_s = clock.Now() - t0;
  run.tasks.Build(run.ProfileSource());
  t0 = clock.Now();
  PlanRequest request(run.options().solve);
  // Training waits for this plan: anytime only where the run is long enough
  // for seconds of planning to pay (defaults.h).
  request.anytime = MakespanLowerBound(run.tasks.problem()) >= defaults::kAnytimeFirstPlanFromS;
  request.gap = request.anytime ? defaults::kFirstPlanGap : 0.0;
  bool early_stopping = false;
  const Problem problem = ExpectedWorkProblem(run, &early_stopping);
  PackTerms terms = PackTermsFromProfile(run.tasks.profile(), problem, run.ProfileSource());
  if (early_stopping) ExpectStopsAndSteps(run, terms);
  PackedPlanResult packed = PlanWithPacks(problem, terms, request, run.options().pack);
  Plan plan = packed.result.plan;
  double planning_s = clock.Now() - t0;
  plan.extra["baselines"] = BaselineMakespans(problem, plan.lower_bound_s);
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
    if (early_stopping)
      std::fputs("planned with each task's expected work under early stopping\n", stderr);
    std::fputs(DescribePacks(problem, terms, packed, !run.options().pack).c_str(), stderr);
  }
}

}  // namespace

namespace {

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
  // Flushed to disk all at once: a flush per file took seconds for a
  // table's thousands of groups. An empty one is written again (a power
  // cut before the flush may leave the renamed file empty).
  bool wrote = false;
  for (size_t k = 0; k < run.tasks.workload().tasks.size(); ++k) {
    std::string dir = run.TaskDir(static_cast<int>(k));
    MakeDirectories(dir + "/checkpoints");
    std::error_code ec;
    if (fs::file_size(dir + "/task.json", ec) > 0 && !ec) continue;
    WriteFileAtomicUnflushed(dir + "/task.json", run.tasks.workload().tasks[k].spec.dump(2) + "\n");
    wrote = true;
  }
  if (wrote) SyncFileSystem(run.site.run_dir);
}

void SetUpRun(RunContext& run) {
  const RunOptions& o = run.options();
  run.site.run_dir = fs::absolute(o.run_dir.empty() ? DefaultRunDir(o.workload_path) : o.run_dir)
                         .lexically_normal()
                         .string();
  std::string workload_text = ReadFile(o.workload_path);
  PrefetchTechniques(o.profiler.worker, o.plugins);  // while a table's CSV is read
  run.tasks.workload() = LoadWorkloadFile(o.workload_path, o.plugins, o.max_tasks);
  std::error_code ec;
  bool folder_existed = fs::exists(run.site.run_dir, ec);
  CheckAndOpen(run);
  if (o.progress) std::fprintf(stderr, "run folder: %s\n", run.site.run_dir.c_str());
  RunState& state = *run.site.state;
  // A resumed run stopped before its first plan (while profiling) has not
  // trained: it starts over (the trials that finished are in the cache).
  if (o.resume && state.Get(meta::kPlan)) {
    ResumeWorkload(run, workload_text);
  } else {
    try {
      StartFresh(run, workload_text);
    } catch (...) {
      // Refused before anything trained (a task fits nowhere, a trial
      // failed): the same command can use the folder again.
      run.site.state.reset();
      if (folder_existed) {
        RemoveRunFiles(run.site.run_dir);
      } else {
        fs::remove_all(run.site.run_dir, ec);
      }
      throw;
    }
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

std::vector<WorkloadTask> SetUpService(RunContext& run, const ServiceSource& source) {
  const RunOptions& o = run.options();
  run.site.run_dir = fs::absolute(source.state_dir).lexically_normal().string();
  if (source.cluster_path.empty()) {
    throw InputError("", 0, "--cluster", "required: the cluster file the service runs on");
  }
  Workload& w = run.tasks.workload();
  ClusterSource nodes = LoadClusterSourceFile(source.cluster_path);
  w.cluster = nodes.cluster;
  w.from_allocation = nodes.from_allocation;
  w.source = run.site.run_dir + "/submissions";
  w.base_dir = run.site.run_dir;
  std::error_code ec;
  bool existed = fs::exists(run.site.run_dir + "/state.sqlite", ec);
  OpenSite(run, /*create=*/true, nullptr);
  run.SetIntrospection(
      o.interval_s > 0 ? o.interval_s : defaults::kServiceIntervalS,
      o.threshold_s >= 0 ? o.threshold_s : defaults::kThresholdSwitchCosts * o.switch_cost_s);
  std::string cluster = ClusterToYaml(w.cluster);
  if (!existed) {
    run.tasks.Build(run.ProfileSource());
    run.clock.Start();
    run.site.state->Set(meta::kCluster, cluster);
    WriteFileAtomic(run.site.run_dir + "/cluster.yaml", cluster);
    return {};
  }
  // Submissions are read on the cluster the service runs on now.
  WriteFileAtomic(run.site.run_dir + "/cluster.yaml", cluster);
  return RestartService(run);
}

}  // namespace saturn
