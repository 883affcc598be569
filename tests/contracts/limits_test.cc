// Numbers nobody means and inputs that would expand past all reason are one
// input error naming the file, line and field, in every spec reader
// (common/limits.h): never an attempt, never an exception of a library.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/cluster.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "contracts/workload.h"
#include "contracts/yaml_fields.h"
#include "tests/testing/error_of.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;

using test::ErrorOf;

std::string ClusterError(const std::string& node) {
  return ErrorOf(
      [&] { ParseCluster(ParseYamlText("nodes:\n  - " + node + "\n", "c.yaml"), "c.yaml"); });
}

TEST(Limits, ClusterNumbers) {
  EXPECT_EQ(ClusterError("{name: a, gpus: 5000}"),
            "c.yaml:2: nodes[0].gpus: expected an integer <= 4096, got '5000'");
  EXPECT_EQ(ClusterError("{name: a, gpus: 99999999999999999999}"),
            "c.yaml:2: nodes[0].gpus: expected an integer <= 4096, got '99999999999999999999'");
  EXPECT_EQ(ClusterError("{name: a, gpus: 1, threads_per_gpu: 3000000000}"),
            "c.yaml:2: nodes[0].threads_per_gpu: expected an integer <= 1024, got '3000000000'");
  EXPECT_EQ(ClusterError("{name: a, gpus: 1, gpu_memory_gib: 1e300}"),
            "c.yaml:2: nodes[0].gpu_memory_gib: expected a number <= 1e+09, got '1e300'");
  EXPECT_EQ(ClusterError("{name: a, gpus: 1, gpu_memory_gib: 1e400}"),
            "c.yaml:2: nodes[0].gpu_memory_gib: expected a number <= 1e+09, got '1e400'");
  EXPECT_EQ(ClusterError("{name: a, gpus: 1, gpu_memory_gib: nan}"),
            "c.yaml:2: nodes[0].gpu_memory_gib: expected a number > 0, got 'nan'");
  EXPECT_EQ(ClusterError("{name: a, gpus: 1, gpu_memory_gib: -inf}"),
            "c.yaml:2: nodes[0].gpu_memory_gib: expected a number > 0, got '-inf'");
  EXPECT_EQ(ClusterError("{name: n\xaf, gpus: 1}"),
            "c.yaml:2: nodes[0].name: expected UTF-8 text, got the byte 0xaf at offset 1");
  EXPECT_EQ(ClusterError("{name: \xed\xa0\x80, gpus: 1}"),  // a surrogate
            "c.yaml:2: nodes[0].name: expected UTF-8 text, got the byte 0xed at offset 0");
  EXPECT_EQ(ClusterError("{name: a, gpus: 1, [x]: 2}"),
            "c.yaml:2: nodes[0]: expected names as keys, got a list as a key");
}

TEST(Limits, ProfileNumbersAndRows) {
  Cluster c = ParseCluster(ParseYamlText("nodes:\n  - {name: n, gpus: 8}\n", "c"), "c");
  auto error = [&](const std::string& rows) {
    return ErrorOf([&] { ParseProfileCsv("task,technique,gpus,runtime_s\n" + rows, "p.csv", c); });
  };
  EXPECT_EQ(error("a,ddp,1,1e300\n"),
            "p.csv:2: runtime_s: expected at most 1e+09 seconds, got 1e+300");
  EXPECT_EQ(error("a,ddp,1,nan\n"),
            "p.csv:2: runtime_s: expected a positive number of seconds, got nan");
  EXPECT_EQ(error("a,ddp,1,1e400\n"),
            "p.csv:2: runtime_s: expected a positive number of seconds, got inf");
  EXPECT_EQ(error("a,ddp,-1,10\n"), "p.csv:2: gpus: expected an integer >= 1, got '-1'");
  EXPECT_EQ(error("a,ddp\xc0\xaf,1,10\n"),  // an overlong '/'
            "p.csv:2: technique: expected UTF-8 text, got the byte 0xc0 at offset 3");
  EXPECT_EQ(error("a,ddp,99999999999999999999,10\n"),
            "p.csv:2: gpus: expected an integer >= 1, got '99999999999999999999'");
  std::string many;
  for (int i = 0; i <= 1'000'000; ++i)
    many += "a,ddp,1,1\n";
  EXPECT_EQ(
      error(many),
      "p.csv:1000002: more than 1000000 rows; expected one per task, technique and GPU count");
}

std::string PlanError(const std::string& task) {
  return ErrorOf([&] {
    ParsePlanJson(R"({"solver": "s", "status": "optimal", "makespan_s": 1, "lower_bound_s": 1,
                      "solve_time_s": 0, "tasks": [)" +
                      task + "]}",
                  "plan.json");
  });
}

TEST(Limits, PlanNumbers) {
  const std::string ok =
      R"("task": "a", "technique": "ddp", "node": "n", "start_s": 0, "end_s": 1)";
  EXPECT_EQ(PlanError("{" + ok + R"(, "gpus": 4294967297, "gpu_ids": [0]})"),
            "plan.json: tasks[0].gpus: expected an integer from 1 to 4096, got '4294967297'");
  EXPECT_EQ(PlanError("{" + ok + R"(, "gpus": 0, "gpu_ids": []})"),
            "plan.json: tasks[0].gpus: expected an integer from 1 to 4096, got '0'");
  EXPECT_EQ(PlanError("{" + ok + R"(, "gpus": 1.0, "gpu_ids": [0]})"),
            "plan.json: tasks[0].gpus: expected an integer from 1 to 4096, got '1.0'");
  EXPECT_EQ(PlanError("{" + ok + R"(, "gpus": 1, "gpu_ids": [-1]})"),
            "plan.json: tasks[0].gpu_ids[0]: expected an integer from 0 to 4095, got '-1'");
  EXPECT_EQ(PlanError("{" + ok + R"(, "gpus": 1, "gpu_ids": [18446744073709551615]})"),
            "plan.json: tasks[0].gpu_ids[0]: expected an integer from 0 to 4095, got "
            "'18446744073709551615'");
  EXPECT_EQ(PlanError(R"({"task": "a", "technique": "ddp", "node": "n", "gpus": 1, "gpu_ids": [0],
                          "start_s": 1e300, "end_s": 1})"),
            "plan.json: tasks[0].start_s: expected a number of seconds from -1e+09 to 1e+09, got "
            "1e+300");
  EXPECT_EQ(PlanError(R"({"task": "a", "technique": "ddp", "node": "n", "gpus": 1, "gpu_ids": [0],
                          "start_s": 1e400, "end_s": 1})"),
            "plan.json: invalid JSON: [json.exception.out_of_range.406] number overflow parsing "
            "'1e400'");
  EXPECT_EQ(PlanError(std::string(100, '[') + std::string(100, ']')),
            "plan.json: invalid JSON: nested deeper than 64 levels");
}

TEST(Limits, EventNumbers) {
  auto error = [](const std::string& line) {
    return ErrorOf(
        [&] { ParseEventLines(line + "\n{\"t\": 1, \"event\": \"plan\"}\n", "e.jsonl"); });
  };
  EXPECT_EQ(error(R"({"t": -1, "event": "plan"})"),
            "e.jsonl:1: t: expected seconds from 0 to 1e+09, got -1");
  EXPECT_EQ(error(R"({"t": 1e300, "event": "plan"})"),
            "e.jsonl:1: t: expected seconds from 0 to 1e+09, got 1e+300");
  EXPECT_EQ(error(R"({"t": 1, "event": "task_started", "gpus": 1e3, "gpu_ids": [1e300]})"),
            "e.jsonl:1: gpu_ids[0]: expected an integer from 0 to 4096, got '1e+300'");
  EXPECT_EQ(error(R"({"t": 1, "event": "task_started", "gpu_ids": ["x"]})"),
            "e.jsonl:1: gpu_ids[0]: expected an integer from 0 to 4096, got '\"x\"'");
  EXPECT_EQ(error(R"({"t": 1, "event": "task_started", "gpus": 9223372036854775807})"),
            "e.jsonl:1: gpus: expected an integer from 0 to 4096, got '9223372036854775807'");
  EXPECT_EQ(error(R"({"t": 1e400, "event": "plan"})"),
            "e.jsonl:1: invalid JSON event line: [json.exception.out_of_range.406] number "
            "overflow parsing '1e400'");
}

class WorkloadLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("limits_test");
    std::filesystem::create_directories(dir_);
  }
  std::string Error(const std::string& yaml, long max_tasks = 0) {
    return ErrorOf([&] { ParseWorkload(yaml, "w.yaml", dir_, {}, max_tasks); });
  }
  std::string dir_;
};

const std::string kHead = "cluster: {nodes: [{name: n, gpus: 4}]}\ntasks:\n";
const std::string kMlp =
    "  - name: m\n"
    "    model: {type: mlp, layers: 2, width: 8}\n"
    "    data: {type: synthetic, size: 100}\n"
    "    optimizer: {type: sgd, lr: 0.1}\n";

TEST_F(WorkloadLimits, StepsEpochsAndBatchesStayInRange) {
  EXPECT_EQ(Error(kHead + kMlp + "    batch_size: 2000000\n    steps: 1\n"),
            "w.yaml:7: tasks[0].batch_size: expected an integer <= 1000000, got '2000000'");
  EXPECT_EQ(Error(kHead + kMlp + "    batch_size: 8\n    steps: 9223372036854775808\n"),
            "w.yaml:8: tasks[0].steps: expected an integer <= 1000000000000, got "
            "'9223372036854775808'");
  EXPECT_EQ(Error(kHead + kMlp + "    batch_size: 1\n    epochs: 999999999999\n"),
            "w.yaml:8: tasks[0].epochs: 999999999999 epochs of 100 steps is more than "
            "1000000000000 steps");
  EXPECT_EQ(Error(kHead + kMlp + "    batch_size: 8\n    steps: 1\n    eval: {every: -5}\n"),
            "w.yaml:9: tasks[0].eval.every: expected an integer >= 1, got '-5'");
  EXPECT_EQ(
      Error(kHead + kMlp + "    batch_size: 8\n    steps: 1\n    gpu_range: [1, 4294967297]\n"),
      "w.yaml:9: tasks[0].gpu_range[1]: expected an integer <= 4096, got '4294967297'");
  EXPECT_EQ(Error(kHead + "  - name: g\n    model: {type: gpt, layers: 1, d_model: 8, heads: 1, "
                          "seq_len: 9223372036854775807}\n"),
            "w.yaml:4: tasks[0].model.seq_len: expected an integer <= 1048576, got "
            "'9223372036854775807'");
}

TEST_F(WorkloadLimits, RatesAreFiniteAndBounded) {
  std::string task =
      "  - name: m\n    model: {type: mlp, layers: 2, width: 8}\n"
      "    data: {type: synthetic}\n    batch_size: 8\n    steps: 1\n";
  EXPECT_EQ(Error(kHead + task + "    optimizer: {type: sgd, lr: 1e300}\n"),
            "w.yaml:8: tasks[0].optimizer.lr: expected a number <= 1e+09, got '1e300'");
  EXPECT_EQ(Error(kHead + task + "    optimizer: {type: sgd, lr: .nan}\n"),
            "w.yaml:8: tasks[0].optimizer.lr: expected a number > 0, got '.nan'");
  EXPECT_EQ(Error(kHead + task + "    optimizer: {type: sgd, lr: 0.1, momentum: inf}\n"),
            "w.yaml:8: tasks[0].optimizer.momentum: expected a number <= 1e+09, got 'inf'");
}

TEST_F(WorkloadLimits, SweepsPastTheTaskCapAreRefusedBeforeExpanding) {
  // 10^6 combinations: refused from the axes alone, before one is made.
  std::string axis = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";
  std::string sweep = "    sweep: {seed: " + axis + ", data.seed: " + axis +
                      ", batch_size: " + axis + ", optimizer.lr: " + axis +
                      ", optimizer.momentum: " + axis + ", model.width: " + axis + "}\n";
  std::string task = kMlp + "    batch_size: 8\n    steps: 1\n";
  EXPECT_EQ(Error(kHead + task + sweep),
            "w.yaml:9: tasks[0].sweep: makes 1000000 tasks, which takes the workload past its "
            "limit of 10000 tasks; raise it with max_tasks: in the workload or --max-tasks");
  // Ten axes of ten values: more combinations than a long holds.
  std::string huge = "    sweep: {";
  for (int i = 0; i < 20; ++i)
    huge += (i ? ", " : "") + std::string("data.x") + std::to_string(i) + ": " + axis;
  EXPECT_THAT(Error(kHead + task + huge + "}\n"),
              HasSubstr("tasks[0].sweep: makes 9223372036854775807 tasks"));
}

TEST_F(WorkloadLimits, TheCapIsTheCommandLinesThenTheWorkloadsThenTheDefault) {
  std::string task = kMlp + "    batch_size: 8\n    steps: 1\n    sweep: {seed: [1, 2, 3]}\n";
  EXPECT_EQ(Error(kHead + task, 2),
            "w.yaml:9: tasks[0].sweep: makes 3 tasks, which takes the workload past its limit of "
            "2 tasks; raise it with max_tasks: in the workload or --max-tasks");
  EXPECT_EQ(Error("max_tasks: 3\n" + kHead + task), "");
  EXPECT_THAT(Error("max_tasks: 100\n" + kHead + task, 2), HasSubstr("limit of 2 tasks"));
  EXPECT_EQ(Error("max_tasks: 3\n" + kHead + task, 4), "");
  // Tasks without a sweep count one each, at the task that goes past.
  std::string two = kHead + kMlp + "    batch_size: 8\n    steps: 1\n" + "  - name: m2\n" +
                    kMlp.substr(kMlp.find('\n') + 1) + "    batch_size: 8\n    steps: 1\n";
  EXPECT_EQ(Error(two, 1),
            "w.yaml:9: tasks[1]: takes the workload past its limit of 1 task; raise it with "
            "max_tasks: in the workload or --max-tasks");
  EXPECT_EQ(Error("max_tasks: 0\n" + two),
            "w.yaml:1: max_tasks: expected an integer >= 1, got '0'");
}

TEST_F(WorkloadLimits, MapKeysMustBeNamesAndSweptPathsMustBeMaps) {
  std::string task = kMlp + "    batch_size: 8\n    steps: 1\n";
  EXPECT_EQ(Error(kHead + task + "    sweep: {model.type.x: [1]}\n"),
            "w.yaml:9: tasks[0].sweep.model.type.x: cannot sweep over model.type.x: model.type is "
            "not a map");
  EXPECT_EQ(Error(kHead + task + "    sweep: {steps.x: [1]}\n"),
            "w.yaml:9: tasks[0].sweep.steps.x: cannot sweep over steps.x: steps is not a map");
  // A swept field the task does not have yet is made, then read as any other
  // (a field a sweep made has no line of its own: the sweep's is named).
  EXPECT_EQ(Error(kHead + task + "    sweep: {soptimizer.lr: [1]}\n"),
            "w.yaml:9: tasks[0] (sweep m-lr1).soptimizer: unknown field; expected one of: name, "
            "type, model, data, batch_size, optimizer, steps, epochs, seed, sweep, search, "
            "techniques, "
            "gpu_range, precision, eval, finetune; did you mean 'optimizer'?");
  EXPECT_EQ(Error(kHead + task + "    sweep: {eval.every: [5]}\n"), "");
  EXPECT_EQ(Error(kHead + task + "    sweep: {[a]: [1]}\n"),
            "w.yaml:9: tasks[0].sweep: expected names as keys, got a list as a key");
  EXPECT_EQ(Error(kHead + task + "    {a: 1}: 2\n"),
            "w.yaml:9: tasks[0]: expected names as keys, got a map as a key");
}

TEST_F(WorkloadLimits, LongNamesAndTemplatesAreReadWithoutRecursion) {
  // std::regex recursed once per character here (a stack overflow at ~100k).
  std::string name(1'000'000, 'a');
  std::string cmd = "  - name: c\n    type: command\n    steps: 1\n    commands: {ddp: \"" +
                    std::string(1'000'000, 'x') + "{gpu}\"}\n";
  EXPECT_THAT(Error(kHead + cmd), HasSubstr("unknown placeholder {gpu}"));
  std::string named = "  - name: " + name +
                      "!\n    type: command\n    steps: 1\n"
                      "    commands: {ddp: run}\n";
  EXPECT_THAT(Error(kHead + named), HasSubstr("it names files"));
}

TEST_F(WorkloadLimits, AClusterPathMustBeAFile) {
  EXPECT_EQ(Error("cluster: /dev/zero\ntasks:\n" + kMlp),
            "w.yaml:1: cluster: expected a cluster file, got '/dev/zero'");
}

}  // namespace
}  // namespace saturn
