// Memory: fsdp really shards, spill trains a model several times larger than
// the device, tp a layer no other technique fits, single falls back to
// checkpointing or gradient accumulation when its step does not fit, and a
// model too big for `single` is reported infeasible by search (and is an
// out-of-memory exit for execute), never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/model.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = 1 << 20;

std::string Gib(int64_t bytes) {
  return std::to_string(static_cast<double>(bytes) / (1 << 30));
}

std::vector<int64_t> BlockParams(const nlohmann::json& task) {
  return engine::BuildModel(engine::ParseTask(task, "task"))->BlockParamCounts();
}

WorkerRun Execute(const TestDir& dir, const std::string& task, const std::string& technique,
                  int gpus, const std::string& name, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = ExecuteArgs(dir, task, technique, gpus, name, 3);
  args.insert(args.end(), extra.begin(), extra.end());
  return RunWorker(args, dir.Path(name));
}

TEST(Memory, FsdpKeepsAShardOfParametersGradientsAndOptimizerState) {
  TestDir dir("memory_fsdp");
  nlohmann::json json = TinyTask("gpt");
  json["model"] = {{"type", "gpt"}, {"layers", 6}, {"d_model", 64}, {"heads", 4}, {"seq_len", 16}};
  std::string task = dir.Write("task.json", json.dump());
  std::vector<int64_t> blocks = BlockParams(json);
  // Parameters, gradients and AdamW's two moments, 4 bytes each.
  int64_t per_param = 4 * 4;
  int64_t unsharded = per_param * std::accumulate(blocks.begin(), blocks.end(), int64_t{0});
  int64_t one_block = per_param * *std::max_element(blocks.begin(), blocks.end());

  WorkerRun ddp = Execute(dir, task, "ddp", 2, "ddp");
  ASSERT_EQ(ddp.status, 0) << ddp.err;
  nlohmann::json ddp_result = ReadJson(dir.Path("ddp.json"));
  for (int64_t resident : ddp_result["resident_bytes"]) {
    EXPECT_GE(resident, unsharded) << "ddp keeps a whole replica";
  }
  for (int gpus : {2, 4}) {
    std::string name = "fsdp" + std::to_string(gpus);
    WorkerRun fsdp = Execute(dir, task, "fsdp", gpus, name);
    ASSERT_EQ(fsdp.status, 0) << fsdp.err;
    nlohmann::json result = ReadJson(dir.Path(name + ".json"));
    ASSERT_EQ(result["resident_bytes"].size(), static_cast<size_t>(gpus));
    for (int64_t resident : result["resident_bytes"]) {
      EXPECT_GT(resident, 0);
      EXPECT_LE(resident, unsharded / gpus + one_block) << gpus << " ranks";
    }
  }
}

TEST(Memory, SpillTrainsAModelFourTimesTheDeviceThatSingleCannot) {
  TestDir dir("memory_spill");
  nlohmann::json json = TinyTask("mlp");
  json["model"] = {{"type", "mlp"}, {"layers", 8}, {"width", 512}};
  json["optimizer"] = {{"type", "adam"}, {"lr", 1e-3}};
  std::string task = dir.Write("task.json", json.dump());
  std::vector<int64_t> blocks = BlockParams(json);
  int64_t capacity = 6 * kMiB;
  int64_t params_and_state = 3 * 4 * std::accumulate(blocks.begin(), blocks.end(), int64_t{0});
  ASSERT_GE(params_and_state, 4 * capacity);
  std::vector<std::string> device{"--memory-gib", Gib(capacity)};

  WorkerRun spill = Execute(dir, task, "spill", 1, "spill", device);
  ASSERT_EQ(spill.status, 0) << spill.err;
  nlohmann::json result = ReadJson(dir.Path("spill.json"));
  EXPECT_EQ(result["completed_steps"], 3);
  EXPECT_LT(result["peak_memory_bytes"][0].get<int64_t>(), capacity);
  EXPECT_GT(result["peak_memory_bytes"][0].get<int64_t>(), 0);

  std::vector<std::string> search{"search", "--task",       task,         "--gpus",
                                  "1",      "--warmup",     "1",          "--measure",
                                  "1",      "--memory-gib", Gib(capacity)};
  auto with = [&](std::vector<std::string> args, const std::string& technique) {
    args.insert(args.end(),
                {"--technique", technique, "--out", dir.Path(technique + "-search.json")});
    return args;
  };
  WorkerRun found = RunWorker(with(search, "spill"), dir.Path("spill-search"));
  ASSERT_EQ(found.status, 0) << found.err;
  nlohmann::json spill_search = ReadJson(dir.Path("spill-search.json"));
  EXPECT_TRUE(spill_search["feasible"]);
  EXPECT_LT(spill_search["peak_memory_bytes"][0].get<int64_t>(), capacity);

  WorkerRun single = RunWorker(with(search, "single"), dir.Path("single-search"));
  ASSERT_EQ(single.status, 0) << single.err;
  nlohmann::json single_search = ReadJson(dir.Path("single-search.json"));
  EXPECT_FALSE(single_search["feasible"]);
  EXPECT_THAT(single_search["reason"].get<std::string>(), HasSubstr("out of memory"));

  WorkerRun single_run = Execute(dir, task, "single", 1, "single", device);
  EXPECT_EQ(single_run.status, 3);
  EXPECT_THAT(single_run.err, HasSubstr("out of memory"));
}

// A GPT layer whose parameters and gradients exceed a device, even one layer
// at a time as fsdp gathers it (or a pipeline stage or spill holds it), trains
// under tp on two devices, each holding half of it.
TEST(Memory, TpTrainsALayerThatNoOtherTechniqueFitsOnTwoDevices) {
  TestDir dir("memory_tp");
  nlohmann::json json = TinyTask("gpt");
  json["model"] = {{"type", "gpt"}, {"layers", 1}, {"d_model", 384}, {"heads", 4}, {"seq_len", 16}};
  json["optimizer"] = {{"type", "sgd"}, {"lr", 1e-2}};  // no optimizer state
  std::string task = dir.Write("task.json", json.dump());
  std::vector<int64_t> blocks = BlockParams(json);
  const int64_t layer = 2 * 4 * blocks.at(1);  // parameters and gradients, fp32
  const int64_t capacity = 12 * kMiB;
  ASSERT_GT(layer, capacity);
  ASSERT_LT(layer / 2 + 2 * 4 * (blocks.at(0) + blocks.at(2)), capacity - 2 * kMiB);
  std::vector<std::string> search{"search", "--task",       task,         "--gpus",
                                  "2",      "--warmup",     "1",          "--measure",
                                  "1",      "--memory-gib", Gib(capacity)};
  for (const std::string technique : {"tp", "fsdp", "pipeline", "ddp"}) {
    std::vector<std::string> args = search;
    args.insert(args.end(),
                {"--technique", technique, "--out", dir.Path(technique + "-search.json")});
    WorkerRun run = RunWorker(args, dir.Path(technique));
    ASSERT_EQ(run.status, 0) << technique << ": " << run.err;
    nlohmann::json found = ReadJson(dir.Path(technique + "-search.json"));
    EXPECT_EQ(found["feasible"].get<bool>(), technique == "tp")
        << technique << ": " << found.dump();
    if (technique == "tp") {
      for (int64_t peak : found["peak_memory_bytes"])
        EXPECT_LT(peak, capacity);
    }
  }
  WorkerRun tp = Execute(dir, task, "tp", 2, "tp", {"--memory-gib", Gib(capacity)});
  ASSERT_EQ(tp.status, 0) << tp.err;
  EXPECT_EQ(ReadJson(dir.Path("tp.json"))["completed_steps"], 3);
}

// A GPT whose activations outgrow the device: search finds single's plain
// step over capacity and then tries the memory savers (checkpointing,
// gradient accumulation), keeps the fastest that fits, and measures none
// that saves more of both than one that fits.
TEST(Memory, SingleSearchFallsBackToCheckpointingOrAccumulationWhenTheStepDoesNotFit) {
  TestDir dir("memory_savers");
  nlohmann::json json = TinyTask("gpt");
  json["model"] = {{"type", "gpt"}, {"layers", 2}, {"d_model", 64}, {"heads", 4}, {"seq_len", 128}};
  json["batch_size"] = 16;
  std::string task = dir.Write("task.json", json.dump());
  const int64_t capacity = 16 * kMiB;
  WorkerRun run = RunWorker(
      {"search", "--task", task, "--technique", "single", "--gpus", "1", "--out",
       dir.Path("search.json"), "--warmup", "1", "--measure", "1", "--memory-gib", Gib(capacity)},
      dir.Path("search"));
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json found = ReadJson(dir.Path("search.json"));
  ASSERT_TRUE(found["feasible"].get<bool>()) << found.dump();
  EXPECT_LT(found["peak_memory_bytes"][0].get<int64_t>(), capacity);
  const nlohmann::json& knobs = found["knobs"];
  EXPECT_TRUE(knobs.value("checkpointing", false) || knobs.value("accumulation", 1) > 1)
      << knobs.dump();
  struct Saving {
    bool checkpointing;
    int64_t accumulation;
  };
  std::vector<Saving> fits, tried;
  bool plain_tried = false;
  for (const nlohmann::json& candidate : found["candidates"]) {
    const nlohmann::json& k = candidate["knobs"];
    Saving saving{k.value("checkpointing", false), k.value("accumulation", int64_t{1})};
    if (!saving.checkpointing && saving.accumulation == 1) {
      plain_tried = true;
      EXPECT_THAT(candidate.value("reason", ""), HasSubstr("out of memory")) << candidate.dump();
    }
    tried.push_back(saving);
    if (candidate.contains("step_s")) fits.push_back(saving);
  }
  EXPECT_TRUE(plain_tried) << found["candidates"].dump();
  for (const Saving& fit : fits) {
    for (const Saving& other : tried) {
      bool more =
          other.checkpointing >= fit.checkpointing && other.accumulation >= fit.accumulation &&
          (other.checkpointing != fit.checkpointing || other.accumulation != fit.accumulation);
      EXPECT_FALSE(more) << "measured a setting that saves more than one that fits: "
                         << found["candidates"].dump();
    }
  }
  WorkerRun execute = Execute(dir, task, "single", 1, "execute",
                              {"--memory-gib", Gib(capacity), "--knobs", knobs.dump()});
  ASSERT_EQ(execute.status, 0) << execute.err;
  EXPECT_EQ(ReadJson(dir.Path("execute.json"))["completed_steps"], 3);
}

// A feasible search result of `technique` on two devices for `task`.
nlohmann::json SearchOnTwo(const TestDir& dir, const nlohmann::json& task,
                           const std::string& technique) {
  std::string path = dir.Write("task.json", task.dump());
  WorkerRun run = RunWorker({"search", "--task", path, "--technique", technique, "--gpus", "2",
                             "--out", dir.Path("s.json"), "--warmup", "1", "--measure", "2"},
                            dir.Path("s"));
  EXPECT_EQ(run.status, 0) << run.err;
  nlohmann::json result = ReadJson(dir.Path("s.json"));
  EXPECT_TRUE(result["feasible"]) << result.dump();
  return result;
}

// Whether a setting of fsdp or spill trades speed for memory.
bool SavesMemory(const nlohmann::json& knobs) {
  return knobs.value("checkpointing", false) || knobs.value("offload", false) ||
         knobs.value("recompute", false);
}

// fsdp's checkpointing and offload and spill's recomputation are memory
// savers: where the plain settings fit, search measures none of them and
// keeps the fastest plain one; on a device too small for every plain
// setting it measures them and keeps one that fits.
TEST(Memory, FsdpAndSpillMeasureTheirMemorySaversOnlyWhereNoPlainSettingFits) {
  TestDir dir("memory_own_savers");
  nlohmann::json json = TinyTask("gpt");
  json["model"] = {{"type", "gpt"}, {"layers", 2}, {"d_model", 64}, {"heads", 4}, {"seq_len", 128}};
  json["batch_size"] = 16;
  std::string task = dir.Write("task.json", json.dump());
  for (auto [technique, gpus] :
       std::vector<std::pair<std::string, int>>{{"fsdp", 2}, {"spill", 1}}) {
    auto search = [&, technique = technique, gpus = gpus](const std::string& name,
                                                          std::vector<std::string> extra) {
      extra.insert(extra.begin(), {"search", "--task", task, "--technique", technique, "--gpus",
                                   std::to_string(gpus), "--out", dir.Path(name + ".json"),
                                   "--warmup", "1", "--measure", "1"});
      WorkerRun run = RunWorker(extra, dir.Path(name));
      EXPECT_EQ(run.status, 0) << technique << ": " << run.err;
      return ReadJson(dir.Path(name + ".json"));
    };
    nlohmann::json plenty = search(technique + "-plenty", {});
    ASSERT_TRUE(plenty["feasible"].get<bool>()) << plenty.dump();
    double fastest = 1e300;
    int64_t least = INT64_MAX;
    for (const nlohmann::json& candidate : plenty["candidates"]) {
      EXPECT_FALSE(SavesMemory(candidate["knobs"])) << technique << ": " << candidate.dump();
      fastest = std::min(fastest, candidate["step_s"].get<double>());
    }
    EXPECT_EQ(plenty["step_s"].get<double>(), fastest);
    for (const nlohmann::json& peak : plenty["peak_memory_bytes"])
      least = std::min(least, peak.get<int64_t>());

    // Below the chosen plain setting's peak: the plain settings are refused.
    const int64_t capacity = least * 3 / 4;
    nlohmann::json tight = search(technique + "-tight", {"--memory-gib", Gib(capacity)});
    ASSERT_TRUE(tight["feasible"].get<bool>()) << technique << ": " << tight.dump();
    EXPECT_TRUE(SavesMemory(tight["knobs"])) << technique << ": " << tight["knobs"].dump();
    for (const nlohmann::json& peak : tight["peak_memory_bytes"])
      EXPECT_LT(peak.get<int64_t>(), capacity) << technique;
    for (const nlohmann::json& candidate : tight["candidates"]) {
      if (SavesMemory(candidate["knobs"])) continue;
      EXPECT_THAT(candidate.value("reason", ""), HasSubstr("out of memory"))
          << technique << ": " << candidate.dump();
    }
  }
}

// Pipeline stages balanced by time alone can tilt (timings on a busy machine
// are noisy) until one no longer fits, so search also tries the stages
// balanced by parameters, and keeps the fastest candidate that fits.
TEST(Memory, PipelineSearchAlsoTriesStagesBalancedByParameters) {
  TestDir dir("memory_pipeline_search");
  nlohmann::json json = TinyTask("resnet");
  std::vector<int64_t> blocks = BlockParams(json);
  // Every two-stage cut that minimises the larger stage's parameters.
  int64_t total = std::accumulate(blocks.begin(), blocks.end(), int64_t{0});
  int64_t best = INT64_MAX, prefix = 0;
  std::vector<int64_t> best_cuts;
  for (size_t cut = 1; cut < blocks.size(); ++cut) {
    prefix += blocks[cut - 1];
    int64_t larger = std::max(prefix, total - prefix);
    if (larger < best) best = larger, best_cuts.clear();
    if (larger == best) best_cuts.push_back(static_cast<int64_t>(cut));
  }
  nlohmann::json result = SearchOnTwo(dir, json, "pipeline");
  ASSERT_TRUE(result["feasible"]);
  bool by_params = false;
  double fastest = 1e300;
  for (const nlohmann::json& candidate : result["candidates"]) {
    std::vector<int64_t> bounds = candidate["knobs"]["partition"];
    ASSERT_EQ(bounds.size(), 3u);
    by_params =
        by_params || std::find(best_cuts.begin(), best_cuts.end(), bounds[1]) != best_cuts.end();
    fastest = std::min(fastest, candidate["step_s"].get<double>());
  }
  EXPECT_TRUE(by_params) << result["candidates"].dump();
  EXPECT_EQ(result["step_s"].get<double>(), fastest);
}

}  // namespace
}  // namespace saturn::testing
