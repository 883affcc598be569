// bench/planner/replan_packs_bench: what one re-plan costs when the plan has
// packs (a table's groups in arrays, LoRA packs; replan/packed.h).
//
// The cluster and profile `saturn plan` would take (a profile with pack
// columns, e.g. the run folder of bench/groups/groups_bench.sh) are
// planned once with packs (PlanWithPacks); then at 10%..90% of that plan
// every task's progress is what the plan says (a running pack's first
// member holds its devices), with each task's work done off by up to
// +-`noise` (default 0.02: progress within noise; 0.3 makes most checks
// search), and Replan is asked whether to switch, given the pack terms.
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
#include <map>
#include <random>
#include <string>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/profile.h"
#include "planner/pack_search.h"
#include "replan/replan.h"

namespace saturn::bench {
namespace {

int OptionOf(const Task& task, const PlanTask& t) {
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    if (task.options[o].technique == t.technique && task.options[o].gpus == t.gpus) return o;
  }
  return -1;
}

std::vector<TaskProgress> ProgressAt(const Problem& problem, const Plan& plan, double now,
                                     double noise, uint64_t seed) {
  std::map<std::string, int> task_index, node_index;
  for (int j = 0; j < problem.NumTasks(); ++j)
    task_index[problem.tasks[j].name] = j;
  for (int n = 0; n < problem.NumNodes(); ++n)
    node_index[problem.nodes[n].name] = n;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> off(1 - noise, 1 + noise);
  std::vector<TaskProgress> progress(problem.NumTasks());
  std::map<std::string, bool> hosted;  // packs whose devices a member holds
  for (const PlanTask& t : plan.tasks) {
    const int j = task_index.at(t.task);
    TaskProgress& q = progress[j];
    q.pack = t.pack;
    if (t.start_s > now) continue;
    if (t.end_s <= now) {
      q.finished = true;
      q.done = 1.0;
      continue;
    }
    q.done = std::min(0.999, (now - t.start_s) / (t.end_s - t.start_s) * off(rng));
    if (t.pack.empty() || !hosted[t.pack]) {
      q.running = RunningOn{OptionOf(problem.tasks[j], t), node_index.at(t.node), t.gpu_ids};
      if (!t.pack.empty()) hosted[t.pack] = true;
    }
  }
  return progress;
}

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
  return saturn::bench::Main(argc, argv);
}
