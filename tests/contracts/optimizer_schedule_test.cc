// optimizer.schedule and optimizer.clip_grad_norm in the workload: what
// reaches the worker, what stays out of trial keys, and bad input named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/workload.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class ScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("schedule_test");
    fs::create_directories(dir_ + "/data");
    WriteFileAtomic(dir_ + "/data/corpus.txt", std::string(1601, 'a'));
  }
  Workload Parse(const std::string& optimizer) {
    return ParseWorkload(
        "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n"
        "  - name: gpt\n"
        "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
        "    data: {type: text, path: data/corpus.txt}\n"
        "    batch_size: 8\n"
        "    steps: 40\n"
        "    optimizer: " +
            optimizer + "\n",
        "w.yaml", dir_);
  }
  std::string ErrorOf(const std::string& optimizer) {
    try {
      Parse(optimizer);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

TEST_F(ScheduleTest, ScheduleAndClippingReachTheWorker) {
  Workload w = Parse(
      "{type: adamw, lr: 1.0e-3, clip_grad_norm: 1.0, schedule: {type: cosine, warmup_ratio: "
      "0.1}}");
  const nlohmann::json& o = w.tasks[0].spec["optimizer"];
  EXPECT_EQ(o["clip_grad_norm"], 1.0);
  EXPECT_EQ(o["schedule"], (nlohmann::json{{"type", "cosine"}, {"warmup_ratio", 0.1}}));
  Workload steps = Parse("{type: sgd, lr: 0.1, schedule: {type: linear, warmup_steps: 5}}");
  EXPECT_EQ(steps.tasks[0].spec["optimizer"]["schedule"]["warmup_steps"], 5);
  EXPECT_EQ(Parse("{type: adam, lr: 0.1, schedule: {warmup_steps: 5}}")
                .tasks[0]
                .spec["optimizer"]["schedule"]["type"],
            "constant");
}

TEST_F(ScheduleTest, ScheduleIsNotPartOfTheTrialKeyButClippingIs) {
  // A schedule changes values, not speed; clipping adds a reduction.
  std::string plain = Parse("{type: adamw, lr: 1.0e-3}").tasks[0].trial_key;
  EXPECT_EQ(Parse("{type: adamw, lr: 1.0e-3, schedule: {type: linear}}").tasks[0].trial_key, plain);
  EXPECT_NE(Parse("{type: adamw, lr: 1.0e-3, clip_grad_norm: 1.0}").tasks[0].trial_key, plain);
}

TEST_F(ScheduleTest, BadSchedulesAndClipsAreNamed) {
  EXPECT_THAT(ErrorOf("{type: adamw, lr: 1.0e-3, schedule: {type: cosin}}"),
              HasSubstr("tasks[0].optimizer.schedule.type: unknown schedule 'cosin'; expected "
                        "constant, linear or cosine; did you mean 'cosine'?"));
  EXPECT_THAT(ErrorOf("{type: adamw, lr: 1.0e-3, schedule: {warmup_steps: 2, warmup_ratio: 0.1}}"),
              HasSubstr("optimizer.schedule.warmup_ratio: give warmup_steps or warmup_ratio"));
  EXPECT_THAT(ErrorOf("{type: adamw, lr: 1.0e-3, schedule: {warmup_ratio: 1.5}}"),
              HasSubstr("optimizer.schedule.warmup_ratio: expected a fraction of the steps"));
  EXPECT_THAT(ErrorOf("{type: adamw, lr: 1.0e-3, schedule: {warmup_steps: -1}}"),
              HasSubstr("optimizer.schedule.warmup_steps"));
  EXPECT_THAT(ErrorOf("{type: adamw, lr: 1.0e-3, schedule: {type: linear, warmup: 3}}"),
              HasSubstr("optimizer.schedule.warmup: unknown field"));
  EXPECT_THAT(ErrorOf("{type: adamw, lr: 1.0e-3, clip_grad_norm: 0}"),
              HasSubstr("optimizer.clip_grad_norm"));
  EXPECT_THAT(ErrorOf("{type: adamw, lr: 1.0e-3, clip_grad_norm: -1}"),
              HasSubstr("optimizer.clip_grad_norm"));
}

}  // namespace
}  // namespace saturn
