// A seeded generator of online workloads shaped like Microsoft's Philly trace:
// bursty arrivals, mostly one-GPU jobs with a heavy tail of larger ones, and
// heavy-tailed durations. Jobs are moldable: each one is a Gavel job type
// whose measured throughputs on 1/2/4/8 GPUs give its runtime at every GPU
// count it can use, so a planner may give it more or fewer GPUs than its
// owner asked for.
//
// Arrivals follow a two-state Markov-modulated Poisson process (calm and
// burst periods, each of exponential length, with Poisson arrivals at a rate
// per state). The defaults of PhillyModel were derived once from
// /work/shared/data/philly/philly_jobs.csv; bench/README.md gives the
// derivation. The generator never reads that file.
//
//   ArrivalOptions o{.jobs = 300, .nodes = 4, .gpus_per_node = 8, .load = 0.8, .seed = 1};
//   Instance inst = PhillyLikeInstance(LoadGavelThroughputs(path), o);
//   std::vector<double> arrival = ArrivalTimes(inst.profile);  // per task
#pragma once

#include <cstdint>
#include <vector>

#include "bench/common/instances.h"

namespace saturn::bench {

struct PhillyModel {
  // Share of jobs asking for 1, 2, 4 and 8 GPUs (larger requests are counted
  // as 8: one job never spans nodes here).
  double share_1 = 0.9317, share_2 = 0.0221, share_4 = 0.0227, share_8 = 0.0235;
  // Lognormal durations at the requested GPU count: median and sigma of the
  // log, for one-GPU jobs and for larger ones, truncated to [min, max].
  double median_1gpu_s = 1117, sigma_1gpu = 1.92;
  double median_multi_s = 4581, sigma_multi = 3.67;
  double min_duration_s = 60, max_duration_s = 86400;
  // Mean lengths of calm and burst periods, and how many times the calm
  // arrival rate a burst brings.
  double calm_mean_s = 10.3 * 3600, burst_mean_s = 1.9 * 3600;
  double burst_rate_ratio = 14.9;
};

struct ArrivalOptions {
  int jobs = 300;
  int nodes = 4;
  int gpus_per_node = 8;
  // Offered load: GPU-seconds the jobs ask for (at their requested GPU
  // counts) per second of the arrival window, over the cluster's GPUs. It
  // sets the mean arrival rate; bursts exceed it several times over.
  double load = 0.8;
  uint64_t seed = 1;
  PhillyModel model{};
};

// Tasks are named job0, job1, ... in order of arrival. Profile rows are
// technique ddp at every GPU count the job type has (up to gpus_per_node),
// with extra columns steps, job_type, requested_gpus and arrival_s.
Instance PhillyLikeInstance(const std::vector<GavelJob>& jobs, const ArrivalOptions& options);

// Every task's arrival time from the profile's arrival_s column (0 where a
// task has none), in the order of profile.TaskNames(), which is the task
// order of ProblemFromProfile.
std::vector<double> ArrivalTimes(const ProfileTable& profile);

}  // namespace saturn::bench
