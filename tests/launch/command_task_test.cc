// Users' own programs as tasks (launch/command_task.h): filling a command
// template, the job that runs it, the step lines it prints (launch/worker.h)
// and what a profiling run of it measured.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "common/fs.h"
#include "common/process.h"
#include "launch/backend.h"
#include "launch/command_task.h"
#include "launch/worker.h"
#include "tests/testing/error_of.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

CommandCall Call() {
  CommandCall c;
  c.technique = "ddp";
  c.gpus = 2;
  c.gpu_ids = {3, 5};
  c.node = "n1";
  c.start_step = 40;
  c.steps = 100;
  c.checkpoint_dir = "/runs/a/ckpt";
  return c;
}

nlohmann::json Spec() {
  return {{"name", "mine"},
          {"type", "command"},
          {"commands", {{"ddp", "torchrun --nproc {gpus} train.py --to {steps}"}}},
          {"working_dir", "/work/project"},
          {"env", {{"DATA", "/data"}, {"SATURN_NODE", "overridden"}}}};
}

std::string LogFile(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/saturn_launch_" + name + ".log";
  WriteFileAtomic(path, text);
  return path;
}

TEST(ExpandCommand, FillsEveryPlaceholder) {
  EXPECT_EQ(
      ExpandCommand("run {gpus} {gpu_ids} {steps} {start_step} {checkpoint_dir} {node}", Call()),
      "run 2 3,5 100 40 /runs/a/ckpt n1");
}

TEST(ExpandCommand, FillsRepeatsAndLeavesOtherBracesAndTextAlone) {
  EXPECT_EQ(ExpandCommand("{gpus}x{gpus} {other} {} {gpus", Call()), "2x2 {other} {} {gpus");
  EXPECT_EQ(ExpandCommand("", Call()), "");
  EXPECT_EQ(ExpandCommand("no placeholders", Call()), "no placeholders");
}

TEST(ExpandCommand, DoesNotExpandPlaceholdersInsideFilledValues) {
  CommandCall c = Call();
  c.checkpoint_dir = "/odd/{gpus}";
  EXPECT_EQ(ExpandCommand("{checkpoint_dir}", c), "/odd/{gpus}");
}

TEST(ExpandCommand, NoDevicesGivesAnEmptyIdList) {
  CommandCall c = Call();
  c.gpu_ids.clear();
  EXPECT_EQ(ExpandCommand("[{gpu_ids}]", c), "[]");
}

TEST(CommandJob, RunsTheTechniquesTemplateUnderShInTheWorkloadsFolder) {
  WorkerJob job = CommandJob(Spec(), Call());
  EXPECT_EQ(job.argv,
            (std::vector<std::string>{
                "/bin/sh", "-c", "trap 'exit $?' TERM; torchrun --nproc 2 train.py --to 100"}));
  EXPECT_EQ(job.cwd, "/work/project");
  EXPECT_EQ(job.node, "n1");
  EXPECT_EQ(job.gpu_ids, (std::vector<int>{3, 5}));
  EXPECT_EQ(job.device_kind, "cpu");
  EXPECT_EQ(job.ranks, 1);  // the program starts its own processes
}

TEST(CommandJob, PassesThePlaceholdersAsEnvironmentAndTheTasksEnvOnTop) {
  WorkerJob job = CommandJob(Spec(), Call());
  EXPECT_EQ(job.env.at("SATURN_GPUS"), "2");
  EXPECT_EQ(job.env.at("SATURN_GPU_IDS"), "3,5");
  EXPECT_EQ(job.env.at("SATURN_STEPS"), "100");
  EXPECT_EQ(job.env.at("SATURN_START_STEP"), "40");
  EXPECT_EQ(job.env.at("SATURN_CHECKPOINT_DIR"), "/runs/a/ckpt");
  EXPECT_EQ(job.env.at("SATURN_TECHNIQUE"), "ddp");
  EXPECT_EQ(job.env.at("SATURN_SEED"), "0");
  EXPECT_EQ(job.env.at("DATA"), "/data");
  EXPECT_EQ(job.env.at("SATURN_NODE"), "overridden");  // the task's env wins
}

TEST(CommandJob, ATechniqueWithoutATemplateIsAnError) {
  CommandCall c = Call();
  c.technique = "fsdp";
  EXPECT_THAT(test::ErrorOf<std::logic_error>([&] { CommandJob(Spec(), c); }),
              HasSubstr("no command for technique \"fsdp\" (it has: "));
}

TEST(CommandJob, TheLocalBackendRunsItWithTheValuesFilledIn) {
  nlohmann::json spec = Spec();
  spec["commands"]["ddp"] = "echo \"{gpus} $SATURN_TECHNIQUE $DATA $(pwd)\"";
  spec["working_dir"] = ::testing::TempDir();
  WorkerJob job = CommandJob(spec, Call());
  job.pipe_stdout = true;
  Process p = MakeLocalBackend()->Start(job);
  std::optional<std::string> line = p.ReadLine(30);
  EXPECT_TRUE(ExitedCleanly(p.Wait()));
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line, "2 ddp /data " + std::filesystem::canonical(::testing::TempDir()).string());
}

TEST(CommandJob, PassesTheTasksSeed) {
  nlohmann::json spec = Spec();
  spec["seed"] = 7;
  EXPECT_EQ(CommandJob(spec, Call()).env.at("SATURN_SEED"), "7");
  spec["seed"] = 1099511627776;  // 2^40: a seed is any integer >= 0, not an int
  EXPECT_EQ(CommandJob(spec, Call()).env.at("SATURN_SEED"), "1099511627776");
}

// Saturn stops a program with SIGTERM to its process group: the shell waits
// for the program to checkpoint and exits with its status (a crash would lose
// the checkpoint's step), and runs nothing after it.
TEST(CommandJob, SigtermToTheGroupEndsWithTheProgramsOwnExitStatus) {
  std::string dir = ::testing::TempDir() + "/saturn_launch_sigterm";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nlohmann::json spec = Spec();
  spec["working_dir"] = dir;
  spec["commands"]["ddp"] =
      "sh -c \"trap 'echo saved > saved; exit 0' TERM; echo ready; "
      "while :; do sleep 0.05; done\"; echo after > after";
  WorkerJob job = CommandJob(spec, Call());
  job.pipe_stdout = true;
  std::unique_ptr<LaunchBackend> backend = MakeLocalBackend();
  Process p = backend->Start(job);
  std::optional<std::string> line = p.ReadLine(30);
  ASSERT_EQ(line.value_or(""), "ready");
  backend->Stop(p);
  int status = p.Wait();
  EXPECT_TRUE(ExitedCleanly(status)) << DescribeExit(status);
  EXPECT_TRUE(std::filesystem::exists(dir + "/saved"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/after"));
}

TEST(ParseStepLine, ReadsEveryField) {
  StepReport r;
  ASSERT_TRUE(ParseStepLine("saturn: step=12 loss=2.5 step_s=0.25 peak_mem_gib=3.5", &r));
  EXPECT_EQ(r.step, 12);
  EXPECT_DOUBLE_EQ(r.loss, 2.5);
  EXPECT_DOUBLE_EQ(r.step_s, 0.25);
  EXPECT_DOUBLE_EQ(r.peak_mem_gib, 3.5);
}

TEST(ParseStepLine, OnlyTheStepIsRequiredAndUnknownFieldsAreIgnored) {
  StepReport r;
  ASSERT_TRUE(ParseStepLine("saturn: lr=0.1 step=3 note", &r));
  EXPECT_EQ(r.step, 3);
  EXPECT_DOUBLE_EQ(r.loss, 0.0);
  EXPECT_DOUBLE_EQ(r.step_s, 0.0);
  EXPECT_DOUBLE_EQ(r.peak_mem_gib, -1.0);  // not reported
}

TEST(ParseStepLine, RejectsOtherLinesAndLeavesTheReportAlone) {
  StepReport r;
  r.step = 99;
  EXPECT_FALSE(ParseStepLine("epoch 1 step=3 loss=2", &r));      // no prefix
  EXPECT_FALSE(ParseStepLine(" saturn: step=3", &r));            // prefix not at the start
  EXPECT_FALSE(ParseStepLine("saturn: loss=2 step_s=0.1", &r));  // no step
  EXPECT_FALSE(ParseStepLine("saturn: step=abc", &r));           // step not a number
  EXPECT_FALSE(ParseStepLine("", &r));
  EXPECT_EQ(r.step, 99);
}

TEST(CommandSearchResult, UsesTheMedianOfTheStepsAfterWarmUp) {
  std::string log =
      LogFile("median",
              "saturn: step=0 step_s=9\nsaturn: step=1 step_s=0.3\n"
              "saturn: step=2 step_s=0.1 peak_mem_gib=2\nsaturn: step=3 step_s=0.2\n");
  WorkerSearchResult r = CommandSearchResult(log, 0, 10.0, 4, 1);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_DOUBLE_EQ(r.step_s, 0.2);
  EXPECT_EQ(r.step_samples_s, (std::vector<double>{0.3, 0.1, 0.2}));
  EXPECT_NEAR(r.launch_s, 10.0 - 9.6, 1e-9);
  ASSERT_EQ(r.peak_memory_bytes.size(), 1u);
  EXPECT_DOUBLE_EQ(r.peak_memory_bytes[0], 2.0 * (1 << 30));
}

TEST(CommandSearchResult, ASilentProgramIsTimedFromOutside) {
  std::string log = LogFile("silent", "hello\n");
  WorkerSearchResult r = CommandSearchResult(log, 0, 8.0, 4, 1);
  ASSERT_TRUE(r.feasible);
  EXPECT_DOUBLE_EQ(r.step_s, 2.0);
  EXPECT_EQ(r.knobs, (nlohmann::json{{"timed", "externally"}}));
  EXPECT_TRUE(r.peak_memory_bytes.empty());
}

TEST(CommandSearchResult, StepsWithoutTimesAfterWarmUpAreInfeasible) {
  std::string log = LogFile("untimed", "saturn: step=0 loss=1\nsaturn: step=1 loss=0.5\n");
  WorkerSearchResult r = CommandSearchResult(log, 0, 8.0, 2, 1);
  EXPECT_FALSE(r.feasible);
  EXPECT_THAT(r.reason, HasSubstr("no step_s after 1 warm-up steps"));
}

TEST(CommandSearchResult, AFailedProgramIsInfeasibleWithItsOutput) {
  std::string log = LogFile("failed", "Traceback\nValueError: bad shape\n");
  WorkerSearchResult r = CommandSearchResult(log, 3 << 8, 1.0, 4, 1);  // exit status 3
  EXPECT_FALSE(r.feasible);
  EXPECT_THAT(r.reason, StartsWith("the program failed ("));
  EXPECT_THAT(r.reason, HasSubstr("ValueError: bad shape"));
}

TEST(CommandSearchResult, ReadsTheOutputItselfAsItReadsTheLog) {
  std::istringstream out("a\nb\nc\nd\ne\nf\nsaturn: step=1e300 step_s=1\n");
  WorkerSearchResult r = CommandSearchResult(out, 3 << 8, 1.0, 4, 1);
  EXPECT_FALSE(r.feasible);
  EXPECT_THAT(r.reason, HasSubstr(": c\nd\ne\nf\nsaturn: step=1e300 step_s=1"));  // the last 5
  std::istringstream silent("saturn: step=1e300 step_s=1\n");  // not a progress line
  r = CommandSearchResult(silent, 0, 8.0, 4, 1);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.knobs, (nlohmann::json{{"timed", "externally"}}));
}

}  // namespace
}  // namespace saturn
