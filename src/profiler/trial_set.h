// The profiler's trials as it builds them up (profiler.cc), and
// `--types estimate`'s estimation of other GPU types from one
// (ProfilerOptions::estimate_types). Internal to src/profiler.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "profiler/profiler.h"

namespace saturn {

// Device settings of a trial on `gpus` devices of `gpu_type`: the tightest
// node of that type that has that many (smallest memory), so a configuration
// is only called feasible if it fits wherever the planner may put it.
void DeviceFor(const Cluster& cluster, int gpus, const std::string& gpu_type, Trial* t);

// The run's distinct trials (trial key x technique x GPU count x type) and
// each task's, built up configuration by configuration.
class TrialSet {
 public:
  TrialSet(const Workload& workload, ProfileRun& run) : workload_(workload), run_(run) {
    run_.task_trials.assign(workload.tasks.size(), {});
  }

  // Task k's configuration, measured: the trial it shares with tasks of the
  // same trial key.
  int Add(size_t k, const std::string& technique, int gpus, const std::string& type) {
    const WorkloadTask& task = workload_.tasks[k];
    std::string id = task.trial_key + "|" + technique + "|" + std::to_string(gpus) + "|" + type;
    auto [it, fresh] = index_.emplace(id, static_cast<int>(run_.trials.size()));
    if (fresh) {
      Trial t;
      t.trial_key = task.trial_key;
      t.technique = technique;
      t.gpus = gpus;
      t.example_task = task.name;
      DeviceFor(workload_.cluster, gpus, type, &t);
      run_.trials.push_back(std::move(t));
      trial_task_.emplace(task.trial_key, task.spec);
    }
    run_.task_trials[k].push_back(it->second);
    return it->second;
  }

  // Task k's configuration, scaled from another type's (`made` builds it
  // the first time a trial key asks).
  template <typename Make>
  void AddEstimated(size_t k, const std::string& technique, int gpus, const std::string& type,
                    Make made) {
    std::string id = workload_.tasks[k].trial_key + "|" + technique + "|" + std::to_string(gpus) +
                     "|" + type + "|estimated";
    auto [it, fresh] = index_.emplace(id, static_cast<int>(run_.trials.size()));
    if (fresh) {
      run_.trials.push_back(made());
      ++run_.estimated;
    }
    run_.task_trials[k].push_back(it->second);
  }

  // The measured trial of a configuration, or -1.
  int Find(const std::string& trial_key, const std::string& technique, int gpus,
           const std::string& type) const {
    auto it = index_.find(trial_key + "|" + technique + "|" + std::to_string(gpus) + "|" + type);
    return it == index_.end() ? -1 : it->second;
  }

  // Trial key -> a task spec to run that trial with.
  const std::map<std::string, nlohmann::json>& TrialTasks() const { return trial_task_; }

 private:
  const Workload& workload_;
  ProfileRun& run_;
  std::map<std::string, int> index_;
  std::map<std::string, nlohmann::json> trial_task_;
};

// A configuration a task wants on a type other than the reference, left to
// estimation (ProfilerOptions::estimate_types).
struct Wanted {
  size_t task = 0;
  std::string technique;
  int gpus = 1;
  std::string type;
};

// The type every configuration is measured on when the others are
// estimated: the one with the largest node, so every GPU count is measured;
// on a tie the one whose devices hold the most memory (0 GiB: unlimited),
// so what does not fit there fits nowhere and needs no trial elsewhere;
// then the first named.
std::string ReferenceType(const Cluster& cluster);

// --types estimate, after the reference type's trials ran: per trial key and
// other type, one configuration measured there (the anchor: of the
// reference's feasible ones whose memory fits, the one whose trial took the
// least time there, then the fewest GPUs, then the fastest steps),
// then every other configuration scaled by the anchor's ratio of step
// times, or measured where the scale cannot say. `measure(from)` runs the
// trials added from index `from` on.
// A configuration the profile cache holds a measurement of is measured
// (read from the cache), never estimated: `cached(trial)` says whether it
// does.
void EstimateOtherTypes(const Workload& workload, const std::vector<Wanted>& wanted,
                        TrialSet& trials, ProfileRun& run,
                        const std::function<void(size_t from)>& measure,
                        const std::function<bool(const Trial& trial)>& cached);

}  // namespace saturn
