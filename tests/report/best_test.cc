// The best of a sweep by the workload's select: metric, its margin over
// the runner-up and whether that margin is within the evaluations' noise
// (two standard errors of the difference, from each evaluation's standard
// error over its batches), worked by hand here.
#include "report/best.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace saturn {
namespace {

using ::testing::HasSubstr;

RunReportTask Finished(const std::string& name, const SelectSpec& select) {
  RunReportTask t;
  t.name = name;
  t.status = TaskStatus::kFinished;
  t.steps = 100;
  t.sweep = "s";
  t.select = select;
  return t;
}

Event Eval(const std::string& task, long step, double loss, double accuracy, double se) {
  Event e;
  e.kind = EventKind::kTaskEvaluated;
  e.task = task;
  e.extra = {{"step", step}, {"eval_loss", loss}, {"eval_s", 0.1}};
  if (accuracy >= 0) e.extra["eval_accuracy"] = accuracy;
  if (se >= 0) e.extra["eval_loss_se"] = se;
  return e;
}

TEST(Best, TheMarginOverTheRunnerUpIsWeighedAgainstTheEvaluationsNoise) {
  SelectSpec loss;
  std::vector<RunReportTask> tasks = {Finished("a", loss), Finished("b", loss),
                                      Finished("c", loss)};
  // a 1.00 +- 0.03, b 1.05 +- 0.04, c 1.50: the margin 0.05 against
  // 2 x hypot(0.03, 0.04) = 0.10: within noise.
  Evals evals = EvalsOf({Eval("a", 100, 1.00, 0.6, 0.03), Eval("b", 100, 1.05, 0.7, 0.04),
                         Eval("c", 100, 1.50, 0.2, 0.01), Eval("c", 50, 0.1, 0.9, 0.01)});
  std::map<std::string, std::string> best_of;
  nlohmann::json best = BestOfSweeps(tasks, evals, best_of);
  ASSERT_EQ(best.size(), 1u);
  const nlohmann::json& b = best[0];
  EXPECT_EQ(b["task"], "a");
  EXPECT_EQ(b["metric"], "eval_loss");
  EXPECT_EQ(b["mode"], "min");
  EXPECT_EQ(b["runner_up"]["task"], "b");
  EXPECT_NEAR(b["margin"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(b["margin_se"].get<double>(), 0.05, 1e-12);  // hypot(0.03, 0.04)
  EXPECT_EQ(b["within_noise"], true);
  EXPECT_THAT(MarginPhrase(b), HasSubstr("ahead of b by 0.0500"));
  EXPECT_THAT(MarginPhrase(b), HasSubstr("within the evaluations' noise"));
  // With tighter evaluations (0.01 each): 0.05 > 2 x 0.0141, clear.
  evals = EvalsOf({Eval("a", 100, 1.00, 0.6, 0.01), Eval("b", 100, 1.05, 0.7, 0.01)});
  nlohmann::json clear = BestOfSweeps(tasks, evals, best_of)[0];
  EXPECT_EQ(clear["within_noise"], false);
  EXPECT_NEAR(clear["margin_se"].get<double>(), std::sqrt(2e-4), 1e-12);
  // One batch each: no standard error, said so.
  evals = EvalsOf({Eval("a", 100, 1.00, 0.6, -1), Eval("b", 100, 1.05, 0.7, -1)});
  nlohmann::json unknown = BestOfSweeps(tasks, evals, best_of)[0];
  EXPECT_TRUE(unknown["within_noise"].is_null());
  EXPECT_THAT(MarginPhrase(unknown), HasSubstr("noise unknown"));
}

TEST(Best, SelectNamesTheMetricAndTheDirection) {
  SelectSpec accuracy;
  accuracy.metric = "eval_accuracy";
  accuracy.maximize = true;
  std::vector<RunReportTask> tasks = {Finished("a", accuracy), Finished("b", accuracy)};
  // a has the lower loss, b the higher accuracy: b wins.
  Evals evals = EvalsOf({Eval("a", 100, 1.0, 0.6, 0.01), Eval("b", 100, 1.2, 0.7, 0.01)});
  std::map<std::string, std::string> best_of;
  nlohmann::json b = BestOfSweeps(tasks, evals, best_of)[0];
  EXPECT_EQ(b["task"], "b");
  EXPECT_EQ(b["mode"], "max");
  EXPECT_NEAR(b["value"].get<double>(), 0.7, 1e-12);
  // The loss's standard error says nothing of the accuracy's.
  EXPECT_TRUE(b["margin_se"].is_null());
  EXPECT_EQ(best_of["s"], "b");
  // With the accuracy's: the margin 0.1 against sqrt(0.02^2 + 0.03^2).
  std::vector<Event> with_se = {Eval("a", 100, 1.0, 0.6, 0.01), Eval("b", 100, 1.2, 0.7, 0.01)};
  with_se[0].extra["eval_accuracy_se"] = 0.02;
  with_se[1].extra["eval_accuracy_se"] = 0.03;
  b = BestOfSweeps(tasks, EvalsOf(with_se), best_of)[0];
  EXPECT_NEAR(b["margin_se"].get<double>(), std::sqrt(0.02 * 0.02 + 0.03 * 0.03), 1e-12);
  EXPECT_FALSE(b["within_noise"].get<bool>());  // 0.1 > 2 x 0.036
  // Loss, but the highest (mode: max): a perverse choice, honoured.
  SelectSpec highest_loss;
  highest_loss.maximize = true;
  tasks = {Finished("a", highest_loss), Finished("b", highest_loss)};
  EXPECT_EQ(BestOfSweeps(tasks, evals, best_of)[0]["task"], "b");
  // A stopped task (early stopping) has no final evaluation: it cannot win.
  tasks = {Finished("a", SelectSpec{}), Finished("b", SelectSpec{})};
  tasks[0].status = TaskStatus::kStopped;
  EXPECT_EQ(BestOfSweeps(tasks, evals, best_of)[0]["task"], "b");
}

// While a service trains, every task's latest evaluation counts (a running
// one's too, a failed one's not); the best's earlier best evaluation, kept
// as its best model, is named where it came before the final one.
TEST(Best, SoFarRanksLatestEvaluationsAndNamesAnEarlierBestModel) {
  SelectSpec loss;
  std::vector<RunReportTask> tasks = {Finished("a", loss), Finished("b", loss),
                                      Finished("c", loss)};
  tasks[1].status = TaskStatus::kRunning;
  tasks[2].status = TaskStatus::kFailed;
  tasks[0].best_model = {{"step", 50}, {"value", 1.5}, {"path", "tasks/a/best/model.pt"}};
  Evals evals = EvalsOf({Eval("a", 50, 1.5, -1, -1), Eval("a", 100, 2.0, -1, -1),
                         Eval("b", 50, 1.9, -1, -1), Eval("c", 50, 0.1, -1, -1)});
  std::map<std::string, std::string> best_of;
  nlohmann::json final = BestOfSweeps(tasks, evals, best_of);
  ASSERT_EQ(final.size(), 1u);
  EXPECT_EQ(final[0]["task"], "a");  // the only finished task
  EXPECT_EQ(final[0]["runner_up"], nullptr);
  EXPECT_EQ(EarlierBestPhrase(final[0], "runs/w/"),
            "; its best evaluation (step 50, 1.5000): runs/w/tasks/a/best/model.pt");
  nlohmann::json so_far = BestOfSweeps(tasks, evals, best_of, Ranking::kSoFar);
  ASSERT_EQ(so_far.size(), 1u);
  EXPECT_EQ(so_far[0]["task"], "b");  // 1.9 at step 50 against a's latest, 2.0
  EXPECT_EQ(so_far[0]["step"], 50);
  EXPECT_EQ(so_far[0]["runner_up"]["task"], "a");
  EXPECT_EQ(so_far[0]["evaluated"], 2);
  EXPECT_EQ(EarlierBestPhrase(so_far[0]), "");  // b kept no best model
  // A task cancelled and replaced by a new one of its name (it arrives
  // again): the old one's evaluations are not the new one's.
  Event again;
  again.kind = EventKind::kTaskArrived;
  again.task = "b";
  Evals replaced = EvalsOf({Eval("b", 50, 1.9, -1, -1), again, Eval("b", 20, 3.0, -1, -1)});
  ASSERT_EQ(replaced["b"].size(), 1u);
  EXPECT_EQ(replaced["b"].begin()->first, 20);
}

}  // namespace
}  // namespace saturn
