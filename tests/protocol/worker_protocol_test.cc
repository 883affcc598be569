// Every message of the worker protocol survives the trip through its JSON
// (what the worker writes is what the orchestrators read), and a message of
// another version or a broken one is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fs.h"
#include "protocol/worker_protocol.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;

WorkerSearchResult Search() {
  WorkerSearchResult r;
  r.feasible = true;
  r.technique = "fsdp";
  r.gpus = 4;
  r.step_s = 0.25;
  r.step_samples_s = {0.24, 0.25, 0.26};
  r.warmup_step_s = {1.5, 0.3};
  r.ready_unix_s = 1000.5;
  r.setup_s = 0.125;
  r.done_unix_s = 1003.25;
  r.launch_s = 0.75;
  r.checkpoint_s = 0.0625;
  r.peak_memory_bytes = {1e9, 1.5e9};
  r.resident_bytes = {5e8, 6e8};
  r.capacity_bytes = 2e9;
  r.model_flops_per_step = 3e12;
  r.knobs = {{"checkpointing", true}};
  r.stats = {{"phases", {{"forward", 0.1}}}};
  r.candidates = nlohmann::json::array({{{"knobs", r.knobs}, {"step_s", 0.25}}});
  return r;
}

TEST(WorkerProtocol, NoDeclaredCapacityIsNullNotZero) {
  WorkerSearchResult r = Search();
  r.capacity_bytes = 0;  // a CPU device declared without gpu_memory_gib
  nlohmann::json j = ToJson(r);
  EXPECT_TRUE(j["capacity_bytes"].is_null());
  EXPECT_EQ(SearchResultFromJson(j).capacity_bytes, 0.0);
  EXPECT_EQ(ToJson(Search())["capacity_bytes"], 2e9);
}

TEST(WorkerProtocol, SearchResultRoundTrips) {
  WorkerSearchResult r = Search();
  WorkerSearchResult back = SearchResultFromJson(ToJson(r));
  EXPECT_EQ(ToJson(back), ToJson(r));
  EXPECT_EQ(back.technique, "fsdp");
  EXPECT_EQ(back.gpus, 4);
  EXPECT_EQ(back.step_samples_s, r.step_samples_s);
  EXPECT_EQ(back.stats["phases"]["forward"], 0.1);

  WorkerSearchResult infeasible;
  infeasible.reason = "out of memory: rank 0 peaked at 3 GiB of 2 GiB";
  nlohmann::json j = ToJson(infeasible);
  EXPECT_TRUE(j["step_s"].is_null());
  EXPECT_EQ(SearchResultFromJson(j).reason, infeasible.reason);
}

TEST(WorkerProtocol, ExecuteResultRoundTrips) {
  WorkerExecuteResult r;
  r.completed_steps = 40;
  r.final_loss = 2.5;
  r.preempted = true;
  r.checkpoint = "/runs/t/checkpoint-40";
  r.peak_memory_bytes = {1e9};
  r.resident_bytes = {7e8};
  r.losses = {3.0, 2.75, 2.5};
  r.knobs = {{"micro_batches", 4}};
  r.stats = {{"bubble", 0.2}};
  EXPECT_EQ(ToJson(ExecuteResultFromJson(ToJson(r))), ToJson(r));
}

TEST(WorkerProtocol, TechniqueListRoundTrips) {
  std::vector<WorkerTechnique> list = {
      {"single", "one device", true, 1, 1, false, ""},
      {"local-sgd", "a plug-in", false, 2, 0, true, "/plugins/libsgd.so"}};
  nlohmann::json j = ToJson(list);
  EXPECT_TRUE(j["techniques"][1]["max_gpus"].is_null());
  EXPECT_EQ(ToJson(TechniquesFromJson(j)), j);
  EXPECT_EQ(TechniquesFromJson(j)[1].plugin, "/plugins/libsgd.so");
}

TEST(WorkerProtocol, StepLinesRoundTrip) {
  StepReport r{12, 2.375, 0.5, 1.25};
  StepReport back;
  ASSERT_TRUE(ParseStepLine(FormatStepLine(r), &back));
  EXPECT_EQ(back.step, 12);
  EXPECT_DOUBLE_EQ(back.loss, 2.375);
  EXPECT_DOUBLE_EQ(back.step_s, 0.5);
  EXPECT_DOUBLE_EQ(back.peak_mem_gib, 1.25);
  EXPECT_EQ(FormatStepLine({3, 1.5, 0.25, -1}), "saturn: step=3 loss=1.5 step_s=0.250000");
  EXPECT_FALSE(ParseStepLine("epoch 3 loss 1.5", &back));
}

TEST(WorkerProtocol, EvalLinesRoundTripAndAreNotStepLines) {
  EvalReport r{50, 1.875, 0.625, 0.5};
  std::string line = FormatEvalLine(r);
  EvalReport back;
  ASSERT_TRUE(ParseEvalLine(line, &back));
  EXPECT_EQ(back.steps_done, 50);
  EXPECT_DOUBLE_EQ(back.loss, 1.875);
  EXPECT_DOUBLE_EQ(back.accuracy, 0.625);
  EXPECT_DOUBLE_EQ(back.seconds, 0.5);
  StepReport step;
  EXPECT_FALSE(ParseStepLine(line, &step));  // executors of old see no step in it
  EXPECT_FALSE(ParseEvalLine(FormatStepLine({3, 1.5, 0.25, -1}), &back));
  ASSERT_TRUE(ParseEvalLine(FormatEvalLine({7, 2.0, -1.0, 0.1}), &back));
  EXPECT_LT(back.accuracy, 0);  // an mse model has none
}

TEST(WorkerProtocol, ForeignOrBrokenMessagesAreRefused) {
  nlohmann::json j = ToJson(Search());
  j["protocol"] = 2;
  EXPECT_THROW(SearchResultFromJson(j), std::runtime_error);
  j = ToJson(Search());
  j["step_s"] = nullptr;
  EXPECT_THROW(SearchResultFromJson(j), std::runtime_error);
  EXPECT_THROW(TechniquesFromJson({{"protocol", 1}}), std::runtime_error);
  std::string path = ::testing::TempDir() + "/saturn_protocol_test.json";
  WriteFileAtomic(path, "{\"protocol\": 1, \"feasible\": tru");
  try {
    ReadSearchResult(path);
    ADD_FAILURE() << "a broken file was read";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
}

}  // namespace
}  // namespace saturn
