// Early stopping in `saturn run` against the fake worker (whose evaluation
// loss ranks tasks by learning rate, 1e-3 best): the workload's ASHA rule
// stops the tasks an independent ASHA written here stops, fed the same
// evaluations in the order the run logged them; a stopped task ends
// `stopped` with its checkpoint, its device goes to the next task, and the
// run succeeds. A resumed run replays the evaluations it logged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/fs.h"
#include "common/process.h"
#include "contracts/events.h"
#include "contracts/task_view.h"
#include "contracts/workload.h"
#include "executor/early_stopper.h"
#include "executor/run.h"
#include "executor/run_options.h"
#include "executor/run_state.h"
#include "tests/testing/reference_asha.h"
#include "tests/testing/reference_median.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class EarlyStopRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("early_stop_run");
    WriteFileAtomic(dir_ + "/corpus.txt", std::string(3000, 'z'));
    WriteWorkload("asha: {metric: eval_loss, grace_steps: 2, reduction_factor: 2}");
  }
  // Six learning rates on one device: the tasks run one after another.
  void WriteWorkload(const std::string& rule,
                     const std::string& lrs = "1.0e-2, 1.0, 1.0e-3, 1.0e-5, 1.0e-1, 1.0e-4") {
    WriteFileAtomic(dir_ + "/w.yaml",
                    "cluster: {nodes: [{name: n0, gpus: 1, gpu_memory_gib: 1}]}\n"
                    "tasks:\n"
                    "  - name: t\n"
                    "    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}\n"
                    "    data: {type: text, path: corpus.txt}\n"
                    "    batch_size: 4\n"
                    "    techniques: [single]\n"
                    "    optimizer: {type: sgd, lr: 0.1}\n"
                    "    steps: 16\n"
                    "    eval: {every: 2}\n"
                    "    sweep: {optimizer.lr: [" +
                        lrs +
                        "]}\n"
                        "early_stop: {" +
                        rule + "}\n");
  }
  int RunSaturn(const std::string& extra = "") {
    ProcessSpec spec;
    spec.argv = {SATURN_BINARY_DIR "/src/cli/saturn",
                 "run",
                 dir_ + "/w.yaml",
                 "--run-dir",
                 dir_ + "/run",
                 "--cache",
                 dir_ + "/cache.sqlite"};
    if (!extra.empty()) spec.argv.push_back(extra);
    spec.env = {{"SATURN_WORKER", SATURN_SOURCE_DIR "/tests/testing/fake_worker.sh"},
                {"FAKE_STEP_S", "0.02"}};
    spec.stdout_path = dir_ + "/out.log";
    spec.stderr_path = dir_ + "/out.log";
    return ExitCode(Process::Spawn(spec).Wait());
  }
  std::string dir_;
};

TEST_F(EarlyStopRun, TheRuleStopsWhatAshaStopsAndTheRestFinish) {
  ASSERT_EQ(RunSaturn(), 0) << ReadFile(dir_ + "/out.log");
  std::vector<Event> events = ParseEventLines(ReadFile(dir_ + "/run/events.jsonl"), "events");
  test::ReferenceAsha asha(2, 2, 16);
  std::set<std::string> expected, stopped;
  std::set<std::pair<std::string, long>> seen;
  std::map<std::string, long> decided_at;
  for (const Event& e : events) {
    if (e.kind == EventKind::kTaskEvaluated && !expected.count(e.task)) {
      long step = e.extra["step"].get<long>();
      if (seen.emplace(e.task, step).second &&
          asha.Stops(e.task, step, e.extra["eval_loss"].get<double>())) {
        expected.insert(e.task);
      }
    }
    if (e.kind == EventKind::kTaskEarlyStopped) {
      stopped.insert(e.task);
      EXPECT_EQ(e.extra["rule"], "asha");
      EXPECT_EQ(e.extra["metric"], "eval_loss");
      // Decided at a rung (2 or 4); its checkpoint at or after it.
      long decided = e.extra["eval_step"].get<long>();
      decided_at[e.task] = decided;
      EXPECT_TRUE(decided == 2 || decided == 4) << e.task << " at " << decided;
      EXPECT_GE(e.extra["step"].get<long>(), decided);
    }
  }
  EXPECT_FALSE(expected.empty()) << "the reference stops nothing: the test cannot fail";
  EXPECT_EQ(stopped, expected);
  json report = json::parse(ReadFile(dir_ + "/run/report.json"));
  int finished = 0;
  for (const json& t : report["tasks"]) {
    std::string name = t["task"];
    if (stopped.count(name)) {
      EXPECT_EQ(t["status"], "stopped") << name;
      EXPECT_LT(t["steps_done"].get<long>(), 16) << name;
      EXPECT_TRUE(fs::exists(dir_ + "/run/tasks/" + name)) << name;
      // Its result is its last evaluation: the one it was stopped on, or
      // one its worker made before the stop reached it.
      ASSERT_TRUE(t["last_eval"].is_object()) << t.dump();
      EXPECT_GE(t["last_eval"]["step"].get<long>(), decided_at[name]) << t.dump();
      EXPECT_LE(t["last_eval"]["step"].get<long>(), t["steps_done"].get<long>()) << t.dump();
    } else {
      EXPECT_EQ(t["status"], "finished") << name;
      ++finished;
    }
  }
  EXPECT_GE(finished, 1);
  // The best learning rate is never stopped: its loss is the lowest at every rung.
  EXPECT_FALSE(stopped.count("t-lr1.0e-3"));
  EXPECT_THAT(ReadFile(dir_ + "/out.log"),
              HasSubstr(std::to_string(stopped.size()) + " stopped early"));
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("planned with each task's expected work"));
}

// The median rule in a real run: it stops exactly the tasks an independent
// median rule written here stops, fed the same evaluations in order.
TEST_F(EarlyStopRun, TheMedianRuleStopsWhatTheMedianRuleStops) {
  WriteWorkload("median: {metric: eval_loss, grace_steps: 4, min_samples: 2}");
  ASSERT_EQ(RunSaturn(), 0) << ReadFile(dir_ + "/out.log");
  std::vector<Event> events = ParseEventLines(ReadFile(dir_ + "/run/events.jsonl"), "events");
  test::ReferenceMedian median(4, 2, 16);
  std::set<std::string> expected, stopped;
  std::set<std::pair<std::string, long>> seen;
  for (const Event& e : events) {
    if (e.kind == EventKind::kTaskEvaluated && !expected.count(e.task)) {
      long step = e.extra["step"].get<long>();
      if (seen.emplace(e.task, step).second &&
          median.Stops(e.task, step, e.extra["eval_loss"].get<double>())) {
        expected.insert(e.task);
      }
    }
    if (e.kind == EventKind::kTaskEarlyStopped) {
      stopped.insert(e.task);
      EXPECT_EQ(e.extra["rule"], "median");
    }
  }
  EXPECT_FALSE(expected.empty()) << "the reference stops nothing: the test cannot fail";
  EXPECT_EQ(stopped, expected);
  EXPECT_FALSE(stopped.count("t-lr1.0e-3"));
  json report = json::parse(ReadFile(dir_ + "/run/report.json"));
  for (const json& t : report["tasks"])
    EXPECT_EQ(t["status"], stopped.count(t["task"]) ? "stopped" : "finished") << t["task"];
}

// A grid written from its worst learning rate to its best (the fake
// worker's loss grows with |log10(lr) + 3|): in the order written, each
// task beats every one before it at each rung and ASHA stops none; in the
// order the workload reader shuffles it into (the default), ASHA stops some
// and the run trains fewer steps. The report lists the tasks as written.
TEST_F(EarlyStopRun, AGridWrittenWorstFirstStopsNothingUnlessShuffled) {
  const std::string worst_first = "1.0e+2, 1.0e+1, 1.0, 1.0e-1, 1.0e-2, 1.0e-3";
  const std::vector<std::string> written = {"t-lr1.0e+2", "t-lr1.0e+1", "t-lr1.0",
                                            "t-lr1.0e-1", "t-lr1.0e-2", "t-lr1.0e-3"};
  auto run = [&](const std::string& order) {
    fs::remove_all(dir_ + "/run");
    WriteWorkload("asha: {metric: eval_loss, grace_steps: 2, reduction_factor: 2" + order + "}",
                  worst_first);
    EXPECT_EQ(RunSaturn(), 0) << ReadFile(dir_ + "/out.log");
    std::vector<std::string> started;
    int stopped = 0;
    for (const Event& e : ParseEventLines(ReadFile(dir_ + "/run/events.jsonl"), "events")) {
      if (e.kind == EventKind::kTaskStarted) started.push_back(e.task);
      if (e.kind == EventKind::kTaskEarlyStopped) ++stopped;
    }
    long steps = 0;
    json report = json::parse(ReadFile(dir_ + "/run/report.json"));
    std::vector<std::string> listed;
    for (const json& t : report["tasks"]) {
      steps += t["steps_done"].get<long>();
      listed.push_back(t["task"]);
    }
    // The report lists them as written, whatever order they ran in.
    EXPECT_EQ(listed, written);
    return std::make_tuple(started, stopped, steps);
  };
  auto [written_order, written_stops, written_steps] = run(", order: written");
  EXPECT_EQ(written_order, written);
  EXPECT_EQ(written_stops, 0);
  EXPECT_EQ(written_steps, 6 * 16);
  auto [shuffled_order, shuffled_stops, shuffled_steps] = run("");
  EXPECT_NE(shuffled_order, written_order);
  EXPECT_GE(shuffled_stops, 1);
  EXPECT_LT(shuffled_steps, written_steps);
}

// saturn serve's task list (saturn status, the dashboard) shows a shuffled
// submission's tasks as written, whatever order they were planned and run
// in, as the report does.
TEST(EarlyStopService, StatusListsAShuffledSubmissionAsWritten) {
  const std::string dir = test::OwnTestDir("early_stop_service");
  fs::create_directories(dir + "/project");
  WriteFileAtomic(dir + "/project/corpus.txt", std::string(3000, 'z'));
  WriteFileAtomic(dir + "/cluster.yaml", "nodes: [{name: n0, gpus: 1, gpu_memory_gib: 1}]\n");
  ::setenv("FAKE_STEP_S", "0.02", 1);
  RunOptions options;
  options.progress = false;
  options.profiler.worker = SATURN_SOURCE_DIR "/tests/testing/fake_worker.sh";
  options.profiler.cache_path = dir + "/cache.sqlite";
  ServiceSource source;
  source.state_dir = dir + "/state";
  source.cluster_path = dir + "/cluster.yaml";
  SteadyClock clock;
  std::unique_ptr<saturn::Run> run = saturn::Run::OpenService(source, options, clock);
  const std::vector<std::string> written = {"t-lr1.0e+2", "t-lr1.0e+1", "t-lr1.0",
                                            "t-lr1.0e-1", "t-lr1.0e-2", "t-lr1.0e-3"};
  Submission submission{0, "w.yaml", dir + "/project",
                        "tasks:\n  - name: t\n"
                        "    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}\n"
                        "    data: {type: text, path: corpus.txt}\n    batch_size: 4\n"
                        "    optimizer: {type: sgd, lr: 0.1}\n    steps: 8\n    eval: {every: 2}\n"
                        "    sweep: {optimizer.lr: [1.0e+2, 1.0e+1, 1.0, 1.0e-1, 1.0e-2, 1.0e-3]}\n"
                        "early_stop: {asha: {grace_steps: 2}}\n"};
  Workload workload = run->CheckSubmission(submission);
  std::vector<std::string> read;
  for (const WorkloadTask& t : workload.tasks)
    read.push_back(t.name);
  EXPECT_NE(read, written) << "the reader did not shuffle them: the test cannot fail";
  ASSERT_EQ(run->Submit(submission, std::move(workload)).kind, RunAnswer::kDone);
  auto listed = [&] {
    std::vector<std::string> names;
    for (const TaskView& v : run->Tasks())
      if (IsEnded(v.status)) names.push_back(v.name);
    return names;
  };
  Deadline deadline(clock, 120.0);
  RunHooks hooks;
  hooks.each_turn = [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); };
  hooks.stop = [&] { return listed().size() == written.size() || deadline.Expired(); };
  run->Drive(hooks);
  ::unsetenv("FAKE_STEP_S");
  EXPECT_EQ(listed(), written);
}

// A task cancelled and replaced by a new one of its name (saturn serve) is
// a new trial to the rule: its evaluations at steps the old one reached are
// judged, live and when a restart replays the log; a diverged evaluation
// (null in the log: JSON has no NaN) replays as the worst.
TEST(EarlyStopper, AReplacedTaskIsANewTrialLiveAndOnReplay) {
  Workload w;
  for (const char* name : {"a", "b", "c"}) {
    WorkloadTask t;
    t.name = name;
    t.steps = 16;
    t.stop_group = "g";
    t.spec = {{"eval", {{"every", 2}}}};
    t.early_stop.rule = "asha";
    t.early_stop.grace_steps = 2;
    w.tasks.push_back(t);
  }
  const WorkloadTask &a = w.tasks[0], &b = w.tasks[1], &c = w.tasks[2];
  EarlyStopper live;
  // At the rung of step 2, each better than every one before it: none stops.
  EXPECT_FALSE(live.OnEvaluation(a, 2, 2.0, -1));
  EXPECT_FALSE(live.OnEvaluation(b, 2, 1.0, -1));
  EXPECT_FALSE(live.OnEvaluation(c, 2, 0.5, -1));
  live.Forget("c");
  // The new c, worst at the rung: stopped (without Forget, step 2 was seen).
  std::optional<EarlyStopper::Stop> stop = live.OnEvaluation(c, 2, 9.0, -1);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->value, 9.0);

  auto eval = [](const std::string& task, long step, const nlohmann::json& loss) {
    Event e;
    e.kind = EventKind::kTaskEvaluated;
    e.task = task;
    e.extra = {{"step", step}, {"eval_loss", loss}, {"eval_s", 0.0}};
    return e;
  };
  Event arrived;
  arrived.kind = EventKind::kTaskArrived;
  arrived.task = "c";
  EarlyStopper replayed;
  replayed.Replay({eval("a", 2, 2.0), eval("b", 2, nullptr), eval("c", 2, 0.5), arrived}, w);
  ASSERT_TRUE(replayed.OnEvaluation(c, 2, 9.0, -1));
}

}  // namespace
}  // namespace saturn
