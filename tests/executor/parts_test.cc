// The parts of `saturn run` on their own: the re-planning thread's timing on
// a fake clock, the run clock, the task status's stored names, the run
// state's typed meta keys (the same text the state has always held, so runs
// started by older builds resume), the event helpers' exact lines, device
// leases between tasks and profiling trials, and default run folders.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/defaults.h"
#include "common/error.h"
#include "common/fs.h"
#include "contracts/baseline_comparison.h"
#include "contracts/event_kinds.h"
#include "executor/replanner.h"
#include "executor/run.h"
#include "executor/run_context.h"
#include "executor/run_state.h"
#include "executor/shared_placements.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;

// A re-plan that says when it was prepared (its new_end_s).
struct CountingReplans {
  explicit CountingReplans(const Clock& clock) : clock(clock) {}
  std::function<BackgroundReplanner::Solve()> Prepare() {
    return [this] {
      ++started;
      double at = clock.Now();
      return BackgroundReplanner::Solve([at] {
        ReplanDecision d;
        d.new_end_s = at;
        return d;
      });
    };
  }
  std::function<void(const ReplanDecision&)> Apply() {
    return [this](const ReplanDecision& d) { applied.push_back(d.new_end_s); };
  }
  const Clock& clock;
  int started = 0;
  std::vector<double> applied;
};

TEST(RunReplanning, ReplansOnlyEveryIntervalCountedFromTheLastApplied) {
  ManualClock clock;
  clock.Set(100.0);
  BackgroundReplanner replanner(clock, 10.0);
  CountingReplans replans(clock);
  clock.Set(109.9);
  replanner.Poll(replans.Prepare(), replans.Apply());
  EXPECT_EQ(replans.started, 0) << "due only 10 s after construction";
  EXPECT_FALSE(replanner.Busy());

  clock.Set(110.0);
  replanner.Poll(replans.Prepare(), replans.Apply());
  EXPECT_EQ(replans.started, 1);
  EXPECT_TRUE(replanner.Busy());
  replanner.Wait();
  clock.Set(115.0);  // the solve took 5 s
  replanner.Poll(replans.Prepare(), replans.Apply());
  ASSERT_EQ(replans.applied.size(), 1u);
  EXPECT_EQ(replans.applied[0], 110.0);
  EXPECT_FALSE(replanner.Busy());

  // The next one is due 10 s after the last was applied (115), not started.
  clock.Set(124.9);
  replanner.Poll(replans.Prepare(), replans.Apply());
  EXPECT_EQ(replans.started, 1);
  clock.Set(125.0);
  replanner.Poll(replans.Prepare(), replans.Apply());
  EXPECT_EQ(replans.started, 2);
  replanner.Wait();
}

TEST(RunClock, CountsFromItsStartOnTheInjectedClockPlusTheResumedOffset) {
  ManualClock base;
  base.Set(1000.0);
  RunClock clock(base);
  clock.Start();
  base.Advance(2.5);
  EXPECT_DOUBLE_EQ(clock.Now(), 2.5);
  clock.Start(40.0);  // a resumed run had reached 40 s
  base.Advance(1.0);
  EXPECT_DOUBLE_EQ(clock.Now(), 41.0);
}

std::string RawText(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  std::string text;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return text;
}

TEST(RunState, TypedValuesAreStoredAsTheTextOlderRunsHold) {
  std::string dir = ::testing::TempDir() + "/saturn_run_state_typed";
  fs::remove_all(dir);
  {
    RunState state = RunState::Open(dir, /*create=*/true);
    state.Set(meta::kClockS, 12.5);
    state.Set(meta::kPlanSwitches, 3);
    TaskRecord r;
    r.name = "a";
    r.status = TaskStatus::kFinished;
    state.SaveTask(r);
  }
  std::string db = dir + "/state.sqlite";
  EXPECT_EQ(RawText(db, "SELECT value FROM meta WHERE key = 'clock_s'"), "12.5");
  EXPECT_EQ(RawText(db, "SELECT value FROM meta WHERE key = 'plan_switches'"), "3");
  EXPECT_NE(RawText(db, "SELECT record FROM tasks").find("\"status\":\"finished\""),
            std::string::npos);
  RunState state = RunState::Open(dir, /*create=*/false);
  EXPECT_EQ(state.Get(meta::kClockS), 12.5);
  EXPECT_EQ(state.Get(meta::kPlanSwitches), 3);
  EXPECT_EQ(state.Get(meta::kPlan), std::nullopt);
  ASSERT_EQ(state.Tasks().size(), 1u);
  EXPECT_EQ(state.Tasks()[0].status, TaskStatus::kFinished);
}

// A kill or a full disk in the middle of an append leaves half a line; the
// next run appends after it. Before, the two ran into one unreadable line
// and every later read of the log (a resume, the report) failed.
TEST(RunState, ATornLastEventIsCutOffBeforeTheNextAppend) {
  std::string dir = ::testing::TempDir() + "/saturn_run_state_torn";
  fs::remove_all(dir);
  {
    RunState state = RunState::Open(dir, /*create=*/true);
    state.Append(events::Resumed(1.0));
  }
  std::string text = ReadFile(dir + "/events.jsonl");
  WriteFileAtomic(dir + "/events.jsonl", text + "{\"event\":\"task_sta");
  RunState state = RunState::Open(dir, /*create=*/false);
  state.Append(events::Resumed(2.0));
  std::vector<Event> events = state.Events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].t, 2.0);
  EXPECT_EQ(ReadFile(dir + "/events.jsonl"), text + EventToJsonLine(events::Resumed(2.0)));
}

// SQLite checks its log's frames itself, but not the database's pages: a
// page damaged on disk (here the loss curve's last) went unnoticed until a
// query met it mid-run. The state is checked when it is opened.
TEST(RunState, ADamagedStateIsRefusedNamingTheFile) {
  std::string dir = ::testing::TempDir() + "/saturn_run_state_broken";
  fs::remove_all(dir);
  {
    RunState state = RunState::Open(dir, /*create=*/true);
    for (int i = 0; i < 2000; ++i)
      state.AddLoss("t", i, 1.0 / (i + 1));
  }
  std::string db = ReadFile(dir + "/state.sqlite");
  ASSERT_GT(db.size(), 8 * 4096u);
  for (size_t i = db.size() - 4096; i < db.size(); ++i)
    db[i] = static_cast<char>(i * 31);
  WriteFileAtomic(dir + "/state.sqlite", db);
  try {
    RunState::Open(dir, /*create=*/false);
    FAIL() << "opened a damaged state";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/state.sqlite: the run state is damaged"),
              std::string::npos)
        << e.what();
  }
}

Assignment On(int node, std::vector<int> gpu_ids) {
  Assignment a;
  a.option = 0;
  a.node = node;
  a.gpu_ids = std::move(gpu_ids);
  return a;
}

TEST(SharedPlacements, ADeviceGoesToATaskOrATrialNeverBoth) {
  SharedPlacements p;
  p.Reset({{"n0", 2}, {"n1", 4}}, 4);
  ASSERT_TRUE(p.Place(0, On(0, {0, 1})));
  EXPECT_EQ(p.TaskOn(0, 1), 0);
  // n0 is full: a two-device trial gets n1's first two.
  std::optional<TrialDevices::Lease> lease = p.Acquire(2, "");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->node, "n1");
  EXPECT_EQ(lease->gpu_ids, (std::vector<int>{0, 1}));
  EXPECT_FALSE(p.DeviceFree(1, 0));
  EXPECT_EQ(p.TaskOn(1, 0), -1) << "a trial is not a task";
  EXPECT_FALSE(p.Place(1, On(1, {1, 2}))) << "a trial holds device 1";
  EXPECT_FALSE(p.On(1).has_value()) << "a refused placement changes nothing";
  EXPECT_FALSE(p.Acquire(3, "").has_value()) << "only n1's 2 and 3 are free";
  ASSERT_TRUE(p.Place(1, On(1, {2, 3})));
  EXPECT_FALSE(p.Place(2, On(1, {3}))) << "task 1 holds device 3";
  p.Release(*lease);
  EXPECT_TRUE(p.DeviceFree(1, 0));
  EXPECT_TRUE(p.Place(2, On(1, {0, 1})));
  p.Free(0);
  EXPECT_FALSE(p.On(0).has_value());
  ASSERT_TRUE(p.Last(0).has_value()) << "where it last ran stays";
  EXPECT_EQ(p.Last(0)->gpu_ids, (std::vector<int>{0, 1}));
  lease = p.Acquire(2, "");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->node, "n0");
  // A worker that could not be started leaves no trace of the place.
  p.Free(2);
  ASSERT_TRUE(p.Place(2, On(1, {1})));
  p.Undo(2);
  EXPECT_TRUE(p.DeviceFree(1, 1));
  EXPECT_EQ(p.Last(2)->gpu_ids, (std::vector<int>{0, 1})) << "where it last ran for real";
  ASSERT_TRUE(p.Place(3, On(1, {1})));
  p.Undo(3);
  EXPECT_FALSE(p.Last(3).has_value()) << "never ran";
}

TEST(SharedPlacements, AWaitingTrialGetsDevicesFreedBeforeTheNextTask) {
  SharedPlacements p;
  p.Reset({{"n0", 4}}, 3);
  ASSERT_TRUE(p.Place(0, On(0, {0, 1})));
  ASSERT_TRUE(p.Place(1, On(0, {2, 3})));
  EXPECT_FALSE(p.Acquire(2, "").has_value());  // a trial waits
  p.Free(0);
  EXPECT_FALSE(p.Place(2, On(0, {0, 1}))) << "the waiting trial comes first";
  std::optional<TrialDevices::Lease> lease = p.Acquire(2, "");
  ASSERT_TRUE(lease.has_value());
  p.Release(*lease);
  EXPECT_TRUE(p.Place(2, On(0, {0, 1}))) << "nothing waits any more";
}

// Arrivals renumber the tasks while trials of later arrivals hold devices:
// before Placements, the rebuild reset every device to free, so a task could
// start on a device a trial was still using.
TEST(SharedPlacements, RenumberingKeepsTasksDevicesAndTrialsLeases) {
  SharedPlacements p;
  p.Reset({{"n0", 4}}, 2);
  ASSERT_TRUE(p.Place(1, On(0, {0})));
  std::optional<TrialDevices::Lease> lease = p.Acquire(2, "");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->gpu_ids, (std::vector<int>{1, 2}));
  // A task joins in front: old 0 -> 1, old 1 -> 2.
  p.Renumber({-1, 0, 1});
  EXPECT_EQ(p.TaskOn(0, 0), 2);
  ASSERT_TRUE(p.On(2).has_value());
  EXPECT_FALSE(p.On(0).has_value());
  EXPECT_FALSE(p.Place(0, On(0, {1}))) << "the trial still holds device 1";
  EXPECT_TRUE(p.Place(0, On(0, {3})));
  EXPECT_THROW(p.Renumber({0, 1}), std::logic_error);  // running task 2 cannot leave
}

// The run loop waits on the injected clock (it slept on the real one): a
// service driven on a ManualClock turns in simulated time, and the clock it
// saves is that time.
TEST(RunDriven, ItsLoopWaitsOnTheInjectedClock) {
  std::string dir = ::testing::TempDir() + "/saturn_run_on_a_manual_clock";
  fs::remove_all(dir);
  fs::create_directories(dir);
  WriteFileAtomic(dir + "/cluster.yaml", "nodes: [{name: n0, gpus: 2}]\n");
  ManualClock clock;
  clock.Set(100.0);
  RunOptions options;
  options.progress = false;
  options.profiler.worker = "/nonexistent/saturn-worker";  // no engine task comes
  ServiceSource source;
  source.state_dir = dir + "/state";
  source.cluster_path = dir + "/cluster.yaml";
  std::unique_ptr<saturn::Run> run = saturn::Run::OpenService(source, options, clock);
  EXPECT_TRUE(run->Tasks().empty());
  int turns = 0;
  RunHooks hooks;
  hooks.each_turn = [&] { ++turns; };
  hooks.stop = [&] { return turns >= 40; };
  RunSummary s = run->Drive(hooks);
  EXPECT_TRUE(s.interrupted) << "a service is stopped, never done";
  // 40 turns, the last one left before its pause.
  EXPECT_NEAR(run->Now(), 39 * defaults::kLoopPauseS, 1e-9);
  run.reset();
  RunState state = RunState::Open(dir + "/state", false);
  EXPECT_NEAR(state.Get(meta::kClockS).value_or(-1.0), 39 * defaults::kLoopPauseS, 1e-6);
}

// The steady clock plus what a test adds: time that passes at once.
class SkippingClock final : public Clock {
 public:
  double Now() const override { return real_.Now() + skipped_.load(); }
  void Skip(double seconds) { skipped_ = skipped_.load() + seconds; }

 private:
  SteadyClock real_;
  std::atomic<double> skipped_{0.0};
};

// Three tasks a fake worker trains in 20 steps, as fast on one GPU (single)
// as on four (ddp): Saturn runs them side by side, current practice one after
// another on the whole node.
std::string ThreeTasks(const std::string& prefix) {
  std::string text = "tasks:\n";
  for (int i = 0; i < 3; ++i) {
    text += "  - name: " + prefix + std::to_string(i) +
            "\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
            "\n    data: {type: text, path: corpus.txt}\n    batch_size: 4"
            "\n    optimizer: {type: sgd, lr: 0.1}\n    steps: 20\n";
  }
  return text;
}

// Each plan's gain over current practice in a service that trains one batch,
// sits idle for `idle_s`, then trains the same batch again under other names.
std::vector<BaselineComparison> GainsAroundAnIdleGap(const std::string& dir, double idle_s) {
  fs::remove_all(dir);
  fs::create_directories(dir + "/project");
  WriteFileAtomic(dir + "/project/corpus.txt", std::string(3000, 'z'));
  WriteFileAtomic(dir + "/cluster.yaml", "nodes: [{name: n0, gpus: 4, gpu_memory_gib: 1}]\n");
  WriteFileAtomic(dir + "/rules.txt", "ddp 2 ok 0.05\nddp 3 ok 0.05\nddp 4 ok 0.05\n");
  ::setenv("FAKE_WORKER_RULES", (dir + "/rules.txt").c_str(), 1);
  ::setenv("FAKE_STEP_S", "0.05", 1);
  ::setenv("FAKE_WORKER_TECHNIQUES",
           R"([{"name": "single", "layout": "one-process", "min_gpus": 1, "max_gpus": 1,)"
           R"( "splits_batch": false, "plugin": null}, {"name": "ddp", "layout":)"
           R"( "rank-per-device", "min_gpus": 2, "max_gpus": null, "splits_batch": true,)"
           R"( "plugin": null}])",
           1);
  SkippingClock clock;
  RunOptions options;
  options.progress = false;
  options.introspection = false;  // each batch keeps the plan made when it came
  options.profiler.worker = SATURN_SOURCE_DIR "/tests/testing/fake_worker.sh";
  options.profiler.cache_path = dir + "/cache.sqlite";
  ServiceSource source;
  source.state_dir = dir + "/state";
  source.cluster_path = dir + "/cluster.yaml";
  std::unique_ptr<saturn::Run> run = saturn::Run::OpenService(source, options, clock);
  auto submit = [&](const std::string& prefix) {
    Submission submission{0, "w.yaml", dir + "/project", ThreeTasks(prefix)};
    Workload workload = run->CheckSubmission(submission);
    EXPECT_EQ(run->Submit(submission, std::move(workload)).kind, RunAnswer::kDone);
  };
  auto all_ended = [&](size_t tasks) {
    std::vector<TaskView> views = run->Tasks();
    return views.size() == tasks && std::all_of(views.begin(), views.end(), [](const TaskView& v) {
             return v.status == TaskStatus::kFinished;
           });
  };
  std::vector<BaselineComparison> gains;
  auto note_gain = [&] {
    std::optional<BaselineComparison> c =
        CompareWithBaseline(run->CurrentPlan(), "current-practice");
    if (c) gains.push_back(*c);
  };
  int stage = 0;
  Deadline deadline(clock, 120.0 + idle_s);
  RunHooks hooks;
  hooks.each_turn = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (stage == 0) {
      submit("a");
      stage = 1;
    } else if (stage == 1 && all_ended(3)) {
      note_gain();
      clock.Skip(idle_s);  // the service sits idle
      submit("b");
      stage = 2;
    } else if (stage == 2 && all_ended(6)) {
      note_gain();
      stage = 3;
    }
  };
  hooks.stop = [&] { return stage == 3 || deadline.Expired(); };
  run->Drive(hooks);
  EXPECT_EQ(stage, 3) << "the batches did not finish in time";
  for (const char* name : {"FAKE_WORKER_RULES", "FAKE_STEP_S", "FAKE_WORKER_TECHNIQUES"})
    ::unsetenv(name);
  return gains;
}

// saturn serve compares its plan with current practice over the same span,
// from the submission each plan was made for: a batch submitted after the
// service sat idle shows the gain the same batch showed at once, whatever
// the gap (compared as ends on the run clock, the idle time counted on both
// sides and pulled the ratio towards 1x as it grew).
TEST(RunDriven, TheGainOverCurrentPracticeDoesNotChangeWithIdleTimeBeforeASubmission) {
  std::string dir = ::testing::TempDir() + "/saturn_gain_after_idle";
  for (double idle_s : {10.0, 100000.0}) {
    std::vector<BaselineComparison> gains = GainsAroundAnIdleGap(dir, idle_s);
    ASSERT_EQ(gains.size(), 2u) << "idle " << idle_s;
    EXPECT_GT(gains[0].Ratio(), 1.5) << "side by side beats one after another";
    EXPECT_GT(gains[1].from_s, idle_s) << "the second plan is made after the gap";
    EXPECT_NEAR(gains[1].Ratio(), gains[0].Ratio(), 0.05 * gains[0].Ratio()) << "idle " << idle_s;
    EXPECT_NEAR(gains[1].baseline_s, gains[0].baseline_s, 0.05 * gains[0].baseline_s);
  }
}

TEST(DefaultRunDir, TwoWorkloadFilesNeverShareOne) {
  fs::path cwd = fs::current_path();
  EXPECT_EQ(DefaultRunDir("examples/quickstart/workload.yaml"),
            "saturn-runs/examples-quickstart-workload");
  EXPECT_EQ(DefaultRunDir("./examples/quickstart/workload.yaml"),
            "saturn-runs/examples-quickstart-workload");
  EXPECT_EQ(DefaultRunDir((cwd / "w.yaml").string()), "saturn-runs/w");
  EXPECT_NE(DefaultRunDir("examples/planning/workload.yaml"),
            DefaultRunDir("examples/quickstart/workload.yaml"));
  EXPECT_EQ(DefaultRunDir("/tmp/x/w.yaml").rfind("saturn-runs/", 0), 0u);
  EXPECT_EQ(DefaultRunDir("examples/../examples/quickstart/workload.yaml"),
            "saturn-runs/examples-quickstart-workload");
}

TEST(DefaultRunDir, AWorkloadInALinkedFolderIsNamedAsTheUserNamedIt) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / "saturn-default-run-dir-link";
  fs::remove_all(root);
  fs::create_directories(root / "real" / "examples");
  std::ofstream(root / "real" / "examples" / "w.yaml") << "tasks: []\n";
  fs::create_directories(root / "here");
  fs::create_directory_symlink(root / "real" / "examples", root / "here" / "examples");
  fs::path before = fs::current_path();
  fs::current_path(root / "here");
  std::string dir = DefaultRunDir("examples/w.yaml");
  fs::current_path(before);
  fs::remove_all(root);
  // It resolved the link before: saturn-runs/tmp-saturn-default-run-dir-link-real-examples-w.
  EXPECT_EQ(dir, "saturn-runs/examples-w");
}

}  // namespace
}  // namespace saturn
