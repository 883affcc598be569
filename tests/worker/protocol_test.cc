// saturn-worker as the profiler and executor see it: results, progress
// lines, checkpoints, pre-emption and exit statuses (docs/worker.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <regex>
#include <thread>

#include "common/clock.h"
#include "common/fs.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

class Protocol : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::make_unique<TestDir>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    task_ = dir_->Write("task.json", TinyTask("gpt").dump());
  }
  std::vector<std::string> Search(const std::string& technique, int gpus) const {
    return {"search",
            "--task",
            task_,
            "--technique",
            technique,
            "--gpus",
            std::to_string(gpus),
            "--out",
            Path("result.json"),
            "--warmup",
            "1",
            "--measure",
            "2"};
  }
  std::vector<std::string> Execute(const std::string& technique, int gpus, int from, int to) const {
    return {"execute",
            "--task",
            task_,
            "--technique",
            technique,
            "--gpus",
            std::to_string(gpus),
            "--out",
            Path("result.json"),
            "--from-step",
            std::to_string(from),
            "--to-step",
            std::to_string(to),
            "--checkpoint-dir",
            Path("ck")};
  }
  WorkerRun Run(const std::vector<std::string>& args) const { return RunWorker(args, Path("log")); }
  std::string Path(const std::string& name) const { return dir_->Path(name); }
  nlohmann::json Result() const { return ReadJson(Path("result.json")); }

  std::unique_ptr<TestDir> dir_;
  std::string task_;
};

TEST_F(Protocol, SearchReportsStepTimeMemoryAndKnobs) {
  WorkerRun run = Run(Search("pipeline", 2));
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json result = Result();
  EXPECT_EQ(result["protocol"], 1);
  EXPECT_TRUE(result["feasible"]);
  EXPECT_EQ(result["technique"], "pipeline");
  EXPECT_EQ(result["gpus"], 2);
  EXPECT_GT(result["step_s"].get<double>(), 0.0);
  EXPECT_EQ(result["step_samples_s"].size(), 2u);
  ASSERT_EQ(result["peak_memory_bytes"].size(), 2u);
  EXPECT_GT(result["peak_memory_bytes"][1].get<int64_t>(), 0);
  EXPECT_TRUE(result["knobs"].contains("micro_batches"));
  EXPECT_EQ(result["knobs"]["partition"].size(), 3u);
  EXPECT_EQ(result["reason"], "");
  EXPECT_GT(result["model_flops_per_step"].get<double>(), 0.0);
  // What a launch costs besides steps: when the ranks were ready to build a
  // trainer (after start-up and rendezvous), building it, one checkpoint.
  double ready = result["ready_unix_s"].get<double>();
  EXPECT_GT(ready, UnixClock().Now() - 600);
  EXPECT_LT(ready, result["done_unix_s"].get<double>());
  EXPECT_LT(result["done_unix_s"].get<double>(), UnixClock().Now());
  EXPECT_GT(result["setup_s"].get<double>(), 0.0);
  EXPECT_GT(result["checkpoint_s"].get<double>(), 0.0);
  // The checkpoint written to time it is gone.
  EXPECT_FALSE(std::filesystem::exists(Path("result.json.checkpoint-probe")));
}

TEST_F(Protocol, ConfigurationsThatCannotRunAreInfeasibleNotErrors) {
  WorkerRun run = Run(Search("single", 2));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_FALSE(Result()["feasible"]);
  EXPECT_THAT(Result()["reason"].get<std::string>(), HasSubstr("exactly 1 device"));

  run = Run(Search("pipeline", 5));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_FALSE(Result()["feasible"]);
  EXPECT_THAT(Result()["reason"].get<std::string>(), HasSubstr("at least one block per device"));
}

TEST_F(Protocol, BadInputExitsTwoNamingTheProblem) {
  nlohmann::json task = TinyTask("gpt");
  task["model"].erase("heads");
  std::string bad = dir_->Write("bad.json", task.dump());
  std::vector<std::string> args = Search("single", 1);
  args[2] = bad;
  WorkerRun run = Run(args);
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr("bad.json: model.heads: missing (required)"));

  args[2] = dir_->Write("broken.json", "{");
  EXPECT_EQ(Run(args).status, 2);

  run = Run(Search("zero-bubble", 1));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr("unknown technique 'zero-bubble'"));

  run = Run({"search", "--task", task_});
  EXPECT_EQ(run.status, 2);

  std::vector<std::string> knobs = Execute("pipeline", 2, 0, 1);
  knobs.insert(knobs.end(), {"--knobs", "{\"micro_batches\": \"many\"}"});
  run = Run(knobs);
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr("micro_batches"));

  run = Run(Execute("single", 1, 4, 6));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr("checkpoint-4: no checkpoint here"));
}

TEST_F(Protocol, ExecutePrintsProgressAndCheckpointsAtTheEnd) {
  std::vector<std::string> args = Execute("ddp", 2, 0, 4);
  args.insert(args.end(), {"--checkpoint-every", "2", "--save-model", Path("model.pt")});
  WorkerRun run = Run(args);
  ASSERT_EQ(run.status, 0) << run.err;
  std::regex line(R"(saturn: step=(\d+) loss=([0-9.e+-]+) step_s=([0-9.e+-]+))");
  int lines = 0;
  for (std::sregex_iterator it(run.out.begin(), run.out.end(), line), end; it != end; ++it) {
    EXPECT_EQ(std::stoi((*it)[1]), lines);
    ++lines;
  }
  EXPECT_EQ(lines, 4);
  nlohmann::json result = Result();
  EXPECT_EQ(result["completed_steps"], 4);
  EXPECT_FALSE(result["preempted"]);
  EXPECT_EQ(result["checkpoint"], Path("ck") + "/checkpoint-4");
  EXPECT_EQ(result["losses"].size(), 4u);
  EXPECT_EQ(result["final_loss"], result["losses"][3]);
  EXPECT_TRUE(std::filesystem::exists(Path("ck/checkpoint-2/meta.json")));
  EXPECT_TRUE(std::filesystem::exists(Path("ck/checkpoint-4/block-00003.pt")));
  EXPECT_GT(std::filesystem::file_size(Path("model.pt")), 0u);

  run = Run(Execute("fsdp", 3, 4, 6));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("saturn: step=4 "));
  EXPECT_EQ(Result()["completed_steps"], 6);
}

// The evaluations' (step, value) from a worker's eval lines.
std::vector<std::pair<int, double>> EvalLines(const std::string& out, const std::string& metric) {
  std::regex line("saturn: eval_step=(\\d+) .*" + metric + "=([0-9.e+-]+)");
  std::vector<std::pair<int, double>> evals;
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    evals.push_back({std::stoi((*it)[1]), std::stod((*it)[2])});
  return evals;
}

// --best-dir keeps the model of the best evaluation so far, by --select:
// its step and value are those of the best eval line (over a resume too),
// and its model.pt is byte for byte the model of a run trained to that step.
TEST_F(Protocol, TheBestEvaluationsModelIsKept) {
  nlohmann::json task = TinyTask("gpt");
  task["eval"] = {{"every", 2}, {"batches", 2}};
  task_ = dir_->Write("task.json", task.dump());
  for (const std::string select : {"eval_loss:min", "eval_loss:max"}) {
    SCOPED_TRACE(select);
    std::filesystem::remove_all(Path("ck"));
    std::filesystem::remove_all(Path("best"));
    std::string out;
    for (auto [from, to] : {std::pair{0, 5}, std::pair{5, 8}}) {  // a resume between
      std::vector<std::string> args = Execute("single", 1, from, to);
      args.insert(args.end(), {"--best-dir", Path("best"), "--select", select});
      WorkerRun run = Run(args);
      ASSERT_EQ(run.status, 0) << run.err;
      out += run.out;
    }
    std::vector<std::pair<int, double>> evals = EvalLines(out, "eval_loss");
    ASSERT_EQ(evals.size(), 5u) << out;  // steps 2, 4, 5 (the first run's last), 6, 8
    bool max = select == "eval_loss:max";
    auto best = std::min_element(evals.begin(), evals.end(), [&](const auto& a, const auto& b) {
      return max ? a.second > b.second : a.second < b.second;
    });
    nlohmann::json kept = ReadJson(Path("best/best.json"));
    EXPECT_EQ(kept["step"], best->first);
    EXPECT_NEAR(kept["value"].get<double>(), best->second, 1e-5 * std::abs(best->second));
    EXPECT_EQ(kept["mode"], max ? "max" : "min");
    // The same task trained to that step alone: the same model.
    std::filesystem::remove_all(Path("ck"));
    std::vector<std::string> args = Execute("single", 1, 0, best->first);
    args.insert(args.end(), {"--save-model", Path("alone.pt")});
    ASSERT_EQ(Run(args).status, 0);
    EXPECT_EQ(ReadFile(Path("best/model.pt")), ReadFile(Path("alone.pt")));
  }
  // A bad --select is refused, naming the flag.
  std::vector<std::string> args = Execute("single", 1, 0, 2);
  args.insert(args.end(), {"--select", "accuracy:up"});
  WorkerRun bad = Run(args);
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("--select"));
}

TEST_F(Protocol, SigtermCheckpointsAndExitsZeroThenResumes) {
  for (std::string technique : {"single", "pipeline"}) {
    int gpus = technique == "single" ? 1 : 2;
    WorkerProcess process(Execute(technique, gpus, 0, 100000), Path(technique));
    ASSERT_TRUE(process.WaitForOutput("saturn: step=3 ", 120)) << process.Stderr();
    process.Signal(SIGTERM);
    ASSERT_EQ(process.Wait(120), 0) << process.Stderr();
    nlohmann::json result = Result();
    EXPECT_TRUE(result["preempted"]);
    int64_t done = result["completed_steps"];
    EXPECT_GE(done, 4);
    EXPECT_LT(done, 100000);
    EXPECT_EQ(result["checkpoint"], Path("ck") + "/checkpoint-" + std::to_string(done));
    WorkerRun resumed = Run(Execute("ddp", 2, static_cast<int>(done), static_cast<int>(done) + 1));
    EXPECT_EQ(resumed.status, 0) << resumed.err;
    EXPECT_THAT(resumed.out, HasSubstr("saturn: step=" + std::to_string(done) + " "));
  }
}

TEST_F(Protocol, SigtermWhileRanksStartIsNotLost) {
  WorkerProcess process(Execute("fsdp", 2, 0, 100000), Path("early"));
  for (int i = 0; i < 1000 && ChildPids(process.Pid()).size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(ChildPids(process.Pid()).size(), 2u);
  process.Signal(SIGTERM);
  ASSERT_EQ(process.Wait(120), 0) << process.Stderr();
  EXPECT_TRUE(Result()["preempted"]);
  EXPECT_GE(Result()["completed_steps"].get<int64_t>(), 1);
}

}  // namespace
}  // namespace saturn::testing
