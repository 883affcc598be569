// The profiler against a fake worker (tests/testing/fake_worker.sh) that
// speaks the protocol without training: trial sharing, the cache, and crashes
// and hangs. Real trials on the engine are in tests/e2e.
#include "profiler/profiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/fs.h"
#include "launch/command_task.h"
#include "profiler/cache.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

class Profiler : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_profiler_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    WriteFileAtomic(dir_ + "/corpus.txt", std::string(5000, 'x'));
    setenv("FAKE_WORKER_LOG", (dir_ + "/calls.log").c_str(), 1);
    setenv("FAKE_WORKER_RULES", (dir_ + "/rules.txt").c_str(), 1);
    options_.worker = SATURN_SOURCE_DIR "/tests/testing/fake_worker.sh";
    options_.cache_path = dir_ + "/cache.sqlite";
    options_.work_dir = dir_ + "/trials";
    options_.progress = false;
  }

  Workload Load(const std::string& tasks, int gpus = 4) {
    std::string text = "cluster: {nodes: [{name: n0, gpus: " + std::to_string(gpus) +
                       ", gpu_memory_gib: 1}]}\ntasks:\n" + tasks;
    return ParseWorkload(text, dir_ + "/workload.yaml", dir_);
  }

  int Calls() {
    std::ifstream in(dir_ + "/calls.log");
    int n = 0;
    std::string line;
    while (std::getline(in, line))
      ++n;
    return n;
  }

  void Rules(const std::string& text) { WriteFileAtomic(dir_ + "/rules.txt", text); }

  std::string dir_;
  ProfilerOptions options_;
};

const char* kGptGrid =
    "  - name: gpt\n"
    "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
    "    data: {type: text, path: corpus.txt}\n"
    "    batch_size: 8\n"
    "    optimizer: {type: adamw, lr: 1.0e-4}\n"
    "    steps: 100\n"
    "    sweep: {optimizer.lr: [1.0e-5, 1.0e-4, 3.0e-3]}\n";

TEST_F(Profiler, LearningRateVariantsShareTrials) {
  Workload w = Load(kGptGrid);
  ASSERT_EQ(w.tasks.size(), 3u);
  ProfileRun run = RunProfiler(w, options_);
  // single x1, spill x1, and ddp/fsdp/pipeline at 2..4 GPUs: 11 trials for all three tasks.
  EXPECT_EQ(run.trials.size(), 11u);
  EXPECT_EQ(run.trials_run, 11);
  EXPECT_EQ(Calls(), 11);
  EXPECT_EQ(run.table.rows.size(), 33u);
  const ProfileRow* row = run.table.Find("gpt-lr1.0e-5", "fsdp", 4);
  ASSERT_NE(row, nullptr);
  EXPECT_DOUBLE_EQ(row->runtime_s, 0.25 * 100);  // step time x steps
  EXPECT_EQ(run.table.Extra(*row, "knobs"), "{\"fake\":true}");
}

TEST_F(Profiler, SecondRunHitsTheCacheAndABatchChangeMissesIt) {
  RunProfiler(Load(kGptGrid), options_);
  ProfileRun again = RunProfiler(Load(kGptGrid), options_);
  EXPECT_EQ(again.trials_run, 0);
  EXPECT_EQ(again.cache_hits, 11);
  EXPECT_EQ(Calls(), 11);
  std::string bigger = kGptGrid;
  bigger.replace(bigger.find("batch_size: 8"), 13, "batch_size: 16");
  ProfileRun changed = RunProfiler(Load(bigger), options_);
  EXPECT_EQ(changed.trials_run, 11);
  options_.refresh = true;
  ProfileRun refreshed = RunProfiler(Load(kGptGrid), options_);
  EXPECT_EQ(refreshed.trials_run, 11);
}

TEST_F(Profiler, ChangingOnlyStepsOrEpochsReusesTheCachedTrials) {
  RunProfiler(Load(kGptGrid), options_);
  std::string longer = kGptGrid;
  longer.replace(longer.find("steps: 100"), 10, "steps: 300");
  ProfileRun again = RunProfiler(Load(longer), options_);
  EXPECT_EQ(again.trials_run, 0);
  EXPECT_EQ(again.cache_hits, 11);
  // The runtime follows the new step count.
  const ProfileRow* row = again.table.Find("gpt-lr1.0e-5", "fsdp", 4);
  ASSERT_NE(row, nullptr);
  EXPECT_DOUBLE_EQ(row->runtime_s, 0.25 * 300);
  std::string epochs = kGptGrid;
  epochs.replace(epochs.find("steps: 100"), 10, "epochs: 2");
  ProfileRun by_epochs = RunProfiler(Load(epochs), options_);
  EXPECT_EQ(by_epochs.trials_run, 0);
  EXPECT_EQ(Calls(), 11);
}

TEST_F(Profiler, CrashesHangsAndOutOfMemoryAreIsolatedAndReported) {
  Rules(
      "ddp 2 crash\nfsdp 3 hang\npipeline 4 oom\nsingle 1 infeasible out of memory: rank 0 needs "
      "3.0 GiB of 1.0 GiB\n");
  options_.trial_timeout_s = 2;
  ProfileRun run = RunProfiler(Load(kGptGrid), options_);
  EXPECT_EQ(run.trials_run, 11);
  EXPECT_EQ(Calls(), 11 + 1);  // the crash is run again
  std::string summary = ProfileSummary(Load(kGptGrid), run);
  EXPECT_THAT(summary,
              HasSubstr("ddp x2: worker failed (exit 1): fake worker: segmentation fault"));
  EXPECT_THAT(summary, HasSubstr("fsdp x3: timed out after 2.0s"));
  EXPECT_THAT(summary, HasSubstr("pipeline x4: out of memory (exit 3)"));
  EXPECT_THAT(summary, HasSubstr("single x1: out of memory: rank 0 needs 3.0 GiB"));
  EXPECT_EQ(run.table.Find("gpt-lr1.0e-4", "ddp", 2), nullptr);
  EXPECT_NE(run.table.Find("gpt-lr1.0e-4", "ddp", 3), nullptr);
  // Crashes and timeouts are retried next time; definite answers are cached.
  ProfileRun again = RunProfiler(Load(kGptGrid), options_);
  EXPECT_EQ(again.trials_run, 2);
}

// A trial whose worker crashed or was killed once (a fault, not the
// configuration) is run again; before, its configuration was dropped, and a
// task with no other one failed the whole run.
TEST_F(Profiler, ATrialThatCrashedOnceIsRunAgain) {
  Rules("single 1 crash_once " + dir_ + "/crashed\n");
  std::string only_single = std::string(kGptGrid) + "    techniques: [single]\n";
  ProfileRun run = RunProfiler(Load(only_single), options_);
  EXPECT_TRUE(fs::exists(dir_ + "/crashed"));
  EXPECT_NE(run.table.Find("gpt-lr1.0e-4", "single", 1), nullptr);
  EXPECT_EQ(run.trials_run, 1);
  EXPECT_EQ(Calls(), 2);  // the crash, then the trial again
}

TEST_F(Profiler, ATaskWithNoFeasibleConfigurationIsAnError) {
  Rules("single 1 infeasible too big\nspill 1 infeasible too big\n");
  std::string only_one_gpu = std::string(kGptGrid) + "    gpu_range: [1, 1]\n";
  try {
    RunProfiler(Load(only_one_gpu), options_);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot run on this cluster"));
    EXPECT_THAT(e.what(), HasSubstr("spill x1: too big"));
  }
}

TEST_F(Profiler, TechniquesAndGpuRangeRestrictTrials) {
  std::string restricted =
      std::string(kGptGrid) + "    techniques: [fsdp]\n    gpu_range: [3, 8]\n";
  ProfileRun run = RunProfiler(Load(restricted), options_);
  EXPECT_EQ(run.trials.size(), 2u);  // fsdp x3, x4 (the node has 4)
}

// The summary's technique per GPU count is the one with the shortest
// runtime as the planner sees it, not the shortest step: here fsdp's steps
// are faster but its checkpoints cost more than the steps save.
TEST_F(Profiler, TheSummaryNamesTheFastestRuntimeNotTheFastestStep) {
  Workload w = Load(kGptGrid);
  ProfileRun run;
  run.checkpoint_every = 10;  // 11 checkpoint writes in the 100 steps
  auto trial = [](const char* technique, double step_s, double checkpoint_s) {
    Trial t;
    t.technique = technique;
    t.gpus = 2;
    t.example_task = "gpt";
    t.result.feasible = true;
    t.result.step_s = step_s;
    t.result.checkpoint_s = checkpoint_s;
    return t;
  };
  run.trials = {trial("fsdp", 0.9, 5.0), trial("ddp", 1.0, 0.1)};  // 145 s against 101 s
  run.task_trials.assign(w.tasks.size(), {0, 1});
  std::string summary = ProfileSummary(w, run);
  EXPECT_THAT(summary, HasSubstr("2 GPUs: fastest ddp 1m41s"));
  EXPECT_THAT(summary, Not(HasSubstr("fastest fsdp")));
}

// A gpu_range above every node is clipped with a note (once, for a sweep's
// three tasks), not silently.
TEST_F(Profiler, AGpuRangeAboveEveryNodeIsClippedWithANote) {
  options_.progress = true;
  ::testing::internal::CaptureStderr();
  ProfileRun run = RunProfiler(Load(std::string(kGptGrid) + "    gpu_range: [3, 8]\n"), options_);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err,
              HasSubstr("saturn: note: gpu_range of task 'gpt-lr1.0e-5' (and 2 others) goes up "
                        "to 8 GPUs, but a task runs on one node and the largest has 4: "
                        "profiled up to 4"));
  for (const Trial& t : run.trials)
    EXPECT_LE(t.gpus, 4);
  for (const char* within : {"    gpu_range: [1, 4]\n", ""}) {  // no note, none without a range
    ::testing::internal::CaptureStderr();
    RunProfiler(Load(std::string(kGptGrid) + within), options_);
    EXPECT_THAT(::testing::internal::GetCapturedStderr(), Not(HasSubstr("note:"))) << within;
  }
}

// Every read of this clock moves it a second on: a trial's age grows by
// polls, not by waiting.
class TickingClock final : public Clock {
 public:
  double Now() const override { return now_ += 1.0; }

 private:
  mutable double now_ = 0.0;
};

TEST_F(Profiler, TrialAgesAndWallTimeAreReadOnTheInjectedClock) {
  Rules("fsdp 3 hang\n");
  TickingClock clock;
  options_.clock = &clock;
  options_.trial_timeout_s = 5;  // five polls, not five seconds
  std::string one_trial = std::string(kGptGrid) + "    techniques: [fsdp]\n    gpu_range: [3, 3]\n";
  try {
    RunProfiler(Load(one_trial), options_);
    FAIL() << "a hanging only trial leaves the task without a configuration";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("fsdp x3: timed out after 5.0s"));
  }
  EXPECT_GT(clock.Now(), 6.0);
}

TEST_F(Profiler, ForeignOrCorruptCacheIsReportedNotTrusted) {
  WriteFileAtomic(options_.cache_path, "this is not a database at all, just text............");
  try {
    RunProfiler(Load(kGptGrid), options_);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not a Saturn profile cache"));
  }
  fs::remove(options_.cache_path);
  {
    ProfileCache cache = ProfileCache::Open(options_.cache_path);
    cache.Put("k", {{"x", 1}});
    EXPECT_EQ((*cache.Get("k"))["x"], 1);
    EXPECT_EQ(cache.Size(), 1);
  }
  // Its own cache opens again, with what was put in it.
  ProfileCache reopened = ProfileCache::Open(options_.cache_path);
  EXPECT_EQ(reopened.Size(), 1);
  EXPECT_EQ((*reopened.Get("k"))["x"], 1);
}

TEST(StepEstimate, MeanOfTheStepsWithoutGrossOutliers) {
  // A run pays for its ordinary slow steps: the mean, not the median.
  EXPECT_DOUBLE_EQ(StepEstimate({4, 5, 6, 9}, 1), 6.0);
  // A one-off stall (over 3x the median) is left out.
  EXPECT_DOUBLE_EQ(StepEstimate({5, 5, 5, 5, 100}, 1), 5.0);
  // Nothing measured: the worker's own figure.
  EXPECT_DOUBLE_EQ(StepEstimate({}, 0.25), 0.25);
  EXPECT_DOUBLE_EQ(StepEstimate({0.0, -1.0}, 0.25), 0.25);
}

TEST(RuntimeEstimate, StepsTimesStepTimePlusWhatTheFirstStepsCostExtra) {
  WorkerSearchResult r;
  r.step_s = 0.5;
  r.warmup_step_s = {3.0, 0.7};  // first step 2.5 s slower, second 0.2 s
  EXPECT_DOUBLE_EQ(StartCost(r), 2.7);
  EXPECT_DOUBLE_EQ(RuntimeEstimate(r, 100, 0), 52.7);
  r.warmup_step_s = {0.4, 0.4};  // faster warm-up never lowers the estimate
  EXPECT_DOUBLE_EQ(RuntimeEstimate(r, 100, 0), 50.0);
}

TEST(RuntimeEstimate, EvaluationIsPlannedAsItsShareOfEveryStep) {
  WorkerSearchResult r;
  r.step_s = 0.5;
  r.eval_s = 2.0;  // one evaluation, the checkpoint it reads included
  EXPECT_DOUBLE_EQ(StepWithEvaluation(r, 10), 0.7);
  EXPECT_DOUBLE_EQ(StepWithEvaluation(r, 0), 0.5);  // a task that does not evaluate
  Workload w = ParseWorkload(
      "cluster: {nodes: [{name: n0, gpus: 1}]}\ntasks:\n"
      "  - name: a\n    model: {type: mlp, layers: 1, width: 8}\n    data: {type: synthetic}\n"
      "    batch_size: 4\n    optimizer: {type: sgd, lr: 0.1}\n    steps: 100\n"
      "    eval: {every: 25, batches: 2}\n",
      "w.yaml", ".");
  EXPECT_EQ(EvalEvery(w.tasks[0]), 25);
  r.step_s = StepWithEvaluation(r, EvalEvery(w.tasks[0]));
  EXPECT_DOUBLE_EQ(RuntimeEstimate(r, 100, 100), 100 * (0.5 + 2.0 / 25) + r.checkpoint_s * 2);
}

TEST(RuntimeEstimate, AddsTheLaunchAndEveryCheckpointTheRunWrites) {
  WorkerSearchResult r;
  r.step_s = 0.5;
  r.launch_s = 1.5;
  r.checkpoint_s = 0.1;
  // Every 10 steps by default: 9 periodic, the last one, the trained model.
  EXPECT_EQ(CheckpointWrites(100, 0), 11);
  EXPECT_NEAR(RuntimeEstimate(r, 100, 0), 50 + 1.5 + 1.1, 1e-12);
  EXPECT_EQ(CheckpointWrites(100, 30), 5);  // 30, 60, 90, 100, model
  EXPECT_EQ(CheckpointWrites(100, 100), 2);
  EXPECT_NEAR(RuntimeEstimate(r, 100, 100), 50 + 1.5 + 0.2, 1e-12);
}

TEST(LaunchCost, OfAUsersProgramIsItsWallTimeBeyondTheStepsItReported) {
  std::string log = ::testing::TempDir() + "/saturn_command_trial.log";
  WriteFileAtomic(log,
                  "loading\nsaturn: step=0 loss=3 step_s=0.5\nsaturn: step=1 loss=2 step_s=0.2\n"
                  "saturn: step=2 loss=1 step_s=0.2\n");
  WorkerSearchResult r = CommandSearchResult(log, 0, 2.0, 3, 1);
  ASSERT_TRUE(r.feasible);
  EXPECT_DOUBLE_EQ(r.step_s, 0.2);
  EXPECT_NEAR(r.launch_s, 2.0 - 0.9, 1e-9);
}

TEST(LaunchCost, StartingUpBuildingTheTrainerAndShuttingDown) {
  WorkerSearchResult r;
  r.ready_unix_s = 1000.8;
  r.setup_s = 0.2;
  SetLaunchCost(r, 1000.0, 1005.0);
  EXPECT_NEAR(r.launch_s, 1.0, 1e-9);
  r.done_unix_s = 1004.7;  // and shutting down after its result: 0.3 s
  SetLaunchCost(r, 1000.0, 1005.0);
  EXPECT_NEAR(r.launch_s, 1.3, 1e-9);
  SetLaunchCost(r, 1001.0, 1004.0);  // clocks out of step: never negative
  EXPECT_NEAR(r.launch_s, 0.2, 1e-9);
  WorkerSearchResult old;  // a worker that does not report when it was ready
  SetLaunchCost(old, 1000.0, 1005.0);
  EXPECT_EQ(old.launch_s, 0.0);
}

}  // namespace
}  // namespace saturn
