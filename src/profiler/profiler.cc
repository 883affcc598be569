#include "profiler/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include <unistd.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/process.h"
#include "common/progress.h"
#include "launch/command_task.h"
#include "profiler/cache.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Identifies the worker build, so a rebuilt engine never reuses old timings.
std::string WorkerBuild(const std::string& worker) {
  std::error_code ec;
  auto size = fs::file_size(worker, ec);
  auto time = fs::last_write_time(worker, ec).time_since_epoch().count();
  return std::to_string(size) + "@" + std::to_string(time);
}

std::string Hash(const std::string& text) {
  return std::to_string(std::hash<std::string>{}(text));
}

// Device settings of a trial on `gpus` devices: the tightest node that has
// that many (smallest memory), so a configuration is only called feasible if
// it fits wherever the planner may put it.
void DeviceFor(const Cluster& cluster, int gpus, Trial* t) {
  bool found = false;
  for (const ClusterNode& n : cluster.nodes) {
    if (n.gpus < gpus) continue;
    double memory = n.gpu_memory_gib.value_or(0.0);
    if (!found || (memory > 0 && (t->memory_gib == 0 || memory < t->memory_gib))) {
      t->memory_gib = memory;
      t->device_kind = n.device;
      t->threads = n.threads_per_gpu;
    }
    found = true;
  }
}

std::string CacheKey(const Trial& t, const ProfilerOptions& o, const std::string& build) {
  json key = {{"trial", json::parse(t.trial_key)},
              {"technique", t.technique},
              {"gpus", t.gpus},
              {"device", t.device_kind},
              {"memory_gib", t.memory_gib},
              {"threads", t.threads},
              {"warmup", o.warmup},
              {"measure", o.measure},
              {"worker", build}};
  return key.dump();
}

class TrialRunner {
 public:
  TrialRunner(const ProfilerOptions& o, LaunchBackend& backend, std::string worker, std::string dir,
              std::vector<std::string> plugins)
      : o_(o),
        backend_(backend),
        worker_(std::move(worker)),
        dir_(std::move(dir)),
        plugins_(std::move(plugins)) {}

  struct Running {
    int trial;
    Process process;
    std::string result_path, log_path;
    std::chrono::steady_clock::time_point started;
    double spawned_unix_s;  // to compare with the worker's ready_unix_s
  };

  Running Start(int index, const Trial& t, const json& task_spec) {
    double spawned_unix_s = UnixClock().Now();
    std::string stem = Hash(t.trial_key) + "-" + t.technique + "-" + std::to_string(t.gpus);
    std::string task_path = dir_ + "/" + Hash(t.trial_key) + ".task.json";
    if (!fs::exists(task_path)) WriteFileAtomic(task_path, task_spec.dump(2) + "\n");
    std::string result_path = dir_ + "/" + stem + ".result.json";
    std::string log_path = dir_ + "/" + stem + ".log";
    std::error_code ec;
    fs::remove(result_path, ec);
    fs::remove(log_path, ec);
    if (task_spec.value("type", "") == "command") {
      // The user's program, run for a few steps.
      CommandCall c;
      c.technique = t.technique;
      c.gpus = t.gpus;
      for (int g = 0; g < t.gpus; ++g)
        c.gpu_ids.push_back(g);
      c.node = "profiling";
      c.steps = CommandSteps();
      c.checkpoint_dir = dir_ + "/" + stem + ".checkpoints";
      c.device_kind = t.device_kind;
      WorkerJob job = CommandJob(task_spec, c);
      job.stdout_path = log_path;
      job.stderr_path = log_path;
      return Running{
          index,         backend_.Start(job), "", log_path, std::chrono::steady_clock::now(),
          spawned_unix_s};
    }
    WorkerCall call;
    call.mode = WorkerCall::kSearch;
    call.task_path = task_path;
    call.technique = t.technique;
    call.gpus = t.gpus;
    call.out_path = result_path;
    call.device_kind = t.device_kind;
    call.memory_gib = t.memory_gib;
    call.threads = t.threads;
    call.timeout_s = std::max(10.0, o_.trial_timeout_s / 2);
    call.warmup = o_.warmup;
    call.measure = o_.measure;
    call.plugins = plugins_;
    WorkerJob job;
    job.argv = WorkerArgv(worker_, call);
    job.env = WorkerEnv();
    job.stdout_path = log_path;
    job.stderr_path = log_path;
    job.device_kind = t.device_kind;
    job.ranks = 1;  // the worker starts its own ranks
    for (int g = 0; g < t.gpus; ++g)
      job.gpu_ids.push_back(g);
    return Running{
        index,         backend_.Start(job), result_path, log_path, std::chrono::steady_clock::now(),
        spawned_unix_s};
  }

  // Fills the trial's outcome once its process has ended (or timed out).
  void Finish(Running& r, Trial& t, bool timed_out) {
    double ended_unix_s = UnixClock().Now();
    t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
    std::string tail = LastLines(r.log_path, 5);
    if (timed_out) {
      t.result = {};
      t.result.reason =
          "timed out after " + FormatDuration(o_.trial_timeout_s) + " (the trial was killed)";
      t.transient = true;
      return;
    }
    int status = *r.process.status();
    if (r.result_path.empty()) {  // a user's program
      t.result = CommandSearchResult(r.log_path, status, t.wall_s, CommandSteps(), Warmup());
      return;
    }
    if (ExitedCleanly(status)) {
      try {
        t.result = ReadSearchResult(r.result_path);
        SetLaunchCost(t.result, r.spawned_unix_s, ended_unix_s);
        return;
      } catch (const std::exception& e) {
        t.result = {};
        t.result.reason = std::string("worker broke the protocol: ") + e.what();
        t.transient = true;
        return;
      }
    }
    t.result = {};
    int code = ExitCode(status);
    t.result.reason = std::string(code == kWorkerBadInput ? "rejected by the worker"
                                  : code == kWorkerOom    ? "out of memory"
                                                          : "worker failed") +
                      " (" + DescribeExit(status) + ")" + (tail.empty() ? "" : ": " + tail);
    // A bad-input or out-of-memory exit is a property of the configuration.
    t.transient = code != kWorkerBadInput && code != kWorkerOom;
  }

 private:
  int Warmup() const { return o_.warmup >= 0 ? o_.warmup : 2; }
  long CommandSteps() const { return Warmup() + (o_.measure > 0 ? o_.measure : 5); }

  const ProfilerOptions& o_;
  LaunchBackend& backend_;
  std::string worker_;
  std::string dir_;
  std::vector<std::string> plugins_;
};

std::string KnobsText(const json& knobs) {
  return knobs.empty() ? "" : knobs.dump();
}

}  // namespace

double StepEstimate(const std::vector<double>& samples, double fallback) {
  std::vector<double> sorted;
  for (double s : samples)
    if (s > 0 && std::isfinite(s)) sorted.push_back(s);
  if (sorted.empty()) return fallback;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  double sum = 0;
  int kept = 0;
  for (double s : sorted) {
    if (s > 3 * median) break;
    sum += s;
    ++kept;
  }
  return sum / kept;
}

double StartCost(const SearchResult& r) {
  double extra = 0;
  for (double s : r.warmup_step_s)
    if (s > 0 && std::isfinite(s)) extra += s - r.step_s;
  return std::max(0.0, extra);
}

double RuntimeEstimate(const SearchResult& r, long steps, long checkpoint_every) {
  return r.step_s * static_cast<double>(steps) + StartCost(r) + r.launch_s +
         r.checkpoint_s * static_cast<double>(CheckpointWrites(steps, checkpoint_every));
}

std::vector<int> TechniqueGpuCounts(const std::string& technique, int lo, int hi) {
  std::vector<int> counts;
  for (int g = std::max(1, lo); g <= hi; ++g) {
    bool one_device = technique == "single" || technique == "spill";
    bool multi_device = technique == "ddp" || technique == "fsdp" || technique == "pipeline";
    if ((one_device && g != 1) || (multi_device && g < 2)) continue;
    counts.push_back(g);
  }
  return counts;
}

ProfileRun RunProfiler(const Workload& workload, const ProfilerOptions& options) {
  if (workload.cluster.nodes.empty()) {
    throw InputError(workload.source, 0, "cluster.from",
                     "the cluster comes from the Slurm allocation, which only `saturn run "
                     "--backend slurm` reads; to profile alone, list the nodes under "
                     "cluster.nodes");
  }
  auto started = std::chrono::steady_clock::now();
  ProfileRun run;
  bool engine_tasks = std::any_of(workload.tasks.begin(), workload.tasks.end(),
                                  [](const WorkloadTask& t) { return !t.is_command; });
  std::string worker = options.worker;
  if (worker.empty() && engine_tasks) worker = FindWorkerBinary();
  std::unique_ptr<LaunchBackend> local;
  LaunchBackend* backend = options.backend;
  if (!backend) {
    local = MakeLocalBackend();
    backend = local.get();
  }
  std::string dir = options.work_dir;
  if (dir.empty()) {
    dir = (fs::temp_directory_path() / ("saturn-profile-" + std::to_string(::getpid()))).string();
  }
  dir = fs::absolute(dir).lexically_normal().string();
  MakeDirectories(dir);

  // Techniques: the built-ins and the plug-ins' (checked by the worker before
  // any trial). A plug-in's trials are cached under its file's identity.
  std::vector<WorkerTechnique> available =
      engine_tasks ? AvailableTechniques(workload, worker) : AvailableTechniques(Workload{}, "");
  std::map<std::string, const WorkerTechnique*> technique_info;
  for (const WorkerTechnique& t : available)
    technique_info[t.name] = &t;
  auto build_of = [&](const std::string& technique) {
    auto it = technique_info.find(technique);
    if (it == technique_info.end() || it->second->plugin.empty()) return std::string();
    return "|plugin:" + it->second->plugin + "@" + WorkerBuild(it->second->plugin);
  };

  // Distinct trials and the tasks that use them.
  std::map<std::string, int> trial_index;
  std::map<std::string, json> trial_task;  // trial key -> a task spec to run it with
  const int max_gpus = workload.cluster.MaxGpusPerNode();
  for (const WorkloadTask& task : workload.tasks) {
    std::vector<int> mine;
    for (const std::string& technique : TaskTechniques(task, TechniqueNames(available))) {
      int hi = std::min(task.gpu_max, max_gpus);
      // A user's program says itself what it can run on: try every count.
      std::vector<int> counts = task.is_command ? TechniqueGpuCounts("", task.gpu_min, hi)
                                                : TechniqueGpuCounts(technique, task.gpu_min, hi);
      auto info = technique_info.find(technique);
      if (!task.is_command && info != technique_info.end() && !info->second->plugin.empty() &&
          info->second->one_process) {
        counts = TechniqueGpuCounts("single", task.gpu_min, hi);
      }
      for (int g : counts) {
        std::string id = task.trial_key + "|" + technique + "|" + std::to_string(g);
        auto [it, fresh] = trial_index.emplace(id, static_cast<int>(run.trials.size()));
        if (fresh) {
          Trial t;
          t.trial_key = task.trial_key;
          t.technique = technique;
          t.gpus = g;
          t.example_task = task.name;
          DeviceFor(workload.cluster, g, &t);
          run.trials.push_back(std::move(t));
          trial_task.emplace(task.trial_key, task.spec);
        }
        mine.push_back(it->second);
      }
    }
    run.task_trials.push_back(std::move(mine));
  }

  std::optional<ProfileCache> cache;
  if (options.use_cache) {
    cache = ProfileCache::Open(options.cache_path.empty() ? ProfileCache::DefaultPath()
                                                          : options.cache_path);
  }
  std::string build = worker.empty() ? "" : WorkerBuild(worker);
  std::vector<int> todo;
  for (int i = 0; i < static_cast<int>(run.trials.size()); ++i) {
    Trial& t = run.trials[i];
    if (cache && !options.refresh) {
      if (auto hit = cache->Get(CacheKey(t, options, build + build_of(t.technique)))) {
        t.result = SearchResultFromJson(*hit);
        t.cached = true;
        ++run.cache_hits;
        continue;
      }
    }
    todo.push_back(i);
  }

  Progress progress("profiling", static_cast<long>(todo.size()));
  if (!options.progress) Progress::SetQuiet(true);
  TrialRunner runner(options, *backend, worker, dir, workload.plugins);
  std::vector<TrialRunner::Running> active;
  size_t next = 0;
  long done = 0;
  auto describe = [&](const Trial& t) {
    return t.example_task + " " + t.technique + " x" + std::to_string(t.gpus);
  };
  while (next < todo.size() || !active.empty()) {
    while (next < todo.size() && static_cast<int>(active.size()) < std::max(1, options.parallel)) {
      int i = todo[next++];
      progress.Update(done, "running " + describe(run.trials[i]));
      active.push_back(runner.Start(i, run.trials[i], trial_task.at(run.trials[i].trial_key)));
    }
    for (size_t a = 0; a < active.size();) {
      TrialRunner::Running& r = active[a];
      double age =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
      bool ended = r.process.WaitFor(0.02).has_value();
      bool timed_out = !ended && age > options.trial_timeout_s;
      if (!ended && !timed_out) {
        ++a;
        continue;
      }
      if (timed_out) {
        r.process.KillGroup();
        r.process.Wait();
      }
      Trial& t = run.trials[r.trial];
      runner.Finish(r, t, timed_out);
      ++run.trials_run;
      ++done;
      if (cache && !t.transient)
        cache->Put(CacheKey(t, options, build + build_of(t.technique)),
                   SearchResultToJson(t.result));
      progress.Update(done, describe(t) + (t.result.feasible
                                               ? ": " + FormatFixed(t.result.step_s, 3) + " s/step"
                                               : ": infeasible"));
      active.erase(active.begin() + static_cast<long>(a));
    }
  }
  progress.Finish(std::to_string(run.trials_run) + " trials run, " +
                  std::to_string(run.cache_hits) + " from the cache");
  if (!options.progress) Progress::SetQuiet(false);

  // Step times to extrapolate from (the cache keeps the worker's samples).
  for (Trial& t : run.trials) {
    if (t.result.feasible) t.result.step_s = StepEstimate(t.result.step_samples_s, t.result.step_s);
  }

  // The table: one row per feasible (task, technique, GPUs).
  run.checkpoint_every = options.checkpoint_every;
  run.table.extra_columns = {"step_s",       "steps",           "start_cost_s", "launch_s",
                             "checkpoint_s", "peak_memory_gib", "knobs"};
  for (size_t k = 0; k < workload.tasks.size(); ++k) {
    const WorkloadTask& task = workload.tasks[k];
    std::string reasons;
    for (int i : run.task_trials[k]) {
      const Trial& t = run.trials[i];
      if (!t.result.feasible) {
        reasons += "\n  " + t.technique + " x" + std::to_string(t.gpus) + ": " + t.result.reason;
        continue;
      }
      double peak = 0;
      for (double b : t.result.peak_memory_bytes)
        peak = std::max(peak, b);
      ProfileRow row;
      row.task = task.name;
      row.technique = t.technique;
      row.gpus = t.gpus;
      row.runtime_s = RuntimeEstimate(t.result, task.steps, options.checkpoint_every);
      row.extra = {FormatNumber(t.result.step_s),
                   std::to_string(task.steps),
                   FormatNumber(StartCost(t.result)),
                   FormatNumber(t.result.launch_s),
                   FormatNumber(t.result.checkpoint_s),
                   FormatFixed(peak / (1 << 30), 3),
                   KnobsText(t.result.knobs)};
      run.table.rows.push_back(std::move(row));
    }
    bool any = std::any_of(run.task_trials[k].begin(), run.task_trials[k].end(),
                           [&](int i) { return run.trials[i].result.feasible; });
    if (!any) {
      throw InputError(
          workload.source, task.line, "task " + Quote(task.name),
          "cannot run on this cluster: no configuration is feasible" +
              (reasons.empty() ? std::string(" (no configuration to try)") : ":" + reasons));
    }
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.work_dir.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return run;
}

std::string ProfileSummary(const Workload& workload, const ProfileRun& run) {
  std::ostringstream out;
  out << "profile: " << workload.tasks.size() << " tasks, " << run.trials.size()
      << " distinct trials (" << run.trials_run << " run, " << run.cache_hits
      << " from the cache) in " << FormatDuration(run.wall_s) << "\n";
  for (size_t k = 0; k < workload.tasks.size(); ++k) {
    const WorkloadTask& task = workload.tasks[k];
    out << "  " << task.name << " (" << task.steps << " steps)\n";
    std::map<int, const Trial*> best;
    std::map<std::string, std::vector<std::string>> failures;  // reason -> configurations
    for (int i : run.task_trials[k]) {
      const Trial& t = run.trials[i];
      if (t.result.feasible) {
        const Trial*& b = best[t.gpus];
        if (!b || t.result.step_s < b->result.step_s) b = &t;
      } else {
        failures[t.result.reason].push_back(t.technique + " x" + std::to_string(t.gpus));
      }
    }
    for (const auto& [gpus, t] : best) {
      out << "    " << gpus << " GPU" << (gpus > 1 ? "s" : " ") << ": best " << t->technique << " "
          << FormatDuration(RuntimeEstimate(t->result, task.steps, run.checkpoint_every)) << " ("
          << FormatFixed(t->result.step_s, 4) << " s/step)\n";
    }
    for (const auto& [reason, configs] : failures) {
      std::string list;
      for (const std::string& c : configs)
        list += (list.empty() ? "" : ", ") + c;
      out << "    infeasible " << list << ": " << reason << "\n";
    }
  }
  return out.str();
}

}  // namespace saturn
