// Every message of the worker protocol survives the trip through its JSON
// (what the worker writes is what the orchestrators read), and a message of
// another version or a broken one is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/fs.h"
#include "protocol/worker_protocol.h"
#include "tests/testing/error_of.h"

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

  // An array's sizes measured in the same process, each a result of its own.
  WorkerSearchResult sized = Search();
  sized.pack_sizes = {Search(), WorkerSearchResult()};
  sized.pack_sizes[0].members = 2;
  sized.pack_sizes[1].members = 16;
  sized.pack_sizes[1].reason = "the array does not fit the device's memory";
  back = SearchResultFromJson(ToJson(sized));
  EXPECT_EQ(ToJson(back), ToJson(sized));
  ASSERT_EQ(back.pack_sizes.size(), 2u);
  EXPECT_EQ(back.pack_sizes[0].members, 2);
  EXPECT_EQ(back.pack_sizes[0].step_s, 0.25);
  EXPECT_FALSE(back.pack_sizes[1].feasible);
  EXPECT_FALSE(ToJson(r).contains("pack_sizes"));
  nlohmann::json no_members = ToJson(sized);
  no_members["pack_sizes"][0].erase("members");
  EXPECT_THROW(SearchResultFromJson(no_members), ProtocolError);

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
      {"single", "one device", true, 1, 1, false, "", true},
      {"local-sgd", "a plug-in", false, 2, 0, true, "/plugins/libsgd.so", false}};
  nlohmann::json j = ToJson(list);
  EXPECT_TRUE(j["techniques"][1]["max_gpus"].is_null());
  EXPECT_EQ(ToJson(TechniquesFromJson(j)), j);
  EXPECT_EQ(TechniquesFromJson(j)[1].plugin, "/plugins/libsgd.so");
  EXPECT_TRUE(TechniquesFromJson(j)[0].takes_packs);
  EXPECT_FALSE(TechniquesFromJson(j)[1].takes_packs);
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
  EXPECT_LT(back.loss_se, 0);   // one batch: no standard error
  ASSERT_TRUE(ParseEvalLine(FormatEvalLine({7, 2.0, -1.0, 0.1, 0.0125}), &back));
  EXPECT_DOUBLE_EQ(back.loss_se, 0.0125);
  EXPECT_LT(back.accuracy_se, 0);
  ASSERT_TRUE(ParseEvalLine(FormatEvalLine({7, 2.0, 0.5, 0.1, 0.0125, 0.25}), &back));
  EXPECT_DOUBLE_EQ(back.accuracy_se, 0.25);
  EXPECT_FALSE(ParseEvalLine("saturn: eval_step=7 eval_loss=2 eval_accuracy_se=2 eval_s=0", &back));
  EXPECT_FALSE(ParseEvalLine("saturn: eval_step=7 eval_loss=2 eval_loss_se=-1 eval_s=0", &back));
  // A pack's member's evaluation names the member; a task's own names none.
  EXPECT_LT(back.member, 0);
  EvalReport member{20, 2.5, -1.0, 0.1, -1.0, -1.0, 2};
  ASSERT_TRUE(ParseEvalLine(FormatEvalLine(member), &back)) << FormatEvalLine(member);
  EXPECT_EQ(back.member, 2);
  EXPECT_EQ(back.steps_done, 20);
  EXPECT_FALSE(ParseEvalLine("saturn: eval_step=7 eval_loss=2 eval_s=0 eval_member=-1", &back));
  EXPECT_FALSE(ParseEvalLine("saturn: eval_step=7 eval_loss=2 eval_s=0 eval_member=1.5", &back));
}

TEST(WorkerProtocol, ForeignOrBrokenMessagesAreRefused) {
  nlohmann::json j = ToJson(Search());
  j["protocol"] = 2;
  auto error = [](auto f) { return test::ErrorOf<std::runtime_error>(f); };
  EXPECT_THAT(error([&] { SearchResultFromJson(j); }),
              HasSubstr("search result is not protocol 1"));
  j = ToJson(Search());
  j["step_s"] = nullptr;
  EXPECT_THAT(error([&] { SearchResultFromJson(j); }),
              HasSubstr("worker reported a feasible configuration without a step time"));
  EXPECT_THAT(error([&] {
                TechniquesFromJson({{"protocol", 1}});
              }),
              HasSubstr("technique list without \"techniques\""));
  std::string path = ::testing::TempDir() + "/saturn_protocol_test.json";
  WriteFileAtomic(path, "{\"protocol\": 1, \"feasible\": tru");
  try {
    ReadSearchResult(path);
    ADD_FAILURE() << "a broken file was read";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
}

// A field of the wrong type or out of range is the protocol's own error,
// never the JSON library's exception or a number cast out of range.
TEST(WorkerProtocol, FieldsOfTheWrongTypeOrOutOfRangeAreProtocolErrors) {
  auto error = [](const std::string& text) -> std::string {
    try {
      nlohmann::json j = ParseWorkerMessage(text, "r.json");
      if (j.contains("techniques")) {
        TechniquesFromJson(j);
      } else if (j.contains("completed_steps")) {
        ExecuteResultFromJson(j);
      } else {
        SearchResultFromJson(j);
      }
    } catch (const ProtocolError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error(R"({"protocol": 1, "feasible": "yes"})"),
            "field feasible has the wrong type: \"yes\"");
  EXPECT_EQ(error(R"({"protocol": 1, "gpus": 1e300})"),
            "field gpus: expected an integer from 0 to 4096, got 1e+300");
  EXPECT_EQ(error(R"({"protocol": 1, "completed_steps": -1})"),
            "field completed_steps: expected an integer from 0 to 1000000000000, got -1");
  EXPECT_EQ(error(R"({"protocol": 1, "techniques": [3]})"),
            "technique list: a technique that is not an object");
  EXPECT_EQ(error(R"({"protocol": 1, "techniques": [{"name": "x", "min_gpus": "2"}]})"),
            "field min_gpus: expected an integer from 1 to 4096, got \"2\"");
  EXPECT_EQ(error(R"({"protocol": 1, "techniques": [{"name": "x", "min_gpus": 0}]})"),
            "field min_gpus: expected an integer from 1 to 4096, got 0");
  EXPECT_EQ(
      error(R"({"protocol": 1, "techniques": [{"name": "x", "min_gpus": 4, "max_gpus": 2}]})"),
      "technique list: x's min_gpus is above its max_gpus");
  EXPECT_EQ(error(R"({"protocol": "1"})"), "r.json is not protocol 1");
  EXPECT_EQ(error(R"({"protocol": 1.5})"), "r.json is not protocol 1");
  EXPECT_EQ(
      error(R"({"protocol": 1, "x": 1e400})"),
      "r.json is not JSON: [json.exception.out_of_range.406] number overflow parsing '1e400'");
  EXPECT_EQ(error(std::string(10000, '[')), "r.json is not JSON: nested deeper than 64 levels");
  EXPECT_EQ(error(R"({"protocol": 1, "reason": null, "feasible": false})"), "");
}

TEST(WorkerProtocol, ProgressLinesWithNumbersOutOfRangeAreNotProgressLines) {
  StepReport r;
  EXPECT_FALSE(ParseStepLine("saturn: step=1e300 loss=1", &r));
  EXPECT_FALSE(ParseStepLine("saturn: step=-1 loss=1", &r));
  EXPECT_FALSE(ParseStepLine("saturn: step=nan loss=1", &r));
  EXPECT_FALSE(ParseStepLine("saturn: step=2.5 loss=1", &r));
  EXPECT_FALSE(ParseStepLine("saturn: step=9223372036854775807", &r));
  EXPECT_FALSE(ParseStepLine("saturn: step=1 step_s=inf", &r));
  EXPECT_FALSE(ParseStepLine("saturn: step=1 step_s=-0.5", &r));
  EXPECT_FALSE(ParseStepLine("saturn: step=1 peak_mem_gib=nan", &r));
  ASSERT_TRUE(ParseStepLine("saturn: step=1000000000000 loss=nan step_s=0.5", &r));
  EXPECT_EQ(r.step, 1'000'000'000'000);
  EXPECT_TRUE(std::isnan(r.loss));  // a diverged run reports its loss as it is
  EvalReport e;
  EXPECT_FALSE(ParseEvalLine("saturn: eval_step=1e300 eval_loss=1", &e));
  EXPECT_FALSE(ParseEvalLine("saturn: eval_step=1 eval_loss=1 eval_accuracy=1.5", &e));
  EXPECT_FALSE(ParseEvalLine("saturn: eval_step=1 eval_loss=1 eval_s=-1", &e));
  EXPECT_TRUE(ParseEvalLine("saturn: eval_step=1 eval_loss=1 eval_accuracy=1 eval_s=2", &e));
}

}  // namespace
}  // namespace saturn
