#include "bench/planner/golden.h"

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"

namespace saturn::bench {
namespace fs = std::filesystem;

std::string GoldenDir() {
  return SourceDir() + "/bench/planner/golden";
}

namespace {

Golden ReadGolden(const std::string& dir, const std::string& name) {
  Golden g;
  g.name = name;
  g.dir = dir + "/" + name;
  g.cluster_yaml = ReadFile(g.dir + "/cluster.yaml");
  g.profile_csv = ReadFile(g.dir + "/profile.csv");
  g.cluster = LoadClusterFile(g.dir + "/cluster.yaml");
  g.profile = LoadProfileFile(g.dir + "/profile.csv", g.cluster);
  g.plan = LoadPlanFile(g.dir + "/plan.json");
  std::string meta_path = g.dir + "/optimum.json";
  g.meta = nlohmann::json::parse(ReadFile(meta_path), nullptr, /*allow_exceptions=*/false);
  if (!g.meta.is_object() || !g.meta.contains("optimal_makespan_s") ||
      !g.meta["optimal_makespan_s"].is_number()) {
    throw InputError(meta_path, 0, "optimal_makespan_s", "expected a JSON object with the number");
  }
  g.optimum_s = g.meta["optimal_makespan_s"].get<double>();
  g.proven_by = g.meta.value("proven_by", "");
  g.solve_time_s = g.meta.value("solve_time_s", 0.0);
  return g;
}

}  // namespace

std::vector<Golden> LoadGoldens(const std::string& dir) {
  std::vector<std::string> names;
  if (fs::is_directory(dir)) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
      if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::vector<Golden> out;
  for (const std::string& name : names)
    out.push_back(ReadGolden(dir, name));
  return out;
}

std::optional<Golden> FindGolden(const std::string& name, const std::string& dir) {
  if (!fs::is_directory(dir + "/" + name)) return std::nullopt;
  return ReadGolden(dir, name);
}

bool SameInstance(const Golden& golden, const Instance& instance) {
  return golden.name == instance.name && golden.cluster_yaml == ClusterToYaml(instance.cluster) &&
         golden.profile_csv == ProfileToCsv(instance.profile);
}

void WriteGolden(const std::string& dir, const Instance& instance, const Plan& plan,
                 nlohmann::json meta) {
  std::string to = dir + "/" + instance.name;
  MakeDirectories(to);
  meta["instance"] = instance.name;
  meta["optimal_makespan_s"] = plan.makespan_s;
  WriteFileAtomic(to + "/cluster.yaml", ClusterToYaml(instance.cluster));
  WriteFileAtomic(to + "/profile.csv", ProfileToCsv(instance.profile));
  WriteFileAtomic(to + "/plan.json", PlanToJson(plan).dump(2) + "\n");
  WriteFileAtomic(to + "/optimum.json", meta.dump(2) + "\n");
}

namespace {

// Fewer of the instance's tasks: 6, its smaller batch size only (batch 16
// for TXT, 64 for IMG: 2 models x 3 learning rates), or 8, its first two
// learning rates (2 models x 2 batch sizes x 2).
Instance FewerTasks(Instance inst, int tasks) {
  inst.name += "-" + std::to_string(tasks) + "t";
  std::erase_if(inst.profile.rows, [&](const ProfileRow& r) {
    if (tasks == 8) return r.task.ends_with("-lr3e-3");
    return r.task.find("-bs16-") == std::string::npos && r.task.find("-bs64-") == std::string::npos;
  });
  return inst;
}

}  // namespace

std::vector<Instance> SmallInstances(int tasks) {
  std::vector<Instance> out;
  for (Workload w : {Workload::kText, Workload::kImage}) {
    for (const std::vector<int>& nodes :
         {std::vector<int>{8}, std::vector<int>{8, 8}, std::vector<int>{8, 4}}) {
      out.push_back(FewerTasks(SaturnLikeInstance(w, nodes, 1), tasks));
    }
  }
  return out;
}

std::vector<Instance> PlannerBenchInstances(bool quick) {
  std::vector<Instance> out;
  for (Workload w : {Workload::kText, Workload::kImage}) {
    for (const std::vector<int>& nodes :
         {std::vector<int>{8}, std::vector<int>{8, 8}, std::vector<int>{8, 4}}) {
      out.push_back(SaturnLikeInstance(w, nodes, 1));
    }
    // With tp and its hybrids among the choices (bench/README.md).
    out.push_back(SaturnLikeInstance(w, {8}, 1, /*tensor_parallel=*/true));
  }
  auto jobs = LoadGavelThroughputs(SourceDir() + "/bench/data/gavel_v100.csv");
  out.push_back(GavelInstance(jobs, 12, 1, 8, 1));
  for (Instance& small : SmallInstances(6))
    out.push_back(std::move(small));
  if (!quick) {
    out.push_back(GavelInstance(jobs, 100, 8, 8, 1));
    out.push_back(GavelInstance(jobs, 500, 64, 8, 1));
  }
  return out;
}

}  // namespace saturn::bench
