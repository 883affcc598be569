// The technique catalogue the orchestrators plan with comes from the worker
// (`saturn-worker techniques`; here the protocol's stand-in,
// tests/testing/fake_worker.sh): names, GPU-count ranges and whether a
// technique splits batches, and the workload checks that need them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/workload.h"
#include "launch/worker.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;

const std::string kFakeWorker = std::string(SATURN_SOURCE_DIR) + "/tests/testing/fake_worker.sh";

class Techniques : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("techniques_test");
    std::filesystem::create_directories(dir_);
    WriteFileAtomic(dir_ + "/cluster.yaml", "nodes:\n  - {name: n0, gpus: 4}\n");
  }
  void TearDown() override { unsetenv("FAKE_WORKER_TECHNIQUES"); }
  Workload Parse(const std::string& extra) {
    return ParseWorkload(
        "cluster: cluster.yaml\ntasks:\n"
        "  - name: gpt\n"
        "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
        "    data: {type: synthetic}\n"
        "    batch_size: 2\n"
        "    optimizer: {type: adamw, lr: 1.0e-4}\n"
        "    steps: 10\n" +
            extra,
        "w.yaml", dir_);
  }
  std::string ErrorOf(const std::string& extra) {
    try {
      AvailableTechniques(Parse(extra), kFakeWorker);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

TEST_F(Techniques, TraitsComeFromTheWorker) {
  std::vector<WorkerTechnique> all = AvailableTechniques(Parse(""), kFakeWorker);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].name, "single");
  EXPECT_TRUE(all[0].one_process);
  EXPECT_EQ(all[0].max_gpus, 1);
  EXPECT_EQ(all[1].name, "ddp");
  EXPECT_EQ(all[1].min_gpus, 2);
  EXPECT_EQ(all[1].max_gpus, 0);
  EXPECT_TRUE(all[1].splits_batch);
  EXPECT_FALSE(all[3].splits_batch);  // pipeline
}

TEST_F(Techniques, GpuCountsFollowTheTraits) {
  WorkerTechnique one{"x", "", true, 1, 1, false, ""};
  WorkerTechnique many{"y", "", false, 2, 0, true, ""};
  WorkerTechnique bounded{"z", "", false, 1, 3, false, ""};
  EXPECT_EQ(GpuCounts(one, 1, 8), std::vector<int>{1});
  EXPECT_EQ(GpuCounts(one, 2, 8), std::vector<int>{});
  EXPECT_EQ(GpuCounts(many, 1, 4), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(GpuCounts(bounded, 2, 8), (std::vector<int>{2, 3}));
  EXPECT_EQ(GpuCounts(WorkerTechnique{}, 1, 3), (std::vector<int>{1, 2, 3}));
}

// A technique the worker does not know is an input error at the line of its
// name; the list of what is available comes from the worker.
TEST_F(Techniques, AnUnknownTechniqueNamesItsLine) {
  EXPECT_EQ(ErrorOf("    techniques: [single, zero3]\n"),
            "w.yaml:9: tasks[0].techniques[1]: unknown technique 'zero3'; available: single, "
            "ddp, fsdp, pipeline, spill");
}

TEST_F(Techniques, ANewTechniqueNeedsNoChangeOutsideTheEngine) {
  setenv("FAKE_WORKER_TECHNIQUES",
         R"([{"name": "zero3", "layout": "rank-per-device", "min_gpus": 3, "max_gpus": null,
              "splits_batch": true, "plugin": null}])",
         1);
  std::vector<WorkerTechnique> all =
      // Another path to the same stand-in: the catalogue is kept per worker.
      AvailableTechniques(
          Parse("    techniques: [zero3]\n    gpu_range: [1, 1]\n"),
          std::string(SATURN_SOURCE_DIR) + "/tests/../tests/testing/fake_worker.sh");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(GpuCounts(all[0], 1, 4), (std::vector<int>{3, 4}));
}

// Batch-splitting techniques give each GPU a slice of every batch: a task
// allowed nothing else needs a sample per GPU; with pipeline allowed too, it
// can still run.
TEST_F(Techniques, ABatchTooSmallForSplittingTechniquesOnly) {
  EXPECT_EQ(ErrorOf("    techniques: [ddp, fsdp]\n    gpu_range: [4, 4]\n"),
            "w.yaml:6: tasks[0].batch_size: batch_size 2 cannot be split across the 4+ GPUs "
            "gpu_range asks for with batch-splitting techniques only");
  EXPECT_EQ(ErrorOf("    techniques: [ddp, pipeline]\n    gpu_range: [4, 4]\n"), "");
}

}  // namespace
}  // namespace saturn
