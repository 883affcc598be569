// bench/planner/types_bench: planning for mixed GPU types (issue 29) on
// Gavel's own measurements (bench/common/gavel_types.h): K80, P100 and V100
// nodes, Gavel's job mix and durations. For each seed, on the same problem:
//   auto        Saturn (anytime up to --limit, as saturn plan does)
//   gavel       Gavel's heterogeneity-aware makespan policy (planner/solvers/gavel.cc)
//   type-blind  Saturn planning as if every GPU were the median type, run on the real ones
//   current-practice, max  the paper's baselines (whole nodes, any type)
// and prints each makespan, its solve time and ratio to the lower bound, then
// auto's ratios against gavel and type-blind (targets: auto <= gavel; type-blind
// >= 2x auto; auto's solve <= 30 s).
//
//   types_bench [--tasks 120] [--nodes 4] [--gpus 4] [--seeds 3] [--limit 30]
//   types_bench --write DIR      # the first instance's cluster.yaml + profile.csv
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/common/gavel_types.h"
#include "common/fs.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"
#include "planner/validate.h"

namespace saturn::bench {
namespace {

int Main(int argc, char** argv) {
  int tasks = 120, nodes = 4, gpus = 4, seeds = 3;
  double limit = 30;
  std::string write;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--tasks")
      tasks = std::atoi(argv[i + 1]);
    else if (a == "--nodes")
      nodes = std::atoi(argv[i + 1]);
    else if (a == "--gpus")
      gpus = std::atoi(argv[i + 1]);
    else if (a == "--seeds")
      seeds = std::atoi(argv[i + 1]);
    else if (a == "--limit")
      limit = std::atof(argv[i + 1]);
    else if (a == "--write")
      write = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: types_bench [--tasks N] [--nodes N] [--gpus N] [--seeds N] "
                   "[--limit S] [--write DIR]\n");
      return 2;
    }
  }
  TypedThroughputs jobs = LoadGavelTypedThroughputs(SourceDir() + "/bench/data/gavel_types.csv");
  const std::vector<std::pair<std::string, int>> cluster = {
      {"k80", nodes}, {"p100", nodes}, {"v100", nodes}};
  if (!write.empty()) {
    Instance inst = GavelTypedInstance(jobs, tasks, cluster, gpus, 1);
    MakeDirectories(write);
    WriteFileAtomic(write + "/cluster.yaml", ClusterToYaml(inst.cluster));
    WriteFileAtomic(write + "/profile.csv", ProfileToCsv(inst.profile));
    std::printf("wrote %s to %s\n", inst.name.c_str(), write.c_str());
    return 0;
  }
  std::printf(
      "types_bench: %d Gavel jobs on %d K80 + %d P100 + %d V100 nodes of %d GPUs; auto "
      "anytime up to %g s\n",
      tasks, nodes, nodes, nodes, gpus, limit);
  std::printf("%-22s %-17s %12s %9s %9s  %s\n", "instance", "solver", "makespan_s", "/bound",
              "solve_s", "valid");
  for (int seed = 1; seed <= seeds; ++seed) {
    Instance inst = GavelTypedInstance(jobs, tasks, cluster, gpus, static_cast<uint64_t>(seed));
    Problem problem = ProblemFromProfile(inst.profile, inst.cluster);
    double bound = MakespanLowerBound(problem);
    double mine = 0, gavel = 0, blind = 0, mine_s = 0;
    for (const char* solver : {"auto", "gavel", "type-blind", "current-practice", "max"}) {
      PlanRequest req;
      req.solver = solver;
      req.time_limit_s = limit;
      req.seed = static_cast<uint64_t>(seed);
      req.anytime = true;
      PlanResult r = RunPlanner(problem, req);
      bool valid = ValidatePlan(problem, r.plan).empty();
      std::printf("%-22s %-17s %12.1f %9.4f %9.2f  %s\n", inst.name.c_str(), solver,
                  r.plan.makespan_s, r.plan.makespan_s / bound, r.plan.solve_time_s,
                  valid ? "yes" : "NO");
      std::string name = solver;
      if (name == "auto") mine = r.plan.makespan_s, mine_s = r.plan.solve_time_s;
      if (name == "gavel") gavel = r.plan.makespan_s;
      if (name == "type-blind") blind = r.plan.makespan_s;
      std::fflush(stdout);
    }
    std::printf(
        "%-22s => auto / gavel %.3f (target <= 1), type-blind / auto %.2fx (target >= "
        "2x), auto's gap to the bound %.1f%%, solved in %.1f s (target <= 30 s)\n\n",
        inst.name.c_str(), mine / gavel, blind / mine, 100 * (mine / bound - 1), mine_s);
  }
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  return saturn::bench::Main(argc, argv);
}
