// Introspective re-planning moves a running task to another technique and
// device count: a checkpoint written by any technique resumes under any
// other, and the final weights equal an uninterrupted run's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>

#include "engine/checkpoint.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

struct Leg {
  std::string technique;
  int gpus;
  int from, to;
};

// Runs the legs one after another in one checkpoint directory; returns the
// losses of all steps.
std::vector<double> RunLegs(const TestDir& dir, const std::string& task, const std::string& name,
                            const std::vector<Leg>& legs) {
  std::vector<double> losses;
  for (const Leg& leg : legs) {
    std::string out = dir.Path(name + "-" + std::to_string(leg.to) + ".json");
    WorkerRun run =
        RunWorker({"execute", "--task", task, "--technique", leg.technique, "--gpus",
                   std::to_string(leg.gpus), "--out", out, "--from-step", std::to_string(leg.from),
                   "--to-step", std::to_string(leg.to), "--checkpoint-dir", dir.Path(name)},
                  dir.Path(name + "-" + std::to_string(leg.to)));
    EXPECT_EQ(run.status, 0) << leg.technique << ": " << run.err;
    if (run.status != 0) return {};
    // Progress lines continue the task's step numbering.
    EXPECT_THAT(run.out, ::testing::HasSubstr("saturn: step=" + std::to_string(leg.from) + " "));
    nlohmann::json result = ReadJson(out);
    for (double loss : result["losses"])
      losses.push_back(loss);
  }
  return losses;
}

void ExpectSameCheckpoint(const std::string& expected_path, const std::string& got_path) {
  engine::CheckpointReader expected(expected_path), got(got_path);
  ASSERT_EQ(expected.Meta().blocks, got.Meta().blocks);
  EXPECT_EQ(expected.Meta().step, got.Meta().step);
  EXPECT_EQ(expected.Meta().data_cursor, got.Meta().data_cursor);
  for (int block = 0; block < expected.Meta().blocks; ++block) {
    engine::NamedTensors want = expected.ReadBlock(block), have = got.ReadBlock(block);
    ASSERT_EQ(want.size(), have.size());
    for (const auto& [name, tensor] : want) {
      const at::Tensor& other = engine::Lookup(have, name, got_path);
      // Adam turns the rounding noise of gradients that are zero in exact
      // arithmetic (a key bias under softmax) into steps of size lr, so
      // weights get an absolute tolerance and state one relative to its scale.
      bool weight = name.rfind("param/", 0) == 0;
      double atol = weight ? 1e-4 : 1e-3 * tensor.abs().max().item<double>() + 1e-12;
      EXPECT_TRUE(at::allclose(other, tensor, 1e-4, atol))
          << "block " << block << " " << name << ": max difference "
          << (other - tensor).abs().max().item<double>();
    }
  }
}

// Through tp and both hybrids: their checkpoints are whole blocks too.
TEST(Resume, FsdpThenTpThenHybridsThenPipelineThenSingleEqualsOneRun) {
  TestDir dir("resume_fsdp_tp_hybrids_pipeline_single");
  std::string task = dir.Write("task.json", TinyTask("gpt").dump());
  std::vector<double> whole = RunLegs(dir, task, "whole", {{"single", 1, 0, 15}});
  std::vector<double> moved = RunLegs(dir, task, "moved",
                                      {{"fsdp", 4, 0, 3},
                                       {"tp", 2, 3, 6},
                                       {"tp-ddp", 4, 6, 9},
                                       {"pipeline-tp", 4, 9, 12},
                                       {"pipeline", 2, 12, 14},
                                       {"single", 1, 14, 15}});
  ASSERT_EQ(whole.size(), 15u);
  ASSERT_EQ(moved.size(), 15u);
  for (size_t step = 0; step < whole.size(); ++step) {
    EXPECT_NEAR(moved[step], whole[step], 1e-4 * whole[step]) << "step " << step;
  }
  ExpectSameCheckpoint(dir.Path("whole/checkpoint-15"), dir.Path("moved/checkpoint-15"));
}

TEST(Resume, SpillThenDdpOnThreeThenFsdpOnTwoEqualsOneRun) {
  TestDir dir("resume_spill_ddp_fsdp");
  nlohmann::json json = TinyTask("resnet");
  json["optimizer"] = {{"type", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}};
  std::string task = dir.Write("task.json", json.dump());
  RunLegs(dir, task, "whole", {{"single", 1, 0, 9}});
  RunLegs(dir, task, "moved", {{"spill", 1, 0, 3}, {"ddp", 3, 3, 6}, {"fsdp", 2, 6, 9}});
  ExpectSameCheckpoint(dir.Path("whole/checkpoint-9"), dir.Path("moved/checkpoint-9"));
}

TEST(Resume, ResumingAWrongTaskIsAnInputError) {
  TestDir dir("resume_wrong_task");
  std::string task = dir.Write("task.json", TinyTask("mlp").dump());
  RunLegs(dir, task, "run", {{"single", 1, 0, 2}});
  nlohmann::json other = TinyTask("mlp");
  other["model"]["width"] = 16;
  std::string other_task = dir.Write("other.json", other.dump());
  WorkerRun run = RunWorker({"execute", "--task", other_task, "--technique", "single", "--gpus",
                             "1", "--out", dir.Path("o.json"), "--from-step", "2", "--to-step", "3",
                             "--checkpoint-dir", dir.Path("run")},
                            dir.Path("other"));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, ::testing::HasSubstr(
                           "checkpoint-2: model: the checkpoint was written for a different task"));
}

}  // namespace
}  // namespace saturn::testing
