// A technique plug-in through the whole system: `saturn run` loads the
// example local-sgd plug-in (examples/byo/plugin), profiles, plans and
// trains with it like a built-in; a refused plug-in or an unknown technique
// stops `saturn profile` / `saturn run` with exit 2 before anything runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "common/process.h"
#include "contracts/cluster.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "tests/e2e/saturn_test_base.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class PluginEndToEnd : public SaturnTestBase {
 protected:
  // One MLP task restricted to `techniques`, on one node of two CPU devices.
  std::string Workload(const std::string& plugin, const std::string& techniques) {
    std::string path = dir_ + "/w.yaml";
    WriteFileAtomic(path,
                    "cluster: {nodes: [{name: n0, gpus: 2}]}\n"
                    "plugins: [" +
                        plugin +
                        "]\n"
                        "tasks:\n"
                        "  - name: mlp\n"
                        "    model: {type: mlp, layers: 3, width: 32}\n"
                        "    data: {type: synthetic}\n"
                        "    batch_size: 12\n"
                        "    optimizer: {type: sgd, lr: 0.05}\n"
                        "    steps: 40\n"
                        "    techniques: [" +
                        techniques + "]\n");
    return path;
  }
};

TEST_F(PluginEndToEnd, IsProfiledPlannedAndExecutedLikeABuiltin) {
  std::string w = Workload(LOCAL_SGD_PLUGIN, "local-sgd");
  ASSERT_EQ(Run({"run", w, "--run-dir", dir_ + "/run", "--cache", dir_ + "/cache.sqlite"}), 0)
      << Log();
  Cluster cluster = ParseCluster(YAML::Load("nodes: [{name: n0, gpus: 2}]"), "x");
  ProfileTable profile = LoadProfileFile(dir_ + "/run/profile.csv", cluster);
  ASSERT_NE(profile.Find("mlp", "local-sgd", 2), nullptr) << ReadFile(dir_ + "/run/profile.csv");
  EXPECT_EQ(profile.Find("mlp", "local-sgd", 1), nullptr);  // its own rule: >= 2 devices
  json plan = json::parse(ReadFile(dir_ + "/run/plan-0.json"));
  EXPECT_EQ(plan["tasks"][0]["technique"], "local-sgd");
  json report = json::parse(ReadFile(dir_ + "/run/report.json"));
  EXPECT_EQ(report["tasks"][0]["status"], "finished");
  EXPECT_TRUE(fs::exists(dir_ + "/run/tasks/mlp/checkpoints/checkpoint-40"));

  // The same plug-in given with --plugin instead of in the file.
  std::string text = ReadFile(w);
  text.replace(text.find("plugins: ["),
               text.find('\n', text.find("plugins: [")) - text.find("plugins: [") + 1, "");
  WriteFileAtomic(w, text);
  EXPECT_EQ(Run({"profile", w, "--plugin", LOCAL_SGD_PLUGIN, "--output", dir_ + "/p.csv", "--cache",
                 dir_ + "/cache.sqlite"}),
            0)
      << Log();
  EXPECT_THAT(Log(), HasSubstr("(0 run, "));  // measured by the run above
}

TEST_F(PluginEndToEnd, ARefusedPluginStopsEverythingBeforeItRuns) {
  std::string w = Workload(WRONG_VERSION_PLUGIN, "single");
  EXPECT_EQ(Run({"profile", w, "--output", dir_ + "/p.csv", "--no-cache"}), 2);
  EXPECT_THAT(Log(), HasSubstr("plugins"));
  EXPECT_THAT(Log(), HasSubstr("API version 999"));
  EXPECT_FALSE(fs::exists(dir_ + "/p.csv"));
  EXPECT_EQ(Run({"run", w, "--run-dir", dir_ + "/run", "--cache", dir_ + "/c.sqlite"}), 2);
  EXPECT_THAT(Log(), HasSubstr("API version 999"));
  EXPECT_FALSE(fs::exists(dir_ + "/run"));
}

TEST_F(PluginEndToEnd, AnUnknownTechniqueIsNamedWithTheAvailableOnes) {
  std::string w = Workload(LOCAL_SGD_PLUGIN, "local-sgdd");
  EXPECT_EQ(Run({"profile", w, "--output", dir_ + "/p.csv", "--no-cache"}), 2);
  EXPECT_THAT(Log(), HasSubstr("unknown technique 'local-sgdd'"));
  EXPECT_THAT(Log(), HasSubstr("did you mean 'local-sgd'?"));
  EXPECT_THAT(Log(), HasSubstr("techniques[0]"));
}

}  // namespace
}  // namespace saturn
