#include "contracts/task_view.h"

#include <gtest/gtest.h>

#include <set>

namespace saturn {
namespace {

TEST(TaskStatus, WordsRoundTripAndAreDistinct) {
  std::set<std::string> words;
  for (TaskStatus s :
       {TaskStatus::kSubmitted, TaskStatus::kProfiling, TaskStatus::kQueued, TaskStatus::kRunning,
        TaskStatus::kFinished, TaskStatus::kFailed, TaskStatus::kCancelled}) {
    EXPECT_EQ(TaskStatusFromString(ToString(s)), s);
    words.insert(std::string(ToString(s)));
  }
  EXPECT_EQ(words.size(), 7u);
  EXPECT_EQ(ToString(TaskStatus::kQueued), "queued");
  EXPECT_EQ(ToString(TaskStatus::kCancelled), "cancelled");
  EXPECT_EQ(TaskStatusFromString("done"), std::nullopt);
  EXPECT_EQ(TaskStatusFromString(""), std::nullopt);
}

TEST(TaskStatus, OldRunsWaitingIsQueued) {
  // Run states and reports before the lifecycle's stages said "waiting".
  EXPECT_EQ(TaskStatusFromString("waiting"), TaskStatus::kQueued);
}

TEST(TaskStatus, OnlyFinishedFailedCancelledHaveEnded) {
  EXPECT_TRUE(IsEnded(TaskStatus::kFinished));
  EXPECT_TRUE(IsEnded(TaskStatus::kFailed));
  EXPECT_TRUE(IsEnded(TaskStatus::kCancelled));
  EXPECT_FALSE(IsEnded(TaskStatus::kSubmitted));
  EXPECT_FALSE(IsEnded(TaskStatus::kProfiling));
  EXPECT_FALSE(IsEnded(TaskStatus::kQueued));
  EXPECT_FALSE(IsEnded(TaskStatus::kRunning));
}

TEST(TaskView, JsonHasContractSixsFieldsWithNullsForUnknowns) {
  TaskView v;
  v.name = "a";
  v.status = TaskStatus::kProfiling;
  nlohmann::json j = TaskViewToJson(v);
  for (const char* key : {"id", "status", "technique", "gpus", "node", "gpu_ids", "steps_done",
                          "steps", "eta_s", "planned_start_s", "loss", "final_loss", "attempts",
                          "failures", "submitted_s", "error", "hyperparameters", "eval"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j.size(), 18u);
  EXPECT_EQ(j["hyperparameters"], nlohmann::json::object());
  EXPECT_TRUE(j["eval"].is_null());  // before its first evaluation
  EXPECT_EQ(j["id"], "a");
  EXPECT_EQ(j["status"], "profiling");
  EXPECT_TRUE(j["technique"].is_null());
  EXPECT_TRUE(j["steps"].is_null());
  EXPECT_TRUE(j["final_loss"].is_null());
  EXPECT_EQ(j["gpu_ids"], nlohmann::json::array());
}

TEST(TaskView, JsonOfAFinishedPlacedTask) {
  TaskView v;
  v.name = "b";
  v.status = TaskStatus::kFinished;
  v.placed = true;
  v.technique = "fsdp";
  v.gpus = 2;
  v.node = "n0";
  v.gpu_ids = {0, 1};
  v.steps = 10;
  v.steps_done = 10;
  v.final_loss = 1.5;
  v.attempts = 2;
  v.failures = 1;
  v.hyperparameters = {{"optimizer.lr", 0.001}};
  v.eval = EvalPoint{10, 2.5, 0.25, 0.125, -1.0};
  nlohmann::json j = TaskViewToJson(v);
  EXPECT_EQ(j["status"], "finished");
  EXPECT_EQ(j["technique"], "fsdp");
  EXPECT_EQ(j["hyperparameters"]["optimizer.lr"], 0.001);
  // The standard errors it has, none it lacks.
  EXPECT_EQ(
      j["eval"],
      nlohmann::json(
          {{"step", 10}, {"eval_loss", 2.5}, {"eval_accuracy", 0.25}, {"eval_loss_se", 0.125}}));
  EXPECT_EQ(j["gpu_ids"], nlohmann::json({0, 1}));
  EXPECT_EQ(j["final_loss"], 1.5);
  EXPECT_EQ(j["attempts"], 2);
  EXPECT_EQ(j["steps"], 10);
}

}  // namespace
}  // namespace saturn
