// Mixed GPU types with the real engine (docs/types.md): `saturn run` on a
// cluster whose two node types differ in threads per device. Its own
// program, run alone (SERIAL): it compares real step times, which tests
// running beside it would distort.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/fs.h"
#include "contracts/cluster.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "tests/e2e/saturn_test_base.h"

namespace saturn {
namespace {

using nlohmann::json;

class TwoTypes : public SaturnTestBase {
 protected:
  // The cluster of the workload in <dir>/w.yaml.
  Cluster LoadWorkloadCluster() const {
    return ParseCluster(YAML::LoadFile(dir_ + "/w.yaml")["cluster"], "w.yaml", "cluster");
  }
};

// Two GPU types made real on CPU devices: one node of 1-thread devices, one
// of 2-thread devices. Every task is profiled on both, runs on a node of
// its planned type, and takes about its type's profiled time there
// (docs/types.md).
TEST_F(TwoTypes, EachTaskRunsOnItsPlannedTypeNearItsProfile) {
  const std::string gpt =
      "    model: {type: gpt, layers: 2, d_model: 256, heads: 4, seq_len: 64}\n"
      "    data: {type: text, path: " SATURN_SOURCE_DIR
      "/examples/data/corpus.txt}\n"
      "    batch_size: 16\n    optimizer: {type: adamw, lr: 1.0e-3}\n"
      "    techniques: [single]\n";
  WriteFileAtomic(dir_ + "/w.yaml",
                  "cluster: {nodes: [{name: one0, gpus: 1, threads_per_gpu: 1, gpu_type: one},"
                  " {name: two0, gpus: 1, threads_per_gpu: 2, gpu_type: two}]}\n"
                  "tasks:\n  - name: long\n    steps: 160\n" +
                      gpt + "  - name: short\n    steps: 60\n" + gpt);
  ASSERT_EQ(Run({"run", dir_ + "/w.yaml", "--run-dir", dir_ + "/run", "--cache",
                 dir_ + "/cache.sqlite", "--no-introspection"}),
            0)
      << Log();
  SCOPED_TRACE(Log());
  Cluster cluster = LoadWorkloadCluster();
  ProfileTable profile = LoadProfileFile(dir_ + "/run/profile.csv", cluster);
  for (const char* task : {"long", "short"}) {
    const ProfileRow* one = profile.Find(task, "single", 1, "one");
    const ProfileRow* two = profile.Find(task, "single", 1, "two");
    ASSERT_NE(one, nullptr) << task;
    ASSERT_NE(two, nullptr) << task;
    EXPECT_LT(two->runtime_s, one->runtime_s) << task << ": two threads train faster";
  }
  Plan plan = LoadPlanFile(dir_ + "/run/plan-0.json");
  json report = json::parse(ReadFile(dir_ + "/run/report.json"));
  ASSERT_EQ(plan.tasks.size(), 2u);
  for (const PlanTask& planned : plan.tasks) {
    SCOPED_TRACE(planned.task);
    const ClusterNode& node = cluster.nodes.at(cluster.NodeIndex(planned.node));
    EXPECT_EQ(node.gpu_type, planned.gpu_type);
    for (const json& ran : report["tasks"]) {
      if (ran["task"] != planned.task) continue;
      EXPECT_EQ(ran["status"], "finished");
      const std::string node_ran = ran["node"];
      EXPECT_EQ(cluster.nodes.at(cluster.NodeIndex(node_ran)).gpu_type, planned.gpu_type);
      // Its type's profiled runtime, with both tasks sharing two cores.
      double took = ran["end_s"].get<double>() - ran["start_s"].get<double>();
      double profiled = profile.Find(planned.task, "single", 1, planned.gpu_type)->runtime_s;
      EXPECT_GT(took, 0.5 * profiled);
      EXPECT_LT(took, 2.0 * profiled);
    }
  }
  // The longer task got the faster type.
  for (const PlanTask& planned : plan.tasks) {
    if (planned.task == "long") {
      EXPECT_EQ(planned.gpu_type, "two");
    }
  }
}

}  // namespace
}  // namespace saturn
