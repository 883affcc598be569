// bench/planner/scale_bench: does `auto` use its time limit at scale?
//
// On mixed Saturn-like instances (hundreds of tasks on tens of 8-GPU nodes,
// see mixed.h) it compares, in one run:
//   - the baseline: `auto` with its default effort (bounded: what `saturn
//     plan` did before it became anytime; the same deterministic effort the
//     executor and simulator still use),
//   - anytime `auto` at several time limits, with its incumbent over time,
//   - `auto` with a deterministic work limit (same plan on any machine),
//   - the reference: the best plan of anytime `auto` at the long limit over
//     two seeds (the issue's target compares with 10 minutes: --long-limit 600).
// Every makespan is printed against the lower bound (the gap the user is
// shown) and against the reference; times are wall seconds of this process.
//
//   planner_scale_bench                      # 300 tasks on 32x8, limits 2/10/30 s, long 120 s
//   planner_scale_bench --quick              # 100 tasks on 16x8, limits 2/5 s, long 10 s
//   planner_scale_bench --tasks 300 --nodes 32 --limits 2,10,30 --long-limit 600

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/instances.h"
#include "bench/common/resources.h"
#include "bench/planner/mixed.h"
#include "common/format.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"

namespace saturn::bench {
namespace {

std::vector<double> ParseList(const char* text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    out.push_back(std::atof(item.c_str()));
  return out;
}

struct Outcome {
  std::string label;
  double makespan = 0.0;
  double bound = 0.0;
  double wall_s = 0.0;
  double work = 0.0;
  std::string status;
  std::vector<Improvement> improvements;
};

Outcome Solve(const Problem& problem, const std::string& label, const PlanRequest& request) {
  auto t0 = std::chrono::steady_clock::now();
  PlanResult r = RunPlanner(problem, request);
  Outcome o;
  o.label = label;
  o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  o.makespan = r.plan.makespan_s;
  o.bound = r.plan.lower_bound_s;
  o.work = r.plan.extra.value("work", 0.0);
  o.status = r.plan.status;
  o.improvements = r.improvements;
  return o;
}

// The incumbent's makespan at time t (the last improvement at or before t).
double IncumbentAt(const Outcome& o, double t) {
  double m = 0.0;
  for (const Improvement& i : o.improvements) {
    if (i.time_s <= t) m = i.makespan;
  }
  return m;
}

int Main(int argc, char** argv) {
  int tasks = 300, nodes = 32;
  std::vector<double> limits = {2, 10, 30};
  double long_limit = 120, work_limit = 400;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--quick")) {
      tasks = 100;
      nodes = 16;
      limits = {2, 5};
      long_limit = 10;
      work_limit = 50;
    } else if (!std::strcmp(argv[i], "--tasks")) {
      tasks = std::atoi(next());
    } else if (!std::strcmp(argv[i], "--nodes")) {
      nodes = std::atoi(next());
    } else if (!std::strcmp(argv[i], "--limits")) {
      limits = ParseList(next());
    } else if (!std::strcmp(argv[i], "--long-limit")) {
      long_limit = std::atof(next());
    } else if (!std::strcmp(argv[i], "--work-limit")) {
      work_limit = std::atof(next());
    } else if (!std::strcmp(argv[i], "--seed")) {
      seed = std::strtoull(next(), nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "usage: planner_scale_bench [--quick] [--tasks N] [--nodes N] [--limits "
                   "S,S,...] [--long-limit S] [--work-limit W] [--seed N]\n");
      return 2;
    }
  }
  Instance inst = MixedSaturnInstance(tasks, nodes, seed);
  Problem problem = ProblemFromProfile(inst.profile, inst.cluster);
  auto t0 = std::chrono::steady_clock::now();
  double bound = MakespanLowerBound(problem);
  double bound_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("instance %s: %d tasks, %d GPUs; lower bound %.1f s (computed in %.3f s)\n\n",
              inst.name.c_str(), problem.NumTasks(), problem.TotalGpus(), bound, bound_s);

  std::vector<Outcome> runs;
  PlanRequest base;
  base.solver = "auto";
  base.seed = 1;
  base.time_limit_s = long_limit;
  runs.push_back(Solve(problem, "baseline: bounded (default effort)", base));
  for (double limit : limits) {
    PlanRequest r = base;
    r.anytime = true;
    r.time_limit_s = limit;
    runs.push_back(Solve(problem, "anytime @" + FormatNumber(limit) + " s", r));
  }
  {
    PlanRequest r = base;
    r.work_limit = work_limit;
    runs.push_back(Solve(problem, "work limit " + FormatNumber(work_limit), r));
    // Same work limit, same seed: the same plan (deterministic).
    Outcome again = Solve(problem, "work limit again", r);
    std::printf("work limit %g twice: makespans %.1f and %.1f (%s)\n\n", work_limit,
                runs.back().makespan, again.makespan,
                runs.back().makespan == again.makespan ? "identical" : "DIFFERENT");
  }
  double reference = 1e300;
  for (uint64_t s : {1, 2}) {
    PlanRequest r = base;
    r.anytime = true;
    r.seed = s;
    r.time_limit_s = long_limit;
    runs.push_back(Solve(
        problem, "reference: anytime @" + FormatNumber(long_limit) + " s seed " + std::to_string(s),
        r));
  }
  for (const Outcome& o : runs)
    reference = std::min(reference, o.makespan);

  std::printf("%-34s %12s %9s %9s %8s %9s %9s  %s\n", "run", "makespan_s", "/bound", "/best",
              "gap%", "wall_s", "work", "status");
  for (const Outcome& o : runs) {
    double gap = 100.0 * (o.makespan - o.bound) / o.makespan;
    std::printf("%-34s %12.1f %9.4f %9.4f %8.2f %9.2f %9.1f  %s\n", o.label.c_str(), o.makespan,
                o.makespan / o.bound, o.makespan / reference, gap, o.wall_s, o.work,
                o.status.c_str());
  }
  const Outcome& baseline = runs.front();
  std::printf("\nbaseline (bounded) / best: %.4f; ", baseline.makespan / reference);
  for (size_t k = 0; k < limits.size(); ++k) {
    const Outcome& o = runs[1 + k];
    std::printf("anytime@%gs / best: %.4f (%.2f%% shorter than the baseline)%s", limits[k],
                o.makespan / reference, 100.0 * (1 - o.makespan / baseline.makespan),
                k + 1 < limits.size() ? "; " : "\n");
  }
  const Outcome& longest = runs[runs.size() - 2];
  std::printf("incumbent of the seed-1 reference over time (/best):");
  for (double t : {0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0}) {
    if (t > long_limit) break;
    double m = IncumbentAt(longest, t);
    if (m > 0) std::printf("  %gs %.4f", t, m / reference);
  }
  std::printf("\npeak memory of this process: %.0f MiB\n", PeakRssMib());
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  return saturn::bench::Main(argc, argv);
}
