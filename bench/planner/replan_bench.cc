// bench/planner/replan_bench: what one re-plan costs on a large batch when
// progress matches the plan within noise.
//
// A batch of mixed Saturn-like tasks (bench/planner/mixed.h; default 2,000
// tasks on 64 nodes x 8 GPUs; --gavel: Gavel-derived tasks) is planned once; then at several points
// of the plan (10%..90% of its makespan) every task's progress is what the plan says, each task
// running up to +-2% off its profile (the noise), and Replan (src/replan) is asked whether to
// switch. Three policies on the same checks: solving the whole remaining problem afresh at every
// check (threshold 0, no unchanged test: the cost before incremental re-planning), searching around
// the nodes that changed at every check (the cost when progress did move), and the default policy
// (unchanged test, paper threshold 500 s). Prints the median and max wall time of each, how many
// checks searched and switched, and the end of the plan followed afterwards against solving afresh.
//
//   planner_replan_bench                     # 2,000 tasks, 64 nodes, 9 checks
//   planner_replan_bench --tasks 500 --nodes 8 --gavel
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/common/instances.h"
#include "bench/planner/mixed.h"
#include "bench/planner/plan_progress.h"
#include "planner/planner.h"
#include "replan/replan.h"

namespace saturn::bench {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int Main(int argc, char** argv) {
  int tasks = 2000, nodes = 64, checks = 9;
  double noise = 0.02;
  bool gavel = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--tasks") && i + 1 < argc) {
      tasks = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--nodes") && i + 1 < argc) {
      nodes = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--checks") && i + 1 < argc) {
      checks = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--gavel")) {
      gavel = true;
    } else if (!std::strcmp(argv[i], "--noise") && i + 1 < argc) {
      noise = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: planner_replan_bench [--tasks N] [--nodes N] [--checks N] [--noise "
                   "F] [--gavel]\n");
      return 2;
    }
  }
  Instance inst =
      gavel ? GavelInstance(LoadGavelThroughputs(SourceDir() + "/bench/data/gavel_v100.csv"), tasks,
                            nodes, 8, 1)
            : MixedSaturnInstance(tasks, nodes, 1);
  Problem problem = ProblemFromProfile(inst.profile, inst.cluster);
  // The plan being followed is a well-searched one (200 work units, ~10 s
  // here), as after the first plan and a few re-plans.
  PlanRequest request;
  request.seed = 1;
  request.work_limit = 200;
  request.time_limit_s = 600;
  auto t0 = std::chrono::steady_clock::now();
  Plan plan = RunPlanner(problem, request).plan;
  double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("instance %s: %d tasks, %d GPUs; first plan %.1f s (bound %.1f s) in %.2f s\n",
              inst.name.c_str(), problem.NumTasks(), problem.TotalGpus(), plan.makespan_s,
              plan.lower_bound_s, plan_s);

  struct Mode {
    const char* label;
    double threshold_s;
    double unchanged_tolerance;
    int incremental_nodes;
    std::vector<double> wall_s, new_end_s;
    int solved = 0, switched = 0;
  };
  ReplanPolicy defaults;
  std::vector<Mode> modes = {
      {"solve afresh every check (before)", 0.0, 0.0, 0, {}, {}},
      {"search around changes every check", 0.0, 0.0, defaults.incremental_nodes, {}, {}},
      {"default policy (threshold 500 s)",
       defaults.threshold_s,
       defaults.unchanged_tolerance,
       defaults.incremental_nodes,
       {},
       {}}};
  for (int c = 1; c <= checks; ++c) {
    double now = plan.makespan_s * c / (checks + 1);
    std::vector<TaskProgress> progress = ProgressAt(problem, plan, now, noise, c);
    for (Mode& m : modes) {
      ReplanPolicy policy;
      policy.threshold_s = m.threshold_s;
      policy.unchanged_tolerance = m.unchanged_tolerance;
      policy.incremental_nodes = m.incremental_nodes;
      policy.seed = c;
      auto s0 = std::chrono::steady_clock::now();
      ReplanDecision d = Replan(problem, progress, plan, now, policy);
      m.wall_s.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count());
      m.new_end_s.push_back(d.switch_plan ? d.new_end_s : d.current_end_s);
      m.solved += d.summary.find("no solve") == std::string::npos;
      m.switched += d.switch_plan;
    }
  }
  std::printf("\n%-36s %10s %9s %7s %9s %14s\n", "re-plan", "median_ms", "max_ms", "search",
              "switched", "end / before");
  for (const Mode& m : modes) {
    double ratio = 0;  // the plan followed after the check, against solving afresh
    for (int c = 0; c < checks; ++c)
      ratio += m.new_end_s[c] / modes[0].new_end_s[c] / checks;
    std::printf("%-36s %10.1f %9.1f %4d/%-2d %9d %14.4f\n", m.label, 1e3 * Median(m.wall_s),
                1e3 * *std::max_element(m.wall_s.begin(), m.wall_s.end()), m.solved, checks,
                m.switched, ratio);
  }
  std::printf("\nmedian / solving afresh: search around changes %.4f, default policy %.4f\n",
              Median(modes[1].wall_s) / Median(modes[0].wall_s),
              Median(modes[2].wall_s) / Median(modes[0].wall_s));
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  return saturn::bench::Main(argc, argv);
}
