// saturn-worker's command line: the protocol's flags, checked up front.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/error.h"
#include "worker/options.h"

namespace saturn::worker {
namespace {

using ::testing::HasSubstr;

WorkerOptions Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "saturn-worker");
  std::vector<const char*> argv;
  for (const std::string& arg : args)
    argv.push_back(arg.c_str());
  return ParseWorkerOptions(static_cast<int>(argv.size()), argv.data());
}

std::string ErrorOf(const std::vector<std::string>& args) {
  try {
    Parse(args);
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

TEST(WorkerOptions, SearchDefaults) {
  WorkerOptions o = Parse(kSearch);
  EXPECT_EQ(o.mode, Mode::kSearch);
  EXPECT_EQ(o.task_path, "t.json");
  EXPECT_EQ(o.technique, "fsdp");
  EXPECT_EQ(o.gpus, 4);
  EXPECT_EQ(o.device_kind, "cpu");
  EXPECT_EQ(o.threads, 1);
  EXPECT_FALSE(o.IsRank());
  EXPECT_EQ(o.DeviceId(2), 2);
  EXPECT_EQ(o.CapacityBytes(), 0);
  EXPECT_EQ(o.args.front(), "search");
}

TEST(WorkerOptions, ExecuteAndRankFlags) {
  WorkerOptions o = Parse({"execute",
                           "--task",
                           "t.json",
                           "--technique",
                           "ddp",
                           "--gpus",
                           "2",
                           "--out",
                           "r.json",
                           "--from-step",
                           "5",
                           "--to-step",
                           "9",
                           "--checkpoint-dir",
                           "ck",
                           "--knobs",
                           "{\"bucket_mb\": 1}",
                           "--device-ids",
                           "3,1",
                           "--memory-gib",
                           "0.5",
                           "--rank",
                           "1",
                           "--world-size",
                           "2",
                           "--rendezvous",
                           "/tmp/r"});
  EXPECT_EQ(o.mode, Mode::kExecute);
  EXPECT_EQ(o.from_step, 5);
  EXPECT_EQ(o.to_step, 9);
  EXPECT_EQ(o.DeviceId(0), 3);
  EXPECT_EQ(o.CapacityBytes(), int64_t{1} << 29);
  EXPECT_TRUE(o.IsRank());
  EXPECT_EQ(o.knobs, "{\"bucket_mb\": 1}");
}

TEST(WorkerOptions, RankFromSlurmEnvironment) {
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NTASKS", "4", 1);
  WorkerOptions o = Parse(With(kSearch, {"--rank-from-env", "--rendezvous", "/shared/r"}));
  EXPECT_EQ(o.rank, 2);
  EXPECT_EQ(o.world_size, 4);
  unsetenv("SLURM_PROCID");
  EXPECT_THAT(ErrorOf(With(kSearch, {"--rank-from-env"})), HasSubstr("SLURM_PROCID"));
  unsetenv("SLURM_NTASKS");
}

TEST(WorkerOptions, BadFlagsNameTheFlag) {
  EXPECT_THAT(ErrorOf({"search", "--task", "t.json"}), HasSubstr("bad arguments"));
  EXPECT_THAT(ErrorOf({"train"}), HasSubstr("bad arguments"));
  EXPECT_THAT(ErrorOf(With(kSearch, {"--threads", "0"})), HasSubstr("--threads"));
  EXPECT_THAT(ErrorOf(With(kSearch, {"--device-ids", "0,1"})),
              HasSubstr("--device-ids: expected 4 ids"));
  EXPECT_THAT(ErrorOf(With(kSearch, {"--memory-gib", "-1"})), HasSubstr("--memory-gib"));
  EXPECT_THAT(ErrorOf(With(kSearch, {"--rank", "4", "--world-size", "4", "--rendezvous", "r"})),
              HasSubstr("--rank"));
  EXPECT_THAT(ErrorOf(With(kSearch, {"--rank", "0", "--world-size", "4"})),
              HasSubstr("--rendezvous: required"));
  EXPECT_THAT(ErrorOf({"execute", "--task", "t", "--technique", "ddp", "--gpus", "1", "--out", "r",
                       "--from-step", "5", "--to-step", "4", "--checkpoint-dir", "c"}),
              HasSubstr("--to-step"));
}

}  // namespace
}  // namespace saturn::worker
