// bench/profiler: how good and how cheap are Saturn's runtime estimates?
//
//  1. Estimation accuracy: every (task, technique, GPUs) of a small workload
//     is profiled, then trained in full with that configuration as `saturn
//     run` would (default checkpoints, model saved); the predicted steps
//     (step time x steps + start cost) are compared with the measured
//     training time (sum of the step times the worker reports), and the
//     predicted runtime (steps + launch + checkpoints) with the worker's
//     whole wall time.
//  2. Cost: profiling wall time against the planned makespan of the same
//     workload at realistic lengths (steps x10, x100, x1000), and repeat
//     profiling through the cache.
//  3. Packing: trials two at a time (--parallel 2) against one at a time: on
//     CPU devices both trials share the machine's cores.
//  4. With --types (only this): the same tasks on three GPU types (nodes of
//     1-thread, 2-thread and 1-thread-with-twice-the-memory devices; with
//     --same-memory the third has the others' memory, so the types differ
//     in speed only), profiled with every type measured and with `--types
//     estimate`; the cost of each against profiling one type, and the
//     estimated rows' error against the measured ones.
//
//   profiler_bench [--workload bench/profiler/workload.yaml] [--worker PATH]
//                  [--types [--same-memory]]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "bench/common/instances.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/process.h"
#include "contracts/workload.h"
#include "launch/worker.h"
#include "planner/planner.h"
#include "profiler/profiler.h"

namespace saturn::bench {
namespace {

namespace fs = std::filesystem;

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

ProfileRun Profile(const saturn::Workload& w, const std::string& worker, const std::string& cache,
                   int parallel, bool use_cache, double* wall, bool estimate_types = false) {
  ProfilerOptions o;
  o.worker = worker;
  o.cache_path = cache;
  o.use_cache = use_cache;
  o.parallel = parallel;
  o.progress = false;
  o.estimate_types = estimate_types;
  auto t0 = std::chrono::steady_clock::now();
  ProfileRun run = RunProfiler(w, o);
  *wall = Seconds(t0);
  return run;
}

struct Measured {
  double train_s = 0;  // sum of reported step times
  double wall_s = 0;   // the worker process, start-up included
  bool ok = false;
};

Measured TrainFully(const WorkloadTask& task, const ProfileRow& row, const ProfileTable& table,
                    const Cluster& cluster, const std::string& worker, const std::string& dir) {
  std::string tdir = dir + "/" + task.name + "-" + row.technique + "-" + std::to_string(row.gpus);
  fs::remove_all(tdir);
  MakeDirectories(tdir);
  WriteFileAtomic(tdir + "/task.json", task.spec.dump(2));
  WorkerRequest c;
  c.mode = WorkerMode::kExecute;
  c.task_path = tdir + "/task.json";
  c.technique = row.technique;
  c.gpus = row.gpus;
  c.out_path = tdir + "/result.json";
  c.memory_gib = cluster.nodes[0].gpu_memory_gib.value_or(0.0);
  c.threads = cluster.nodes[0].threads_per_gpu;
  c.from_step = 0;
  c.to_step = task.steps;
  c.checkpoint_dir = tdir + "/ck";
  c.checkpoint_every = CheckpointInterval(task.steps, 0);  // as saturn run does
  c.save_model = tdir + "/model.pt";
  c.knobs = table.Extra(row, "knobs");
  ProcessSpec spec;
  spec.argv = ToArgv(c);
  spec.argv.insert(spec.argv.begin(), worker);
  spec.pipe_stdout = true;
  spec.stderr_path = tdir + "/worker.log";
  auto t0 = std::chrono::steady_clock::now();
  Process p = Process::Spawn(spec);
  Measured m;
  while (auto line = p.ReadLine(600)) {
    StepReport r;
    if (ParseStepLine(*line, &r)) m.train_s += r.step_s;
  }
  m.ok = ExitedCleanly(p.Wait());
  m.wall_s = Seconds(t0);
  return m;
}

// Section 4: three types, measured in full and estimated.
int TypesSection(const saturn::Workload& one_type, const std::string& worker, bool same_memory) {
  const ClusterNode base = one_type.cluster.nodes.at(0);
  saturn::Workload mixed = one_type;
  mixed.cluster.nodes.clear();
  auto add = [&](const std::string& type, int threads, double memory_scale) {
    ClusterNode n = base;
    n.name = type + "0";
    n.gpu_type = type;
    n.threads_per_gpu = threads;
    if (n.gpu_memory_gib) n.gpu_memory_gib = *n.gpu_memory_gib * memory_scale;
    mixed.cluster.nodes.push_back(n);
  };
  add("slow", 1, 1.0);
  add("fast", 2, 1.0);
  add(same_memory ? "slow2" : "roomy", 1, same_memory ? 1.0 : 2.0);
  saturn::Workload single = mixed;
  single.cluster.nodes.resize(1);

  double one = 0, full = 0, estimated = 0;
  ProfileRun one_run = Profile(single, worker, "", 1, false, &one);
  ProfileRun full_run = Profile(mixed, worker, "", 1, false, &full);
  ProfileRun est_run = Profile(mixed, worker, "", 1, false, &estimated, /*estimate_types=*/true);
  std::printf(
      "profiling %s (%zu tasks): one type %d trials %.1f s; three types measured %d "
      "trials %.1f s (%.2fx); three types estimated %d trials run + %d scaled %.1f s "
      "(%.2fx, target <= 1.5x)\n",
      one_type.source.c_str(), one_type.tasks.size(), one_run.trials_run, one, full_run.trials_run,
      full, full / one, est_run.trials_run, est_run.estimated, estimated, estimated / one);

  std::printf("\n%-10s %-9s %4s %-6s %10s %10s %8s\n", "task", "technique", "gpus", "type",
              "estimated", "measured", "error");
  std::vector<double> errors;
  int only_estimated = 0, only_measured = 0;
  for (const ProfileRow& row : est_run.table.rows) {
    if (est_run.table.Extra(row, "estimated_from").empty()) continue;
    const ProfileRow* m = full_run.table.Find(row.task, row.technique, row.gpus, row.gpu_type);
    if (!m) {
      ++only_estimated;
      continue;
    }
    double e = (row.runtime_s - m->runtime_s) / m->runtime_s;
    errors.push_back(std::abs(e));
    std::printf("%-10s %-9s %4d %-6s %9.2fs %9.2fs %+7.1f%%\n", row.task.c_str(),
                row.technique.c_str(), row.gpus, row.gpu_type.c_str(), row.runtime_s, m->runtime_s,
                100 * e);
  }
  for (const ProfileRow& row : full_run.table.rows) {
    if (!est_run.table.Find(row.task, row.technique, row.gpus, row.gpu_type)) ++only_measured;
  }
  std::sort(errors.begin(), errors.end());
  if (!errors.empty()) {
    double mean = 0;
    for (double e : errors)
      mean += e;
    mean /= static_cast<double>(errors.size());
    std::printf(
        "\nestimated rows' runtime error against measured: mean %.1f%%, median %.1f%%, "
        "worst %.1f%% (%zu rows)\n",
        100 * mean, 100 * errors[errors.size() / 2], 100 * errors.back(), errors.size());
  }
  std::printf(
      "rows only in the estimated profile: %d; only in the measured one: %d (within-noise "
      "and feasibility decisions that differ)\n",
      only_estimated, only_measured);
  return 0;
}

int Main(int argc, char** argv) {
  std::string workload_path = SourceDir() + "/bench/profiler/workload.yaml";
  std::string worker;
  bool types = false, same_memory = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--types")) types = true;
    if (!std::strcmp(argv[i], "--same-memory")) same_memory = true;
    if (i + 1 < argc && !std::strcmp(argv[i], "--workload")) workload_path = argv[i + 1];
    if (i + 1 < argc && !std::strcmp(argv[i], "--worker")) worker = argv[i + 1];
  }
  if (worker.empty()) worker = FindWorkerBinary();
  saturn::Workload w = LoadWorkloadFile(workload_path);
  if (types) return TypesSection(w, worker, same_memory);
  std::string dir = fs::temp_directory_path() / "saturn-profiler-bench";
  fs::remove_all(dir);
  MakeDirectories(dir);
  std::string cache = dir + "/cache.sqlite";

  double cold = 0, warm = 0, packed = 0;
  ProfileRun run = Profile(w, worker, cache, 1, true, &cold);
  Profile(w, worker, cache, 1, true, &warm);
  ProfileRun packed_run = Profile(w, worker, "", 2, false, &packed);
  std::printf("profiling: %zu trials in %.1f s; again through the cache %.2f s (%.4fx)\n",
              run.trials.size(), cold, warm, warm / cold);

  // Packing skew: step time with two trials at once over one at a time.
  std::vector<double> skew;
  for (size_t i = 0; i < run.trials.size(); ++i) {
    const Trial& a = run.trials[i];
    const Trial& b = packed_run.trials[i];
    if (a.result.feasible && b.result.feasible) skew.push_back(b.result.step_s / a.result.step_s);
  }
  std::sort(skew.begin(), skew.end());
  if (!skew.empty()) {
    std::printf(
        "packing 2 trials at once: step time x%.2f median (x%.2f..x%.2f), wall %.1f s vs "
        "%.1f s\n",
        skew[skew.size() / 2], skew.front(), skew.back(), packed, cold);
  }

  // Accuracy: one task per distinct trial, every feasible configuration.
  std::printf("\n%-12s %-9s %4s %10s %10s %8s %10s %10s %8s\n", "task", "technique", "gpus",
              "steps", "trained", "error", "runtime", "wall", "error");
  std::vector<double> errors, wall_errors;
  std::map<std::string, bool> seen;
  for (const WorkloadTask& task : w.tasks) {
    if (seen[task.trial_key]) continue;
    seen[task.trial_key] = true;
    for (const ProfileRow& row : run.table.rows) {
      if (row.task != task.name) continue;
      Measured m = TrainFully(task, row, run.table, w.cluster, worker, dir);
      if (!m.ok) {
        std::printf("%-12s %-9s %4d  training failed\n", task.name.c_str(), row.technique.c_str(),
                    row.gpus);
        continue;
      }
      double steps = std::stod(run.table.Extra(row, "step_s")) * static_cast<double>(task.steps) +
                     std::stod(run.table.Extra(row, "start_cost_s"));
      double e = (steps - m.train_s) / m.train_s;
      double ew = (row.runtime_s - m.wall_s) / m.wall_s;
      errors.push_back(std::abs(e));
      wall_errors.push_back(std::abs(ew));
      std::printf("%-12s %-9s %4d %9.2fs %9.2fs %+7.1f%% %9.2fs %9.2fs %+7.1f%%\n",
                  task.name.c_str(), row.technique.c_str(), row.gpus, steps, m.train_s, 100 * e,
                  row.runtime_s, m.wall_s, 100 * ew);
      std::fflush(stdout);
    }
  }
  std::sort(errors.begin(), errors.end());
  std::sort(wall_errors.begin(), wall_errors.end());
  if (!errors.empty()) {
    std::printf(
        "\nestimation error vs training time: median %.1f%%, worst %.1f%% (targets 10%%, "
        "25%%)\n",
        100 * errors[errors.size() / 2], 100 * errors.back());
    std::printf(
        "runtime estimate (launch and checkpoints included) vs worker wall time: median "
        "%.1f%%, worst "
        "%.1f%%\n",
        100 * wall_errors[wall_errors.size() / 2], 100 * wall_errors.back());
  }

  // Cost at realistic lengths: the same tasks trained 10x, 100x, 1000x longer.
  Problem problem = ProblemFromProfile(run.table, w.cluster);
  PlanRequest req;
  req.time_limit_s = 5;
  double makespan = RunPlanner(problem, req).plan.makespan_s;
  std::printf("\nplanned makespan of this workload: %.1f s; profiling took %.1f s\n", makespan,
              cold);
  for (double k : {1.0, 10.0, 100.0, 1000.0}) {
    std::printf("  steps x%-5g: makespan %s, profiling = %.2f%% of it (target <= 3%%)\n", k,
                FormatDuration(k * makespan).c_str(), 100 * cold / (k * makespan));
  }
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  return saturn::bench::Main(argc, argv);
}
