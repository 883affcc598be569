// The profiler against a fake worker (tests/testing/fake_worker.sh) that
// speaks the protocol without training: trial sharing, the cache, and crashes
// and hangs. Real trials on the engine are in tests/e2e.
#include "profiler/profiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/error.h"
#include "common/fs.h"
#include "launch/command_task.h"
#include "profiler/cache.h"
#include "profiler/table.h"
#include "profiler/type_contradictions.h"

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

// The lines of an error after its first: each configuration's reason.
std::vector<std::string> DetailLines(const std::string& message) {
  std::vector<std::string> lines;
  std::istringstream in(message);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line))
    lines.push_back(line);
  return lines;
}

// Every out-of-memory reason in the one wording, "needs X per device, has
// Y", but a worker that exited out of memory without saying how much.
void ExpectOneWording(const std::vector<std::string>& lines) {
  const std::regex wording(
      "^  [a-z-]+ x[0-9]+: out of memory.*needs (more than )?[0-9.]+ [KMG]iB per device, "
      "has [0-9.]+ [KMG]iB");
  int checked = 0;
  for (const std::string& line : lines) {
    if (line.find("out of memory") == std::string::npos) continue;
    if (line.find("out of memory (exit") != std::string::npos &&
        line.find("needs") == std::string::npos)
      continue;
    EXPECT_TRUE(std::regex_search(line, wording)) << line;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// A task too big for every configuration: the first line says what its
// closest configuration needs per device against what the devices have and
// what would make it fit; each configuration's reason follows on a line of
// its own, out-of-memory ones in one wording (an allocation past the hard
// limit does not know the capacity: the profiler adds it).
TEST_F(Profiler, ATaskTooBigSaysOnItsFirstLineWhatWouldFit) {
  Rules(
      "single 1 infeasible out of memory: needs 1.50 GiB per device, has 1.00 GiB (parameters, "
      "gradients and optimizer state alone)\n"
      "spill 1 infeasible out of memory: needs more than 2.06 GiB per device (allocating 64.0 MiB "
      "with 2.00 GiB in use passed the hard limit)\n"
      "ddp 2 infeasible out of memory: needs 1.25 GiB per device, has 1.00 GiB (rank 1's peak)\n"
      "fsdp 2 oom\npipeline 2 infeasible out of memory: needs 1.10 GiB per device, has 1.00 "
      "GiB (rank 0's peak)\n");
  Workload w = Load(kGptGrid, 2);
  std::string message;
  try {
    RunProfiler(w, options_);
    FAIL();
  } catch (const InputError& e) {
    message = e.what();
  }
  std::string first = message.substr(0, message.find('\n'));
  EXPECT_THAT(first, HasSubstr("task 'gpt-lr1.0e-5': does not fit in memory: its closest fit, "
                               "pipeline x2, needs 1.10 GiB per device and its devices have "
                               "1.00 GiB; to make it fit, try LoRA (finetune: {lora: {rank: "
                               "8}}), precision: bf16 or more or larger devices "
                               "(activation checkpointing was tried)"));
  std::vector<std::string> details = DetailLines(message);
  ASSERT_EQ(details.size(), 5u) << message;
  ExpectOneWording(details);
  EXPECT_THAT(message, HasSubstr("\n  spill x1: out of memory: needs more than 2.06 GiB per "
                                 "device, has 1.00 GiB (allocating 64.0 MiB"));
  EXPECT_THAT(message, HasSubstr("\n  fsdp x2: out of memory (exit 3)"));
  // The summary says the reasons the same way.
  ProfileRun run;
  run.trials.resize(1);
  run.trials[0].technique = "spill";
  run.trials[0].memory_gib = 1;
  run.trials[0].result.reason =
      "out of memory: needs more than 2.06 GiB per device (allocating 64.0 MiB with 2.00 GiB in "
      "use passed the hard limit)";
  run.task_trials.assign(w.tasks.size(), {0});
  EXPECT_THAT(ProfileSummary(w, run),
              HasSubstr("infeasible spill x1: out of memory: needs more than 2.06 GiB per device, "
                        "has 1.00 GiB (allocating"));
}

// What would make it fit is only what the task does not do already, and
// checkpointing is not offered where the model's states alone do not fit.
TEST_F(Profiler, ATooBigTaskIsOfferedOnlyTheRemediesThatApply) {
  std::string task = std::string(kGptGrid) +
                     "    precision: bf16\n    techniques: [single]\n    gpu_range: [1, 1]\n";
  Workload w = Load(task, 2);
  w.tasks[0].spec["finetune"] = {{"lora", {{"rank", 8}}}};
  ProfileRun run;
  run.trials.resize(1);
  run.trials[0].technique = "single";
  run.trials[0].result.reason =
      "out of memory: needs 1.50 GiB per device, has 1.00 GiB (parameters, gradients and "
      "optimizer state alone)";
  run.task_trials.assign(w.tasks.size(), {0});
  try {
    BuildTable(
        w, options_, [](const WorkloadTask&, const std::string&) { return 0; }, run);
    FAIL();
  } catch (const InputError& e) {
    std::string message = e.what();
    std::string first = message.substr(0, message.find('\n'));
    EXPECT_THAT(first,
                HasSubstr("its closest fit, single x1, needs 1.50 GiB per device and its devices "
                          "have 1.00 GiB; to make it fit, try more techniques than single, a wider "
                          "gpu_range than [1, 1] or more or larger devices (parameters, "
                          "gradients and optimizer state alone do not fit: activation "
                          "checkpointing cannot help)"));
    EXPECT_THAT(first, Not(HasSubstr("LoRA")));
    EXPECT_THAT(first, Not(HasSubstr("bf16")));
    EXPECT_EQ(DetailLines(message).size(), 1u);
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

// The case: on a device with no declared memory an MLP measured
// spill 0.747 s and single 0.758 s per step, and the plan took spill. Within
// the trials' own spread the simpler configuration stays and the other is
// left out of the table (so no planner can pick it), and the summary says so.
TEST_F(Profiler, AConfigurationFasterOnlyWithinNoiseGivesWayToTheSimplerOne) {
  Rules(
      "single 1 samples 0.70,0.80,0.74,0.78,0.76,0.79,0.72,0.77,0.75,0.77\n"    // 0.758
      "spill 1 samples 0.69,0.79,0.73,0.77,0.75,0.78,0.71,0.76,0.74,0.75\n"     // 0.747
      "ddp 2 samples 0.70,0.79,0.73,0.77,0.75,0.78,0.71,0.76,0.74,0.77\n"       // 0.750
      "fsdp 2 ok 0.3\n"                                                         // one sample
      "pipeline 2 samples 0.28,0.31,0.28,0.31,0.28,0.31,0.28,0.31,0.29,0.30\n"  // 0.295
  );
  const std::string mlp =
      "  - name: mlp\n    model: {type: mlp, layers: 3, width: 64}\n    data: {type: synthetic}\n"
      "    batch_size: 8\n    optimizer: {type: sgd, lr: 0.1}\n    steps: 100\n";
  Workload w = ParseWorkload("cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n" + mlp,
                             dir_ + "/workload.yaml", dir_);
  ProfileRun run = RunProfiler(w, options_);
  ASSERT_EQ(run.trials.size(), 5u);
  EXPECT_NE(run.table.Find("mlp", "single", 1), nullptr);
  EXPECT_EQ(run.table.Find("mlp", "spill", 1), nullptr);     // 1.5% faster: noise
  EXPECT_EQ(run.table.Find("mlp", "ddp", 2), nullptr);       // 2 GPUs for noise
  EXPECT_NE(run.table.Find("mlp", "fsdp", 2), nullptr);      // 2.5x faster: kept
  EXPECT_EQ(run.table.Find("mlp", "pipeline", 2), nullptr);  // 0.005 s/step faster than fsdp
  EXPECT_EQ(run.table.rows.size(), 2u);
  ASSERT_EQ(run.within_noise.size(), 3u);
  std::string summary = ProfileSummary(w, run);
  EXPECT_THAT(summary, HasSubstr("    1 GPU : fastest single 1m16s (0.7580 s/step)\n"));
  EXPECT_THAT(summary, HasSubstr("    2 GPUs: fastest fsdp 30.0s (0.3000 s/step)\n"));
  // Simplest first, each with the two runtimes and the noise between them.
  EXPECT_THAT(summary,
              HasSubstr("    1 GPU: spill within noise of single (1m15s vs 1m16s, noise 2.8s): "
                        "single kept\n"
                        "    2 GPUs: ddp within noise of single x1 (1m15s vs 1m16s, noise 2.7s): "
                        "single x1 kept\n"
                        "    2 GPUs: pipeline within noise of fsdp (29.5s vs 30.0s, noise 0.9s): "
                        "fsdp kept\n"));
  EXPECT_THAT(summary, Not(HasSubstr("fastest spill")));

  // The same means without spread are a real difference: spill stays.
  Rules("single 1 samples 0.758,0.758,0.758\nspill 1 samples 0.747,0.747,0.747\n");
  options_.refresh = true;
  ProfileRun steady = RunProfiler(w, options_);
  EXPECT_NE(steady.table.Find("mlp", "spill", 1), nullptr);
  EXPECT_NE(steady.table.Find("mlp", "single", 1), nullptr);
  EXPECT_THAT(ProfileSummary(w, steady), Not(HasSubstr("within noise")));
}

TEST(WithinNoise, SimplerIsFewerGpusThenTheTechniquesRank) {
  // trial, gpus, rank, runtime, standard error
  std::vector<Measured> configs = {{0, 2, 0, 95, 3}, {1, 1, 4, 98, 3}, {2, 1, 0, 100, 3},
                                   {3, 2, 2, 50, 0}, {4, 4, 1, 49, 1}, {5, 4, 2, 40, 1},
                                   {6, 1, 1, 101, 3}};
  std::vector<WithinNoise> out = LeaveOutWithinNoise(configs);
  // spill x1 (98) within 2 x sqrt(3^2 + 3^2) = 8.5 of single x1 (100); ddp
  // x2 (95) within noise of single; trial 6 is slower (kept: it misleads no
  // planner); 3 is twice as fast; 4 (49) is within 2 x 1 of 3 (50); 5 is not.
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].trial, 1);
  EXPECT_EQ(out[0].kept, 2);
  EXPECT_NEAR(out[0].margin_s, 2 * std::sqrt(18.0), 1e-9);
  EXPECT_EQ(out[1].trial, 0);
  EXPECT_EQ(out[1].kept, 2);
  EXPECT_EQ(out[2].trial, 4);
  EXPECT_EQ(out[2].kept, 3);
  // No spread, no noise: every faster configuration stays.
  EXPECT_TRUE(LeaveOutWithinNoise({{0, 1, 0, 100, 0}, {1, 1, 4, 99.9, 0}}).empty());
}

// Fixed costs are measured once each: a configuration that gains only
// there is within noise of the simpler one; one whose steps are faster
// beyond noise stays even where its fixed costs are dearer.
TEST(WithinNoise, AGainInFixedCostsAloneIsNoise) {
  // trial, gpus, rank, runtime, standard error, fixed costs (runtime - steps)
  std::vector<Measured> configs = {{0, 1, 0, 10, 0.1, 2},
                                   {1, 1, 4, 9, 0.1, 0.5},
                                   {2, 2, 1, 8, 0.1, 3},
                                   {3, 2, 2, 7.5, 0.1, 1},
                                   {4, 4, 2, 6, 0.1, 2.5}};
  std::vector<WithinNoise> out = LeaveOutWithinNoise(configs);
  // 1: steps 8.5 against 8, 1 s faster for 1.5 s less in fixed costs; 2:
  // steps 5, kept though 1 s dearer in fixed costs; 3: steps 6.5 against
  // 2's 5; 4: steps 3.5, 1.5 s faster beyond 0.28 s of noise.
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].trial, 1);
  EXPECT_EQ(out[0].kept, 0);
  EXPECT_NEAR(out[0].margin_s, 2 * std::sqrt(0.02) + 1.5, 1e-9);
  EXPECT_EQ(out[1].trial, 3);
  EXPECT_EQ(out[1].kept, 2);
  EXPECT_NEAR(out[1].margin_s, 2 * std::sqrt(0.02) + 2.0, 1e-9);
}

// Issue 41's tiny MLP on a device without declared memory: spill's step is
// 1.8x single's, but its launch and checkpoints measured cheaper (0.40 s
// against 0.38 s, 0.006 s against 0.014 s per checkpoint), so its whole
// runtime came out shorter and the table kept it beside single. Those
// differences are noise: single stays alone.
TEST_F(Profiler, ASlowerStepIsNotMadeFasterByFixedCostsWithinNoise) {
  Workload w = Load(
      "  - name: mlp\n    model: {type: mlp, layers: 2, width: 8}\n"
      "    data: {type: synthetic}\n    batch_size: 4\n    optimizer: {type: sgd, lr: 0.1}\n"
      "    steps: 100\n",
      1);
  auto trial = [](const char* technique, double step_s, double launch_s, double checkpoint_s) {
    Trial t;
    t.technique = technique;
    t.example_task = "mlp";
    t.result.feasible = true;
    t.result.step_s = step_s;
    t.result.launch_s = launch_s;
    t.result.checkpoint_s = checkpoint_s;
    t.step_se_s = step_s / 100;
    return t;
  };
  ProfileRun run;
  // 100 steps, 11 checkpoint writes: single 0.01 + 0.38 + 0.154 = 0.544 s,
  // spill 0.018 + 0.40 + 0.066 = 0.484 s.
  run.trials = {trial("single", 0.0001, 0.38, 0.014), trial("spill", 0.00018, 0.40, 0.006)};
  run.task_trials = {{0, 1}};
  options_.checkpoint_every = 10;
  auto rank = [](const WorkloadTask&, const std::string& technique) {
    return technique == "single" ? 0 : 4;
  };
  BuildTable(w, options_, rank, run);
  EXPECT_NE(run.table.Find("mlp", "single", 1), nullptr);
  EXPECT_EQ(run.table.Find("mlp", "spill", 1), nullptr);
  ASSERT_EQ(run.within_noise.size(), 1u);
  EXPECT_EQ(run.within_noise[0].trial, 1);
  EXPECT_EQ(run.within_noise[0].kept, 0);

  // A step faster beyond its noise is a faster technique: spill stays.
  ProfileRun faster;
  faster.trials = {trial("single", 0.0001, 0.38, 0.014), trial("spill", 0.00005, 0.40, 0.006)};
  faster.task_trials = {{0, 1}};
  BuildTable(w, options_, rank, faster);
  EXPECT_NE(faster.table.Find("mlp", "spill", 1), nullptr);
  EXPECT_TRUE(faster.within_noise.empty());
}

TEST(StepStandardError, OfTheStepsTheEstimateKeeps) {
  EXPECT_NEAR(StepStandardError({1, 2, 3}), 1 / std::sqrt(3.0), 1e-12);
  // The stall StepEstimate leaves out is left out of its spread too.
  EXPECT_NEAR(StepStandardError({1, 2, 3, 100}), 1 / std::sqrt(3.0), 1e-12);
  EXPECT_EQ(StepStandardError({0.5}), 0.0);
  EXPECT_EQ(StepStandardError({}), 0.0);
}

// A user's program says which GPU counts each template serves; the
// profiler tries only those, so nothing fails for a count the program does
// not take and the summary reports nothing infeasible (a `test {gpus}`
// guard in the template used to: "infeasible single x2, ddp x1: the
// program failed (exit 1)").
TEST_F(Profiler, ACommandTemplateIsTriedOnlyOnTheGpuCountsItServes) {
  WriteFileAtomic(dir_ + "/prog.sh",
                  "i=$SATURN_START_STEP\nwhile [ $i -lt $SATURN_STEPS ]; do\n"
                  "  echo \"saturn: step=$i loss=1 step_s=0.01\"; i=$((i + 1))\ndone\n");
  const std::string task =
      "  - name: py\n    type: command\n    steps: 50\n    commands:\n"
      "      single: {run: \"sh prog.sh\", gpus: [1]}\n"
      "      ddp: {run: \"sh prog.sh --n={gpus}\", gpus: [2, 4]}\n"
      "      fsdp: \"sh prog.sh --fsdp\"\n";
  Workload w = Load(task, 3);
  ProfileRun run = RunProfiler(w, options_);
  std::vector<std::string> tried;
  for (const Trial& t : run.trials)
    tried.push_back(t.technique + " x" + std::to_string(t.gpus));
  EXPECT_EQ(tried,
            (std::vector<std::string>{"single x1", "ddp x2", "fsdp x1", "fsdp x2", "fsdp x3"}));
  std::string summary = ProfileSummary(w, run);
  EXPECT_THAT(summary, Not(HasSubstr("infeasible"))) << summary;
  EXPECT_NE(run.table.Find("py", "single", 1), nullptr);
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

namespace saturn {
namespace {

// Mixed GPU types: every configuration is measured on each type, on a
// device of that type (the fake worker's steps take 1/threads as long), rows
// say their type, and the cache keeps types apart.
TEST_F(Profiler, EachGpuTypeIsMeasuredOnItsOwnDevices) {
  std::string text =
      "cluster: {nodes: [{name: slow0, gpus: 2, threads_per_gpu: 1, gpu_type: slow},"
      " {name: fast0, gpus: 2, threads_per_gpu: 2, gpu_type: fast}]}\ntasks:\n" +
      std::string(kGptGrid).substr(0, std::string(kGptGrid).find("    sweep")) +
      "    techniques: [single, ddp]\n";
  Workload w = ParseWorkload(text, dir_ + "/workload.yaml", dir_);
  ProfileRun run = RunProfiler(w, options_);
  EXPECT_EQ(run.trials.size(), 4u);  // single x1 and ddp x2, on each type
  ASSERT_EQ(run.table.rows.size(), 4u);
  const ProfileRow* slow = run.table.Find("gpt", "single", 1, "slow");
  const ProfileRow* fast = run.table.Find("gpt", "single", 1, "fast");
  ASSERT_NE(slow, nullptr);
  ASSERT_NE(fast, nullptr);
  EXPECT_LT(fast->runtime_s, slow->runtime_s);
  EXPECT_EQ(run.table.Find("gpt", "single", 1), nullptr) << "every row has its type";
  EXPECT_THAT(ProfileToCsv(run.table), HasSubstr("gpu_type"));
  EXPECT_THAT(ProfileSummary(w, run), HasSubstr("1 GPU of fast: fastest single"));
  // Again: every trial from the cache, each type its own.
  ProfileRun again = RunProfiler(w, options_);
  EXPECT_EQ(again.cache_hits, 4);
  EXPECT_EQ(again.table.Find("gpt", "single", 1, "fast")->runtime_s, fast->runtime_s);
}

// --types estimate: every configuration on the reference type (the largest
// node's), one per task on each other type, the rest scaled by that ratio;
// measured instead where the reference's memory does not fit the type.
class EstimatedTypes : public Profiler {
 protected:
  Workload ThreeTypes() {
    std::string text =
        "cluster: {nodes: [{name: big0, gpus: 4, gpu_type: big},"
        " {name: fast0, gpus: 2, threads_per_gpu: 2, gpu_type: fast},"
        " {name: tight0, gpus: 2, gpu_memory_gib: 0.5, gpu_type: tight}]}\ntasks:\n" +
        std::string(kGptGrid) + "    techniques: [single, ddp]\n";
    return ParseWorkload(text, dir_ + "/workload.yaml", dir_);
  }
};

TEST_F(EstimatedTypes, OneConfigurationPerOtherTypeIsMeasuredAndTheRestScaled) {
  Workload w = ThreeTypes();
  ProfileRun measured = RunProfiler(w, options_);
  EXPECT_EQ(measured.trials_run,
            8);  // single x1 and ddp x2..4 on big; single, ddp x2 on each other
  EXPECT_EQ(measured.estimated, 0);

  options_.estimate_types = true;
  options_.use_cache = false;
  ProfileRun run = RunProfiler(w, options_);
  // big: 4 measured; fast: single x1 measured, ddp x2 scaled by its ratio;
  // tight: the fake worker's 1 GiB peak does not fit 0.5 GiB, so both measured.
  EXPECT_EQ(run.trials_run, 7);
  EXPECT_EQ(run.estimated, 1);
  ASSERT_EQ(run.table.rows.size(), measured.table.rows.size());
  // On fast one of single x1 and ddp x2 is measured (the quicker trial on
  // big), the other scaled by its ratio.
  const ProfileRow* single = run.table.Find("gpt-lr1.0e-4", "single", 1, "fast");
  const ProfileRow* ddp = run.table.Find("gpt-lr1.0e-4", "ddp", 2, "fast");
  ASSERT_NE(single, nullptr);
  ASSERT_NE(ddp, nullptr);
  const bool ddp_scaled = !run.table.Extra(*ddp, "estimated_from").empty();
  const ProfileRow* scaled = ddp_scaled ? ddp : single;
  EXPECT_EQ(run.table.Extra(*single, "estimated_from").empty(), ddp_scaled);
  EXPECT_THAT(run.table.Extra(*scaled, "estimated_from"),
              HasSubstr(ddp_scaled ? "of big (single x1" : "of big (ddp x2"));
  // The fake worker's steps scale exactly with threads: the estimate is the measurement.
  EXPECT_NEAR(
      scaled->runtime_s,
      measured.table.Find("gpt-lr1.0e-4", scaled->technique, scaled->gpus, "fast")->runtime_s,
      1e-6 * scaled->runtime_s);
  EXPECT_EQ(run.table.Extra(*run.table.Find("gpt-lr1.0e-4", "ddp", 2, "tight"), "estimated_from"),
            "");
  EXPECT_THAT(ProfileToCsv(run.table), HasSubstr("estimated_from"));
  EXPECT_THAT(ProfileToCsv(measured.table), Not(HasSubstr("estimated_from")));
  EXPECT_THAT(ProfileSummary(w, run), HasSubstr("1 estimated from another type"));
  EXPECT_THAT(ProfileSummary(w, run), HasSubstr("estimated x0.500 of big"));

  // What the cache holds measured (the first run's) is read back, not estimated.
  options_.use_cache = true;
  ProfileRun again = RunProfiler(w, options_);
  EXPECT_EQ(again.estimated, 0);
  EXPECT_EQ(again.trials_run, 0);
  EXPECT_EQ(again.cache_hits, 8);
}

TEST_F(EstimatedTypes, InfeasibleOnTheReferenceIsInfeasibleWhereDevicesHoldNoMore) {
  Rules("ddp 2 infeasible out of memory\n");
  options_.estimate_types = true;
  Workload w = ThreeTypes();
  ProfileRun run = RunProfiler(w, options_);
  EXPECT_EQ(run.trials_run, 6);  // big: 4; fast: single x1; tight: single x1
  EXPECT_EQ(run.estimated, 2);   // ddp x2 on fast and tight: infeasible as on big
  EXPECT_EQ(run.table.Find("gpt-lr1.0e-4", "ddp", 2, "fast"), nullptr);
  EXPECT_THAT(ProfileSummary(w, run),
              HasSubstr("as on big, whose devices hold as much: out of memory"));
}

}  // namespace
}  // namespace saturn

namespace saturn {
namespace {

// Mixed types: a configuration measured 2x slower on the type where its
// siblings (the same model's other configurations) are faster is flagged in
// the summary with its reason: likely contention while it was measured.
class TypeContradictions : public Profiler {
 protected:
  // The grid's three tasks (one trial group) on two types; per technique x
  // GPU count its step time on slow and on fast.
  ProfileRun Measured(const Workload& w,
                      const std::vector<std::tuple<const char*, int, double, double>>& configs) {
    ProfileRun run;
    std::vector<int> all;
    for (const auto& [technique, gpus, slow_s, fast_s] : configs) {
      for (const auto& [type, step_s] : {std::pair{"slow", slow_s}, std::pair{"fast", fast_s}}) {
        Trial t;
        t.technique = technique;
        t.gpus = gpus;
        t.gpu_type = type;
        t.example_task = "gpt";
        t.result.feasible = true;
        t.result.step_s = step_s;
        t.cached = true;
        all.push_back(static_cast<int>(run.trials.size()));
        run.trials.push_back(t);
      }
    }
    run.task_trials.assign(w.tasks.size(), all);
    return run;
  }
  Workload Grid() {
    std::string text =
        "cluster: {nodes: [{name: slow0, gpus: 2, gpu_type: slow},"
        " {name: fast0, gpus: 2, threads_per_gpu: 2, gpu_type: fast}]}\ntasks:\n" +
        std::string(kGptGrid);
    return ParseWorkload(text, dir_ + "/workload.yaml", dir_);
  }
};

TEST_F(TypeContradictions, ASlowMeasurementOnTheFasterTypeIsFlaggedWithItsReason) {
  Workload w = Grid();
  // fast is 2x faster for single x1, ddp x2 and fsdp x2; pipeline x2
  // measured 2.2x slower on fast than on slow.
  ProfileRun run = Measured(w, {{"single", 1, 1.0, 0.5},
                                {"ddp", 2, 0.6, 0.3},
                                {"fsdp", 2, 0.7, 0.35},
                                {"pipeline", 2, 0.5, 1.1}});
  std::vector<TypeContradiction> found = FindTypeContradictions(w, run);
  ASSERT_EQ(found.size(), 1u);
  const TypeContradiction& c = found[0];
  EXPECT_EQ(run.trials[c.suspect].technique, "pipeline");
  EXPECT_EQ(run.trials[c.suspect].gpu_type, "fast");
  EXPECT_EQ(run.trials[c.other].gpu_type, "slow");
  EXPECT_NEAR(c.ratio, 2.2, 1e-9);
  EXPECT_NEAR(c.siblings_ratio, 0.5, 1e-9);
  EXPECT_EQ(c.siblings, 3);
  EXPECT_EQ(c.task, 0);  // the sweep's first task, once for its three
  std::string summary = ProfileSummary(w, run);
  EXPECT_THAT(summary, HasSubstr("suspect measurements: slow on the GPU type where the rest are "
                                 "fast, likely contention while measured"));
  EXPECT_THAT(summary, HasSubstr("gpt-lr1.0e-5: pipeline x2 on fast 2.20x slower than on slow, "
                                 "while 3 sibling configurations run 2.00x faster on fast "
                                 "(median): read from the cache, not re-measured"));
  EXPECT_EQ(summary.find("pipeline x2 on fast"), summary.rfind("pipeline x2 on fast"));
}

TEST_F(TypeContradictions, AgreeingOrMildlyDifferentTypesAreNotFlagged) {
  Workload w = Grid();
  // Every configuration faster on fast, by different amounts.
  EXPECT_TRUE(
      FindTypeContradictions(
          w, Measured(w, {{"single", 1, 1.0, 0.5}, {"ddp", 2, 0.6, 0.5}, {"fsdp", 2, 0.7, 0.2}}))
          .empty());
  // Slower on fast, but by less than twice the siblings' ratio (1.1 / 0.6).
  EXPECT_TRUE(FindTypeContradictions(w, Measured(w, {{"single", 1, 1.0, 0.6},
                                                     {"ddp", 2, 0.6, 0.36},
                                                     {"pipeline", 2, 0.5, 0.55}}))
                  .empty());
  // Siblings that disagree among themselves (two faster on each type) say
  // nothing.
  EXPECT_TRUE(FindTypeContradictions(w, Measured(w, {{"single", 1, 1.0, 0.5},
                                                     {"fsdp", 2, 0.7, 0.35},
                                                     {"ddp", 2, 0.3, 0.6},
                                                     {"pipeline", 2, 0.5, 1.0}}))
                  .empty());
  // Estimated rows are not measurements.
  ProfileRun run = Measured(w, {{"single", 1, 1.0, 0.5},
                                {"ddp", 2, 0.6, 0.3},
                                {"fsdp", 2, 0.7, 0.35},
                                {"pipeline", 2, 0.5, 1.1}});
  run.trials.back().estimated_from = "x2.200 of slow";
  EXPECT_TRUE(FindTypeContradictions(w, run).empty());
  EXPECT_THAT(ProfileSummary(w, run), Not(HasSubstr("suspect")));
}

}  // namespace
}  // namespace saturn

namespace saturn {
namespace {

// Analytic estimates (docs/estimates.md): the worker is asked to estimate
// what cannot run here, with the node's device speed at the task's
// precision; what it estimated says so in the profile and the summary.
TEST_F(Profiler, EstimatedTrialsAreMarkedAndGetTheNodesSpeed) {
  Rules(
      "single 1 estimated analytic: cannot run here\n"
      "ddp 2 estimated analytic: cannot run here\n");
  std::string text =
      "cluster: {nodes: [{name: h0, gpus: 2, gpu_memory_gib: 80, gpu_type: H100}]}\ntasks:\n" +
      std::string(kGptGrid).substr(0, std::string(kGptGrid).find("    sweep")) +
      "    precision: bf16\n    techniques: [single, ddp]\n";
  Workload w = ParseWorkload(text, dir_ + "/workload.yaml", dir_);
  ProfileRun run = RunProfiler(w, options_);
  EXPECT_EQ(run.analytic, 2);
  std::string csv = ProfileToCsv(run.table);
  EXPECT_THAT(csv, HasSubstr("estimated_from"));
  EXPECT_THAT(csv, HasSubstr("analytic: cannot run here (estimate=auto tflops=989 link=450)"));
  EXPECT_THAT(ProfileSummary(w, run),
              HasSubstr("2 trials estimated analytically, not measured (the first: analytic"));

  // fp32 tasks get the fp32 figure; a node's own fields win.
  std::string fp32 =
      "cluster: {nodes: [{name: h0, gpus: 2, gpu_type: H100, link_gb_s: 100}]}\ntasks:\n" +
      std::string(kGptGrid).substr(0, std::string(kGptGrid).find("    sweep")) +
      "    techniques: [single]\n";
  ProfileRun own = RunProfiler(ParseWorkload(fp32, dir_ + "/workload.yaml", dir_), options_);
  EXPECT_THAT(ProfileToCsv(own.table), HasSubstr("(estimate=auto tflops=67 link=100)"));
}

TEST_F(Profiler, EstimatingEverythingNeedsEveryNodesSpeed) {
  std::string text =
      "cluster: {nodes: [{name: h0, gpus: 2, gpu_type: H100},"
      " {name: lab0, gpus: 2, gpu_type: RTX6000}]}\ntasks:\n" +
      std::string(kGptGrid).substr(0, std::string(kGptGrid).find("    sweep"));
  Workload w = ParseWorkload(text, dir_ + "/workload.yaml", dir_);
  options_.estimate = "always";
  try {
    RunProfiler(w, options_);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("cluster.nodes[1].tflops"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("no published figures for gpu_type 'RTX6000'"));
  }
  EXPECT_EQ(Calls(), 0) << "nothing ran";
  Rules("single 1 estimated analytic\nddp 2 estimated analytic\n");
  std::string declared =
      "cluster: {nodes: [{name: lab0, gpus: 2, gpu_type: RTX6000, tflops: 182, link_gb_s: "
      "32}]}\ntasks:\n" +
      std::string(kGptGrid).substr(0, std::string(kGptGrid).find("    sweep")) +
      "    techniques: [single]\n";
  ProfileRun run = RunProfiler(ParseWorkload(declared, dir_ + "/workload.yaml", dir_), options_);
  EXPECT_THAT(ProfileToCsv(run.table), HasSubstr("(estimate=always tflops=182 link=32)"));
}

}  // namespace
}  // namespace saturn
