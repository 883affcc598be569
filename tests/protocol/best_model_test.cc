// The best model kept over time (protocol/best_model.h): ranked by the
// metric and mode asked, read back on resume, replaced atomically, and put
// back when a kill came between the replacement's renames.
#include "protocol/best_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/fs.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;

void WriteModel(const std::string& into, const std::string& text) {
  WriteFileAtomic(into + "/model.pt", text);
}

TEST(BestModel, KeepsTheBestByItsMetricAcrossAResume) {
  std::string dir = test::OwnTestDir("best_model") + "/best";
  BestModelKeeper loss(dir, *ParseBestMetric("eval_loss:min"));
  EXPECT_TRUE(loss.Improves(3.0));
  loss.Replace(10, 3.0, [](const std::string& into) { WriteModel(into, "step 10"); });
  EXPECT_FALSE(loss.Improves(3.5));
  EXPECT_FALSE(loss.Improves(NAN));
  // A resumed worker reads it back; a worse evaluation leaves it.
  BestModelKeeper resumed(dir, *ParseBestMetric("eval_loss:min"));
  ASSERT_TRUE(resumed.best());
  EXPECT_EQ(resumed.best()->step, 10);
  EXPECT_FALSE(resumed.Improves(3.0));
  EXPECT_TRUE(resumed.Improves(2.0));
  resumed.Replace(20, 2.0, [](const std::string& into) { WriteModel(into, "step 20"); });
  EXPECT_EQ(ReadFile(dir + "/model.pt"), "step 20");
  EXPECT_EQ(ReadBestEval(dir)->value, 2.0);
  // Kept by another metric: it does not count for this one.
  BestModelKeeper accuracy(dir, *ParseBestMetric("eval_accuracy:max"));
  EXPECT_FALSE(accuracy.best());
  EXPECT_TRUE(accuracy.Improves(0.1));
}

TEST(BestModel, AKillBetweenTheRenamesLosesNothing) {
  std::string dir = test::OwnTestDir("best_model_kill") + "/best";
  BestModelKeeper keeper(dir, *ParseBestMetric("eval_accuracy:max"));
  keeper.Replace(5, 0.5, [](const std::string& into) { WriteModel(into, "step 5"); });
  // As Replace leaves it when killed after setting the old one aside, with
  // the next one half written.
  fs::rename(dir, dir + ".old");
  fs::create_directories(dir + ".partial");
  BestModelKeeper after(dir, *ParseBestMetric("eval_accuracy:max"));
  ASSERT_TRUE(after.best());
  EXPECT_EQ(after.best()->step, 5);
  EXPECT_EQ(ReadFile(dir + "/model.pt"), "step 5");
  EXPECT_FALSE(fs::exists(dir + ".partial"));
}

TEST(BestModel, AKillAfterTheNewOneWasCompleteKeepsTheNewOne) {
  std::string dir = test::OwnTestDir("best_model_partial") + "/best";
  BestModelKeeper keeper(dir, *ParseBestMetric("eval_loss:min"));
  keeper.Replace(5, 2.0, [](const std::string& into) { WriteModel(into, "step 5"); });
  // Killed after the better one was written whole (best.json last) and the
  // old one set aside, before it was renamed in.
  fs::create_directories(dir + ".partial");
  WriteModel(dir + ".partial", "step 10");
  WriteFileAtomic(dir + ".partial/best.json",
                  R"({"step": 10, "metric": "eval_loss", "mode": "min", "value": 1.5})");
  fs::rename(dir, dir + ".old");
  BestModelKeeper after(dir, *ParseBestMetric("eval_loss:min"));
  ASSERT_TRUE(after.best());
  EXPECT_EQ(after.best()->step, 10);
  EXPECT_EQ(ReadFile(dir + "/model.pt"), "step 10");
  EXPECT_FALSE(fs::exists(dir + ".old"));
  EXPECT_FALSE(fs::exists(dir + ".partial"));
}

TEST(BestModel, OnlyKnownMetricsAndModesParse) {
  EXPECT_TRUE(ParseBestMetric("eval_accuracy:max")->maximize);
  EXPECT_FALSE(ParseBestMetric("eval_loss:min")->maximize);
  EXPECT_FALSE(ParseBestMetric("eval_loss"));
  EXPECT_FALSE(ParseBestMetric("loss:min"));
  EXPECT_FALSE(ParseBestMetric("eval_loss:lowest"));
}

}  // namespace
}  // namespace saturn
