// bench/planner/replan_packs_bench: what one re-plan costs when the plan has
// packs (a table's groups in arrays, LoRA packs; replan/packed.h).
//
// The cluster and profile `saturn plan` would take (a profile with pack
// columns, e.g. the run folder of bench/groups/groups_bench.sh) are
// planned once with packs (PlanWithPacks); then at 10%..90% of that plan
// every task's progress is what the plan says, each task's runtime off by
// up to +-`noise` (bench/planner/plan_progress.h; default 0.02: progress
// within noise), and Replan is asked whether to switch, given the pack
// terms.
// Two policies on the same checks: the default one, and searching afresh
// at every check (threshold 0, no unchanged test). Prints the median and
// max wall time of each and what the checks decided.
//
//   planner_replan_packs_bench CLUSTER.yaml PROFILE.csv [--noise 0.3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench/planner/plan_progress.h"
#include "contracts/cluster.h"
#include "contracts/profile.h"
#include "planner/pack_search.h"
#include "replan/replan.h"

namespace saturn::bench {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: planner_replan_packs_bench CLUSTER.yaml PROFILE.csv [--noise X]\n");
    return 2;
  }
  double noise = 0.02;
  for (int i = 3; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--noise") == 0) noise = std::atof(argv[i + 1]);
  Cluster cluster = LoadClusterFile(argv[1]);
  ProfileTable profile = LoadProfileFile(argv[2], cluster);
  Problem problem = ProblemFromProfile(profile, cluster);
  PackTerms terms = PackTermsFromProfile(profile, problem, argv[2]);
  auto t0 = std::chrono::steady_clock::now();
  PlanRequest request;
  PackedPlanResult first = PlanWithPacks(problem, terms, request, true);
  double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Plan& plan = first.result.plan;
  int packs = 0;
  for (const std::vector<int>& g : first.packing)
    packs += g.size() > 1;
  std::printf("%d tasks, %d packs (%zu groups), first plan %.1f s makespan in %.2f s\n",
              problem.NumTasks(), packs, first.packing.size(), plan.makespan_s, plan_s);
  ReplanPolicy by_default;
  ReplanPolicy afresh;
  afresh.threshold_s = 0;
  afresh.unchanged_tolerance = 0;
  for (const auto& [name, policy] :
       {std::pair<const char*, ReplanPolicy>{"default", by_default}, {"afresh", afresh}}) {
    std::vector<double> wall;
    int switched = 0, searched = 0;
    for (int c = 1; c <= 9; ++c) {
      double now = plan.makespan_s * c / 10.0;
      std::vector<TaskProgress> progress = ProgressAt(problem, plan, now, noise, c);
      auto start = std::chrono::steady_clock::now();
      ReplanDecision d = Replan(problem, progress, plan, now, policy, &terms);
      wall.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      switched += d.switch_plan;
      searched += d.summary.find("no solve") == std::string::npos;
    }
    std::printf("%-8s re-plan median %.1f ms, max %.1f ms; %d of 9 checks searched, %d switched\n",
                name, 1e3 * Median(wall), 1e3 * *std::max_element(wall.begin(), wall.end()),
                searched, switched);
  }
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  try {
    return saturn::bench::Main(argc, argv);
  } catch (const std::exception& e) {  // a bad cluster or profile file, named
    std::fprintf(stderr, "planner_replan_packs_bench: %s\n", e.what());
    return 2;
  }
}
