// Golden planning scenarios: every tests/scenarios/*.yaml file holds a
// cluster, a profile and what each listed solver must achieve. A bug found in
// the planner becomes a new file here.
//
//   name: ...
//   cluster: {nodes: [...]}            # Contract 1, inline
//   profile: |                          # Contract 2, inline CSV
//     task,technique,gpus,runtime_s
//     ...
//   lower_bound_s: 100                  # optional: the combinatorial bound
//   solvers:
//     auto: {makespan_s: 100, status: optimal}
//     current-practice: {makespan_s: 200}
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fs.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"
#include "planner/validate.h"
#include "contracts/yaml_fields.h"

namespace saturn {
namespace {

std::vector<std::string> ScenarioFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(SATURN_SOURCE_DIR "/tests/scenarios")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class Scenario : public ::testing::TestWithParam<std::string> {};

TEST_P(Scenario, SolversMeetExpectations) {
  const std::string& path = GetParam();
  YAML::Node root = ParseYamlText(ReadFile(path), path);
  Cluster cluster = ParseCluster(root["cluster"], path, "cluster");
  ProfileTable profile = ParseProfileCsv(root["profile"].as<std::string>(), path, cluster);
  Problem problem = ProblemFromProfile(profile, cluster);
  if (root["lower_bound_s"]) {
    EXPECT_NEAR(MakespanLowerBound(problem), root["lower_bound_s"].as<double>(), 1e-6);
  }
  ASSERT_TRUE(root["solvers"].IsMap()) << path;
  for (const auto& item : root["solvers"]) {
    std::string solver = item.first.as<std::string>();
    PlanRequest req;
    req.solver = solver;
    req.seed = 1;
    req.time_limit_s = 600;
    req.work_scale = 0.2;
    PlanResult r = RunPlanner(problem, req);
    EXPECT_TRUE(ValidatePlan(problem, r.plan).empty()) << solver;
    if (item.second["makespan_s"]) {
      EXPECT_NEAR(r.plan.makespan_s, item.second["makespan_s"].as<double>(), 1e-6)
          << path << ": " << solver;
    }
    if (item.second["status"]) {
      EXPECT_EQ(r.plan.status, item.second["status"].as<std::string>()) << path << ": " << solver;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, Scenario, ::testing::ValuesIn(ScenarioFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace saturn
