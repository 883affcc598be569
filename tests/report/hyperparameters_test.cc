// The report's hyper-parameters (report/hyperparameters.h): what each task's
// sweep varied and its search drew, by the field's path, as report.json and
// the task table show them.
#include "report/hyperparameters.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fs.h"
#include "contracts/workload.h"
#include "report/run_report.h"

namespace saturn {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

VariedValue Swept(std::string path, json value) {
  return {std::move(path), std::move(value), false};
}
VariedValue Drawn(std::string path, json value) {
  return {std::move(path), std::move(value), true};
}

// A sweep's fields are those whose values differ among its tasks, in the
// order written; what only follows from them (steps from epochs, LoRA's
// alpha from its rank) is not among what it set.
TEST(HyperParameters, TheValuesEachTaskOfASweepWasGiven) {
  std::vector<SweptTask> tasks = {
      {"gpt-lr1e-3-seed1", "gpt", {Swept("optimizer.lr", 1e-3), Swept("seed", 1)}},
      {"gpt-lr1e-3-seed2", "gpt", {Swept("optimizer.lr", 1e-3), Swept("seed", 2)}},
      {"gpt-lr3e-4-seed1", "gpt", {Swept("optimizer.lr", 3e-4), Swept("seed", 1)}},
      {"gpt-lr3e-4-seed2", "gpt", {Swept("optimizer.lr", 3e-4), Swept("seed", 2)}},
      {"lora-rank4", "lora", {Swept("finetune.lora.rank", 4)}},
      {"lora-rank8", "lora", {Swept("finetune.lora.rank", 8)}},
      {"alone", "alone", {}},
      {"one-bs8", "one", {Swept("batch_size", 8)}},  // a sweep of one value
      {"two-bs8-eval1", "two", {Swept("batch_size", 8), Swept("eval", {{"every", 1}})}},
      {"two-bs8-eval2", "two", {Swept("batch_size", 8), Swept("eval", {{"every", 2}})}},
  };
  std::vector<HyperParameters> hp = SweptValues(tasks);
  ASSERT_EQ(hp.size(), tasks.size());
  EXPECT_EQ(hp[0], (HyperParameters{{"optimizer.lr", 1e-3}, {"seed", 1}}));
  EXPECT_EQ(hp[3], (HyperParameters{{"optimizer.lr", 3e-4}, {"seed", 2}}));
  EXPECT_EQ(hp[4], (HyperParameters{{"finetune.lora.rank", 4}}));
  EXPECT_EQ(hp[5], (HyperParameters{{"finetune.lora.rank", 8}}));
  EXPECT_TRUE(hp[6].empty());
  EXPECT_TRUE(hp[7].empty());
  EXPECT_EQ(hp[9], (HyperParameters{{"eval.every", 2}}));  // a swept map: its fields
  EXPECT_EQ(HyperParameterText("bf16"), "bf16");
  EXPECT_EQ(HyperParameterText(0.001), "0.001");
  EXPECT_EQ(HyperParameterText(16), "16");
  EXPECT_EQ(HyperParameterText(3.1622776601683794e-05), "3.16228e-05");
}

// A searched field is a hyper-parameter of every task its search made, even
// where the draws agree; with a sweep, its fields come first.
TEST(HyperParameters, SampledFieldsAreListedByTheirPath) {
  std::vector<SweptTask> tasks = {
      {"gpt-bs8-lr0.001-rank4",
       "gpt",
       {Swept("batch_size", 8), Drawn("optimizer.lr", 0.001), Drawn("finetune.lora.rank", 4)}},
      {"gpt-bs16-lr0.001-rank4",
       "gpt",
       {Swept("batch_size", 16), Drawn("optimizer.lr", 0.001), Drawn("finetune.lora.rank", 4)}},
      {"one-lr0.01", "one", {Drawn("optimizer.lr", 0.01)}},  // a search of one sample
  };
  std::vector<HyperParameters> hp = SweptValues(tasks);
  EXPECT_EQ(hp[1], (HyperParameters{
                       {"batch_size", 16}, {"optimizer.lr", 0.001}, {"finetune.lora.rank", 4}}));
  EXPECT_EQ(hp[2], (HyperParameters{{"optimizer.lr", 0.01}}));
}

// From the workload to report.json and the task table: the values a search
// drew, by path, as each task's settings have them.
TEST(HyperParameters, ASearchsFieldsReachTheReport) {
  const std::string dir = ::testing::TempDir() + "/saturn_hyperparameters_test";
  fs::remove_all(dir);
  fs::create_directories(dir + "/data");
  WriteFileAtomic(dir + "/data/corpus.txt", std::string(1601, 'a'));
  Workload w = ParseWorkload(
      "cluster: {nodes: [{name: n0, gpus: 2}]}\n"
      "tasks:\n"
      "  - name: gpt\n"
      "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
      "    data: {type: text, path: data/corpus.txt}\n"
      "    batch_size: 8\n"
      "    optimizer: {type: adamw, lr: 1.0e-4}\n"
      "    steps: 10\n"
      "    sweep: {seed: [1, 2]}\n"
      "    search:\n"
      "      samples: 3\n"
      "      seed: 5\n"
      "      space:\n"
      "        optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}\n"
      "        batch_size: {choice: [8, 16]}\n",
      "w.yaml", dir);
  ASSERT_EQ(w.tasks.size(), 6u);
  std::vector<SweptTask> swept;
  for (const WorkloadTask& t : w.tasks)
    swept.push_back({t.name, t.sweep, t.varied});
  std::vector<HyperParameters> hp = SweptValues(swept);
  RunReportInput in;
  in.workload = "w.yaml";
  in.run_dir = dir + "/run";
  fs::create_directories(in.run_dir);
  in.cluster = w.cluster;
  for (size_t i = 0; i < w.tasks.size(); ++i) {
    const WorkloadTask& t = w.tasks[i];
    ASSERT_EQ(hp[i].size(), 3u) << t.name;
    EXPECT_EQ(hp[i][0], (std::pair<std::string, json>{"seed", t.spec["seed"]}));
    EXPECT_EQ(hp[i][1], (std::pair<std::string, json>{"optimizer.lr", t.spec["optimizer"]["lr"]}));
    EXPECT_EQ(hp[i][2], (std::pair<std::string, json>{"batch_size", t.spec["batch_size"]}));
    RunReportTask r;
    r.name = t.name;
    r.status = TaskStatus::kFinished;
    r.steps = r.steps_done = t.steps;
    r.sweep = t.sweep;
    r.settings = t.spec;
    r.hyperparameters = hp[i];
    in.tasks.push_back(r);
  }
  json report = WriteRunReport(in);
  for (size_t i = 0; i < w.tasks.size(); ++i) {
    const json& spec = w.tasks[i].spec;
    EXPECT_EQ(report["tasks"][i]["hyperparameters"],
              (json{{"seed", spec["seed"]},
                    {"optimizer.lr", spec["optimizer"]["lr"]},
                    {"batch_size", spec["batch_size"]}}));
  }
  const std::string html = ReadFile(in.run_dir + "/report.html");
  EXPECT_THAT(html, HasSubstr("<th title=\"seed\">seed</th><th title=\"optimizer.lr\">lr</th><th "
                              "title=\"batch_size\">bs</th>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"hp\">" +
                              HyperParameterText(w.tasks[0].spec["optimizer"]["lr"]) + "</td>"));
}

}  // namespace
}  // namespace saturn
