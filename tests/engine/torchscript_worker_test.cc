// TorchScript models through saturn-worker, end to end: every technique
// trains a sequential TorchScript model like `single` (losses at every step
// and final weights within 1e-4), on tensors and tokens data, with
// cross-entropy and mse; a module that is not a sequence is infeasible for
// pipeline, fsdp and spill (with the reason) but trains with single and ddp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "engine/checkpoint.h"
#include "tests/engine/torchscript_fixtures.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

struct Config {
  std::string technique;
  int gpus;
  nlohmann::json knobs = nlohmann::json::object();
};

nlohmann::json Task(const std::string& model, const nlohmann::json& data, const std::string& loss) {
  return {{"name", "ts"},
          {"model", {{"type", "torchscript"}, {"path", TorchScriptFixture(model)}, {"loss", loss}}},
          {"data", data},
          {"batch_size", 10},
          {"optimizer", {{"type", "adamw"}, {"lr", 1e-2}}},
          {"steps", 8},
          {"seed", 5}};
}

nlohmann::json Tensors(const std::string& file) {
  return {{"type", "tensors"}, {"path", TorchScriptFixture(file)}};
}

std::string Name(const Config& run) {
  return run.technique + "-" + std::to_string(run.gpus);
}

WorkerRun Execute(const TestDir& dir, const std::string& task, const Config& run) {
  std::string name = Name(run);
  return RunWorker(
      {"execute", "--task", task, "--technique", run.technique, "--gpus", std::to_string(run.gpus),
       "--out", dir.Path(name + ".json"), "--from-step", "0", "--to-step", "8", "--checkpoint-dir",
       dir.Path(name), "--knobs", run.knobs.dump(), "--timeout-s", "120"},
      dir.Path(name));
}

std::vector<double> Losses(const TestDir& dir, const std::string& task, const Config& run) {
  WorkerRun result = Execute(dir, task, run);
  EXPECT_EQ(result.status, 0) << Name(run) << ": " << result.err;
  if (result.status != 0) return {};
  return ReadJson(dir.Path(Name(run) + ".json"))["losses"].get<std::vector<double>>();
}

// Every parameter of the final checkpoints, compared.
void ExpectSameWeights(const TestDir& dir, const Config& run, int blocks) {
  engine::CheckpointReader expected(dir.Path("single-1/checkpoint-8"));
  engine::CheckpointReader actual(dir.Path(Name(run) + "/checkpoint-8"));
  for (int b = 0; b < blocks; ++b) {
    engine::NamedTensors want = expected.ReadBlock(b), got = actual.ReadBlock(b);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i].first.rfind("param/", 0) != 0) continue;
      EXPECT_EQ(want[i].first, got[i].first);
      EXPECT_TRUE(at::allclose(got[i].second, want[i].second, 1e-4, 1e-5))
          << Name(run) << " block " << b << " " << want[i].first << ": max difference "
          << (got[i].second - want[i].second).abs().max().item<double>();
    }
  }
}

void ExpectLikeSingle(const std::string& test, const nlohmann::json& task_json,
                      const std::vector<Config>& runs, int blocks) {
  TestDir dir(test);
  std::string task = dir.Write("task.json", task_json.dump());
  std::vector<double> expected = Losses(dir, task, {"single", 1});
  ASSERT_EQ(expected.size(), 8u);
  EXPECT_LT(expected[7], expected[0]) << "the model should learn";
  for (const Config& run : runs) {
    std::vector<double> losses = Losses(dir, task, run);
    ASSERT_EQ(losses.size(), expected.size()) << Name(run);
    for (size_t step = 0; step < losses.size(); ++step) {
      EXPECT_LE(std::fabs(losses[step] - expected[step]), 1e-4 * std::fabs(expected[step]))
          << Name(run) << " knobs " << run.knobs.dump() << ", step " << step << ": " << losses[step]
          << " vs " << expected[step];
    }
    ExpectSameWeights(dir, run, blocks);
  }
}

TEST(TorchScriptWorker, SequentialClassifierTrainsAlikeUnderEveryTechnique) {
  std::fprintf(stderr, "fixtures: %s\n", TorchScriptFixtureSource().c_str());
  ExpectLikeSingle("ts_equivalence_mlp", Task("seq_mlp.pt", Tensors("vectors.pt"), "cross_entropy"),
                   {{"ddp", 2},
                    {"fsdp", 2, {{"checkpointing", true}}},
                    {"pipeline", 2, {{"micro_batches", 2}}},
                    {"spill", 1, {{"blocks_per_shard", 1}}},
                    {"fsdp", 3, {{"offload", true}}},
                    {"pipeline", 3, {{"micro_batches", 3}}}},
                   3);
}

TEST(TorchScriptWorker, TokenModelAndMseModelTrainAlike) {
  nlohmann::json tokens = {{"type", "tokens"},
                           {"path", TorchScriptFixture("tokens.bin")},
                           {"seq_len", 16},
                           {"vocab", 40}};
  ExpectLikeSingle("ts_equivalence_lm", Task("seq_lm.pt", tokens, "cross_entropy"),
                   {{"pipeline", 3, {{"micro_batches", 2}}}, {"fsdp", 2}}, 3);
  ExpectLikeSingle("ts_equivalence_mse", Task("chain_mlp.pt", Tensors("regression.pt"), "mse"),
                   {{"ddp", 2}, {"spill", 1}}, 2);
}

TEST(TorchScriptWorker, NonSequenceTrainsWithSingleAndDdpOnly) {
  TestDir dir("ts_residual");
  std::string task =
      dir.Write("task.json", Task("residual.pt", Tensors("vectors.pt"), "cross_entropy").dump());
  for (const Config& run : std::vector<Config>{{"pipeline", 2}, {"fsdp", 2}, {"spill", 1}}) {
    std::string out = dir.Path(Name(run) + "-search.json");
    WorkerRun result =
        RunWorker({"search", "--task", task, "--technique", run.technique, "--gpus",
                   std::to_string(run.gpus), "--out", out, "--warmup", "1", "--measure", "1"},
                  dir.Path(Name(run) + "-search"));
    ASSERT_EQ(result.status, 0) << result.err;
    nlohmann::json found = ReadJson(out);
    EXPECT_FALSE(found["feasible"].get<bool>()) << run.technique;
    EXPECT_THAT(found["reason"].get<std::string>(),
                HasSubstr("torchscript module is not a sequence of blocks"));
  }
  std::string out = dir.Path("single-search.json");
  WorkerRun searched = RunWorker({"search", "--task", task, "--technique", "single", "--gpus", "1",
                                  "--out", out, "--warmup", "1", "--measure", "2"},
                                 dir.Path("single-search"));
  ASSERT_EQ(searched.status, 0) << searched.err;
  nlohmann::json found = ReadJson(out);
  EXPECT_TRUE(found["feasible"].get<bool>()) << found.dump();
  EXPECT_GT(found["step_s"].get<double>(), 0.0);
  EXPECT_GT(found["model_flops_per_step"].get<double>(), 0.0);

  std::vector<double> single = Losses(dir, task, {"single", 1});
  std::vector<double> ddp = Losses(dir, task, {"ddp", 2});
  ASSERT_EQ(single.size(), 8u);
  ASSERT_EQ(ddp.size(), 8u);
  for (size_t step = 0; step < single.size(); ++step)
    EXPECT_NEAR(ddp[step], single[step], 1e-4 * std::fabs(single[step])) << step;
  ExpectSameWeights(dir, {"ddp", 2}, 1);

  // execute with a technique that cannot take it: bad input, exit 2.
  WorkerRun refused = Execute(dir, task, {"fsdp", 2});
  EXPECT_EQ(refused.status, 2);
  EXPECT_THAT(refused.err, HasSubstr("not a sequence of blocks"));
}

TEST(TorchScriptWorker, BadFilesExitWithInputErrors) {
  TestDir dir("ts_bad");
  nlohmann::json json = Task("seq_mlp.pt", Tensors("bad_width.pt"), "cross_entropy");
  std::string task = dir.Write("task.json", json.dump());
  WorkerRun bad_data = Execute(dir, task, {"single", 1});
  EXPECT_EQ(bad_data.status, 2);
  EXPECT_THAT(bad_data.err, HasSubstr("bad_width.pt: samples do not fit the torchscript model"));
  json["model"]["path"] = dir.Write("model.pt", "not a model");
  task = dir.Write("task.json", json.dump());
  WorkerRun bad_model = Execute(dir, task, {"single", 1});
  EXPECT_EQ(bad_model.status, 2);
  EXPECT_THAT(bad_model.err, HasSubstr("is not a TorchScript module"));
}

}  // namespace
}  // namespace saturn::testing
