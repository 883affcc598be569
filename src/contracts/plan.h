// Contract 3: the plan (JSON).
//
//   {"solver": "auto", "status": "optimal", "makespan_s": 1234.5,
//    "lower_bound_s": 1200.0, "solve_time_s": 0.8,
//    "tasks": [{"task": "a", "technique": "fsdp", "gpus": 4, "node": "node0",
//               "gpu_ids": [0,1,2,3], "start_s": 0.0, "end_s": 600.0}]}
//
// A task that trains in a pack with others (several LoRA tasks on one frozen
// base, one worker) carries "pack": the pack's name, the same for each member.
//
// Reading checks the shape and types (InputError naming the field); whether a
// plan is *valid* for a cluster and profile is planner/validate.h's job.
//
//   Plan p = LoadPlanFile("plan.json");
//   WriteFileAtomic("plan.json", PlanToJson(p).dump(2) + "\n");
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

struct PlanTask {
  std::string task;
  std::string technique;
  int gpus = 0;
  std::string node;
  std::vector<int> gpu_ids;
  double start_s = 0.0;
  double end_s = 0.0;
  // The GPU type of its node (mixed clusters; "" for a cluster's one
  // unnamed type): in the JSON only when set.
  std::string gpu_type = {};
  // The pack this task trains in (planner/packing.h): the pack's name, shared
  // by its members, which then have the same technique, node, gpu_ids and
  // start, and each its own end_s; in the JSON only when set ("" trains alone).
  std::string pack = {};
};

struct Plan {
  std::string solver;
  std::string status;  // optimal | feasible | time_limit | infeasible
  double makespan_s = 0.0;
  double lower_bound_s = 0.0;
  double solve_time_s = 0.0;
  std::vector<PlanTask> tasks;
  // Fields beyond the contract (solver statistics, ...), written as they are.
  nlohmann::json extra = nlohmann::json::object();
};

nlohmann::json PlanToJson(const Plan& plan);
Plan PlanFromJson(const nlohmann::json& json, std::string_view source);
// Plan JSON text (`source` names it in errors); LoadPlanFile reads a file.
Plan ParsePlanJson(std::string_view text, std::string_view source);
Plan LoadPlanFile(const std::string& path);
// Whether some task of the plan trains in a pack.
bool PlanHasPacks(const Plan& plan);

// The makespan the plan records for a baseline solver (its extra
// "baselines": {"current-practice": {"makespan_s": ...}, ...}, which Saturn
// writes beside every plan it makes; planner/baselines.h), if any.
std::optional<double> BaselineMakespan(const Plan& plan, std::string_view solver);

}  // namespace saturn
