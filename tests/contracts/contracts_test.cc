#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "contracts/cluster.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "contracts/yaml_fields.h"
#include "tests/testing/error_of.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;

Cluster ClusterFrom(const std::string& yaml) {
  return ParseCluster(ParseYamlText(yaml, "c.yaml"), "c.yaml");
}

using test::ErrorOf;

TEST(Cluster, ReadsNodes) {
  Cluster c =
      ClusterFrom("nodes:\n  - {name: a, gpus: 8, gpu_memory_gib: 40}\n  - {name: b, gpus: 4}\n");
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.TotalGpus(), 12);
  EXPECT_EQ(c.MaxGpusPerNode(), 8);
  EXPECT_EQ(*c.nodes[0].gpu_memory_gib, 40);
  EXPECT_FALSE(c.nodes[1].gpu_memory_gib.has_value());
  EXPECT_EQ(ClusterFrom(ClusterToYaml(c)).nodes[1].name, "b");
}

TEST(Cluster, BadInputNamesFileLineAndField) {
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes:\n  - {name: a, gpus: zero}\n"); }),
              HasSubstr("c.yaml:2: nodes[0].gpus: expected an integer >= 1, got 'zero'"));
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes:\n  - {name: a, gpus: 0}\n"); }),
              HasSubstr("expected an integer >= 1"));
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes:\n  - {name: a, gpu: 4}\n"); }),
              HasSubstr("nodes[0].gpu: unknown field"));
  EXPECT_THAT(
      ErrorOf([] { ClusterFrom("nodes:\n  - {name: a, gpus: 1}\n  - {name: a, gpus: 1}\n"); }),
      HasSubstr("duplicate node name"));
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes: []\n"); }), HasSubstr("non-empty list"));
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes: [\n"); }), HasSubstr("invalid YAML"));
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes:\n  - {name: a, gpus: 2, gpu_memory_gib: -1}\n"); }),
              HasSubstr("gpu_memory_gib: expected a number > 0"));
  EXPECT_THAT(ErrorOf([] { LoadClusterFile("/no/such/cluster.yaml"); }),
              HasSubstr("/no/such/cluster.yaml"));
}

Cluster EightGpus() {
  return ClusterFrom("nodes:\n  - {name: n, gpus: 8}\n");
}

ProfileTable ProfileFrom(const std::string& csv) {
  return ParseProfileCsv(csv, "p.csv", EightGpus());
}

TEST(Profile, ReadsRowsAndCarriesExtraColumns) {
  ProfileTable p = ProfileFrom(
      "task,technique,gpus,runtime_s,knobs\n"
      "a,fsdp,8,100.5,\"ckpt=on,offload=off\"\n"
      "a,spill,1,900,\n"
      "b,ddp,2,inf,oom\n"
      "b,ddp,4,50,\n");
  ASSERT_EQ(p.rows.size(), 4u);
  EXPECT_EQ(p.Extra(p.rows[0], "knobs"), "ckpt=on,offload=off");
  EXPECT_FALSE(p.rows[2].feasible);
  EXPECT_EQ(p.TaskNames(), (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(p.Find("b", "ddp", 4), nullptr);
  EXPECT_EQ(p.Find("b", "ddp", 2), nullptr);
  ProfileTable again = ParseProfileCsv(ProfileToCsv(p), "again.csv", EightGpus());
  EXPECT_EQ(again.rows.size(), 4u);
  EXPECT_EQ(again.Extra(again.rows[0], "knobs"), "ckpt=on,offload=off");
}

// A batch's rows join a run's profile by column name: a column only one
// side has is empty on the other's rows (saturn serve's first batch joins
// an empty profile; a later one may bring pack columns).
TEST(Profile, AppendJoinsExtraColumnsByName) {
  ProfileTable run = ProfileFrom("task,technique,gpus,runtime_s,steps,knobs\na,ddp,2,10,5,k\n");
  ProfileTable batch = ProfileFrom(
      "task,technique,gpus,runtime_s,pack_class,steps\nb,ddp,2,20,x,7\nc,ddp,4,30,x,9\n");
  run.Append(batch);
  ASSERT_EQ(run.rows.size(), 3u);
  EXPECT_EQ(run.Extra(run.rows[0], "steps"), "5");
  EXPECT_EQ(run.Extra(run.rows[0], "knobs"), "k");
  EXPECT_EQ(run.Extra(run.rows[0], "pack_class"), "");
  EXPECT_EQ(run.Extra(run.rows[1], "steps"), "7");
  EXPECT_EQ(run.Extra(run.rows[1], "pack_class"), "x");
  EXPECT_EQ(run.Extra(run.rows[2], "knobs"), "");
  EXPECT_EQ(run.Extra(run.rows[2], "steps"), "9");
  ProfileTable empty;
  empty.Append(batch);
  EXPECT_EQ(empty.Extra(empty.rows[1], "steps"), "9");
  ProfileTable again = ParseProfileCsv(ProfileToCsv(run), "again.csv", EightGpus());
  EXPECT_EQ(again.Extra(again.rows[2], "pack_class"), "x");
}

TEST(Profile, ColumnsMayComeInAnyOrder) {
  ProfileTable p = ProfileFrom("runtime_s,gpus,task,technique\n10,2,a,ddp\n");
  EXPECT_EQ(p.rows[0].gpus, 2);
  EXPECT_EQ(p.rows[0].task, "a");
}

TEST(Profile, EveryInputErrorIsNamed) {
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus\na,ddp,1\n"); }),
              HasSubstr("p.csv:1: header: missing column 'runtime_s'"));
  EXPECT_THAT(
      ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,1,10\na,ddp,1,12\n"); }),
      HasSubstr("p.csv:3: duplicate row for task 'a', technique 'ddp', 1 GPUs (first at line 2)"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,1,-5\n"); }),
              HasSubstr("p.csv:2: runtime_s: expected a positive number"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,1,0\n"); }),
              HasSubstr("runtime_s: expected a positive number"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,1,fast\n"); }),
              HasSubstr("got 'fast'"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,16,10\n"); }),
              HasSubstr("p.csv:2: gpus: 16 GPUs is more than any node has (the largest has 8)"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,two,10\n"); }),
              HasSubstr("gpus: expected an integer >= 1, got 'two'"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,1,inf\n"); }),
              HasSubstr("task 'a': has no feasible configuration"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\na,ddp,1\n"); }),
              HasSubstr("p.csv:2: expected 4 fields, got 3"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom("task,technique,gpus,runtime_s\n"); }),
              HasSubstr("no rows"));
  EXPECT_THAT(ErrorOf([] { ProfileFrom(""); }), HasSubstr("empty file"));
}

Cluster TwoTypes() {
  return ClusterFrom(
      "nodes:\n  - {name: v, gpus: 4, gpu_type: V100}\n  - {name: a, gpus: 8, gpu_type: A100}\n");
}

TEST(Types, ClusterNodesNameTheirGpuType) {
  Cluster c = TwoTypes();
  EXPECT_EQ(c.GpuTypes(), (std::vector<std::string>{"V100", "A100"}));
  EXPECT_TRUE(c.Mixed());
  EXPECT_EQ(c.MaxGpusPerNode("V100"), 4);
  EXPECT_EQ(ClusterFrom(ClusterToYaml(c)).nodes[1].gpu_type, "A100");
  // Unset: one unnamed type, and files without the field read as before.
  Cluster plain = EightGpus();
  EXPECT_EQ(plain.GpuTypes(), (std::vector<std::string>{""}));
  EXPECT_EQ(ClusterToYaml(plain).find("gpu_type"), std::string::npos);
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes:\n  - {name: a, gpus: 1, gpu_type: 'A 100'}\n"); }),
              HasSubstr("c.yaml:2: nodes[0].gpu_type: expected a name of letters, digits"));
}

// Device speeds for estimates (docs/estimates.md): a known type's published
// figures, a node's own fields over them, none for an unknown type without.
TEST(Types, NodesSayHowFastTheirDevicesAre) {
  Cluster c = ClusterFrom(
      "nodes:\n  - {name: h, gpus: 8, gpu_type: h100}\n"
      "  - {name: o, gpus: 2, gpu_type: A100, tflops: 280, link_gb_s: 200}\n"
      "  - {name: lab, gpus: 2, gpu_type: RTX6000, tflops: 182}\n"
      "  - {name: u, gpus: 2, gpu_type: RTX6000}\n");
  ASSERT_TRUE(NodeSpeed(c.nodes[0], "bf16"));
  EXPECT_EQ(NodeSpeed(c.nodes[0], "bf16")->tflops, 989);
  EXPECT_EQ(NodeSpeed(c.nodes[0], "fp32")->tflops, 67);
  EXPECT_EQ(NodeSpeed(c.nodes[0], "bf16")->link_gb_s, 450);
  EXPECT_EQ(NodeSpeed(c.nodes[1], "bf16")->tflops, 280);
  EXPECT_EQ(NodeSpeed(c.nodes[1], "fp32")->tflops, 19.5) << "the type's fp32 figure stays";
  EXPECT_EQ(NodeSpeed(c.nodes[1], "bf16")->link_gb_s, 200);
  EXPECT_EQ(NodeSpeed(c.nodes[2], "fp32")->tflops, 182) << "an unknown type's only figure";
  EXPECT_EQ(NodeSpeed(c.nodes[2], "fp32")->link_gb_s, 0);
  EXPECT_FALSE(NodeSpeed(c.nodes[3], "bf16"));
  Cluster again = ClusterFrom(ClusterToYaml(c));
  EXPECT_EQ(again.nodes[1].tflops, 280);
  EXPECT_EQ(again.nodes[1].link_gb_s, 200);
  EXPECT_FALSE(again.nodes[0].tflops);
  EXPECT_THAT(ErrorOf([] { ClusterFrom("nodes:\n  - {name: a, gpus: 1, tflops: -3}\n"); }),
              HasSubstr("nodes[0].tflops"));
}

TEST(Types, ProfileRowsCarryTheirType) {
  const char* csv =
      "task,technique,gpus,runtime_s,gpu_type,step_s\n"
      "a,ddp,4,100,V100,0.1\n"
      "a,ddp,4,40,A100,0.04\n"
      "a,ddp,8,25,A100,0.025\n";
  ProfileTable p = ParseProfileCsv(csv, "p.csv", TwoTypes());
  ASSERT_EQ(p.rows.size(), 3u);
  EXPECT_EQ(p.extra_columns, (std::vector<std::string>{"step_s"}));
  ASSERT_NE(p.Find("a", "ddp", 4, "A100"), nullptr);
  EXPECT_EQ(p.Find("a", "ddp", 4, "A100")->runtime_s, 40);
  EXPECT_EQ(p.Find("a", "ddp", 8, "V100"), nullptr);
  ProfileTable again = ParseProfileCsv(ProfileToCsv(p), "again.csv", TwoTypes());
  EXPECT_EQ(again.rows[1].gpu_type, "A100");
  // A one-type profile is written as before (no column).
  EXPECT_EQ(ProfileToCsv(ProfileFrom("task,technique,gpus,runtime_s\na,ddp,1,10\n")),
            "task,technique,gpus,runtime_s\na,ddp,1,10\n");
}

TEST(Types, ProfileTypeErrorsAreNamed) {
  EXPECT_THAT(ErrorOf([] {
                ParseProfileCsv("task,technique,gpus,runtime_s\na,ddp,4,10\n", "p.csv", TwoTypes());
              }),
              HasSubstr("p.csv:2: gpu_type: the cluster's nodes are of several GPU types (V100, "
                        "A100): every row needs its gpu_type"));
  EXPECT_THAT(ErrorOf([] {
                ParseProfileCsv("task,technique,gpus,runtime_s,gpu_type\na,ddp,4,10,H100\n",
                                "p.csv", TwoTypes());
              }),
              HasSubstr("p.csv:2: gpu_type: no node of the cluster is of type 'H100' (its types: "
                        "V100, A100)"));
  EXPECT_THAT(ErrorOf([] {
                ParseProfileCsv("task,technique,gpus,runtime_s,gpu_type\na,ddp,8,10,V100\n",
                                "p.csv", TwoTypes());
              }),
              HasSubstr("gpus: 8 GPUs is more than any node of type V100 has (the largest has 4)"));
  EXPECT_THAT(ErrorOf([] {
                ParseProfileCsv(
                    "task,technique,gpus,runtime_s,gpu_type\na,ddp,4,10,V100\na,ddp,4,9,V100\n",
                    "p.csv", TwoTypes());
              }),
              HasSubstr("duplicate row for task 'a', technique 'ddp', 4 GPUs of type V100"));
}

TEST(Types, PlanTasksCarryTheirNodesType) {
  Plan p;
  p.solver = "auto";
  p.status = "optimal";
  p.tasks = {{"a", "ddp", 2, "n", {0, 1}, 0, 10, "A100"}, {"b", "ddp", 1, "m", {0}, 0, 5, ""}};
  nlohmann::json j = PlanToJson(p);
  EXPECT_EQ(j["tasks"][0]["gpu_type"], "A100");
  EXPECT_FALSE(j["tasks"][1].contains("gpu_type"));
  EXPECT_EQ(PlanFromJson(j, "x").tasks[0].gpu_type, "A100");
}

TEST(Plan, JsonRoundTripKeepsExtraFields) {
  Plan p;
  p.solver = "auto";
  p.status = "optimal";
  p.makespan_s = 10;
  p.lower_bound_s = 10;
  p.solve_time_s = 0.5;
  p.tasks = {{"a", "ddp", 2, "n", {0, 1}, 0, 10, ""}};
  p.extra["note"] = "hello";
  Plan q = PlanFromJson(PlanToJson(p), "x");
  EXPECT_EQ(q.tasks[0].gpu_ids, (std::vector<int>{0, 1}));
  EXPECT_EQ(q.extra["note"], "hello");
  EXPECT_EQ(PlanToJson(q), PlanToJson(p));
}

TEST(Plan, BadJsonNamesTheField) {
  nlohmann::json j =
      PlanToJson(Plan{"auto", "optimal", 1, 1, 1, {{"a", "ddp", 1, "n", {0}, 0, 1, ""}}, {}});
  j["tasks"][0]["gpu_ids"] = "0";
  EXPECT_THAT(ErrorOf([&] { PlanFromJson(j, "plan.json"); }),
              HasSubstr("plan.json: tasks[0].gpu_ids: expected a list"));
  j = PlanToJson(Plan{"auto", "great", 1, 1, 1, {}, {}});
  EXPECT_THAT(ErrorOf([&] { PlanFromJson(j, "plan.json"); }),
              HasSubstr("status: expected optimal"));
}

}  // namespace
}  // namespace saturn
