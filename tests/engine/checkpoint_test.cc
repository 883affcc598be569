// Checkpoint integrity and retention in the worker: a damaged checkpoint is
// refused on load (and is the one the executor skips), one without a
// manifest loads with a warning, a full disk fails the attempt and leaves
// the previous checkpoint, retention keeps the newest N.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>
#include <set>

#include "common/fs.h"
#include "protocol/checkpoint_files.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class WorkerCheckpoints : public ::testing::Test {
 protected:
  WorkerCheckpoints()
      : dir_(std::string("worker_checkpoints_") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()) {
    nlohmann::json task = TinyTask("mlp");
    task["model"]["width"] = 128;  // blocks of ~200 KB: past the file-size limit below
    task_ = dir_.Write("task.json", task.dump());
  }

  std::vector<std::string> Execute(int from, int to, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"execute",
                                     "--task",
                                     task_,
                                     "--technique",
                                     "single",
                                     "--gpus",
                                     "1",
                                     "--out",
                                     dir_.Path("result.json"),
                                     "--from-step",
                                     std::to_string(from),
                                     "--to-step",
                                     std::to_string(to),
                                     "--checkpoint-dir",
                                     dir_.Path("ck")};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  WorkerRun Run(int from, int to, const std::vector<std::string>& extra = {}) {
    return RunWorker(Execute(from, to, extra), dir_.Path("run-" + std::to_string(from)));
  }

  std::set<std::string> Folders() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_.Path("ck")))
      names.insert(e.path().filename().string());
    return names;
  }

  TestDir dir_;
  std::string task_;
};

TEST_F(WorkerCheckpoints, ADamagedCheckpointIsRefusedOnLoadAndTheExecutorSkipsTheSameOne) {
  WorkerRun first = Run(0, 4, {"--checkpoint-every", "2"});
  ASSERT_EQ(first.status, 0) << first.err;
  std::string newest = dir_.Path("ck/checkpoint-4");
  EXPECT_EQ(CheckCheckpoint(newest).state, CheckpointState::kGood);
  std::string block = ReadFile(newest + "/block-00001.pt");
  block[block.size() / 2] ^= 0x04;
  WriteFileAtomic(newest + "/block-00001.pt", block);

  WorkerRun refused = Run(4, 6);
  EXPECT_EQ(refused.status, 2);
  EXPECT_THAT(refused.err, HasSubstr("checkpoint-4/block-00001.pt: damaged checkpoint: crc32c"));
  // The executor's choice agrees: checkpoint-4 is set aside, 2 is next.
  NewestCheckpoint n = FindNewestCheckpoint(dir_.Path("ck"));
  EXPECT_EQ(n.step, 2);
  ASSERT_EQ(n.skipped.size(), 1u);
  EXPECT_THAT(n.skipped[0].problem, HasSubstr("block-00001.pt: crc32c"));
  WorkerRun again = Run(2, 6);
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(CheckCheckpoint(dir_.Path("ck/checkpoint-6")).state, CheckpointState::kGood);
}

TEST_F(WorkerCheckpoints, ACheckpointWithoutManifestLoadsWithAWarning) {
  ASSERT_EQ(Run(0, 2).status, 0);
  fs::remove(dir_.Path("ck/checkpoint-2/manifest.json"));
  WorkerRun resumed = Run(2, 3);
  EXPECT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("checkpoint-2 has no manifest.json (written before "
                                     "checksums); loading it unverified"));
}

// RLIMIT_FSIZE stands in for a full disk: the checkpoint write fails with
// the reason, the attempt fails (exit 1), nothing half-written remains, and
// the retry from the previous checkpoint ends with its weights.
TEST_F(WorkerCheckpoints, AFullDiskFailsTheAttemptAndLeavesThePreviousCheckpoint) {
  ASSERT_EQ(Run(0, 2).status, 0);
  WorkerRun failed;
  {
    struct rlimit old;
    ::getrlimit(RLIMIT_FSIZE, &old);
    struct rlimit small = {32768, old.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &small);
    WorkerProcess p(Execute(2, 6, {"--checkpoint-every", "2"}), dir_.Path("full"));
    ::setrlimit(RLIMIT_FSIZE, &old);  // the worker keeps the limit it started with
    failed.status = p.Wait(300);
    failed.err = p.Stderr();
  }
  EXPECT_EQ(failed.status, 1);
  EXPECT_THAT(failed.err, HasSubstr("saturn-worker: error: cannot write"));
  EXPECT_THAT(failed.err, HasSubstr("File too large"));
  EXPECT_THAT(failed.err, Not(HasSubstr("internal error")));
  EXPECT_EQ(Folders(), (std::set<std::string>{"checkpoint-2"}));  // no checkpoint-4, no .partial
  EXPECT_EQ(CheckCheckpoint(dir_.Path("ck/checkpoint-2")).state, CheckpointState::kGood);
  EXPECT_EQ(FindNewestCheckpoint(dir_.Path("ck")).step, 2);

  WorkerRun retried = Run(2, 6, {"--checkpoint-every", "2"});
  ASSERT_EQ(retried.status, 0) << retried.err;
  nlohmann::json interrupted = ReadJson(dir_.Path("result.json"));
  WorkerRun straight = RunWorker({"execute", "--task", task_, "--technique", "single", "--gpus",
                                  "1", "--out", dir_.Path("straight.json"), "--from-step", "0",
                                  "--to-step", "6", "--checkpoint-dir", dir_.Path("straight")},
                                 dir_.Path("straight"));
  ASSERT_EQ(straight.status, 0) << straight.err;
  EXPECT_NEAR(interrupted["final_loss"].get<double>(),
              ReadJson(dir_.Path("straight.json"))["final_loss"].get<double>(), 1e-6);
}

TEST_F(WorkerCheckpoints, RetentionKeepsTheNewestN) {
  WorkerRun run = Run(0, 10, {"--checkpoint-every", "2", "--keep-checkpoints", "2"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(Folders(), (std::set<std::string>{"checkpoint-8", "checkpoint-10"}));
  run = Run(10, 14, {"--checkpoint-every", "2", "--keep-checkpoints", "3"});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(Folders(), (std::set<std::string>{"checkpoint-10", "checkpoint-12", "checkpoint-14"}));
  run = Run(14, 16, {"--checkpoint-every", "1"});  // the worker's default keeps all
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(Folders().size(), 5u);
}

// A retry after the last checkpoint (e.g. of a worker that died writing
// model.pt) trains nothing and rewrites nothing: the checkpoint is the result.
TEST_F(WorkerCheckpoints, ARetryAtTheLastStepRewritesNothing) {
  ASSERT_EQ(Run(0, 3).status, 0);
  std::string manifest = ReadFile(dir_.Path("ck/checkpoint-3/manifest.json"));
  auto written = fs::last_write_time(dir_.Path("ck/checkpoint-3/manifest.json"));
  WorkerRun retry = Run(3, 3, {"--save-model", dir_.Path("model.pt")});
  ASSERT_EQ(retry.status, 0) << retry.err;
  nlohmann::json result = ReadJson(dir_.Path("result.json"));
  EXPECT_EQ(result["completed_steps"], 3);
  EXPECT_EQ(result["checkpoint"], dir_.Path("ck/checkpoint-3"));
  EXPECT_EQ(fs::last_write_time(dir_.Path("ck/checkpoint-3/manifest.json")), written);
  EXPECT_EQ(ReadFile(dir_.Path("ck/checkpoint-3/manifest.json")), manifest);
  EXPECT_TRUE(fs::exists(dir_.Path("model.pt")));
}

}  // namespace
}  // namespace saturn::testing
