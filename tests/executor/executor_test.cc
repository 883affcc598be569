// `saturn run` end to end against the fake worker (tests/testing/fake_worker.sh),
// which speaks the worker protocol without training: the executor's dispatch,
// event log, crash-resume, retries and introspection. The same flows with the
// real engine are in tests/e2e.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/fs.h"
#include "common/process.h"
#include "contracts/cluster.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "protocol/checkpoint_files.h"
#include "report/run_costs.h"
#include "report/run_report.h"
#include "tests/testing/wait.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class Run : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_executor_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    WriteFileAtomic(dir_ + "/corpus.txt", std::string(3000, 'z'));
  }

  void Workload(int tasks, int steps, int gpus = 4) {
    std::string text = "cluster: {nodes: [{name: n0, gpus: " + std::to_string(gpus) +
                       ", gpu_memory_gib: 1}]}\ntasks:\n";
    for (int i = 0; i < tasks; ++i) {
      text += "  - name: t" + std::to_string(i) +
              "\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
              "\n    data: {type: text, path: corpus.txt}\n    batch_size: 4"
              "\n    optimizer: {type: sgd, lr: 0.1}\n    steps: " +
              std::to_string(steps) + "\n";
    }
    WriteFileAtomic(dir_ + "/w.yaml", text);
  }

  ProcessSpec Spec(const std::string& args, const std::string& rules = "") {
    WriteFileAtomic(dir_ + "/rules.txt", rules);
    ProcessSpec spec;
    spec.argv = {SATURN_BINARY_DIR "/src/cli/saturn",
                 "run",
                 dir_ + "/w.yaml",
                 "--run-dir",
                 dir_ + "/run",
                 "--cache",
                 dir_ + "/cache.sqlite"};
    for (size_t pos = 0; pos < args.size();) {
      size_t end = args.find(' ', pos);
      if (end == std::string::npos) end = args.size();
      if (end > pos) spec.argv.push_back(args.substr(pos, end - pos));
      pos = end + 1;
    }
    spec.env = {{"SATURN_WORKER", SATURN_SOURCE_DIR "/tests/testing/fake_worker.sh"},
                {"FAKE_WORKER_RULES", dir_ + "/rules.txt"},
                {"FAKE_WORKER_LOG", dir_ + "/calls.log"},
                {"FAKE_STEP_S", "0.2"}};
    spec.stdout_path = dir_ + "/out.log";
    spec.stderr_path = dir_ + "/out.log";
    return spec;
  }

  int RunSaturn(const std::string& args, const std::string& rules = "") {
    Process p = Process::Spawn(Spec(args, rules));
    return ExitCode(p.Wait());
  }

  // Starts a run and SIGKILLs the orchestrator once some task has finished
  // (others have checkpointed by then); its orphaned workers get SIGTERM and
  // checkpoint.
  void StartThenKillOnceATaskFinished(const std::string& args) {
    Process p = Process::Spawn(Spec(args));
    for (int i = 0; i < 400; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (fs::exists(dir_ + "/run/events.jsonl") &&
          ReadFile(dir_ + "/run/events.jsonl").find("task_finished") != std::string::npos) {
        break;
      }
    }
    ::kill(p.pid(), SIGKILL);
    p.Wait();
    ASSERT_EQ(test::WaitForOrphanedWorkers(dir_ + "/run"), "");  // they checkpoint
  }

  // Starts a run whose ddp trial on 2 devices hangs and SIGKILLs the
  // orchestrator while it waits for that trial: nothing has trained.
  void KillWhileProfiling() {
    Process p = Process::Spawn(Spec("--no-introspection", "ddp 2 hang\n"));
    for (int i = 0; i < 400; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (fs::exists(dir_ + "/calls.log") &&
          ReadFile(dir_ + "/calls.log").find("search ddp 2") != std::string::npos) {
        break;
      }
    }
    ::kill(p.pid(), SIGKILL);
    p.Wait();
  }

  std::vector<Event> Events() {
    return ParseEventLines(ReadFile(dir_ + "/run/events.jsonl"), "events.jsonl");
  }
  json Report() { return json::parse(ReadFile(dir_ + "/run/report.json")); }
  // report.json's tasks by name.
  std::map<std::string, json> ReportTasks() {
    std::map<std::string, json> tasks;
    json report = Report();  // kept: a loop over a temporary's member reads freed memory
    for (const json& t : report["tasks"])
      tasks[t["task"].get<std::string>()] = t;
    return tasks;
  }

  // No GPU ever runs two tasks at once.
  void ExpectNoSharing() {
    std::vector<Event> events = Events();
    double end = events.empty() ? 0 : events.back().t;
    std::map<std::pair<std::string, int>, std::vector<std::pair<double, double>>> per_gpu;
    for (const BusyInterval& b : BusyIntervals(events, end)) {
      for (int g : b.gpu_ids)
        per_gpu[{b.node, g}].push_back({b.start, b.end});
    }
    for (auto& [gpu, spans] : per_gpu) {
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i) {
        EXPECT_GE(spans[i].first, spans[i - 1].second) << "GPU " << gpu.second << " shared";
      }
    }
  }

  std::string dir_;
};

TEST_F(Run, TrainsEveryTaskToItsStepsAndNeverSharesADevice) {
  Workload(4, 10);
  ASSERT_EQ(RunSaturn("--no-introspection"), 0) << ReadFile(dir_ + "/out.log");
  json report = Report();
  ASSERT_EQ(report["tasks"].size(), 4u);
  for (const json& t : report["tasks"]) {
    EXPECT_EQ(t["status"], "finished") << t["task"];
    EXPECT_EQ(t["steps_done"], 10);
    EXPECT_FALSE(t["loss_curve"].empty());
    EXPECT_TRUE(fs::exists(dir_ + "/run/tasks/" + t["task"].get<std::string>() + "/model.pt"));
  }
  // What each task's folder holds on disk (model.pt at least), and the sum.
  long long disk = 0;
  for (const json& t : report["tasks"]) {
    const std::string folder = dir_ + "/run/tasks/" + t["task"].get<std::string>();
    EXPECT_EQ(t["disk_bytes"].get<long long>(), FolderBytes(folder)) << t["task"];
    EXPECT_GE(t["disk_bytes"].get<long long>(),
              static_cast<long long>(fs::file_size(folder + "/model.pt")));
    disk += t["disk_bytes"].get<long long>();
  }
  EXPECT_EQ(report["disk_bytes"].get<long long>(), disk);
  // Every task's measured pace against its profiled one (its value is the
  // machine's: only that it is there).
  for (const json& t : report["tasks"])
    EXPECT_GT(t["slowdown_vs_profile"].get<double>(), 0) << t["task"];
  EXPECT_EQ(report["slowdown_vs_profile"]["tasks"], 4);
  EXPECT_TRUE(fs::exists(dir_ + "/run/report.html"));
  EXPECT_TRUE(fs::exists(dir_ + "/run/plan-0.json"));
  ExpectNoSharing();
  // A second run in the same folder must not clobber it.
  EXPECT_EQ(RunSaturn(""), 2);
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("a run already lives here"));
}

TEST_F(Run, ResumesAfterTheOrchestratorIsKilled) {
  Workload(3, 30);
  StartThenKillOnceATaskFinished("--no-introspection --checkpoint-every 5");
  std::vector<Event> before = Events();
  std::set<std::string> finished_before;
  for (const Event& e : before) {
    if (e.kind == EventKind::kTaskFinished) finished_before.insert(e.task);
  }
  ASSERT_FALSE(finished_before.empty());
  ASSERT_LT(finished_before.size(), 3u) << "the run ended before it could be killed";
  ASSERT_EQ(RunSaturn("--resume --no-introspection --checkpoint-every 5"), 0)
      << ReadFile(dir_ + "/out.log");
  std::vector<Event> after = Events();
  bool resumed = false;
  for (size_t i = before.size(); i < after.size(); ++i) {
    const Event& e = after[i];
    resumed = resumed || e.kind == EventKind::kResumed;
    if (e.kind == EventKind::kTaskStarted) {
      EXPECT_FALSE(finished_before.count(e.task)) << e.task << " finished but was run again";
      EXPECT_EQ(e.extra["step"].get<long>() % 5, 0);  // from a checkpoint
    }
  }
  EXPECT_TRUE(resumed);
  json report = Report();  // kept: a loop over a temporary's member reads freed memory
  for (const json& t : report["tasks"])
    EXPECT_EQ(t["status"], "finished");
}

// A damaged newest checkpoint is never loaded: the resume sets it aside,
// logs it, and continues from the good one before it (what the worker would
// refuse to load, the executor does not hand it).
TEST_F(Run, AResumeSkipsADamagedCheckpointForThePreviousGoodOne) {
  Workload(1, 80, /*gpus=*/1);
  std::string rules = "single 1 ok 0.05\n";
  std::string args = "--no-introspection --checkpoint-every 4";
  std::string dir = dir_ + "/run/tasks/t0/checkpoints";
  Process p = Process::Spawn(Spec(args, rules));
  for (int i = 0; i < 400 && !fs::exists(dir + "/checkpoint-12"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(p.pid(), SIGKILL);
  p.Wait();
  ASSERT_EQ(test::WaitForOrphanedWorkers(dir_ + "/run"), "");  // the worker checkpoints
  ASSERT_TRUE(fs::exists(dir + "/checkpoint-12"));
  // The fake worker's checkpoints get manifests, as the engine writes them.
  std::vector<long> steps;
  for (const auto& e : fs::directory_iterator(dir)) {
    long step = CheckpointStepOf(e.path().filename().string());
    if (step < 0) continue;
    steps.push_back(step);
    std::string partial = e.path().string() + ".partial";
    fs::create_directories(partial);
    WriteCheckpointFile(partial, "meta.json", ReadFile(e.path().string() + "/meta.json"));
    PublishCheckpoint(partial, e.path().string(), step);
  }
  std::sort(steps.rbegin(), steps.rend());
  ASSERT_GE(steps.size(), 2u);
  ASSERT_LT(steps[0], 80) << "the run ended before it could be killed";
  std::string newest = CheckpointFolder(dir, steps[0]);
  std::string meta = ReadFile(newest + "/meta.json");
  meta[meta.find("step")] = 'S';  // a bit flipped on disk
  WriteFileAtomic(newest + "/meta.json", meta);
  size_t before = Events().size();

  ASSERT_EQ(RunSaturn("--resume " + args, rules), 0) << ReadFile(dir_ + "/out.log");
  std::vector<Event> after = Events();
  std::vector<Event> skipped, started;
  for (size_t i = before; i < after.size(); ++i) {
    if (after[i].kind == EventKind::kCheckpointSkipped) skipped.push_back(after[i]);
    if (after[i].kind == EventKind::kTaskStarted) started.push_back(after[i]);
  }
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].task, "t0");
  EXPECT_EQ(skipped[0].extra["step"], steps[0]);
  EXPECT_EQ(skipped[0].extra["from_step"], steps[1]);
  EXPECT_THAT(skipped[0].extra["problem"].get<std::string>(), HasSubstr("meta.json: crc32c"));
  ASSERT_FALSE(started.empty());
  EXPECT_EQ(started[0].extra["step"], steps[1]);
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("is damaged"));
  EXPECT_TRUE(fs::exists(newest + ".corrupt"));
  EXPECT_EQ(Report()["tasks"][0]["status"], "finished");
}

// Killed while profiling, before the first plan: the resume starts the run
// over (it failed on the missing plan before).
TEST_F(Run, AResumeOfARunKilledWhileProfilingStartsItOver) {
  Workload(2, 6);
  KillWhileProfiling();
  ASSERT_TRUE(fs::exists(dir_ + "/run/state.sqlite"));
  ASSERT_FALSE(fs::exists(dir_ + "/run/plan-0.json")) << "profiling was over";
  ASSERT_EQ(RunSaturn("--resume --no-introspection"), 0) << ReadFile(dir_ + "/out.log");
  json report = Report();  // kept: a loop over a temporary's member reads freed memory
  for (const json& t : report["tasks"])
    EXPECT_EQ(t["status"], "finished") << t["task"];
}

// A run refused before it trained leaves nothing that blocks its folder:
// the same command can be given again (issue 41: it said "a run already
// lives here" although nothing had trained, and --fresh left a .old-1).
TEST_F(Run, ARunRefusedBeforeTrainingLeavesItsFolderReusable) {
  Workload(1, 4, 2);
  std::string nothing_fits;
  for (const char* c : {"single 1", "spill 1", "ddp 2", "fsdp 2", "pipeline 2"})
    nothing_fits += std::string(c) + " infeasible needs 9 GiB per device, has 1 GiB\n";
  EXPECT_EQ(RunSaturn("--no-introspection", nothing_fits), 2);
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("feasible"));
  EXPECT_FALSE(fs::exists(dir_ + "/run")) << "the folder it made is gone";
  EXPECT_EQ(RunSaturn("--no-introspection", nothing_fits), 2);
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), Not(HasSubstr("a run already lives here")));
  // A folder the user made is kept, emptied of what the run wrote.
  fs::create_directories(dir_ + "/run");
  WriteFileAtomic(dir_ + "/run/notes.txt", "mine");
  EXPECT_EQ(RunSaturn("--no-introspection", nothing_fits), 2);
  EXPECT_EQ(ReadFile(dir_ + "/run/notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(dir_ + "/run/state.sqlite"));
  // The devices grew (no infeasible answers now; the cache kept the old ones).
  fs::remove(dir_ + "/cache.sqlite");
  ASSERT_EQ(RunSaturn("--no-introspection"), 0) << ReadFile(dir_ + "/out.log");
  EXPECT_FALSE(fs::exists(dir_ + "/run.old-1"));
  EXPECT_EQ(Report()["tasks"][0]["status"], "finished");
}

// A run killed while profiling never trained: the same command (without
// --resume) starts it afresh in its folder.
TEST_F(Run, ARunKilledWhileProfilingIsStartedAfreshByTheSameCommand) {
  Workload(2, 6);
  KillWhileProfiling();
  ASSERT_TRUE(fs::exists(dir_ + "/run/state.sqlite"));
  ASSERT_EQ(RunSaturn("--no-introspection"), 0) << ReadFile(dir_ + "/out.log");
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("never started training"));
  EXPECT_FALSE(fs::exists(dir_ + "/run.old-1"));
  json report = Report();
  for (const json& t : report["tasks"])
    EXPECT_EQ(t["status"], "finished") << t["task"];
}

// A run folder written by the release before one Run took over `saturn run`
// and `saturn serve` (95885c9; fixtures/make_previous_release_run.sh):
// long-seed1 finished, long-seed2 checkpointed when the run was stopped,
// short never started; its state says "waiting" where today's says "queued".
TEST_F(Run, ARunMadeByThePreviousReleaseResumes) {
  std::string fixture = SATURN_SOURCE_DIR "/tests/executor/fixtures/previous-release-run.tar.gz";
  ASSERT_EQ(std::system(("tar xzf '" + fixture + "' -C '" + dir_ + "'").c_str()), 0);
  std::vector<Event> before = Events();
  ASSERT_FALSE(before.empty());
  ASSERT_EQ(before.back().kind, EventKind::kRunInterrupted);
  std::set<std::string> finished_before;
  for (const Event& e : before) {
    if (e.kind == EventKind::kTaskFinished) finished_before.insert(e.task);
  }
  ASSERT_EQ(finished_before, (std::set<std::string>{"long-seed1"}));
  ASSERT_EQ(RunSaturn("--resume --no-introspection --checkpoint-every 5"), 0)
      << ReadFile(dir_ + "/out.log");
  std::vector<Event> after = Events();
  std::map<std::string, long> resumed_from;
  for (size_t i = before.size(); i < after.size(); ++i) {
    const Event& e = after[i];
    EXPECT_NE(e.task, "long-seed1") << "a finished task ran again";
    if (e.kind == EventKind::kTaskStarted && !resumed_from.count(e.task)) {
      resumed_from[e.task] = e.extra["step"].get<long>();
    }
  }
  EXPECT_EQ(resumed_from.size(), 2u);
  EXPECT_GE(resumed_from["long-seed2"], 10) << "it started over instead of from its checkpoint";
  EXPECT_EQ(resumed_from["short"], 0);
  json report = Report();
  ASSERT_EQ(report["tasks"].size(), 3u);
  for (const json& t : report["tasks"]) {
    EXPECT_EQ(t["status"], "finished") << t["task"];
    EXPECT_EQ(t["steps_done"], t["steps"]) << t["task"];
  }
}

TEST_F(Run, AResumedWorkloadMayAddTasksButNotChangeOnesThatStarted) {
  Workload(3, 30);
  std::string original = ReadFile(dir_ + "/w.yaml");
  StartThenKillOnceATaskFinished("--no-introspection --checkpoint-every 5");
  size_t before = Events().size();
  std::set<std::string> finished_before;
  for (const Event& e : Events()) {
    if (e.kind == EventKind::kTaskFinished) finished_before.insert(e.task);
  }
  ASSERT_LT(finished_before.size(), 3u) << "the run ended before it could be killed";
  // t0 has started: changing its learning rate is refused, naming it.
  std::string changed = original;
  changed.replace(changed.find("lr: 0.1"), 7, "lr: 0.2");
  WriteFileAtomic(dir_ + "/w.yaml", changed);
  EXPECT_EQ(RunSaturn("--resume --no-introspection --checkpoint-every 5"), 2);
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("t0 (changed)"));
  // Adding a task is not: it is profiled and planned in, the rest resume.
  std::string added = original +
                      "  - name: t3\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, "
                      "seq_len: 8}\n    data: {type: text, path: corpus.txt}\n    batch_size: 4"
                      "\n    optimizer: {type: sgd, lr: 0.05}\n    steps: 10\n";
  WriteFileAtomic(dir_ + "/w.yaml", added);
  ASSERT_EQ(RunSaturn("--resume --no-introspection --checkpoint-every 5"), 0)
      << ReadFile(dir_ + "/out.log");
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("from step"));
  std::vector<Event> after = Events();
  bool arrived = false;
  for (size_t i = before; i < after.size(); ++i) {
    const Event& e = after[i];
    arrived = arrived || (e.kind == EventKind::kTaskArrived && e.task == "t3");
    if (e.kind == EventKind::kTaskStarted) {
      EXPECT_FALSE(finished_before.count(e.task)) << e.task << " finished but was run again";
    }
  }
  EXPECT_TRUE(arrived);
  json report = Report();
  ASSERT_EQ(report["tasks"].size(), 4u);
  for (const json& t : report["tasks"])
    EXPECT_EQ(t["status"], "finished") << t["task"];
  ExpectNoSharing();
}

TEST_F(Run, AFailingTaskIsRetriedThenFailsWhileTheOthersFinish) {
  Workload(3, 6);
  // Every configuration of t1 crashes: the fake's rules match technique and
  // GPU count, so make all of them crash for the crash-prone profile below.
  WriteFileAtomic(dir_ + "/profile.csv",
                  "task,technique,gpus,runtime_s\nt0,ddp,2,1\nt1,fsdp,2,1\nt2,ddp,2,1\n");
  int status = RunSaturn("--no-introspection --max-retries 1 --profile " + dir_ + "/profile.csv",
                         "fsdp 2 crash_at 2\n");
  EXPECT_EQ(status, 1);
  std::map<std::string, json> tasks = ReportTasks();
  EXPECT_EQ(tasks["t0"]["status"], "finished");
  EXPECT_EQ(tasks["t2"]["status"], "finished");
  EXPECT_EQ(tasks["t1"]["status"], "failed");
  EXPECT_EQ(tasks["t1"]["attempts"], 2);
  EXPECT_EQ(tasks["t1"]["failures"], 2);
  // A task that ran once made one attempt (the report said 0: failures only).
  EXPECT_EQ(tasks["t0"]["attempts"], 1);
  EXPECT_EQ(tasks["t0"]["failures"], 0);
  EXPECT_THAT(tasks["t1"]["error"].get<std::string>(), HasSubstr("crashed at step"));
  EXPECT_THAT(ReadFile(dir_ + "/run/report.html"), HasSubstr("crashed at step"));
}

// A task whose training loss stops being finite (a learning rate too high)
// fails at once, without the retries that would diverge again, keeping its
// checkpoint; the others finish. (The run state's loss curve refused the
// NaN, and the whole run died of it.)
TEST_F(Run, ADivergedTaskFailsAtOnceWithoutRetries) {
  Workload(2, 8);
  WriteFileAtomic(dir_ + "/profile.csv",
                  "task,technique,gpus,runtime_s\nt0,single,1,1\nt1,ddp,2,1\n");
  int status = RunSaturn("--no-introspection --max-retries 3 --profile " + dir_ + "/profile.csv",
                         "ddp 2 nan_at 3\n");
  EXPECT_EQ(status, 1);
  std::map<std::string, json> tasks = ReportTasks();
  EXPECT_EQ(tasks["t0"]["status"], "finished");
  EXPECT_EQ(tasks["t1"]["status"], "failed");
  EXPECT_EQ(tasks["t1"]["attempts"], 1);
  EXPECT_THAT(tasks["t1"]["error"].get<std::string>(),
              HasSubstr("diverged: its training loss is nan at step 3"));
  EXPECT_GE(tasks["t1"]["steps_done"].get<long>(), 3);
  for (const auto& [step, loss] :
       tasks["t1"]["loss_curve"].get<std::vector<std::pair<long, double>>>())
    EXPECT_LT(step, 3);  // a curve of finite points
}

// Bug: a worker that exited 0 with a result breaking the protocol was
// recorded as "exit 1: <log tail>": the protocol error was overwritten.
TEST_F(Run, AResultThatBreaksTheProtocolIsTheFailuresMessage) {
  Workload(1, 2);
  WriteFileAtomic(dir_ + "/profile.csv", "task,technique,gpus,runtime_s\nt0,single,1,1\n");
  EXPECT_EQ(RunSaturn("--no-introspection --max-retries 0 --profile " + dir_ + "/profile.csv",
                      "single 1 bad_result\n"),
            1);
  json task = Report()["tasks"][0];
  EXPECT_EQ(task["status"], "failed");
  std::string error = task["error"].get<std::string>();
  EXPECT_THAT(error, HasSubstr("exited 0 but its result breaks the protocol"));
  EXPECT_THAT(error, HasSubstr("completed_steps"));
  EXPECT_THAT(error, ::testing::Not(HasSubstr("exit 1")));
}

// A second run into a folder with a run is refused, naming --fresh, which
// moves the earlier run aside (never deletes it) and starts afresh.
TEST_F(Run, FreshStartsOverAndKeepsTheEarlierRunAside) {
  Workload(1, 2);
  std::string profile = " --no-introspection --profile " + dir_ + "/profile.csv";
  WriteFileAtomic(dir_ + "/profile.csv", "task,technique,gpus,runtime_s\nt0,single,1,1\n");
  ASSERT_EQ(RunSaturn(profile), 0) << ReadFile(dir_ + "/out.log");
  EXPECT_EQ(RunSaturn(profile), 2);
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("start afresh with --fresh"));
  ASSERT_EQ(RunSaturn(profile + " --fresh"), 0) << ReadFile(dir_ + "/out.log");
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("--fresh: moved the earlier run aside to"));
  EXPECT_TRUE(fs::exists(dir_ + "/run.old-1/state.sqlite"));
  EXPECT_TRUE(fs::exists(dir_ + "/run.old-1/report.json"));
  EXPECT_EQ(Report()["tasks"][0]["status"], "finished");
  EXPECT_EQ(RunSaturn(profile + " --fresh --resume"), 2) << "one or the other";
}

TEST_F(Run, AKeptPlanIsFollowedAsReTimed) {
  // Two GPUs, single-device tasks. The profile says x is short (1 s), so
  // the plan queues x then b on one GPU and c on the other; in truth x
  // takes 8 s. Blind, b waits behind x (~10 s). With introspection but a
  // threshold no plan can beat, every re-plan keeps the plan, re-timed: b
  // starts on the GPU c frees (~8 s), as the simulator has it.
  std::string tasks;
  for (const char* name : {"x", "b", "c"}) {
    tasks += std::string("  - {name: ") + name +
             ", model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic},"
             " batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 16}\n";
  }
  WriteFileAtomic(dir_ + "/w.yaml", "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n" + tasks);
  WriteFileAtomic(
      dir_ + "/profile.csv",
      "task,technique,gpus,runtime_s\nx,single,1,1.0\nb,single,1,2.0\nc,single,1,2.0\n");
  const std::string truth = "x/single 1 ok 0.5\nb/single 1 ok 0.125\nc/single 1 ok 0.125\n";
  std::string profile = " --profile " + dir_ + "/profile.csv";
  ASSERT_EQ(RunSaturn("--no-introspection" + profile, truth), 0) << ReadFile(dir_ + "/out.log");
  double blind = Report()["makespan_s"];
  fs::remove_all(dir_ + "/run");
  ASSERT_EQ(RunSaturn("--interval 0.5 --threshold 1000 --time-limit 0.5" + profile, truth), 0)
      << ReadFile(dir_ + "/out.log");
  json report = Report();
  EXPECT_EQ(report["plan_switches"].get<int>(), 0);
  EXPECT_LT(report["makespan_s"].get<double>(), 0.9 * blind) << "blind " << blind;
  ExpectNoSharing();
}

TEST_F(Run, IntrospectionRecoversFromAWrongProfile) {
  // Two GPUs. The profile says a is short (1 s), so the plan queues a and b
  // on one GPU and c on the other; in truth a takes 12 s (4.8 s on two
  // GPUs). Following the plan blindly ends at ~16 s; seeing a run slow, the
  // re-plan moves it to both GPUs once c is done (~11 s).
  WriteFileAtomic(dir_ + "/w.yaml",
                  "cluster: {nodes: [{name: n0, gpus: 2}]}\ntasks:\n"
                  "  - {name: a, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic},"
                  " batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 16}\n"
                  "  - {name: b, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic},"
                  " batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 16}\n"
                  "  - {name: c, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic},"
                  " batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 16}\n");
  WriteFileAtomic(dir_ + "/profile.csv",
                  "task,technique,gpus,runtime_s\n"
                  "a,single,1,1.0\na,ddp,2,0.6\nb,single,1,4.0\nb,ddp,2,2.4\nc,single,1,5.0\n");
  const std::string truth =
      "a/single 1 ok 0.75\na/ddp 2 ok 0.3\nb/single 1 ok 0.25\nb/ddp 2 ok 0.15\n"
      "c/single 1 ok 0.3125\n";
  std::string profile = " --profile " + dir_ + "/profile.csv";
  ASSERT_EQ(RunSaturn("--no-introspection" + profile, truth), 0) << ReadFile(dir_ + "/out.log");
  double blind = Report()["makespan_s"];
  fs::remove_all(dir_ + "/run");
  ASSERT_EQ(RunSaturn("--interval 0.5 --threshold 0.2 --switch-cost 0.2 --time-limit 0.5" + profile,
                      truth),
            0)
      << ReadFile(dir_ + "/out.log");
  json report = Report();
  EXPECT_GT(report["plan_switches"].get<int>(), 0);
  EXPECT_LT(report["makespan_s"].get<double>(), 0.85 * blind);
  ExpectNoSharing();

  // The simulator, given the same belief and truth (in minutes: it observes
  // a task's speed after a minute), writes the same kinds with the same
  // fields (contracts/event_kinds.h; only a run's step numbers, losses and
  // timings are the run's alone).
  WriteFileAtomic(dir_ + "/belief.csv",
                  "task,technique,gpus,runtime_s\n"
                  "a,single,1,60\na,ddp,2,36\nb,single,1,240\nb,ddp,2,144\nc,single,1,300\n");
  WriteFileAtomic(dir_ + "/truth.csv",
                  "task,technique,gpus,runtime_s\n"
                  "a,single,1,720\na,ddp,2,288\nb,single,1,240\nb,ddp,2,144\nc,single,1,300\n");
  WriteFileAtomic(dir_ + "/c.yaml", "nodes: [{name: n0, gpus: 2}]\n");
  ProcessSpec simulate;
  simulate.argv = {SATURN_BINARY_DIR "/src/cli/saturn",
                   "simulate",
                   "--cluster",
                   dir_ + "/c.yaml",
                   "--profile",
                   dir_ + "/profile.csv",
                   "--truth",
                   dir_ + "/truth.csv",
                   "--interval",
                   "0.5",
                   "--threshold",
                   "0.2",
                   "--switch-cost",
                   "0.2",
                   "--time-limit",
                   "0.5",
                   "--events",
                   dir_ + "/sim.jsonl",
                   "--output",
                   dir_ + "/sim.json"};
  Process sim = Process::Spawn(simulate);
  ASSERT_EQ(ExitCode(sim.Wait()), 0);
  auto fields = [](const std::vector<Event>& trace, bool run) {
    std::map<std::string, std::set<std::string>> by_kind;
    for (const Event& e : trace) {
      json line = json::parse(EventToJsonLine(e));
      std::set<std::string>& names = by_kind[e.KindName()];
      for (const auto& [name, value] : line.items()) {
        const EventFields& f = FieldsOf(e.kind);
        bool run_only = std::find(f.run_only.begin(), f.run_only.end(), name) != f.run_only.end();
        EXPECT_TRUE(run || !run_only) << "the simulator wrote " << name << " in " << line;
        if (!run_only) names.insert(name);
      }
    }
    return by_kind;
  };
  auto real = fields(Events(), true);
  auto simulated =
      fields(ParseEventLines(ReadFile(dir_ + "/sim.jsonl"), "sim.jsonl"), /*run=*/false);
  for (const char* kind :
       {"plan", "plan_switched", "task_started", "task_stopped", "task_finished", "run_finished"}) {
    ASSERT_TRUE(real.count(kind)) << kind;
    ASSERT_TRUE(simulated.count(kind)) << kind;
    EXPECT_EQ(real[kind], simulated[kind]) << kind;
  }
}

TEST_F(Run, AClusterFromAnAllocationNeedsTheSlurmBackend) {
  Workload(1, 4);
  std::string text = ReadFile(dir_ + "/w.yaml");
  text.replace(0, text.find('\n'), "cluster: {from: slurm, device: cpu}");
  WriteFileAtomic(dir_ + "/w.yaml", text);
  EXPECT_EQ(RunSaturn(""), 2);
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("cluster.from"));
  EXPECT_THAT(ReadFile(dir_ + "/out.log"), HasSubstr("--backend slurm"));
  EXPECT_FALSE(fs::exists(dir_ + "/run/state.sqlite"));
}

// A requeued job may get other nodes: the run plans what is left for them,
// from the tasks' checkpoints.
TEST_F(Run, ResumedOnOtherNodesPlansTheRestForThem) {
  Workload(3, 30);
  std::string text = ReadFile(dir_ + "/w.yaml");
  text.replace(0, text.find('\n'), "cluster: c.yaml");
  WriteFileAtomic(dir_ + "/w.yaml", text);
  WriteFileAtomic(dir_ + "/c.yaml", "nodes: [{name: n0, gpus: 2, gpu_memory_gib: 1}]\n");
  StartThenKillOnceATaskFinished("--no-introspection --checkpoint-every 5");
  EXPECT_THAT(ReadFile(dir_ + "/run/cluster.yaml"), HasSubstr("name: n0"));
  size_t before = Events().size();
  // One node of one device now: two-device configurations are gone.
  WriteFileAtomic(dir_ + "/c.yaml", "nodes: [{name: n7, gpus: 1, gpu_memory_gib: 1}]\n");
  ASSERT_EQ(RunSaturn("--resume --no-introspection --checkpoint-every 5"), 0)
      << ReadFile(dir_ + "/out.log");
  std::vector<Event> after = Events();
  bool replanned = false;
  int started = 0;
  for (size_t i = before; i < after.size(); ++i) {
    const Event& e = after[i];
    replanned = replanned ||
                (e.kind == EventKind::kPlanSwitched && e.extra.value("why", "") == "other nodes");
    if (e.kind == EventKind::kTaskStarted) {
      ++started;
      EXPECT_EQ(e.node, "n7") << e.task;
      EXPECT_EQ(e.gpus, 1) << e.task;
      EXPECT_EQ(e.extra["step"].get<long>() % 5, 0) << e.task;  // from a checkpoint
    }
  }
  EXPECT_TRUE(replanned);
  EXPECT_GT(started, 0) << "the run ended before it could be killed";
  json report = Report();  // kept: a loop over a temporary's member reads freed memory
  for (const json& t : report["tasks"])
    EXPECT_EQ(t["status"], "finished") << t["task"];
  EXPECT_THAT(ReadFile(dir_ + "/run/cluster.yaml"), HasSubstr("name: n7"));
}

TEST_F(Run, UsersOwnProgramsAreProfiledPlannedAndRun) {
  // examples/byo/command: a shell program speaking the command contract.
  ProcessSpec spec;
  spec.argv = {SATURN_BINARY_DIR "/src/cli/saturn",
               "run",
               SATURN_SOURCE_DIR "/examples/byo/command/workload.yaml",
               "--run-dir",
               dir_ + "/run",
               "--cache",
               dir_ + "/cache.sqlite",
               "--no-introspection"};
  spec.env = {{"WORK", "0.02"}};
  spec.stdout_path = dir_ + "/out.log";
  spec.stderr_path = dir_ + "/out.log";
  ASSERT_EQ(ExitCode(Process::Spawn(spec).Wait()), 0) << ReadFile(dir_ + "/out.log");
  json report = Report();
  ASSERT_EQ(report["tasks"].size(), 3u);
  for (const json& t : report["tasks"]) {
    EXPECT_EQ(t["status"], "finished");
    std::string task = t["task"];
    EXPECT_EQ(ReadFile(dir_ + "/run/tasks/" + task + "/checkpoints/latest"), "40\n");
  }
  std::string profile = ReadFile(dir_ + "/run/profile.csv");
  EXPECT_THAT(profile, HasSubstr("my-script-seed1,ddp,1,"));
  EXPECT_THAT(profile, HasSubstr("my-script-seed1,ddp,2,"));
  ExpectNoSharing();
}

}  // namespace
}  // namespace saturn

namespace saturn {
namespace {

// Mixed GPU types (issue 29): a slow node (1 thread per device) and a fast
// one (2 threads: the fake worker's steps take half as long). Every task is
// profiled on each type, planned for one, runs only on a node of that type,
// and takes about its type's profiled time there.
TEST_F(Run, OnTwoGpuTypesEachTaskRunsOnItsPlannedTypeForAboutItsTypesTime) {
  std::string text =
      "cluster: {nodes: [{name: slow0, gpus: 1, threads_per_gpu: 1, gpu_type: slow},"
      " {name: fast0, gpus: 1, threads_per_gpu: 2, gpu_type: fast}]}\ntasks:\n";
  for (int i = 0; i < 4; ++i) {
    text += "  - name: t" + std::to_string(i) +
            "\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
            "\n    data: {type: text, path: corpus.txt}\n    batch_size: 4"
            "\n    optimizer: {type: sgd, lr: 0.1}\n    techniques: [single]\n    steps: 15\n";
  }
  WriteFileAtomic(dir_ + "/w.yaml", text);
  ASSERT_EQ(RunSaturn("--no-introspection"), 0) << ReadFile(dir_ + "/out.log");
  ProfileTable profile =
      LoadProfileFile(dir_ + "/run/profile.csv", LoadClusterFile(dir_ + "/run/cluster.yaml"));
  Plan plan = LoadPlanFile(dir_ + "/run/plan-0.json");
  std::map<std::string, std::string> type_of_node = {{"slow0", "slow"}, {"fast0", "fast"}};
  std::set<std::string> types_used;
  for (const PlanTask& t : plan.tasks) {
    EXPECT_EQ(t.gpu_type, type_of_node.at(t.node)) << t.task;
    types_used.insert(t.gpu_type);
  }
  EXPECT_EQ(types_used.size(), 2u) << "both types train";
  for (const json& t : Report()["tasks"]) {
    std::string name = t["task"];
    ASSERT_EQ(t["status"], "finished") << name;
    std::string type = type_of_node.at(t["node"].get<std::string>());
    const PlanTask* planned = nullptr;
    for (const PlanTask& p : plan.tasks)
      if (p.task == name) planned = &p;
    ASSERT_NE(planned, nullptr);
    EXPECT_EQ(type, planned->gpu_type) << name << " ran on another type than planned";
    const ProfileRow* row = profile.Find(name, "single", 1, type);
    ASSERT_NE(row, nullptr) << name << " on " << type;
    double took = t["end_s"].get<double>() - t["start_s"].get<double>();
    EXPECT_GT(took, 0.5 * row->runtime_s) << name << " on " << type;
    EXPECT_LT(took, 2.0 * row->runtime_s) << name << " on " << type;
  }
  // The fast type measured faster.
  EXPECT_LT(profile.Find("t0", "single", 1, "fast")->runtime_s,
            profile.Find("t0", "single", 1, "slow")->runtime_s);
  ExpectNoSharing();
}

}  // namespace
}  // namespace saturn
