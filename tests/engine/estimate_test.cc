// Analytic estimates (engine/estimate.h) against the engine itself: the
// peak memory single, ddp and fsdp are estimated to need on a small llama
// is within kTolerance of what `saturn-worker search` measures on CPU
// devices (fp32 and bf16, whole and LoRA); feasibility follows the declared
// capacity; the worker estimates a trial that cannot run on this machine,
// says so, and needs a device speed to.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "engine/estimate.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/technique.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

// How far an estimated peak may be from the measured one, either way.
// Measured here: within 4%; fsdp with offload (which the search may pick
// for LoRA) within 14%.
constexpr double kTolerance = 0.15;

nlohmann::json SmallLlama(const std::string& precision, bool lora) {
  nlohmann::json task = TinyTask("llama");
  task["name"] = "small-llama";
  task["model"] = {{"type", "llama"}, {"layers", 2},          {"d_model", 128}, {"heads", 4},
                   {"kv_heads", 2},   {"ffn", 344},           {"vocab", 2048},  {"positions", 64},
                   {"seq_len", 64},   {"rope_theta", 10000.0}};
  task["batch_size"] = 8;
  task["precision"] = precision;
  if (lora) task["finetune"] = {{"lora", {{"rank", 8}, {"targets", {"attn", "mlp"}}}}};
  return task;
}

struct Built {
  engine::TaskSpec task;
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<engine::Optimizer> optimizer;
};

Built Build(const nlohmann::json& json) {
  Built b;
  b.task = engine::ParseTask(json, "task");
  b.model = engine::BuildModel(b.task);
  b.optimizer = engine::MakeOptimizer(b.task.optimizer);
  return b;
}

engine::SearchResult Estimate(const Built& b, const std::string& technique, int gpus,
                              int64_t capacity = 0, double tflops = 100) {
  engine::DeviceRate rate;
  rate.peak_flops = tflops * 1e12;
  rate.link_bytes_s = 100e9;
  engine::EstimateContext ctx{b.task, *b.model, *b.optimizer, gpus, capacity, rate};
  return engine::Techniques().Get(technique).Estimate(ctx);
}

// The estimate's peak for the knob setting the search chose.
int64_t EstimatedPeakFor(const engine::SearchResult& estimate, const nlohmann::json& knobs) {
  for (const nlohmann::json& c : estimate.candidates) {
    nlohmann::json k = c["knobs"];
    // Knobs the estimate does not vary (pipeline's measured partition) are not compared.
    if (k == knobs || (k.value("checkpointing", false) == knobs.value("checkpointing", false) &&
                       k.value("offload", false) == knobs.value("offload", false) &&
                       !knobs.contains("accumulation"))) {
      return c["peak_memory_bytes"].get<int64_t>();
    }
  }
  ADD_FAILURE() << "no estimate for knobs " << knobs.dump();
  return 0;
}

struct Case {
  std::string technique;
  int gpus;
  std::string precision;
  bool lora;
};

class EstimateAgainstMeasured : public ::testing::TestWithParam<Case> {};

TEST_P(EstimateAgainstMeasured, PeakMemoryWithinTolerance) {
  const Case& c = GetParam();
  std::string name = c.technique + std::to_string(c.gpus) + c.precision + (c.lora ? "lora" : "");
  TestDir dir("estimate_" + name);
  nlohmann::json json = SmallLlama(c.precision, c.lora);
  std::string task = dir.Write("task.json", json.dump());
  WorkerRun run = RunWorker(
      {"search", "--task", task, "--technique", c.technique, "--gpus", std::to_string(c.gpus),
       "--warmup", "0", "--measure", "1", "--out", dir.Path("search.json")},
      dir.Path("search"));
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json measured = ReadJson(dir.Path("search.json"));
  ASSERT_TRUE(measured["feasible"]) << measured.dump();
  int64_t measured_peak = 0;
  for (int64_t peak : measured["peak_memory_bytes"])
    measured_peak = std::max(measured_peak, peak);

  Built b = Build(json);
  engine::SearchResult estimate = Estimate(b, c.technique, c.gpus);
  ASSERT_TRUE(estimate.feasible) << estimate.reason;
  EXPECT_THAT(estimate.estimated, HasSubstr("analytic: 100 TFLOP/s x 0.40"));
  int64_t estimated_peak = EstimatedPeakFor(estimate, measured["knobs"]);
  double ratio = static_cast<double>(estimated_peak) / static_cast<double>(measured_peak);
  std::printf("estimate %-22s measured %8.2f MiB, estimated %8.2f MiB (x%.3f), knobs %s\n",
              name.c_str(), measured_peak / 1048576.0, estimated_peak / 1048576.0, ratio,
              measured["knobs"].dump().c_str());
  EXPECT_NEAR(ratio, 1.0, kTolerance)
      << "measured " << measured_peak << ", estimated " << estimated_peak;
}

INSTANTIATE_TEST_SUITE_P(SmallLlama, EstimateAgainstMeasured,
                         ::testing::Values(Case{"single", 1, "fp32", false},
                                           Case{"single", 1, "bf16", true},
                                           Case{"ddp", 2, "fp32", false},
                                           Case{"ddp", 2, "bf16", true},
                                           Case{"fsdp", 2, "bf16", false}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.technique + std::to_string(info.param.gpus) + "_" +
                                  info.param.precision + (info.param.lora ? "_lora" : "");
                         });

TEST(Estimate, FeasibilityFollowsTheDeclaredCapacity) {
  Built b = Build(SmallLlama("fp32", false));
  engine::SearchResult unlimited = Estimate(b, "single", 1);
  ASSERT_TRUE(unlimited.feasible);
  EXPECT_EQ(unlimited.knobs, nlohmann::json::object()) << "the plain step when it fits";
  const int64_t plain = unlimited.peak_memory_bytes[0];

  engine::SearchResult roomy = Estimate(b, "single", 1, plain + plain / 20);
  EXPECT_TRUE(roomy.feasible);
  EXPECT_EQ(roomy.knobs, nlohmann::json::object());

  engine::SearchResult tight = Estimate(b, "single", 1, plain - plain / 5);
  ASSERT_TRUE(tight.feasible) << "a memory saver fits: " << tight.reason;
  EXPECT_NE(tight.knobs, nlohmann::json::object());
  EXPECT_LE(tight.peak_memory_bytes[0], plain - plain / 5);
  EXPECT_GE(tight.step_s, unlimited.step_s);

  engine::SearchResult none = Estimate(b, "single", 1, 1 << 20);
  EXPECT_FALSE(none.feasible);
  EXPECT_THAT(none.reason, HasSubstr("out of memory"));
  EXPECT_THAT(none.reason, HasSubstr("(estimated)"));

  // Sharding makes room: what single cannot fit, fsdp on 4 devices can.
  engine::SearchResult state_only = Estimate(b, "fsdp", 4);
  int64_t fsdp4 = state_only.peak_memory_bytes[0];
  ASSERT_LT(fsdp4, plain);
  engine::SearchResult single_there = Estimate(b, "single", 1, fsdp4);
  EXPECT_TRUE(!single_there.feasible || single_there.knobs != nlohmann::json::object())
      << "single's plain step does not fit where fsdp x4's does";
  EXPECT_TRUE(Estimate(b, "fsdp", 4, fsdp4).feasible);
}

TEST(Estimate, MoreDevicesAndFasterDevicesTakeLessUntilCommunicationDominates) {
  Built b = Build(SmallLlama("bf16", false));
  engine::SearchResult one = Estimate(b, "single", 1, 0, 1);
  engine::SearchResult four = Estimate(b, "ddp", 4, 0, 1);
  ASSERT_TRUE(one.feasible && four.feasible);
  EXPECT_LT(four.step_s, one.step_s) << "a slow device: compute dominates";
  EXPECT_LT(four.peak_memory_bytes[0], one.peak_memory_bytes[0]) << "a quarter of the batch";
  EXPECT_LT(Estimate(b, "single", 1, 0, 100).step_s, one.step_s) << "a faster device";
  // A fast device on the same links: the gradients' all-reduce outweighs
  // a small model's compute, as it would.
  EXPECT_GT(Estimate(b, "ddp", 4, 0, 100).step_s, Estimate(b, "single", 1, 0, 100).step_s);
  for (const char* technique : {"tp", "pipeline"}) {
    engine::SearchResult split = Estimate(b, technique, 2);
    ASSERT_TRUE(split.feasible) << technique << ": " << split.reason;
    EXPECT_EQ(split.peak_memory_bytes.size(), 2u);
  }
  EXPECT_THAT(Estimate(b, "spill", 1).reason, HasSubstr("no analytic model for spill"));
  Built gpt = Build(TinyTask("gpt"));
  EXPECT_THAT(Estimate(gpt, "single", 1).reason, HasSubstr("no analytic model for gpt models"));
}

std::vector<std::string> SearchArgs(const std::string& task, const std::string& technique, int gpus,
                                    const std::string& out) {
  return {"search",
          "--task",
          task,
          "--technique",
          technique,
          "--gpus",
          std::to_string(gpus),
          "--out",
          out,
          "--estimate",
          "auto",
          "--memory-gib",
          "80"};
}

TEST(WorkerEstimate, ATrialThatCannotRunHereIsEstimatedAndSaysWhy) {
  TestDir dir("estimate_worker");
  std::string task = dir.Write("task.json", SmallLlama("bf16", true).dump());
  setenv("SATURN_HOST_MEMORY_GIB", "0.001", 1);
  std::vector<std::string> args = SearchArgs(task, "fsdp", 4, dir.Path("fsdp.json"));
  args.insert(args.end(), {"--peak-tflops", "989", "--link-gb-s", "450"});
  WorkerRun run = RunWorker(args, dir.Path("fsdp"), 60);
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json result = ReadJson(dir.Path("fsdp.json"));
  EXPECT_TRUE(result["feasible"]);
  EXPECT_THAT(result["estimated"].get<std::string>(),
              HasSubstr("analytic: 989 TFLOP/s x 0.40, links 450 GB/s; cannot run here: needs"));
  EXPECT_EQ(result["peak_memory_bytes"].size(), 4u);
  EXPECT_GT(result["step_s"].get<double>(), 0.0);

  // Without a device speed there is nothing to estimate with.
  WorkerRun blind =
      RunWorker(SearchArgs(task, "single", 1, dir.Path("blind.json")), dir.Path("blind"), 60);
  ASSERT_EQ(blind.status, 0) << blind.err;
  nlohmann::json infeasible = ReadJson(dir.Path("blind.json"));
  EXPECT_FALSE(infeasible["feasible"]);
  EXPECT_THAT(infeasible["reason"].get<std::string>(), HasSubstr("no device speed"));
  unsetenv("SATURN_HOST_MEMORY_GIB");
}

TEST(WorkerEstimate, An8BModelIsEstimatedNotRun) {
  TestDir dir("estimate_8b");
  nlohmann::json json = TinyTask("llama");
  json["model"] = {{"type", "llama"}, {"preset", "llama-3.1-8b"}, {"seq_len", 2048}};
  json["batch_size"] = 8;
  json["precision"] = "bf16";
  json["finetune"] = {{"lora", {{"rank", 16}}}};
  std::string task = dir.Write("task.json", json.dump());
  // As on a 16 GiB machine, whatever this one has: never train an 8B here.
  setenv("SATURN_HOST_MEMORY_GIB", "16", 1);
  for (const auto& [technique, gpus] : std::vector<std::pair<std::string, int>>{
           {"single", 1}, {"ddp", 8}, {"fsdp", 8}, {"pipeline", 4}}) {
    std::string out = dir.Path(technique + ".json");
    std::vector<std::string> args = SearchArgs(task, technique, gpus, out);
    args.insert(args.end(), {"--peak-tflops", "989", "--link-gb-s", "450"});
    WorkerRun run = RunWorker(args, dir.Path(technique), 60);
    ASSERT_EQ(run.status, 0) << run.err;
    nlohmann::json result = ReadJson(out);
    EXPECT_THAT(result.value("estimated", ""), HasSubstr("cannot run here")) << technique;
    EXPECT_TRUE(result["feasible"]) << technique << ": " << result["reason"];
    std::printf("8B LoRA %s x%d: %.3f s/step, peak %.1f GiB, knobs %s\n", technique.c_str(), gpus,
                result["step_s"].get<double>(),
                result["peak_memory_bytes"][0].get<double>() / (1 << 30),
                result["knobs"].dump().c_str());
  }
  unsetenv("SATURN_HOST_MEMORY_GIB");
}

}  // namespace
}  // namespace saturn::testing
