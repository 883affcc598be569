#include "profiler/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/gpu_specs.h"
#include "common/process.h"
#include "common/progress.h"
#include "profiler/cache.h"
#include "profiler/pack_trials.h"
#include "profiler/table.h"
#include "profiler/trial_runner.h"
#include "profiler/trial_set.h"

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
  // Estimates are keyed by what they assume; measurements as they always were.
  if (o.estimate != "auto") key["estimate"] = o.estimate;
  if (t.speed_fp32 || t.speed_bf16) {
    const DeviceSpeed& any = t.speed_bf16 ? *t.speed_bf16 : *t.speed_fp32;
    key["speed"] = {t.speed_fp32 ? t.speed_fp32->tflops : 0.0,
                    t.speed_bf16 ? t.speed_bf16->tflops : 0.0, any.link_gb_s};
  }
  // Devices of two named types can share settings (two CUDA GPUs): keyed apart.
  if (!t.gpu_type.empty()) key["gpu_type"] = t.gpu_type;
  return key.dump();
}

// Techniques the tasks may use: the built-ins and the plug-ins' (checked by
// the worker before any trial).
class TechniqueCatalogue {
 public:
  explicit TechniqueCatalogue(std::vector<WorkerTechnique> available)
      : available_(std::move(available)) {
    for (const WorkerTechnique& t : available_)
      by_name_[t.name] = &t;
  }
  TechniqueCatalogue(const TechniqueCatalogue&) = delete;
  TechniqueCatalogue& operator=(const TechniqueCatalogue&) = delete;

  std::vector<std::string> Names() const { return TechniqueNames(available_); }
  // Those whose workers train packs (engine Technique::TakesPacks).
  std::set<std::string> TakingPacks() const {
    std::set<std::string> out;
    for (const WorkerTechnique& t : available_)
      if (t.takes_packs) out.insert(t.name);
    return out;
  }

  // The GPU counts in [lo, hi] a task's trials try with `technique`. A
  // user's program says itself what it can run on: every count, or those
  // its template serves (`gpus:`).
  std::vector<int> Counts(const WorkloadTask& task, const std::string& technique, int lo,
                          int hi) const {
    auto it = by_name_.find(technique);
    if (!task.is_command && it != by_name_.end()) return GpuCounts(*it->second, lo, hi);
    std::vector<int> counts = GpuCounts(WorkerTechnique{}, lo, hi);
    auto served = task.command_gpus.find(technique);
    if (task.is_command && served != task.command_gpus.end()) {
      const std::vector<int>& only = served->second;
      std::erase_if(counts,
                    [&](int g) { return !std::binary_search(only.begin(), only.end(), g); });
    }
    return counts;
  }

  // How simple a technique is for a task (lower: simpler): the worker's
  // order (built-ins, then plug-ins); a command task's, its templates' order.
  int Rank(const WorkloadTask& task, const std::string& technique) const {
    auto written = std::find(task.techniques.begin(), task.techniques.end(), technique);
    int in_task = static_cast<int>(written - task.techniques.begin());
    if (task.is_command) return in_task;
    for (size_t i = 0; i < available_.size(); ++i)
      if (available_[i].name == technique) return static_cast<int>(i);
    return static_cast<int>(available_.size()) + in_task;
  }

  // A plug-in's trials are cached under its file's identity; "" for built-ins.
  std::string PluginBuild(const std::string& technique) const {
    auto it = by_name_.find(technique);
    if (it == by_name_.end() || it->second->plugin.empty()) return std::string();
    return "|plugin:" + it->second->plugin + "@" + WorkerBuild(it->second->plugin);
  }

 private:
  std::vector<WorkerTechnique> available_;
  std::map<std::string, const WorkerTechnique*> by_name_;
};

// The profile cache as the profiler uses it (absent when caching is off):
// keyed by trial, options and the worker's and plug-in's builds.
class TrialCache {
 public:
  TrialCache(const ProfilerOptions& options, std::string worker_build,
             const TechniqueCatalogue& techniques)
      : options_(options), worker_build_(std::move(worker_build)), techniques_(techniques) {
    if (options.use_cache) {
      cache_ = ProfileCache::Open(options.cache_path.empty() ? ProfileCache::DefaultPath()
                                                             : options.cache_path);
    }
  }

  // Fills the trial from the cache; false on a miss (or a refresh).
  bool Fill(Trial& t) {
    if (!cache_ || options_.refresh) return false;
    auto hit = cache_->Get(Key(t));
    if (!hit) return false;
    t.result = SearchResultFromJson(*hit);
    t.cached = true;
    return true;
  }

  // Keeps a finished trial's result, unless it may differ next time.
  void Keep(const Trial& t) {
    if (cache_ && !t.transient) cache_->Put(Key(t), ToJson(t.result));
  }

 private:
  std::string Key(const Trial& t) const {
    return CacheKey(t, options_, worker_build_ + techniques_.PluginBuild(t.technique));
  }

  const ProfilerOptions& options_;
  std::string worker_build_;
  const TechniqueCatalogue& techniques_;
  std::optional<ProfileCache> cache_;
};

void RequireListedCluster(const Workload& workload) {
  if (workload.cluster.nodes.empty()) {
    throw InputError(workload.source, 0, "cluster.from",
                     "the cluster comes from the Slurm allocation, which only `saturn run "
                     "--backend slurm` reads; to profile alone, list the nodes under "
                     "cluster.nodes");
  }
}

// Every trial is estimated (--estimate): every node must say how fast its
// devices are, its gpu_type's published figures or its own tflops.
void RequireSpeeds(const Workload& workload, const ProfilerOptions& options) {
  if (options.estimate != "always") return;
  for (size_t i = 0; i < workload.cluster.nodes.size(); ++i) {
    const ClusterNode& n = workload.cluster.nodes[i];
    if (NodeSpeed(n, "bf16") && NodeSpeed(n, "fp32")) continue;
    std::string field = "cluster.nodes[" + std::to_string(i) + "]";
    throw InputError(
        workload.source, 0, field + (n.gpu_type.empty() ? ".gpu_type" : ".tflops"),
        "--estimate needs the speed of the devices of node " + Quote(n.name) + ": " +
            (n.gpu_type.empty() ? "no gpu_type"
                                : "no published figures for gpu_type " + Quote(n.gpu_type)) +
            " (known: " + GpuSpecNames() +
            "); declare tflops (dense bf16 TFLOP/s of one device) and link_gb_s");
  }
}

// The folder for trial files: the options', or a fresh temporary one.
std::string TrialDir(const ProfilerOptions& options) {
  std::string dir = options.work_dir;
  if (dir.empty()) {
    dir = (fs::temp_directory_path() / ("saturn-profile-" + std::to_string(::getpid()))).string();
  }
  dir = fs::absolute(dir).lexically_normal().string();
  MakeDirectories(dir);
  return dir;
}

// Every task's configurations: added to `trials` to be measured, or (when
// estimating other types) into the returned list to be estimated.
std::vector<Wanted> EnumerateTrials(const Workload& workload, const TechniqueCatalogue& techniques,
                                    bool estimate_types, TrialSet& trials) {
  std::vector<Wanted> wanted;
  const std::vector<std::string> types = workload.cluster.GpuTypes();
  const std::string reference = ReferenceType(workload.cluster);
  const int reference_max = workload.cluster.MaxGpusPerNode(reference);
  for (size_t k = 0; k < workload.tasks.size(); ++k) {
    const WorkloadTask& task = workload.tasks[k];
    for (const std::string& type : types) {
      const int max_gpus = workload.cluster.MaxGpusPerNode(type);
      for (const std::string& technique : TaskTechniques(task, techniques.Names())) {
        int hi = std::min(task.gpu_max, max_gpus);
        for (int g : techniques.Counts(task, technique, task.gpu_min, hi)) {
          if (estimate_types && types.size() > 1 && type != reference && g <= reference_max) {
            wanted.push_back({k, technique, g, type});
          } else {
            trials.Add(k, technique, g, type);
          }
        }
      }
    }
  }
  return wanted;
}

// A gpu_range above every node is profiled up to the largest node (a task
// runs on one node): said once, naming the first such task.
void NoteRangesAboveTheCluster(const Workload& workload) {
  const int max_gpus = workload.cluster.MaxGpusPerNode();
  std::vector<const WorkloadTask*> above;
  for (const WorkloadTask& task : workload.tasks) {
    if (task.gpu_range_given && task.gpu_max > max_gpus) above.push_back(&task);
  }
  if (above.empty()) return;
  std::string others =
      above.size() > 1 ? " (and " + Plural(static_cast<long>(above.size()) - 1, "other") + ")" : "";
  std::fprintf(stderr,
               "saturn: note: gpu_range of task '%s'%s goes up to %d GPUs, but a task runs on one "
               "node and the largest has %d: profiled up to %d\n",
               above[0]->name.c_str(), others.c_str(), above[0]->gpu_max, max_gpus, max_gpus);
}

// The trials from `from` on to measure that the cache does not hold: a
// rider's carrier runs when the cache misses either.
std::vector<int> TrialsToRun(ProfileRun& run, TrialCache& cache, size_t from) {
  std::vector<int> todo;
  std::set<int> carriers;
  for (size_t i = from; i < run.trials.size(); ++i) {
    Trial& t = run.trials[i];
    if (!t.estimated_from.empty()) continue;
    if (cache.Fill(t)) {
      ++run.cache_hits;
      continue;
    }
    if (t.carried_by >= 0) {
      carriers.insert(t.carried_by);
    } else {
      todo.push_back(static_cast<int>(i));
    }
  }
  for (int c : carriers) {
    if (std::find(todo.begin(), todo.end(), c) == todo.end()) todo.push_back(c);
  }
  // A carrier's riders are measured again with it, and the carrier with
  // them: none counts as from the cache.
  for (int c : todo) {
    std::vector<int> again = {c};
    for (auto [members, i] : run.trials[c].riders)
      again.push_back(i);
    for (int i : again) {
      if (!run.trials[i].cached) continue;
      run.trials[i].cached = false;
      --run.cache_hits;
    }
  }
  return todo;
}

// A rider's result from its carrier's process: its size's entry (its own
// setup in the launch cost); the carrier's failure when the carrier failed;
// else not measured: a smaller size did not fit, or the carrier was
// estimated (both cached: so they stay), or the list ended without a
// verdict (a smaller array failed: not cached, tried again next time).
void FillRider(const Trial& carrier, int members, Trial& rider) {
  rider.wall_s = 0;
  for (const WorkerSearchResult& size : carrier.result.pack_sizes) {
    if (size.members != members) continue;
    rider.result = size;
    rider.result.launch_s =
        std::max(0.0, carrier.result.launch_s - carrier.result.setup_s) + size.setup_s;
    rider.transient = false;
    return;
  }
  rider.result = WorkerSearchResult{};
  rider.result.technique = carrier.result.technique;
  rider.result.gpus = carrier.result.gpus;
  rider.result.members = members;
  rider.transient = carrier.transient;
  const std::vector<WorkerSearchResult>& sizes = carrier.result.pack_sizes;
  if (!carrier.result.feasible) {
    rider.result.reason = carrier.result.reason;
  } else if (!carrier.result.estimated.empty()) {
    rider.result.reason = "not measured: the task's trial was estimated, not run";
  } else if (!sizes.empty() && !sizes.back().feasible) {
    rider.result.reason = "not measured: a smaller array did not fit";
  } else {
    rider.result.reason =
        "not measured: the worker measured no array of this size (its log says why)";
    rider.transient = true;
  }
}

std::string Describe(const Trial& t) {
  return t.example_task + " " + t.technique + " x" + std::to_string(t.gpus) +
         (t.gpu_type.empty() ? "" : " on " + t.gpu_type);
}

// Runs the trials in `todo`, options.parallel at a time, each with a timeout.
void RunTrials(std::vector<int> todo, const std::map<std::string, json>& trial_task,
               const ProfilerOptions& options, TrialRunner& runner, TrialCache& cache,
               ProfileRun& run, const char* label) {
  if (todo.empty()) return;
  Progress progress(label, static_cast<long>(todo.size()));
  if (!options.progress) Progress::SetQuiet(true);
  std::vector<TrialRunner::Running> active;
  std::set<int> retried;
  size_t next = 0;
  long done = 0;
  while (next < todo.size() || !active.empty()) {
    while (next < todo.size() && static_cast<int>(active.size()) < std::max(1, options.parallel)) {
      std::optional<TrialDevices::Lease> lease;
      if (options.devices) {
        // The first trial left that fits the devices free now.
        for (size_t k = next; k < todo.size() && !lease; ++k) {
          lease = options.devices->Acquire(run.trials[todo[k]].gpus, run.trials[todo[k]].gpu_type);
          if (lease) std::swap(todo[next], todo[k]);
        }
        if (!lease) break;  // every device is busy: ask again after a pause
      }
      int i = todo[next];
      ++next;
      progress.Update(done, "running " + Describe(run.trials[i]));
      active.push_back(
          runner.Start(i, run.trials[i], trial_task.at(run.trials[i].trial_key), lease));
    }
    if (active.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    for (size_t a = 0; a < active.size();) {
      TrialRunner::Running& r = active[a];
      double age = runner.Age(r);
      bool ended = r.process.WaitFor(0.02).has_value();
      bool timed_out = !ended && age > TrialTimeout(run.trials[r.trial], options);
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
      if (r.lease) options.devices->Release(*r.lease);
      // A worker that crashed or was killed (not a time-out, not a verdict
      // on the configuration) runs once more before its configuration is
      // dropped: a task's only one would otherwise fail the whole run.
      if (t.transient && !timed_out && retried.insert(r.trial).second) {
        todo.push_back(r.trial);
        progress.Update(done, Describe(t) + ": failed, trying again");
        active.erase(active.begin() + static_cast<long>(a));
        continue;
      }
      ++run.trials_run;
      ++done;
      cache.Keep(t);
      for (auto [members, i] : t.riders) {
        FillRider(t, members, run.trials[i]);
        ++run.trials_run;
        cache.Keep(run.trials[i]);
      }
      std::string how = t.result.estimated.empty() ? "" : " (estimated)";
      progress.Update(done,
                      Describe(t) + (t.result.feasible
                                         ? ": " + FormatFixed(t.result.step_s, 3) + " s/step" + how
                                         : ": infeasible" + how));
      active.erase(active.begin() + static_cast<long>(a));
    }
  }
  progress.Finish(std::to_string(run.trials_run) + " trials run, " +
                  std::to_string(run.cache_hits) + " from the cache");
  if (!options.progress) Progress::SetQuiet(false);
}
// Step times to extrapolate from, and their noise (the cache keeps the
// worker's samples), for the trials from `from` on.
void Settle(ProfileRun& run, size_t from) {
  for (size_t i = from; i < run.trials.size(); ++i) {
    Trial& t = run.trials[i];
    if (!t.result.estimated.empty() && t.estimated_from.empty()) {
      t.estimated_from = t.result.estimated;  // analytic: the worker's figures stand
      ++run.analytic;
      continue;
    }
    if (!t.result.feasible || !t.estimated_from.empty()) continue;
    t.result.step_s = StepEstimate(t.result.step_samples_s, t.result.step_s);
    t.step_se_s = StepStandardError(t.result.step_samples_s);
  }
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

double TrialTimeout(const Trial& t, const ProfilerOptions& o) {
  return o.trial_timeout_s * static_cast<double>(1 + t.riders.size());
}

double StartCost(const WorkerSearchResult& r) {
  double extra = 0;
  for (double s : r.warmup_step_s)
    if (s > 0 && std::isfinite(s)) extra += s - r.step_s;
  return std::max(0.0, extra);
}

long EvalEvery(const WorkloadTask& task) {
  if (task.is_command || !task.spec.contains("eval")) return 0;
  return task.spec["eval"].value("every", 0L);
}

double StepWithEvaluation(const WorkerSearchResult& r, long eval_every) {
  return eval_every > 0 ? r.step_s + r.eval_s / static_cast<double>(eval_every) : r.step_s;
}

double RuntimeEstimate(const WorkerSearchResult& r, long steps, long checkpoint_every) {
  return r.step_s * static_cast<double>(steps) + StartCost(r) + r.launch_s +
         r.checkpoint_s * static_cast<double>(CheckpointWrites(steps, checkpoint_every));
}

ProfileRun RunProfiler(const Workload& workload, const ProfilerOptions& options) {
  RequireListedCluster(workload);
  RequireSpeeds(workload, options);
  const SteadyClock steady;
  const Clock& clock = options.clock ? *options.clock : steady;
  const double started = clock.Now();
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
  const std::string dir = TrialDir(options);

  const TechniqueCatalogue techniques(engine_tasks ? AvailableTechniques(workload, worker)
                                                   : std::vector<WorkerTechnique>{});
  TrialSet trials(workload, run);
  const std::vector<Wanted> wanted =
      EnumerateTrials(workload, techniques, options.estimate_types, trials);
  if (options.progress) NoteRangesAboveTheCluster(workload);
  TrialCache cache(options, worker.empty() ? "" : WorkerBuild(worker), techniques);
  TrialRunner runner(options, clock, *backend, worker, dir, workload.plugins);
  auto measure = [&](size_t from, const char* label) {
    RunTrials(TrialsToRun(run, cache, from), trials.TrialTasks(), options, runner, cache, run,
              label);
    Settle(run, from);
  };
  // A table's arrays are measured in the process of their member's own
  // trial (riders of it: one start-up for every size).
  if (options.packs && options.estimate != "always") AddArrayTrials(workload, run);
  measure(0, "profiling");
  EstimateOtherTypes(
      workload, wanted, trials, run, [&](size_t from) { measure(from, "profiling other types"); },
      [&](const Trial& trial) {
        Trial probe = trial;
        return cache.Fill(probe);
      });

  std::vector<PackClassTrials> packs;
  if (options.packs) {
    // In rounds: each size only where the one before showed it can matter.
    std::map<std::string, json> specs = trials.TrialTasks();
    packs = PackClasses(workload, run, techniques.TakingPacks());
    for (size_t from = run.trials.size(); AddPackTrials(workload, packs, run, &specs);
         from = run.trials.size()) {
      RunTrials(TrialsToRun(run, cache, from), specs, options, runner, cache, run,
                "profiling packs");
      Settle(run, from);
      AfterPackRound(packs, run);
    }
  }
  BuildTable(
      workload, options,
      [&](const WorkloadTask& task, const std::string& name) {
        return techniques.Rank(task, name);
      },
      run);
  AddPackColumns(workload, packs, run);
  run.wall_s = clock.Now() - started;
  if (options.work_dir.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return run;
}

}  // namespace saturn
