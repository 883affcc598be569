// The worker request (protocol/worker_request.h): what an orchestrator
// writes with ToArgv is what the worker reads with ParseWorkerRequest, for
// every mode and every field; old command lines still parse; a bad flag is
// an InputError naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "protocol/worker_request.h"
#include "tests/testing/error_of.h"

namespace saturn {
namespace {

using test::ErrorOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The flags an argument list names.
std::set<std::string> FlagsIn(const std::vector<std::string>& args) {
  std::set<std::string> out;
  for (const std::string& a : args) {
    if (a.rfind("--", 0) == 0) out.insert(a);
  }
  return out;
}

// Every field of search and execute set away from its default.
WorkerRequest Common(WorkerMode mode) {
  WorkerRequest r;
  r.mode = mode;
  r.plugins = {"/opt/a.so", "/opt/b c.so"};
  r.task_path = "/runs/t 1/task.json";
  r.technique = "tp-ddp";
  r.gpus = 3;
  r.out_path = "/runs/t/result.json";
  r.device_kind = "cuda";
  r.device_ids = {4, 0, 7};
  r.memory_gib = 0.1;  // no exact binary value: the text must keep every digit
  r.threads = 6;
  r.timeout_s = 42.125;
  r.rank = 1;
  r.world_size = 3;
  r.rendezvous = "/shared/rdzv-1";
  r.rank_from_env = true;
  return r;
}

const std::set<std::string> kCommonFlags = {
    "--plugin",      "--task",       "--technique",  "--gpus",         "--out",
    "--device-kind", "--device-ids", "--memory-gib", "--threads",      "--timeout-s",
    "--rank",        "--world-size", "--rendezvous", "--rank-from-env"};

std::set<std::string> With(std::set<std::string> flags, const std::set<std::string>& more) {
  flags.insert(more.begin(), more.end());
  return flags;
}

TEST(WorkerRequest, SearchRoundTripsWithEveryField) {
  WorkerRequest r = Common(WorkerMode::kSearch);
  r.warmup = 0;
  r.measure = 3;
  r.pack_sizes = {2, 16, 128};
  std::vector<std::string> args = ToArgv(r);
  EXPECT_EQ(args.front(), "search");
  // Every flag of search is written: every field is away from its default.
  EXPECT_EQ(FlagsIn(args), With(kCommonFlags, {"--warmup", "--measure", "--pack-sizes"}));
  WorkerRequest back = ParseWorkerRequest(args);
  EXPECT_EQ(back, r);
  EXPECT_EQ(back.memory_gib, 0.1);
  EXPECT_THAT(back.plugins, ElementsAre("/opt/a.so", "/opt/b c.so"));
}

TEST(WorkerRequest, ExecuteRoundTripsWithEveryField) {
  WorkerRequest r = Common(WorkerMode::kExecute);
  r.from_step = 5'000'000'000;  // past 32 bits
  r.to_step = 5'000'000'400;
  r.checkpoint_dir = "/runs/t/checkpoints";
  r.knobs = R"({"bucket_mb": 1, "checkpointing": true})";
  r.checkpoint_every = 40;
  r.keep_checkpoints = 2;
  r.save_model = "/runs/t/model.pt";
  std::vector<std::string> args = ToArgv(r);
  EXPECT_EQ(args.front(), "execute");
  EXPECT_EQ(FlagsIn(args),
            With(kCommonFlags, {"--from-step", "--to-step", "--checkpoint-dir", "--knobs",
                                "--checkpoint-every", "--keep-checkpoints", "--save-model"}));
  EXPECT_EQ(ParseWorkerRequest(args), r);
}

TEST(WorkerRequest, TechniquesRoundTripsWithEveryField) {
  WorkerRequest r;
  r.mode = WorkerMode::kTechniques;
  r.plugins = {"/opt/a.so", "/opt/b.so"};
  std::vector<std::string> args = ToArgv(r);
  EXPECT_THAT(args, ElementsAre("techniques", "--plugin", "/opt/a.so", "--plugin", "/opt/b.so"));
  EXPECT_EQ(ParseWorkerRequest(args), r);
  r.plugins.clear();
  EXPECT_THAT(ToArgv(r), ElementsAre("techniques"));
  EXPECT_EQ(ParseWorkerRequest(ToArgv(r)), r);
}

TEST(WorkerRequest, DefaultsAreWrittenOnceAndLeftOffTheCommandLine) {
  WorkerRequest r;
  r.task_path = "t.json";
  r.technique = "single";
  r.out_path = "r.json";
  // The required flags only: the worker's defaults are the request's.
  EXPECT_THAT(ToArgv(r), ElementsAre("search", "--task", "t.json", "--technique", "single",
                                     "--gpus", "1", "--out", "r.json"));
  WorkerRequest back = ParseWorkerRequest(ToArgv(r));
  EXPECT_EQ(back, r);
  EXPECT_EQ(back.warmup, kDefaultWarmupSteps);
  EXPECT_EQ(back.measure, kDefaultMeasureSteps);
  EXPECT_EQ(back.timeout_s, kDefaultWorkerTimeoutS);
  EXPECT_EQ(back.device_kind, "cpu");
  EXPECT_FALSE(back.IsRank());
  EXPECT_EQ(back.DeviceId(2), 2);
  EXPECT_EQ(back.CapacityBytes(), 0);
}

TEST(WorkerRequest, AModeWritesItsOwnFlagsOnly) {
  // A command task's trial carries steps in a search request (launch/command_task.h):
  // the worker never sees them.
  WorkerRequest r = Common(WorkerMode::kSearch);
  r.to_step = 12;
  r.checkpoint_dir = "/tmp/ck";
  std::vector<std::string> args = ToArgv(r);
  EXPECT_EQ(FlagsIn(args).count("--to-step"), 0u);
  EXPECT_EQ(FlagsIn(args).count("--checkpoint-dir"), 0u);
  WorkerRequest back = ParseWorkerRequest(args);
  EXPECT_EQ(back.to_step, 0);
  EXPECT_TRUE(back.checkpoint_dir.empty());
}

TEST(WorkerRequest, OldCommandLinesStillParse) {
  // What WorkerArgv wrote before the request (always --device-kind,
  // --threads and --timeout-s, std::to_string's six decimals).
  WorkerRequest r = ParseWorkerRequest(std::vector<std::string>{"execute",
                                                                "--task",
                                                                "t.json",
                                                                "--technique",
                                                                "ddp",
                                                                "--gpus",
                                                                "2",
                                                                "--out",
                                                                "r.json",
                                                                "--device-kind",
                                                                "cpu",
                                                                "--threads",
                                                                "1",
                                                                "--timeout-s",
                                                                "120.000000",
                                                                "--device-ids",
                                                                "3,1",
                                                                "--memory-gib",
                                                                "0.5",
                                                                "--rank-from-env",
                                                                "--rendezvous",
                                                                "/shared/r",
                                                                "--from-step",
                                                                "5",
                                                                "--to-step",
                                                                "9",
                                                                "--checkpoint-dir",
                                                                "ck",
                                                                "--knobs",
                                                                "{\"bucket_mb\": 1}",
                                                                "--checkpoint-every",
                                                                "2",
                                                                "--keep-checkpoints",
                                                                "2",
                                                                "--save-model",
                                                                "m.pt"});
  EXPECT_EQ(r.mode, WorkerMode::kExecute);
  EXPECT_EQ(r.timeout_s, 120.0);
  EXPECT_EQ(r.DeviceId(0), 3);
  EXPECT_EQ(r.CapacityBytes(), int64_t{1} << 29);
  EXPECT_TRUE(r.rank_from_env);
  EXPECT_EQ(r.from_step, 5);
  EXPECT_EQ(r.to_step, 9);
  EXPECT_EQ(r.knobs, "{\"bucket_mb\": 1}");
  EXPECT_EQ(r.checkpoint_every, 2);
  EXPECT_EQ(r.keep_checkpoints, 2);
  EXPECT_EQ(r.save_model, "m.pt");
  // A rank the worker's launcher started, flags in any order, --flag=value.
  r = ParseWorkerRequest(std::vector<std::string>{
      "search", "--gpus=2", "--out", "r.json", "--technique", "fsdp", "--task", "t.json",
      "--warmup", "1", "--measure=2", "--plugin", "p.so", "--rank", "1", "--world-size", "2",
      "--rendezvous", "/tmp/r"});
  EXPECT_EQ(r.gpus, 2);
  EXPECT_EQ(r.measure, 2);
  EXPECT_TRUE(r.IsRank());
  EXPECT_EQ(r.rank, 1);
  EXPECT_THAT(r.plugins, ElementsAre("p.so"));
  // argc/argv as main has them.
  const char* argv[] = {"saturn-worker", "techniques", "--plugin", "x.so"};
  EXPECT_THAT(ParseWorkerRequest(4, argv).plugins, ElementsAre("x.so"));
}

std::vector<std::string> Search(std::vector<std::string> more) {
  std::vector<std::string> args = {"search", "--task", "t.json", "--technique", "fsdp",
                                   "--gpus", "4",      "--out",  "r.json"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string Error(const std::vector<std::string>& args) {
  return ErrorOf([&] { ParseWorkerRequest(args); });
}

TEST(WorkerRequest, ABadFlagIsAnInputErrorNamingIt) {
  EXPECT_EQ(Error(Search({"--bogus", "1"})), "--bogus: unknown flag for search");
  EXPECT_EQ(Error(Search({"--gpu", "1"})),
            "--gpu: unknown flag for search; did you mean '--gpus'?");
  EXPECT_EQ(Error(Search({"--from-step", "1"})),
            "--from-step: not a flag of search (only of execute)");
  EXPECT_EQ(Error({"techniques", "--task", "t.json"}),
            "--task: not a flag of techniques (only of search and execute)");
  EXPECT_EQ(Error(Search({"--threads", "two"})), "--threads: expected an integer, got 'two'");
  EXPECT_EQ(Error(Search({"--memory-gib", "1.5GiB"})),
            "--memory-gib: expected a number, got '1.5GiB'");
  EXPECT_EQ(Error(Search({"--device-ids", "0,x,2,3"})),
            "--device-ids: expected a comma-separated list of integers, got 'x'");
  EXPECT_EQ(Error(Search({"--threads"})), "--threads: expected a value (T)");
  EXPECT_EQ(Error(Search({"--rank-from-env=yes"})), "--rank-from-env: takes no value, got 'yes'");
  EXPECT_EQ(Error(Search({"--gpus", "2"})), "--gpus: given more than once");
  EXPECT_EQ(Error({"search", "--task", "t.json"}), "--technique: required for search");
  EXPECT_EQ(Error({"execute", "--task", "t", "--technique", "ddp", "--gpus", "1", "--out", "r"}),
            "--from-step: required for execute");
  EXPECT_EQ(Error(Search({"extra"})), "extra: unexpected argument for search");
  EXPECT_EQ(
      Error({"serach"}),
      "unknown mode 'serach'; expected search, execute or techniques; did you mean 'search'?");
  EXPECT_EQ(Error({}), "no mode given; expected search, execute or techniques");
}

TEST(WorkerRequest, InconsistentFlagsNameTheFlag) {
  EXPECT_THAT(Error(Search({"--threads", "0"})), HasSubstr("--threads: expected an integer >= 1"));
  EXPECT_EQ(Error(Search({"--device-ids", "0,1"})), "--device-ids: expected 4 ids, one per device");
  EXPECT_THAT(Error(Search({"--memory-gib", "-1"})), HasSubstr("--memory-gib"));
  EXPECT_THAT(Error(Search({"--timeout-s", "0"})), HasSubstr("--timeout-s: expected seconds > 0"));
  EXPECT_THAT(Error(Search({"--device-kind", "tpu"})),
              HasSubstr("--device-kind: expected cpu or cuda, got 'tpu'"));
  EXPECT_THAT(Error(Search({"--rank", "4", "--world-size", "4", "--rendezvous", "r"})),
              HasSubstr("--rank: expected 0 <= rank < --world-size"));
  EXPECT_THAT(Error(Search({"--rank", "0", "--world-size", "4"})),
              HasSubstr("--rendezvous: required with --rank"));
  EXPECT_THAT(Error(Search({"--measure", "0"})), HasSubstr("--measure: expected an integer >= 1"));
  EXPECT_THAT(Error(Search({"--pack-sizes", "16,2"})),
              HasSubstr("--pack-sizes: expected ascending sizes from 1 to 65536"));
  EXPECT_THAT(Error(Search({"--pack-sizes", "0,2"})),
              HasSubstr("--pack-sizes: expected ascending sizes from 1 to 65536"));
  EXPECT_THAT(Error(Search({"--pack-sizes", "2,65537"})),
              HasSubstr("--pack-sizes: expected ascending sizes from 1 to 65536"));
  EXPECT_THAT(Error({"execute", "--task", "t", "--technique", "ddp", "--gpus", "1", "--out", "r",
                     "--from-step", "5", "--to-step", "4", "--checkpoint-dir", "c"}),
              HasSubstr("--to-step: expected >= --from-step"));
}

TEST(WorkerRequest, UsageListsEveryModesFlags) {
  std::string usage = WorkerUsage();
  EXPECT_THAT(usage, HasSubstr("\nsearch:\n"));
  EXPECT_THAT(usage, HasSubstr("  --warmup N"));
  // The defaults shown are the request's.
  EXPECT_THAT(usage, HasSubstr("collective and rendezvous timeout (default: 300)"));
  EXPECT_THAT(usage,
              HasSubstr("steps measured (default: " + std::to_string(kDefaultMeasureSteps) + ")"));
  EXPECT_THAT(usage, HasSubstr("this rank (set by the launcher)\n"));
  EXPECT_THAT(usage, HasSubstr("  --checkpoint-dir DIR"));
  EXPECT_THAT(usage, HasSubstr("\ntechniques:\n  --plugin LIB.so"));
}

}  // namespace
}  // namespace saturn
