// bench/sim/scale_bench: does the simulator scale, and does introspection
// keep up with the truth at scale?
//
// Simulates Gavel-derived tasks (bench/common/instances.h) on 8-GPU nodes
// against a noisy truth (+-30% per task by default), with introspection
// every --interval simulated seconds, as saturn simulate and bench/paper do,
// then plans the same tasks once more knowing the true runtimes (the
// clairvoyant plan, same effort as the simulation's first plan). Prints the
// simulation's wall time and peak memory (of this process, before the
// clairvoyant plan), its makespan against the clairvoyant plan's (with that
// plan's lower bound and the longest task alone, to tell whether one task
// sets it), and the re-planning it did.
//
//   sim_scale_bench                                  # 10,000 tasks on 128 x 8 GPUs
//   sim_scale_bench --tasks 50000 --nodes 1024       # 50,000 tasks on 8,192 GPUs
//   sim_scale_bench --tasks 2000 --nodes 8           # packing-bound: 2,000 tasks on 64 GPUs
//   sim_scale_bench --tasks 2000 --nodes 32 --interval 3600
//   sim_scale_bench --types                          # mixed: K80, P100, V100 nodes (a third each)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/common/gavel_types.h"
#include "bench/common/instances.h"
#include "bench/common/resources.h"
#include "planner/planner.h"
#include "sim/simulator.h"

namespace saturn::bench {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

struct Config {
  int tasks = 10000, nodes = 128;
  double interval_s = 1000, noise = 0.3, work_scale = 0.02, threshold_s = 500, switch_cost_s = 60;
  uint64_t seed = 1;
  bool types = false;  // K80, P100 and V100 nodes (a third each) from Gavel's typed measurements
};

bool Parse(int argc, char** argv, Config* c) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--types") {
      c->types = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (a == "--tasks") {
      c->tasks = std::atoi(v);
    } else if (a == "--nodes") {
      c->nodes = std::atoi(v);
    } else if (a == "--interval") {
      c->interval_s = std::atof(v);
    } else if (a == "--noise") {
      c->noise = std::atof(v);
    } else if (a == "--work-scale") {
      c->work_scale = std::atof(v);
    } else if (a == "--seed") {
      c->seed = std::strtoull(v, nullptr, 10);
    } else {
      return false;
    }
  }
  return true;
}

// The truth as a problem of its own: what a planner that knew it would plan.
Problem Clairvoyant(const Problem& believed, const std::vector<std::vector<double>>& truth) {
  Problem p = believed;
  for (int j = 0; j < p.NumTasks(); ++j) {
    for (size_t o = 0; o < p.tasks[j].options.size(); ++o)
      p.tasks[j].options[o].runtime_s = truth[j][o];
  }
  return p;
}

// The longest task alone (its fastest option under the truth): when it is
// the clairvoyant makespan, one task sets both makespans and their ratio
// says nothing about packing.
double LongestTaskAlone(const std::vector<std::vector<double>>& truth) {
  double longest = 0;
  for (const std::vector<double>& options : truth) {
    if (options.empty()) continue;
    longest = std::max(longest, *std::min_element(options.begin(), options.end()));
  }
  return longest;
}

int Main(int argc, char** argv) {
  Config cfg;
  if (!Parse(argc, argv, &cfg)) {
    std::fprintf(stderr,
                 "usage: sim_scale_bench [--tasks N] [--nodes N] [--interval S] [--noise F] "
                 "[--work-scale W] [--seed N] [--types]\n");
    return 2;
  }
  auto t0 = std::chrono::steady_clock::now();
  Instance inst =
      cfg.types
          ? GavelTypedInstance(
                LoadGavelTypedThroughputs(SourceDir() + "/bench/data/gavel_types.csv"), cfg.tasks,
                {{"k80", cfg.nodes / 3},
                 {"p100", cfg.nodes / 3},
                 {"v100", cfg.nodes - 2 * (cfg.nodes / 3)}},
                8, cfg.seed)
          : GavelInstance(LoadGavelThroughputs(SourceDir() + "/bench/data/gavel_v100.csv"),
                          cfg.tasks, cfg.nodes, 8, cfg.seed);
  Problem problem = ProblemFromProfile(inst.profile, inst.cluster);
  std::vector<std::vector<double>> truth = TruthWithNoise(problem, cfg.noise, 0.0, cfg.seed);
  const double build_s = Seconds(t0);
  std::printf(
      "%d Gavel-derived tasks on %d GPUs%s, +-%.0f%% noise, introspection every %g s, "
      "re-plan work scale %g (instance built in %.1f s)\n",
      problem.NumTasks(), problem.TotalGpus(), cfg.types ? " of three types" : "", 100 * cfg.noise,
      cfg.interval_s, cfg.work_scale, build_s);

  SimOptions o;
  o.policy.solver = "auto";
  o.policy.time_limit_s = 60;  // a safety net: effort is set by the work scale
  o.policy.work_scale = cfg.work_scale;
  o.policy.seed = cfg.seed;
  o.policy.threshold_s = cfg.threshold_s;
  o.policy.switch_cost_s = cfg.switch_cost_s;
  o.introspection = true;
  o.interval_s = cfg.interval_s;
  o.record_events = false;
  auto t1 = std::chrono::steady_clock::now();
  const double cpu0 = CpuSeconds();
  SimResult r = Simulate(problem, truth, {}, o);
  const double sim_s = Seconds(t1);
  const double sim_cpu_s = CpuSeconds() - cpu0;
  const double rss_mib = PeakRssMib();

  PlanRequest request;
  request.seed = cfg.seed;
  request.time_limit_s = 600;
  request.work_scale = cfg.work_scale;
  auto t2 = std::chrono::steady_clock::now();
  PlanResult clairvoyant = RunPlanner(Clairvoyant(problem, truth), request);
  const double plan_s = Seconds(t2);

  std::printf(
      "simulated: makespan %.1f h (first plan %.1f h), %d re-plans, %d switches, %d "
      "pre-emptions, planning %.1f s of it\n",
      r.makespan_s / 3600, r.initial_plan.makespan_s / 3600, r.replans, r.plan_switches,
      r.preemptions, r.planning_wall_s);
  const double longest_s = LongestTaskAlone(truth);
  std::printf(
      "clairvoyant plan: makespan %.1f h (planned in %.1f s), its lower bound %.1f h, the "
      "longest task alone %.1f h\n",
      clairvoyant.plan.makespan_s / 3600, plan_s, clairvoyant.plan.lower_bound_s / 3600,
      longest_s / 3600);
  std::printf("wall %.1f s (CPU %.1f s), peak RSS %.0f MiB, makespan / clairvoyant %.4f\n", sim_s,
              sim_cpu_s, rss_mib, r.makespan_s / clairvoyant.plan.makespan_s);
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  return saturn::bench::Main(argc, argv);
}
