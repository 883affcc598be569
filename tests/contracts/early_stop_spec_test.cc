// The workload's early_stop: read into every task (one group per
// workload), and bad rules, metrics and tasks that cannot take part named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/workload.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class EarlyStopSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("early_stop_spec");
    fs::create_directories(dir_ + "/data");
    WriteFileAtomic(dir_ + "/data/corpus.txt", std::string(1601, 'a'));
  }
  // A two-task sweep evaluating every `every` steps (0: no eval), then
  // `early_stop`.
  Workload Parse(const std::string& early_stop, int every = 10) {
    return ParseWorkload(
        "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n"
        "  - name: gpt\n"
        "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
        "    data: {type: text, path: data/corpus.txt}\n"
        "    batch_size: 8\n"
        "    steps: 400\n"
        "    optimizer: {type: adamw, lr: 1.0e-3}\n"
        "    sweep: {optimizer.lr: [1.0e-3, 1.0e-4]}\n" +
            (every ? "    eval: {every: " + std::to_string(every) + "}\n" : std::string()) +
            "early_stop: " + early_stop + "\n",
        "w.yaml", dir_);
  }
  std::string ErrorOf(const std::string& early_stop, int every = 10) {
    try {
      Parse(early_stop, every);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

TEST_F(EarlyStopSpecTest, EveryTaskOfTheWorkloadCarriesTheRuleInOneGroup) {
  Workload w = Parse("{asha: {grace_steps: 50, reduction_factor: 3}}");
  ASSERT_EQ(w.tasks.size(), 2u);
  for (const WorkloadTask& t : w.tasks) {
    EXPECT_EQ(t.early_stop.rule, "asha");
    EXPECT_EQ(t.early_stop.metric, "eval_loss");
    EXPECT_FALSE(t.early_stop.maximize());
    EXPECT_EQ(t.early_stop.grace_steps, 50);
    EXPECT_EQ(t.early_stop.reduction_factor, 3);
    EXPECT_EQ(t.stop_group, w.tasks[0].stop_group);
  }
  EXPECT_FALSE(w.tasks[0].stop_group.empty());
  Workload m = Parse("{median: {metric: eval_accuracy, grace_steps: 20}}");
  EXPECT_EQ(m.tasks[0].early_stop.rule, "median");
  EXPECT_TRUE(m.tasks[0].early_stop.maximize());
  EXPECT_EQ(m.tasks[0].early_stop.min_samples, 3);
  // Without early_stop: no rule, no group.
  Workload none = ParseWorkload(
      "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n"
      "  - {name: m, model: {type: mlp, layers: 2, width: 8}, data: {type: synthetic}, "
      "batch_size: 4, steps: 5, optimizer: {type: sgd, lr: 0.1}}\n",
      "w.yaml", dir_);
  EXPECT_FALSE(none.tasks[0].early_stop.enabled());
  EXPECT_TRUE(none.tasks[0].stop_group.empty());
}

TEST_F(EarlyStopSpecTest, BadRulesAndTasksThatCannotTakePartAreNamed) {
  EXPECT_THAT(ErrorOf("{ashaa: {grace_steps: 50}}"),
              HasSubstr("early_stop: unknown rule 'ashaa'; expected asha or median; did you mean "
                        "'asha'?"));
  EXPECT_THAT(ErrorOf("{asha: {grace_steps: 50}, median: {grace_steps: 50}}"),
              HasSubstr("early_stop: expected one rule"));
  EXPECT_THAT(ErrorOf("{asha: {metric: eval_los, grace_steps: 50}}"),
              HasSubstr("early_stop.asha.metric: unknown metric 'eval_los'"));
  EXPECT_THAT(ErrorOf("{asha: {grace_steps: 50, reduction_factor: 1}}"),
              HasSubstr("early_stop.asha.reduction_factor"));
  EXPECT_THAT(ErrorOf("{asha: {grace_steps: 0}}"), HasSubstr("early_stop.asha.grace_steps"));
  EXPECT_THAT(ErrorOf("{asha: {reduction_factor: 2}}"), HasSubstr("early_stop.asha.grace_steps"));
  EXPECT_THAT(ErrorOf("{median: {grace_steps: 50, reduction_factor: 2}}"),
              HasSubstr("early_stop.median.reduction_factor: unknown field"));
  // The rule decides at evaluations: every task evaluates, at the grace step.
  EXPECT_THAT(ErrorOf("{asha: {grace_steps: 50}}", 0),
              HasSubstr("early_stop.asha.metric: task 'gpt-lr1.0e-3' (line 3) reports no "
                        "eval_loss: early stopping needs every task to evaluate"));
  EXPECT_THAT(ErrorOf("{asha: {grace_steps: 50}}", 30),
              HasSubstr("early_stop.asha.grace_steps: 50 is not a multiple of task "
                        "'gpt-lr1.0e-3' (line 3)'s eval.every (30)"));
}

// Under a rule the tasks stand in a random order fixed by their names (the
// order the planner breaks ties in); `order: written` keeps the order
// written; without a rule the order is never changed.
TEST_F(EarlyStopSpecTest, TasksUnderARuleAreShuffledByNameUnlessTheOrderIsWritten) {
  auto grid = [&](const std::string& early_stop) {
    std::string text =
        "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n"
        "  - {name: g, model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}, "
        "data: {type: text, path: data/corpus.txt}, batch_size: 8, steps: 40, "
        "optimizer: {type: adamw, lr: 1.0e-3}, eval: {every: 10}, "
        "sweep: {optimizer.lr: [1.0e-5, 3.0e-5, 1.0e-4, 3.0e-4, 1.0e-3, 3.0e-3, 1.0e-2, "
        "3.0e-2]}}\n";
    if (!early_stop.empty()) text += "early_stop: " + early_stop + "\n";
    std::vector<std::string> names;
    for (const WorkloadTask& t : ParseWorkload(text, "w.yaml", dir_).tasks)
      names.push_back(t.name);
    return names;
  };
  std::vector<std::string> written = grid("");
  ASSERT_EQ(written.size(), 8u);
  EXPECT_EQ(written.front(), "g-lr1.0e-5");
  EXPECT_EQ(written.back(), "g-lr3.0e-2");
  EXPECT_EQ(grid("{asha: {grace_steps: 10, order: written}}"), written);
  std::vector<std::string> shuffled = grid("{asha: {grace_steps: 10}}");
  EXPECT_NE(shuffled, written);
  EXPECT_THAT(shuffled, ::testing::UnorderedElementsAreArray(written));
  // Fixed by the names: every read (a resumed run's too) gives the same
  // order, whichever rule.
  EXPECT_EQ(grid("{asha: {grace_steps: 10}}"), shuffled);
  EXPECT_EQ(grid("{median: {grace_steps: 10, order: shuffled}}"), shuffled);
  EXPECT_THAT(ErrorOf("{asha: {grace_steps: 50, order: random}}"),
              HasSubstr("early_stop.asha.order: expected shuffled or written, got 'random'"));
}

TEST_F(EarlyStopSpecTest, SelectSaysWhatBestMeansAndDefaultsToTheRulesMetric) {
  Workload w = Parse("{asha: {metric: eval_accuracy, grace_steps: 50}}");
  EXPECT_EQ(w.tasks[0].select.metric, "eval_accuracy");
  EXPECT_TRUE(w.tasks[0].select.maximize);
  // Only a mode: the metric is still the rule's.
  Workload mode = Parse("{asha: {metric: eval_accuracy, grace_steps: 50}}\nselect: {mode: min}");
  EXPECT_EQ(mode.tasks[0].select.metric, "eval_accuracy");
  EXPECT_FALSE(mode.tasks[0].select.maximize);
  auto with_select = [&](const std::string& select) {
    return ParseWorkload(
        "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n"
        "  - {name: g, model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}, "
        "data: {type: text, path: data/corpus.txt}, batch_size: 8, steps: 40, "
        "optimizer: {type: adamw, lr: 1.0e-3}, eval: {every: 10, batches: 2}}\n"
        "select: " +
            select + "\n",
        "w.yaml", dir_);
  };
  Workload loss = with_select("{metric: eval_loss}");
  EXPECT_EQ(loss.tasks[0].select.metric, "eval_loss");
  EXPECT_FALSE(loss.tasks[0].select.maximize);
  EXPECT_TRUE(with_select("{metric: eval_loss, mode: max}").tasks[0].select.maximize);
  auto error = [&](const std::string& select) {
    try {
      with_select(select);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_THAT(error("{metric: eval_acc}"), HasSubstr("select.metric: unknown metric 'eval_acc'"));
  EXPECT_THAT(error("{metric: eval_loss, mode: lowest}"),
              HasSubstr("select.mode: expected min or max, got 'lowest'"));
  EXPECT_THAT(error("{metrics: eval_loss}"), HasSubstr("select.metrics: unknown field"));
  // A metric no task reports: a task without evaluations.
  EXPECT_THAT(ErrorOf("{asha: {grace_steps: 50}}\nselect: {metric: eval_loss}", 0),
              HasSubstr("reports no eval_loss"));
}

}  // namespace
}  // namespace saturn
