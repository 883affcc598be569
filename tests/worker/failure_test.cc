// A dead or stuck rank never hangs the others: they end with a clear error
// (exit status 4) within the collective timeout, and the launcher stops the
// rest of the group and reports which rank failed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>

#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

constexpr double kTimeoutS = 20;

std::vector<std::string> RankArgs(const TestDir& dir, const std::string& task, int rank,
                                  const std::string& technique) {
  return {"execute",
          "--task",
          task,
          "--technique",
          technique,
          "--gpus",
          "2",
          "--out",
          dir.Path("result.json"),
          "--from-step",
          "0",
          "--to-step",
          "100000",
          "--checkpoint-dir",
          dir.Path("ck"),
          "--rank",
          std::to_string(rank),
          "--world-size",
          "2",
          "--rendezvous",
          dir.Path("rendezvous"),
          "--timeout-s",
          std::to_string(static_cast<int>(kTimeoutS))};
}

TEST(Failure, KilledRankMakesThePeerFailWithAClearError) {
  for (std::string technique : {"ddp", "fsdp", "pipeline"}) {
    TestDir dir("failure_kill_" + technique);
    std::filesystem::create_directories(dir.Path("rendezvous"));
    std::string task = dir.Write("task.json", TinyTask("gpt").dump());
    WorkerProcess rank0(RankArgs(dir, task, 0, technique), dir.Path("rank0"));
    WorkerProcess rank1(RankArgs(dir, task, 1, technique), dir.Path("rank1"));
    ASSERT_TRUE(rank0.WaitForOutput("saturn: step=2 ", 120)) << rank0.Stderr();
    rank1.Signal(SIGKILL);
    EXPECT_EQ(rank0.Wait(kTimeoutS + 30), 4) << technique;
    EXPECT_THAT(rank0.Stderr(), HasSubstr("rank 0: peer failure:")) << technique;
  }
}

TEST(Failure, StuckRankTimesOut) {
  TestDir dir("failure_stuck");
  std::filesystem::create_directories(dir.Path("rendezvous"));
  std::string task = dir.Write("task.json", TinyTask("mlp").dump());
  std::vector<std::string> args0 = RankArgs(dir, task, 0, "ddp"),
                           args1 = RankArgs(dir, task, 1, "ddp");
  args0.back() = args1.back() = "3";
  WorkerProcess rank0(args0, dir.Path("rank0"));
  WorkerProcess rank1(args1, dir.Path("rank1"));
  ASSERT_TRUE(rank0.WaitForOutput("saturn: step=2 ", 120)) << rank0.Stderr();
  rank1.Signal(SIGSTOP);
  EXPECT_EQ(rank0.Wait(60), 4);
  EXPECT_THAT(rank0.Stderr(), HasSubstr("did not answer within 3 s"));
  rank1.Signal(SIGKILL);
}

TEST(Failure, MissingRankFailsTheRendezvous) {
  TestDir dir("failure_rendezvous");
  std::filesystem::create_directories(dir.Path("rendezvous"));
  std::string task = dir.Write("task.json", TinyTask("mlp").dump());
  std::vector<std::string> args = RankArgs(dir, task, 0, "fsdp");
  args.back() = "2";
  WorkerRun run = RunWorker(args, dir.Path("rank0"), 60);
  EXPECT_EQ(run.status, 4);
  EXPECT_THAT(run.err, HasSubstr("rendezvous of 2 ranks"));
}

TEST(Failure, LauncherStopsTheGroupAndNamesTheDeadRank) {
  TestDir dir("failure_launcher");
  std::string task = dir.Write("task.json", TinyTask("vit").dump());
  WorkerProcess launcher({"execute", "--task", task, "--technique", "ddp", "--gpus", "3", "--out",
                          dir.Path("result.json"), "--from-step", "0", "--to-step", "100000",
                          "--checkpoint-dir", dir.Path("ck"), "--timeout-s", "600"},
                         dir.Path("launcher"));
  ASSERT_TRUE(launcher.WaitForOutput("saturn: step=1 ", 120)) << launcher.Stderr();
  std::vector<pid_t> ranks = ChildPids(launcher.Pid());
  ASSERT_EQ(ranks.size(), 3u);
  kill(ranks[2], SIGKILL);
  // Well within the 600 s collective timeout: the launcher does not wait for it.
  EXPECT_EQ(launcher.Wait(60), 4);
  EXPECT_THAT(launcher.Stderr(), HasSubstr("rank 2 failed: rank 2 was killed by signal 9"));
  for (pid_t rank : ranks)
    EXPECT_NE(kill(rank, 0), 0) << "rank " << rank << " still running";
}

}  // namespace
}  // namespace saturn::testing
