// saturn-worker's command line as the worker reads it (worker/options.h):
// the worker request (its flags are tests/protocol/worker_request_test.cc's)
// plus the rank of a process Slurm started.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"
#include "worker/options.h"

namespace saturn::worker {
namespace {

using ::testing::HasSubstr;

WorkerRequest Read(std::vector<std::string> args) {
  args.insert(args.begin(), "saturn-worker");
  std::vector<const char*> argv;
  for (const std::string& arg : args)
    argv.push_back(arg.c_str());
  return ReadCommandLine(static_cast<int>(argv.size()), argv.data());
}

std::string ErrorOf(const std::vector<std::string>& args) {
  try {
    Read(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const std::vector<std::string> kSearch{"search", "--task", "t.json", "--technique", "fsdp",
                                       "--gpus", "4",      "--out",  "r.json"};

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(WorkerCommandLine, IsTheRequest) {
  WorkerRequest o = Read(kSearch);
  EXPECT_EQ(o, ParseWorkerRequest(kSearch));
  EXPECT_EQ(o.mode, WorkerMode::kSearch);
  EXPECT_EQ(o.technique, "fsdp");
  EXPECT_EQ(o.gpus, 4);
  EXPECT_FALSE(o.IsRank());
  EXPECT_THAT(ErrorOf(With(kSearch, {"--threads", "0"})), HasSubstr("--threads"));
}

TEST(WorkerCommandLine, HelpPrintsTheUsageAndExitsZero) {
  EXPECT_EXIT(Read({"search", "--help"}), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(Read({"-h"}), ::testing::ExitedWithCode(0), "");
}

TEST(WorkerCommandLine, RankFromSlurmEnvironment) {
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NTASKS", "4", 1);
  WorkerRequest o = Read(With(kSearch, {"--rank-from-env", "--rendezvous", "/shared/r"}));
  EXPECT_TRUE(o.IsRank());
  EXPECT_EQ(o.rank, 2);
  EXPECT_EQ(o.world_size, 4);
  // The environment's rank is checked like one on the command line.
  setenv("SLURM_PROCID", "4", 1);
  EXPECT_THAT(ErrorOf(With(kSearch, {"--rank-from-env", "--rendezvous", "/shared/r"})),
              HasSubstr("--rank: expected 0 <= rank < --world-size"));
  unsetenv("SLURM_PROCID");
  EXPECT_THAT(ErrorOf(With(kSearch, {"--rank-from-env"})), HasSubstr("SLURM_PROCID"));
  unsetenv("SLURM_NTASKS");
}

}  // namespace
}  // namespace saturn::worker
