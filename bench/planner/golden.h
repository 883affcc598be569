// Proven optima for planner_bench (bench/planner/golden/<instance>/): small
// instances solved to optimality once, with a long limit, so that the bench
// prints each solver's gap to the optimum and not only to the best plan it
// found itself. Each folder holds the instance as it was proven
// (cluster.yaml, profile.csv), an optimal plan (plan.json, as `saturn plan`
// writes it: `saturn validate` checks it) and how it was proven
// (optimum.json: optimal_makespan_s, proven_by, solve_time_s, cpu_s, ...).
//
//   planner_bench --prove txt-8+8 --prove-limit 3600   # writes a folder if CBC proves it
//   std::optional<Golden> g = FindGolden(instance.name);
//   if (g && SameInstance(*g, instance)) gap = makespan / g->optimum_s - 1;
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/common/instances.h"
#include "contracts/cluster.h"
#include "contracts/plan.h"
#include "contracts/profile.h"

namespace saturn::bench {

struct Golden {
  std::string name;  // the instance's, as planner_bench names it
  std::string dir;
  std::string cluster_yaml, profile_csv;  // the files' text
  Cluster cluster;
  ProfileTable profile;
  Plan plan;               // an optimal plan
  double optimum_s = 0.0;  // its makespan, proven optimal
  std::string proven_by;   // how, in words
  double solve_time_s = 0.0;
  nlohmann::json meta;  // optimum.json as read
};

// bench/planner/golden in the source tree.
std::string GoldenDir();

// Every golden folder under `dir`, by name. InputError for a folder that
// misses a file or whose files do not read.
std::vector<Golden> LoadGoldens(const std::string& dir = GoldenDir());
std::optional<Golden> FindGolden(const std::string& name, const std::string& dir = GoldenDir());

// Whether `instance` is the one the golden was proven on: the same cluster
// and profile, as files (a change of the instance generators makes a
// golden stale; planner_bench then says so and prints no gap).
bool SameInstance(const Golden& golden, const Instance& instance);

// Writes `dir`/<instance.name>/ with the instance, the plan and `meta`
// (optimal_makespan_s is set from the plan).
void WriteGolden(const std::string& dir, const Instance& instance, const Plan& plan,
                 nlohmann::json meta);

// Saturn-like TXT and IMG on 1x8, 2x8 and 8+4 GPUs with fewer tasks (small
// enough for CBC to prove optima): 6, the smaller batch size only (batch 16
// for TXT, 64 for IMG: 2 models x 3 learning rates), named "txt-8+8-s1-6t";
// or 8, the first two learning rates ("-8t").
std::vector<Instance> SmallInstances(int tasks);

// planner_bench's instances: Saturn-like TXT and IMG on 1x8, 2x8 and 8+4
// GPUs, both with tp rows on 1x8, the 12-task Gavel instance, the 6-task
// SmallInstances and, unless `quick`, Gavel's 100 and 500 tasks.
std::vector<Instance> PlannerBenchInstances(bool quick);

}  // namespace saturn::bench
