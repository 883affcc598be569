// Table data in a workload (contracts/workload_table.h): one task per group,
// steps from each group's own training rows, one trial key for all, and
// errors that name the workload's field or the CSV's line and column.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/workload.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class WorkloadTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("workload_table");
    setenv("XDG_CACHE_HOME", (dir_ + "/cache").c_str(), 1);
    // Store "north pole" has 10 rows, "s2" 30: hour, gpus -> minutes.
    std::string csv = "store,hour,gpus,minutes\n";
    for (int i = 0; i < 40; ++i)
      csv += std::string(i % 4 == 0 ? "north pole" : "s2") + "," + std::to_string(i % 24) + "," +
             std::to_string(1 + i % 3) + "," + std::to_string(10 + i) + "\n";
    WriteFileAtomic(dir_ + "/jobs.csv", csv);
  }
  void TearDown() override { unsetenv("XDG_CACHE_HOME"); }
  Workload Parse(const std::string& data, const std::string& extra = "") {
    return ParseWorkload(
        "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n"
        "  - name: jobs\n"
        "    model: {type: mlp, layers: 0}\n"
        "    data: " +
            data +
            "\n"
            "    batch_size: 4\n"
            "    optimizer: {type: adam, lr: 1.0e-2}\n"
            "    epochs: 2\n" +
            extra,
        "w.yaml", dir_);
  }
  std::string ErrorOf(const std::string& data, const std::string& extra = "") {
    try {
      Parse(data, extra);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  std::string dir_;
};

const std::string kData =
    "{type: table, path: jobs.csv, features: [hour, gpus], label: minutes, group_by: store}";

TEST_F(WorkloadTableTest, EachGroupIsATaskWithItsOwnRowsStepsAndOneTrialKey) {
  Workload w = Parse(kData);
  ASSERT_EQ(w.tasks.size(), 2u);
  const WorkloadTask& north = w.tasks[0];
  EXPECT_EQ(north.name, "jobs-north_pole");
  EXPECT_EQ(north.group, "north pole");
  EXPECT_EQ(north.sweep, "jobs@north pole");
  EXPECT_EQ(north.spec["data"]["group"], "north pole");
  // 10 rows, 2 held out (a fifth): 8 train; 2 epochs of batch 4 -> 4 steps.
  EXPECT_EQ(north.spec["data"]["train_rows"], 8);
  EXPECT_EQ(north.steps, 4);
  // 30 rows, 6 held out: 24 train -> 12 steps.
  EXPECT_EQ(w.tasks[1].steps, 12);
  EXPECT_EQ(north.spec["model"]["inputs"], 2);
  EXPECT_EQ(north.spec["model"]["outputs"], 1);
  EXPECT_EQ(north.spec["model"]["loss"], "mse");
  EXPECT_EQ(north.trial_key, w.tasks[1].trial_key);
  EXPECT_TRUE(fs::exists(north.spec["data"]["path"].get<std::string>()));
}

TEST_F(WorkloadTableTest, TheGroupFileIsNamedByTheCsvsBytesAndMadeOnce) {
  std::string first = Parse(kData).tasks[0].spec["data"]["path"];
  EXPECT_EQ(Parse(kData).tasks[0].spec["data"]["path"], first);
  // Another table of the same size: another file, its own rows.
  std::string csv = ReadFile(dir_ + "/jobs.csv");
  csv[csv.find(",10\n") + 2] = '9';
  auto stamp = fs::last_write_time(dir_ + "/jobs.csv");
  WriteFileAtomic(dir_ + "/jobs.csv", csv);
  fs::last_write_time(dir_ + "/jobs.csv", stamp + std::chrono::seconds(1));  // coarse clocks
  Workload w = Parse(kData);
  EXPECT_NE(w.tasks[0].spec["data"]["path"], first);
  EXPECT_TRUE(fs::exists(first));
}

TEST_F(WorkloadTableTest, ASweepMakesEachGroupsVariantsItsSweep) {
  Workload w = Parse(kData, "    sweep: {optimizer.lr: [1.0e-2, 1.0e-3]}\n");
  ASSERT_EQ(w.tasks.size(), 4u);
  EXPECT_EQ(w.tasks[0].name, "jobs-lr1.0e-2-north_pole");
  EXPECT_EQ(w.tasks[0].sweep, "jobs@north pole");
  EXPECT_EQ(w.tasks[2].sweep, "jobs@north pole");
  EXPECT_EQ(w.tasks[2].spec["optimizer"]["lr"], 1.0e-3);
}

TEST_F(WorkloadTableTest, BadTablesNameTheFieldTheLineOrTheGroup) {
  EXPECT_THAT(ErrorOf("{type: table, path: jobs.csv, features: [hour, gpus], label: minutes, "
                      "group_by: shop}"),
              HasSubstr("w.yaml:5: tasks[0].data.group_by: column 'shop' is not in"));
  WriteFileAtomic(dir_ + "/jobs.csv", "store,hour,gpus,minutes\na,1,2,3\na,x,2,3\n");
  EXPECT_THAT(ErrorOf(kData), HasSubstr("jobs.csv:3: hour: feature is not a number: 'x'"));
  WriteFileAtomic(dir_ + "/jobs.csv", "store,hour,gpus,minutes\na,1,2,3\na,1,2,3\nb,1,2,3\n");
  EXPECT_THAT(ErrorOf(kData), HasSubstr("2 of 2 groups have fewer than 5 rows"));
  EXPECT_THAT(ErrorOf(kData), HasSubstr("'a' (2), 'b' (1)"));
  EXPECT_THAT(ErrorOf("{type: table, path: jobs.csv, features: [], label: minutes, group_by: s}"),
              HasSubstr("tasks[0].data.features: expected a non-empty list"));
  EXPECT_THAT(ErrorOf(kData, "    max_tasks_never: 1\n"), HasSubstr("max_tasks_never"));
}

TEST_F(WorkloadTableTest, GroupsWhoseTaskNamesAreAlikeAreAnErrorNamingBoth) {
  std::string csv = "store,hour,gpus,minutes\n";
  for (int i = 0; i < 10; ++i)
    csv += std::string(i % 2 ? "a b" : "a_b") + ",1,2," + std::to_string(i) + "\n";
  WriteFileAtomic(dir_ + "/jobs.csv", csv);
  EXPECT_THAT(ErrorOf(kData), HasSubstr("tasks[0].data.group_by: groups 'a b' and 'a_b' both make "
                                        "the task name 'jobs-a_b'"));
}

TEST_F(WorkloadTableTest, OnlyMlpModelsTakeTables) {
  try {
    ParseWorkload(
        "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n  - name: g\n"
        "    model: {type: gpt, layers: 1, d_model: 8, heads: 2, seq_len: 4}\n"
        "    data: " +
            kData +
            "\n    batch_size: 4\n    optimizer: {type: adam, lr: 1.0e-2}\n"
            "    steps: 3\n",
        "w.yaml", dir_);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("table data feeds mlp models"));
  }
}

TEST_F(WorkloadTableTest, MoreGroupsThanTheWorkloadsLimitIsAnError) {
  try {
    ParseWorkload(
        "cluster: {nodes: [{name: n0, gpus: 2}]}\nmax_tasks: 1\ntasks:\n"
        "  - name: jobs\n    model: {type: mlp, layers: 0}\n    data: " +
            kData +
            "\n    batch_size: 4\n    optimizer: {type: adam, lr: 1.0e-2}\n"
            "    epochs: 2\n",
        "w.yaml", dir_);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("makes 2 tasks (one per group)"));
  }
}

}  // namespace
}  // namespace saturn
