#include "bench/common/arrivals.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <stdexcept>

#include "common/error.h"
#include "common/format.h"

namespace saturn::bench {
namespace {

double Throughput(const GavelJob& job, int gpus) {
  for (const auto& [g, tput] : job.steps_per_s) {
    if (g == gpus) return tput;
  }
  return 0.0;
}

// The requested GPU count, drawn from the trace's mix and lowered to the
// largest count at or below it that some job type runs on and a node holds.
int DrawGpus(const PhillyModel& m, const std::vector<GavelJob>& jobs, int gpus_per_node,
             std::mt19937_64& rng) {
  const std::pair<int, double> mix[] = {
      {1, m.share_1}, {2, m.share_2}, {4, m.share_4}, {8, m.share_8}};
  double total = 0;
  for (const auto& [g, share] : mix)
    total += share;
  double u = std::uniform_real_distribution<double>(0.0, total)(rng);
  int gpus = 1;
  for (const auto& [g, share] : mix) {
    gpus = g;
    if (u < share) break;
    u -= share;
  }
  for (; gpus > 1; gpus /= 2) {
    if (gpus > gpus_per_node) continue;
    for (const GavelJob& job : jobs) {
      if (Throughput(job, gpus) > 0) return gpus;
    }
  }
  return 1;
}

// Lognormal with the given median and log-sigma, truncated to [lo, hi] by
// rejection (the trace's very short jobs are mostly failures, and jobs of
// several days would set the makespan whatever the scheduler does).
double DrawDuration(double median, double sigma, double lo, double hi, std::mt19937_64& rng) {
  std::lognormal_distribution<double> dist(std::log(median), sigma);
  for (;;) {
    double d = dist(rng);
    if (d >= lo && d <= hi) return d;
  }
}

// `count` arrival times of a two-state Markov-modulated Poisson process whose
// long-run mean rate is `mean_rate`, the first one shifted to 0.
std::vector<double> DrawArrivals(const PhillyModel& m, int count, double mean_rate,
                                 std::mt19937_64& rng) {
  const double burst_share = m.burst_mean_s / (m.calm_mean_s + m.burst_mean_s);
  const double calm_rate = mean_rate / ((1 - burst_share) + m.burst_rate_ratio * burst_share);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto exponential = [&](double mean) { return -mean * std::log(1.0 - unit(rng)); };
  bool burst = unit(rng) < burst_share;  // start in the stationary distribution
  double t = 0, state_end = exponential(burst ? m.burst_mean_s : m.calm_mean_s);
  std::vector<double> out;
  while (static_cast<int>(out.size()) < count) {
    double rate = burst ? calm_rate * m.burst_rate_ratio : calm_rate;
    double next = t + exponential(1.0 / rate);
    if (next < state_end) {
      t = next;
      out.push_back(t);
      continue;
    }
    // Memorylessness: restarting the arrival clock at a state change is exact.
    t = state_end;
    burst = !burst;
    state_end = t + exponential(burst ? m.burst_mean_s : m.calm_mean_s);
  }
  double first = out.empty() ? 0.0 : out.front();
  for (double& a : out)
    a = std::round((a - first) * 10) / 10;
  return out;
}

}  // namespace

Instance PhillyLikeInstance(const std::vector<GavelJob>& jobs, const ArrivalOptions& options) {
  if (jobs.empty()) throw std::invalid_argument("PhillyLikeInstance: no job types");
  if (options.jobs < 1 || options.nodes < 1 || options.gpus_per_node < 1 || !(options.load > 0)) {
    throw std::invalid_argument("PhillyLikeInstance: jobs, nodes, GPUs and load must be positive");
  }
  const PhillyModel& m = options.model;
  Instance inst;
  inst.name = "philly-" + std::to_string(options.jobs) + "x" + std::to_string(options.nodes) +
              "n-s" + std::to_string(options.seed);
  for (int n = 0; n < options.nodes; ++n) {
    inst.cluster.nodes.push_back(
        {"node" + std::to_string(n), options.gpus_per_node, std::nullopt, "cpu", 1, ""});
  }
  std::mt19937_64 rng(options.seed);

  struct Drawn {
    const GavelJob* type;
    int gpus;
    double duration_s;
  };
  std::vector<Drawn> drawn;
  double work = 0;  // GPU-seconds asked for
  for (int k = 0; k < options.jobs; ++k) {
    int gpus = DrawGpus(m, jobs, options.gpus_per_node, rng);
    std::vector<const GavelJob*> fitting;
    for (const GavelJob& job : jobs) {
      if (Throughput(job, gpus) > 0) fitting.push_back(&job);
    }
    if (fitting.empty()) throw std::invalid_argument("PhillyLikeInstance: no one-GPU job type");
    const GavelJob* type =
        fitting[std::uniform_int_distribution<size_t>(0, fitting.size() - 1)(rng)];
    double duration = gpus == 1 ? DrawDuration(m.median_1gpu_s, m.sigma_1gpu, m.min_duration_s,
                                               m.max_duration_s, rng)
                                : DrawDuration(m.median_multi_s, m.sigma_multi, m.min_duration_s,
                                               m.max_duration_s, rng);
    drawn.push_back({type, gpus, duration});
    work += gpus * duration;
  }
  // The arrival window that offers `load` of the cluster's GPU-seconds.
  const double window = work / (options.load * options.nodes * options.gpus_per_node);
  std::vector<double> arrival =
      DrawArrivals(m, options.jobs, options.jobs / std::max(window, 1.0), rng);

  inst.profile.extra_columns = {"steps", "job_type", "requested_gpus", "arrival_s"};
  for (int k = 0; k < options.jobs; ++k) {
    const Drawn& d = drawn[k];
    double steps = std::max(1.0, std::round(d.duration_s * Throughput(*d.type, d.gpus)));
    for (const auto& [g, tput] : d.type->steps_per_s) {
      if (g > options.gpus_per_node) continue;
      ProfileRow row;
      row.task = "job" + std::to_string(k);
      row.technique = "ddp";
      row.gpus = g;
      row.runtime_s = std::max(1.0, std::round(steps / tput * 10) / 10);
      row.extra = {FormatNumber(steps), d.type->type, std::to_string(d.gpus),
                   FormatNumber(arrival[k])};
      inst.profile.rows.push_back(std::move(row));
    }
  }
  return inst;
}

std::vector<double> ArrivalTimes(const ProfileTable& profile) {
  std::map<std::string, double> by_name = saturn::ArrivalTimes(profile, "profile");
  std::vector<double> arrival;
  for (const std::string& name : profile.TaskNames()) {
    auto it = by_name.find(name);
    arrival.push_back(it == by_name.end() ? 0.0 : it->second);
  }
  return arrival;
}

}  // namespace saturn::bench
