// Measuring packs (profiler/pack_trials.h) against the fake worker
// (tests/testing/fake_worker.sh): which tasks form a class, which pack
// trials run, and the profile columns the planner reads back.
#include "profiler/pack_trials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "common/fs.h"
#include "planner/packing.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class PackTrials : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_pack_trials_" +
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
    options_.packs = true;
  }
  Workload Load(const std::string& tasks) {
    std::string text =
        "cluster: {nodes: [{name: n0, gpus: 2, gpu_memory_gib: 1}]}\ntasks:\n" + tasks;
    return ParseWorkload(text, dir_ + "/workload.yaml", dir_);
  }
  std::string dir_;
  ProfilerOptions options_;
};

// A LoRA grid of three (one class), a LoRA task that evaluates over another
// base (seed 5: a class of its own) and a full fine-tune (no class).
const char* kTasks =
    "  - name: grid\n"
    "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
    "    data: {type: text, path: corpus.txt}\n"
    "    batch_size: 8\n"
    "    optimizer: {type: adamw, lr: 1.0e-4}\n"
    "    finetune: {lora: {rank: 4, targets: [attn]}}\n"
    "    steps: 100\n"
    "    sweep: {optimizer.lr: [1.0e-5, 1.0e-4, 3.0e-3]}\n"
    "  - name: evaluates\n"
    "    seed: 5\n"
    "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
    "    data: {type: text, path: corpus.txt}\n"
    "    batch_size: 8\n"
    "    optimizer: {type: adamw, lr: 1.0e-4}\n"
    "    finetune: {lora: {rank: 4, targets: [attn]}}\n"
    "    steps: 100\n"
    "    eval: {every: 50, batches: 1}\n"
    "  - name: full\n"
    "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
    "    data: {type: text, path: corpus.txt}\n"
    "    batch_size: 4\n"
    "    optimizer: {type: adamw, lr: 1.0e-4}\n"
    "    steps: 100\n";

TEST_F(PackTrials, ClassesFollowTheWorkersPackRules) {
  Workload w = Load(kTasks);
  ASSERT_EQ(w.tasks.size(), 5u);
  std::string why;
  std::string cls = PackClassOf(w.tasks[0]);
  EXPECT_FALSE(cls.empty());
  EXPECT_EQ(PackClassOf(w.tasks[1]), cls);  // another learning rate
  // A task that evaluates packs (its members evaluate as alone), with the
  // tasks of its base; also where early stopping may stop it (it leaves
  // its pack).
  WorkloadTask evaluates = w.tasks[3];
  evaluates.spec["seed"] = w.tasks[0].spec.value("seed", 0);
  EXPECT_EQ(PackClassOf(evaluates), cls);
  evaluates.early_stop.rule = "asha";
  EXPECT_EQ(PackClassOf(evaluates, &why), cls);
  EXPECT_EQ(PackClassOf(w.tasks[4], &why), "");
  EXPECT_THAT(why, HasSubstr("LoRA"));
  // Without model.init the base comes from the seed: another seed, another class.
  WorkloadTask other_seed = w.tasks[0];
  other_seed.spec["seed"] = 7;
  EXPECT_NE(PackClassOf(other_seed), cls);
  WorkloadTask other_model = w.tasks[0];
  other_model.spec["model"]["d_model"] = 64;
  EXPECT_NE(PackClassOf(other_model), cls);
}

TEST_F(PackTrials, PacksAreMeasuredWhereTheyCanMatterAndWrittenForThePlanner) {
  // ddp packs do not fit: the ddp curve stops at one member, and fsdp (as
  // fast alone on 2 GPUs) is measured instead; spill (as fast as single
  // alone, measured after it) is not, since single's packs fit and gain.
  Workload w = Load(kTasks);
  WriteFileAtomic(dir_ + "/rules.txt", w.tasks[0].name + "-member1/ddp 2 oom\n");
  ProfileRun run = RunProfiler(w, options_);
  int pack_trials = 0;
  for (const Trial& t : run.trials)
    pack_trials += t.trial_key.find("pack_of") != std::string::npos;
  // single x1 and fsdp x2 at k = 2, 4; ddp x2 at k = 2 (it does not fit).
  EXPECT_EQ(pack_trials, 5);
  const ProfileTable& table = run.table;
  ASSERT_GE(table.ExtraColumn("pack_step_s"), 0);
  for (const ProfileRow& row : table.rows) {
    bool grid = row.task.rfind("grid", 0) == 0;
    EXPECT_EQ(table.Extra(row, "pack_class").empty(), !grid) << row.task;
    if (!grid) continue;
    EXPECT_EQ(table.Extra(row, "pack_rows"), "8");
    std::string curve = table.Extra(row, "pack_step_s");
    // The settings each size ran with (the fake worker's), at the curve's rows.
    std::string knobs = table.Extra(row, "pack_knobs");
    std::string point_knobs;
    for (const char* rows : {"8", "16", "32"}) {
      const std::string at = rows;
      if (curve.find(at + ":") == std::string::npos) continue;
      point_knobs += (point_knobs.empty() ? "" : " ") + at + R"(:{"fake":true})";
    }
    EXPECT_EQ(knobs, point_knobs) << row.task << " " << row.technique;
    // One point per measured pack size: 8 rows (alone), 16 and 32 (packs of
    // 2 and 4); ddp, spill and pipeline (slower on 2 GPUs than fsdp, whose
    // packs are measured) only alone.
    std::vector<std::string> rows;
    for (size_t at = 0; at < curve.size();) {
      size_t space = curve.find(' ', at);
      std::string point = curve.substr(at, space == std::string::npos ? space : space - at);
      rows.push_back(point.substr(0, point.find(':')));
      at = space == std::string::npos ? curve.size() : space + 1;
    }
    std::vector<std::string> want = {"8", "16", "32"};
    if (row.technique == "ddp" || row.technique == "spill" || row.technique == "pipeline") {
      want = {"8"};
    }
    EXPECT_EQ(rows, want) << row.technique << ": " << curve;
  }
  EXPECT_THAT(run.pack_summary, HasSubstr("3 tasks may share a base"));
  EXPECT_THAT(run.pack_summary, HasSubstr("2 do not fit"));
  // The planner reads it back: the grid may pack, single packs of up to 4 fit.
  Cluster cluster = w.cluster;
  ProfileTable back = ParseProfileCsv(ProfileToCsv(table), "profile.csv", cluster);
  Problem problem = ProblemFromProfile(back, cluster);
  PackTerms terms = PackTermsFromProfile(back, problem, "profile.csv");
  EXPECT_TRUE(terms.Any());
  const Option* single = nullptr;
  for (const Option& o : problem.tasks[0].options)
    if (o.technique == "single") single = &o;
  ASSERT_NE(single, nullptr);
  EXPECT_EQ(PackMemberEnds(problem, terms, {0, 1, 2}, *single).size(), 3u);
  // Without packs: no pack trials, no pack columns.
  options_.packs = false;
  options_.use_cache = false;
  ProfileRun plain = RunProfiler(w, options_);
  EXPECT_LT(plain.table.ExtraColumn("pack_class"), 0);
  EXPECT_EQ(plain.trials.size() + 5, run.trials.size());
}

// Which techniques take packs is the worker's word (`takes_packs`, engine
// Technique::TakesPacks), not a list in the profiler: a worker whose single
// does not take them gets no single pack trial, and one whose plug-in
// does gets its packs measured.
TEST_F(PackTrials, PacksAreMeasuredOnlyUnderTechniquesTheWorkerSaysTakeThem) {
  setenv("FAKE_WORKER_TECHNIQUES",
         R"([{"name": "single", "layout": "one-process", "min_gpus": 1, "max_gpus": 1,
              "splits_batch": false, "takes_packs": false, "plugin": null},
             {"name": "zero3", "layout": "rank-per-device", "min_gpus": 2, "max_gpus": null,
              "splits_batch": true, "takes_packs": true, "plugin": null}])",
         1);
  Workload w = Load(kTasks);
  // Another path to the same stand-in: the catalogue is kept per worker.
  options_.worker = SATURN_SOURCE_DIR "/tests/../tests/testing/fake_worker.sh";
  ProfileRun run = RunProfiler(w, options_);
  unsetenv("FAKE_WORKER_TECHNIQUES");
  std::map<std::string, int> packs;
  for (const Trial& t : run.trials)
    if (t.trial_key.find("pack_of") != std::string::npos) ++packs[t.technique];
  EXPECT_EQ(packs.count("single"), 0u);
  EXPECT_GE(packs["zero3"], 1);
}

TEST_F(PackTrials, APackNoFasterThanItsMembersOneAfterAnotherEndsItsCurve) {
  // single x1 alone steps 1 s; its pack of 2 steps 2 s (no gain): no pack of
  // 4 is measured there. ddp x2 (0.5 s alone) packs of 2 step 0.5 s: on to 4.
  Workload w = Load(kTasks);
  WriteFileAtomic(dir_ + "/rules.txt", w.tasks[0].name + "-member1/single 1 ok 2.0\n");
  ProfileRun run = RunProfiler(w, options_);
  std::map<std::string, std::string> curves;
  for (const ProfileRow& row : run.table.rows)
    if (row.task == w.tasks[0].name) curves[row.technique] = run.table.Extra(row, "pack_step_s");
  EXPECT_EQ(curves["single"], "8:1 16:2");
  EXPECT_EQ(curves["ddp"], "8:0.5 16:0.5 32:0.5");
  EXPECT_EQ(curves["spill"], "8:1");
  EXPECT_EQ(curves["fsdp"], "8:0.5");
  EXPECT_THAT(run.pack_summary, HasSubstr("steps no faster than its members one after another"));
}

TEST_F(PackTrials, NoLargerPackIsMeasuredWhereItCouldNotTakeFewerDeviceSecondsThanAMemberAlone) {
  // single x1 alone steps 0.8 s: 0.8 device-seconds a member step. ddp x2
  // alone steps 0.5 s (1.0 device-seconds), its pack of 2 0.9 s (0.9 a
  // member, 10% gained): a pack of 4 gaining as much again would take 0.81,
  // not below 0.8: not measured. single's pack of 2 steps 0.8 s (0.4 a
  // member): on to 4.
  Workload w = Load(kTasks);
  const std::string& first = w.tasks[0].name;
  WriteFileAtomic(dir_ + "/rules.txt", first + "/single 1 ok 0.8\n" + first +
                                           "-member1/single 1 ok 0.8\n" + first +
                                           "-member1/ddp 2 ok 0.9\n");
  ProfileRun run = RunProfiler(w, options_);
  std::map<std::string, std::string> curves;
  for (const ProfileRow& row : run.table.rows)
    if (row.task == first) curves[row.technique] = run.table.Extra(row, "pack_step_s");
  EXPECT_EQ(curves["single"], "8:0.8 16:0.8 32:0.8");
  EXPECT_EQ(curves["ddp"], "8:0.5 16:0.9");
  EXPECT_THAT(run.pack_summary,
              HasSubstr("a pack of 4 would take at least 0.8100 device-seconds a member step"));
  EXPECT_THAT(run.pack_summary, HasSubstr("no fewer than 0.8000 alone under single x1"));
}

// A table of 200 groups of 6 rows (one class of arrays: sizes 2, 16, 128
// and 1024), a linear model of batch 8.
Workload TableWorkload(const std::string& dir) {
  setenv("XDG_CACHE_HOME", (dir + "/cache").c_str(), 1);
  std::string csv = "g,x,y\n";
  for (int g = 0; g < 200; ++g)
    for (int r = 0; r < 6; ++r)
      csv += std::to_string(g) + "," + std::to_string(r) + "," + std::to_string(g + r) + "\n";
  WriteFileAtomic(dir + "/t.csv", csv);
  return ParseWorkload(
      "cluster: {nodes: [{name: n0, gpus: 2, gpu_memory_gib: 1}]}\ntasks:\n"
      "  - name: t\n"
      "    model: {type: mlp, layers: 0}\n"
      "    data: {type: table, path: t.csv, features: [x], label: y, group_by: g}\n"
      "    batch_size: 8\n"
      "    optimizer: {type: adam, lr: 1.0e-2}\n"
      "    epochs: 1\n",
      dir + "/workload.yaml", dir);
}

// The worker calls the fake worker logged.
std::vector<std::string> Calls(const std::string& dir) {
  std::vector<std::string> lines;
  if (!fs::exists(dir + "/calls.log")) return lines;
  std::string text = ReadFile(dir + "/calls.log");
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return lines;
}

TEST_F(PackTrials, AnArraysSizesRideAlongItsFirstGroupsOwnTrial) {
  Workload w = TableWorkload(dir_);
  ProfileRun run = RunProfiler(w, options_);
  // One worker: the group alone, then its arrays (the fake steps k copies in
  // 1 + k/16 s).
  EXPECT_THAT(Calls(dir_), ::testing::ElementsAre("search single 1 0 0 packs=2,16,128,1024"));
  EXPECT_EQ(run.trials_run, 5);
  for (const ProfileRow& row : run.table.rows) {
    EXPECT_EQ(run.table.Extra(row, "pack_step_s"), "8:1 16:1.125 128:2 1024:9 8192:65") << row.task;
    // A start: the task alone's launch (its process, 0.05 s of setup); each
    // array's, the same process's start with its own 0.01 s of setup.
    std::vector<double> starts;
    std::string curve = run.table.Extra(row, "pack_start_s");
    for (size_t at = 0; at < curve.size();) {
      size_t colon = curve.find(':', at), space = curve.find(' ', at);
      starts.push_back(std::stod(curve.substr(colon + 1, space - colon - 1)));
      at = space == std::string::npos ? curve.size() : space + 1;
    }
    ASSERT_EQ(starts.size(), 5u) << curve;
    EXPECT_GE(starts[0], 0.05) << curve;
    for (size_t k = 1; k < starts.size(); ++k)
      EXPECT_NEAR(starts[k], starts[0] - 0.04, 1e-4) << curve;
  }
  // Each size is cached as its own trial: nothing runs again.
  fs::remove(dir_ + "/calls.log");
  ProfileRun again = RunProfiler(w, options_);
  EXPECT_TRUE(Calls(dir_).empty());
  EXPECT_EQ(again.cache_hits, 5);
  EXPECT_EQ(again.table.Extra(again.table.rows[0], "pack_step_s"),
            "8:1 16:1.125 128:2 1024:9 8192:65");
}

TEST_F(PackTrials, AnArrayThatDoesNotFitEndsTheSizesAndIsRemembered) {
  Workload w = TableWorkload(dir_);
  setenv("FAKE_WORKER_PACK_FIT", "16", 1);
  ProfileRun run = RunProfiler(w, options_);
  unsetenv("FAKE_WORKER_PACK_FIT");
  // 128 does not fit; 1024 is not tried, and not called feasible either.
  EXPECT_EQ(run.table.Extra(run.table.rows[0], "pack_step_s"), "8:1 16:1.125 128:2");
  EXPECT_THAT(run.pack_summary, HasSubstr("128 do not fit"));
  for (const Trial& t : run.trials) {
    if (t.trial_key.find("\"members\":1024") == std::string::npos) continue;
    EXPECT_FALSE(t.result.feasible);
    EXPECT_EQ(t.result.reason, "not measured: a smaller array did not fit");
  }
  fs::remove(dir_ + "/calls.log");
  ProfileRun again = RunProfiler(w, options_);
  EXPECT_TRUE(Calls(dir_).empty()) << "every size's outcome is cached";
  EXPECT_EQ(again.table.Extra(again.table.rows[0], "pack_step_s"), "8:1 16:1.125 128:2");
}

TEST_F(PackTrials, AnEstimatedTrialMeasuresNoArrays) {
  Workload w = TableWorkload(dir_);
  WriteFileAtomic(dir_ + "/rules.txt", "single 1 estimated a roofline\n");
  ProfileRun run = RunProfiler(w, options_);
  EXPECT_EQ(run.table.Extra(run.table.rows[0], "pack_step_s"), "");
  for (const Trial& t : run.trials) {
    if (t.carried_by < 0) continue;
    EXPECT_FALSE(t.result.feasible);
    EXPECT_THAT(t.result.reason, HasSubstr("estimated"));
    EXPECT_FALSE(t.transient);
  }
  // Kept as not measured: the estimated trial is not run again for them.
  fs::remove(dir_ + "/calls.log");
  ProfileRun again = RunProfiler(w, options_);
  EXPECT_TRUE(Calls(dir_).empty());
}

}  // namespace
}  // namespace saturn
