// Fused arrays (engine/array.h): many mlp models of one shape, each on its
// own table group with its own hyper-parameters, trained as one array. The
// property that makes arrays safe: each member's loss, step by step, equals
// the same task trained alone by the worker (single technique; fp32,
// relative difference <= 1e-4), also after other members ended.
#include "engine/array.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "table/group_file.h"
#include "table/grouped_table.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

// Three groups of 40, 70 and 25 rows: y = a_g . x + b_g (+ noise), three
// features; a class label c = (y > 0) + (y > 1) beside it.
void WriteCsv(const TestDir& dir) {
  std::string csv = "store,x0,x1,x2,y,c\n";
  uint64_t s = 7;
  auto uniform = [&s]() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
  };
  const int rows[3] = {40, 70, 25};
  for (int g = 0; g < 3; ++g)
    for (int r = 0; r < rows[g]; ++r) {
      double x[3] = {uniform(), uniform(), uniform()};
      double y = (g + 1) * x[0] - x[1] * (g - 1) + 0.5 * x[2] + 0.3 * g + 0.05 * uniform();
      csv += "s" + std::to_string(g) + "," + std::to_string(x[0]) + "," + std::to_string(x[1]) +
             "," + std::to_string(x[2]) + "," + std::to_string(y) + "," +
             std::to_string((y > 0) + (y > 1)) + "\n";
    }
  dir.Write("t.csv", csv);
}

std::string WriteTable(const TestDir& dir, const std::string& label, const std::string& task) {
  WriteCsv(dir);
  table::TableSpec spec;
  spec.path = dir.Path("t.csv");
  spec.features = {"x0", "x1", "x2"};
  spec.label = label;
  spec.group_by = "store";
  spec.task = task;
  std::string path = dir.Path(label + ".groups");
  table::WriteGroupFile(table::ReadGroupedTable(spec, "test", 0, "data"), path);
  return path;
}

nlohmann::json Member(const std::string& name, const std::string& file, const std::string& group,
                      nlohmann::json model, uint64_t seed, int64_t steps,
                      nlohmann::json optimizer) {
  return {{"name", name},
          {"model", std::move(model)},
          {"data", {{"type", "table"}, {"path", file}, {"group", group}}},
          {"batch_size", 8},
          {"optimizer", std::move(optimizer)},
          {"steps", steps},
          {"seed", seed}};
}

std::vector<double> Alone(const TestDir& dir, const nlohmann::json& task) {
  std::string name = task["name"];
  std::string file = dir.Write(name + ".json.task", task.dump());
  WorkerRun r = RunWorker(ExecuteArgs(dir, file, "single", 1, name, task["steps"].get<int64_t>()),
                          dir.Path(name));
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return {};
  return ReadJson(dir.Path(name + ".json"))["losses"].get<std::vector<double>>();
}

void ExpectTrajectoriesAsAlone(const TestDir& dir, const std::vector<nlohmann::json>& tasks) {
  std::vector<engine::TaskSpec> specs;
  for (const nlohmann::json& t : tasks)
    specs.push_back(engine::ParseTask(t, "array.json"));
  engine::FusedArray array(specs, "array.json");
  engine::ArrayResult r = array.Train(at::Device(at::kCPU));
  ASSERT_EQ(r.members.size(), tasks.size());
  for (size_t k = 0; k < tasks.size(); ++k) {
    std::vector<double> alone = Alone(dir, tasks[k]);
    const std::vector<double>& got = r.members[k].losses;
    ASSERT_EQ(got.size(), alone.size()) << tasks[k]["name"];
    for (size_t s = 0; s < got.size(); ++s)
      EXPECT_LE(std::fabs(got[s] - alone[s]), 1e-4 * std::fabs(alone[s]))
          << tasks[k]["name"] << " step " << s << ": array " << got[s] << ", alone " << alone[s];
    EXPECT_GT(r.members[k].eval_samples, 0);
    EXPECT_TRUE(std::isfinite(r.members[k].eval_loss));
  }
}

TEST(FusedArray, EachRegressionMemberTrainsAsAloneThroughItsOwnEnd) {
  TestDir dir("array_regression");
  std::string file = WriteTable(dir, "y", "");
  nlohmann::json mlp = {{"type", "mlp"}, {"layers", 2},  {"width", 16},
                        {"inputs", 3},   {"outputs", 1}, {"loss", "mse"}};
  nlohmann::json cosine = {{"type", "cosine"}, {"warmup_steps", 3}};
  ExpectTrajectoriesAsAlone(
      dir, {Member("a", file, "s0", mlp, 1, 14, {{"type", "adam"}, {"lr", 1e-2}}),
            Member("b", file, "s1", mlp, 2, 30,
                   {{"type", "adamw"},
                    {"lr", 3e-2},
                    {"beta1", 0.8},
                    {"weight_decay", 0.1},
                    {"schedule", cosine}}),
            Member("c", file, "s2", mlp, 3, 9, {{"type", "adam"}, {"lr", 2e-3}, {"eps", 1e-6}}),
            Member("d", file, "s1", mlp, 4, 20, {{"type", "adam"}, {"lr", 5e-3}})});
}

TEST(FusedArray, ClassifiersAndLinearModelsWithSgdTrainAsAlone) {
  TestDir dir("array_classes");
  std::string file = WriteTable(dir, "c", "classification");
  nlohmann::json logistic = {{"type", "mlp"}, {"layers", 0}, {"inputs", 3}, {"outputs", 3}};
  ExpectTrajectoriesAsAlone(
      dir,
      {Member("a", file, "s0", logistic, 1, 12, {{"type", "sgd"}, {"lr", 0.5}, {"momentum", 0.9}}),
       Member("b", file, "s1", logistic, 2, 7, {{"type", "sgd"}, {"lr", 0.1}, {"momentum", 0.5}}),
       Member("c", file, "s2", logistic, 5, 16,
              {{"type", "sgd"}, {"lr", 1.0}, {"momentum", 0.3}})});
}

TEST(FusedArray, ATasksSearchMeasuresArraysOfItsCopiesInItsOwnProcess) {
  // --pack-sizes: after the task alone, arrays of 2 and 4 copies of it;
  // with a device of 64 KiB an array of 8192 copies (a step's rows alone
  // are 768 KiB) does not fit, and ends the list: 16384 is not tried.
  TestDir dir("array_search_sizes");
  std::string file = WriteTable(dir, "y", "");
  nlohmann::json mlp = {
      {"type", "mlp"}, {"layers", 0}, {"inputs", 3}, {"outputs", 1}, {"loss", "mse"}};
  std::string task = dir.Write(
      "t.json", Member("t", file, "s1", mlp, 1, 50, {{"type", "adam"}, {"lr", 1e-2}}).dump());
  auto search = [&](const std::string& sizes, const std::string& gib) {
    return RunWorker({"search", "--task", task, "--technique", "single", "--gpus", "1", "--out",
                      dir.Path("r.json"), "--memory-gib", gib, "--pack-sizes", sizes},
                     dir.Path("search"));
  };
  WorkerRun r = search("2,4", "1");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json result = ReadJson(dir.Path("r.json"));
  EXPECT_TRUE(result["feasible"].get<bool>());
  EXPECT_FALSE(result.contains("members")) << "the task alone";
  ASSERT_EQ(result["pack_sizes"].size(), 2u) << result.dump();
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& size = result["pack_sizes"][i];
    EXPECT_EQ(size["members"], 2 << i);
    EXPECT_TRUE(size["feasible"].get<bool>()) << size.dump();
    EXPECT_GT(size["step_s"].get<double>(), 0.0);
    EXPECT_EQ(size["step_samples_s"].size(), 10u);  // the default measured steps
    EXPECT_GE(size["setup_s"].get<double>(), 0.0);
  }
  r = search("2,8192,16384", "0.00006103515625");
  ASSERT_EQ(r.status, 0) << r.err;
  result = ReadJson(dir.Path("r.json"));
  ASSERT_EQ(result["pack_sizes"].size(), 2u) << result.dump();
  EXPECT_TRUE(result["pack_sizes"][0]["feasible"].get<bool>()) << result.dump();
  EXPECT_FALSE(result["pack_sizes"][1]["feasible"].get<bool>());
  EXPECT_THAT(result["pack_sizes"][1]["reason"].get<std::string>(),
              HasSubstr("does not fit the device's memory"));
  // Only a table task alone under single on one device measures arrays.
  r = RunWorker({"search", "--task", task, "--technique", "ddp", "--gpus", "2", "--out",
                 dir.Path("r2.json"), "--pack-sizes", "2"},
                dir.Path("search2"));
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--pack-sizes"));
  r = search("4,2", "1");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--pack-sizes: expected ascending sizes from 1 to 65536"));
}

TEST(FusedArray, WhatCannotShareAnArrayIsAnInputErrorNamingTheMember) {
  TestDir dir("array_errors");
  std::string file = WriteTable(dir, "y", "");
  nlohmann::json mlp = {
      {"type", "mlp"}, {"layers", 0}, {"inputs", 3}, {"outputs", 1}, {"loss", "mse"}};
  nlohmann::json a = Member("a", file, "s0", mlp, 1, 5, {{"type", "adam"}, {"lr", 1e-2}});
  nlohmann::json b = Member("b", file, "s1", mlp, 1, 5, {{"type", "adam"}, {"lr", 1e-2}});
  b["batch_size"] = 4;
  auto error = [](const std::vector<nlohmann::json>& tasks) -> std::string {
    std::vector<engine::TaskSpec> specs;
    for (const nlohmann::json& t : tasks)
      specs.push_back(engine::ParseTask(t, "array.json"));
    try {
      engine::FusedArray array(specs, "array.json");
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(error({a, b}),
              HasSubstr("array[1].batch_size: task 'b': members share one batch size"));
  b = Member("b", file, "s1", mlp, 1, 5, {{"type", "sgd"}, {"lr", 1e-2}});
  EXPECT_THAT(error({a, b}), HasSubstr("array[1].optimizer"));
  b = Member("b", file, "s1", mlp, 1, 5, {{"type", "adam"}, {"lr", 1e-2}});
  b["model"]["layers"] = 1;
  b["model"]["width"] = 4;
  EXPECT_THAT(error({a, b}), HasSubstr("array[1].model: task 'b': members are one architecture"));
  b = Member("b", file, "nope", mlp, 1, 5, {{"type", "adam"}, {"lr", 1e-2}});
  EXPECT_THAT(error({a, b}), HasSubstr("has no group 'nope'"));
}

}  // namespace
}  // namespace saturn::testing
