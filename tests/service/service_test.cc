// `saturn serve` end to end against the fake worker (tests/testing/
// fake_worker.sh): the API round trip, arrivals planned in while others
// train, cancel, SIGKILL and restart, and the 401/413/400 answers. The
// clients are the CLI's own (ServiceClient).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include "common/error.h"
#include "common/fs.h"
#include "common/process.h"
#include "contracts/events.h"
#include "service/client.h"
#include "service/server.h"
#include "tests/testing/wait.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

std::string Tasks(const std::string& prefix, int n, int steps, double lr = 0.1) {
  std::string text = "tasks:\n";
  for (int i = 0; i < n; ++i) {
    text += "  - name: " + prefix + std::to_string(i) +
            "\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
            "\n    data: {type: text, path: corpus.txt}\n    batch_size: 4"
            "\n    optimizer: {type: sgd, lr: " +
            std::to_string(lr) + "}\n    steps: " + std::to_string(steps) + "\n";
  }
  return text;
}

class ServeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_serve_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/project");
    WriteFileAtomic(dir_ + "/project/corpus.txt", std::string(3000, 'z'));
    WriteFileAtomic(dir_ + "/cluster.yaml", "nodes: [{name: n0, gpus: 4, gpu_memory_gib: 1}]\n");
  }
  void TearDown() override {
    if (server_) {
      server_->SignalGroup(SIGKILL);
      server_->Wait();
    }
  }

  ProcessSpec Spec(const std::vector<std::string>& extra) {
    ProcessSpec spec;
    spec.argv = {SATURN_BINARY_DIR "/src/cli/saturn",
                 "serve",
                 "--cluster",
                 dir_ + "/cluster.yaml",
                 "--listen",
                 "127.0.0.1:0",
                 "--state-dir",
                 dir_ + "/state",
                 "--cache",
                 dir_ + "/cache.sqlite",
                 "--interval",
                 "3"};
    for (const std::string& e : extra)
      spec.argv.push_back(e);
    spec.env = {{"SATURN_WORKER", SATURN_SOURCE_DIR "/tests/testing/fake_worker.sh"},
                {"FAKE_WORKER_LOG", dir_ + "/calls.log"},
                {"FAKE_STEP_S", "0.2"}};
    spec.stdout_path = dir_ + "/serve.log";
    spec.stderr_path = dir_ + "/serve.log";
    return spec;
  }

  // Starts the service and waits until it listens; its URL in url_.
  void Start(const std::vector<std::string>& extra = {}) {
    fs::remove(dir_ + "/state/server.json");
    server_.emplace(Process::Spawn(Spec(extra)));
    for (int i = 0; i < 400 && !fs::exists(dir_ + "/state/server.json"); ++i) {
      ASSERT_FALSE(server_->WaitFor(0.05).has_value()) << ReadFile(dir_ + "/serve.log");
    }
    url_ = json::parse(ReadFile(dir_ + "/state/server.json"))["url"];
  }

  ServiceClient Client(const std::string& token = "") { return ServiceClient(url_, token); }

  ServiceClient::Reply Submit(const std::string& text, const std::string& token = "") {
    WriteFileAtomic(dir_ + "/project/w.yaml", text);
    return Client(token).Post(
        "/v1/workloads",
        {{"workload", text}, {"source", "w.yaml"}, {"base_dir", dir_ + "/project"}});
  }

  std::map<std::string, json> TaskMap() {
    std::map<std::string, json> out;
    json tasks = Client().Get("/v1/tasks").body["tasks"];
    for (const json& t : tasks)
      out[t["id"].get<std::string>()] = t;
    return out;
  }

  // Waits (up to a minute) until every task has ended.
  std::map<std::string, json> WaitAllEnded() {
    for (int i = 0; i < 600; ++i) {
      auto tasks = TaskMap();
      bool ended = !tasks.empty();
      for (const auto& [id, t] : tasks) {
        std::string s = t["status"];
        ended = ended && (s == "finished" || s == "failed" || s == "cancelled");
      }
      if (ended) return tasks;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "tasks did not end: " << Client().Get("/v1/tasks").body.dump(1);
    return TaskMap();
  }

  std::vector<Event> Events() {
    return ParseEventLines(ReadFile(dir_ + "/state/events.jsonl"), "events.jsonl");
  }

  std::string dir_, url_;
  std::optional<Process> server_;
};

TEST_F(ServeApi, SubmittedTasksAreProfiledPlannedTrainedAndReported) {
  // No re-planning: on a loaded machine a re-plan after a0 finished would
  // plan a1 alone, and the plan checked below would hold one task.
  Start({"--no-introspection"});
  ServiceClient::Reply r = Submit(Tasks("a", 2, 10));
  ASSERT_EQ(r.status, 201) << r.body.dump();
  EXPECT_EQ(r.body["tasks"], json({"a0", "a1"}));
  auto tasks = WaitAllEnded();
  ASSERT_EQ(tasks.size(), 2u);
  for (const auto& [id, t] : tasks) {
    EXPECT_EQ(t["status"], "finished") << id;
    EXPECT_EQ(t["steps_done"], 10);
    EXPECT_TRUE(t["final_loss"].is_number());
    EXPECT_TRUE(t["technique"].is_string());
  }
  // The curve a freshly loaded dashboard draws: every step's loss (up to
  // 500 a task), from the first step's to the last one's, not a few recent.
  ServiceClient::Reply one = Client().Get("/v1/tasks/a1");
  ASSERT_EQ(one.status, 200);
  const json& losses = one.body["losses"];
  ASSERT_EQ(losses.size(), 10u) << losses.dump();
  for (size_t i = 0; i < losses.size(); ++i) {
    EXPECT_EQ(losses[i][0], static_cast<long>(i)) << losses.dump();
    EXPECT_TRUE(losses[i][1].is_number()) << losses.dump();
  }
  EXPECT_EQ(losses.back()[1], one.body["final_loss"]);
  EXPECT_EQ(Client().Get("/v1/tasks/nope").status, 404);
  json plan = Client().Get("/v1/plan").body;
  EXPECT_EQ(plan["tasks"].size(), 2u);
  // What the usual way would take for the work left when it was planned, on
  // the same clock as the plan's end (the dashboard compares the two).
  ASSERT_TRUE(plan.contains("baselines")) << plan.dump();
  const json& cp = plan["baselines"]["current-practice"];
  ASSERT_TRUE(cp["makespan_s"].is_number()) << plan.dump();
  EXPECT_GE(cp["makespan_s"].get<double>(), cp["from_s"].get<double>());
  EXPECT_TRUE(fs::exists(dir_ + "/state/tasks/a0/model.pt"));
  // The same names again are refused: the service has them.
  EXPECT_EQ(Submit(Tasks("a", 1, 10)).status, 409);
}

// A search as `saturn serve` shows it: each task's swept value and latest
// evaluation, the best so far (the fake worker's evaluation ranks learning
// rates by their distance from 1e-3), the evaluation curves, `saturn
// status`'s results table and the report of the state folder.
TEST_F(ServeApi, ASweepShowsItsResultsTheBestSoFarAndAReport) {
  Start({"--no-introspection"});
  std::string sweep =
      "tasks:\n  - name: s\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
      "\n    data: {type: text, path: corpus.txt}\n    batch_size: 4"
      "\n    optimizer: {type: sgd, lr: 0.1}\n    steps: 6\n    eval: {every: 3}"
      "\n    sweep: {optimizer.lr: [1.0e-2, 1.0e-3, 1.0e-5]}\n";
  ASSERT_EQ(Submit(sweep).status, 201);
  auto tasks = WaitAllEnded();
  ASSERT_EQ(tasks.size(), 3u);
  const std::map<std::string, double> lr = {
      {"s-lr1.0e-2", 1e-2}, {"s-lr1.0e-3", 1e-3}, {"s-lr1.0e-5", 1e-5}};
  for (const auto& [id, t] : tasks) {
    ASSERT_TRUE(lr.count(id)) << id;
    EXPECT_EQ(t["hyperparameters"], json({{"optimizer.lr", lr.at(id)}})) << t.dump();
    ASSERT_TRUE(t["eval"].is_object()) << t.dump();
    EXPECT_EQ(t["eval"]["step"], 6) << t.dump();
    json one = Client().Get("/v1/tasks/" + id).body;
    ASSERT_EQ(one["evals"].size(), 2u) << one.dump();
    EXPECT_EQ(one["evals"][0][0], 3);
    EXPECT_EQ(one["evals"][1][1], t["eval"]["eval_loss"]);
  }
  json view = Client().Get("/v1/tasks").body;
  ASSERT_EQ(view["best"].size(), 1u) << view.dump();
  const json& best = view["best"][0];
  EXPECT_EQ(best["sweep"], "s");
  EXPECT_EQ(best["task"], "s-lr1.0e-3");
  EXPECT_EQ(best["step"], 6);
  EXPECT_EQ(best["runner_up"]["task"], "s-lr1.0e-2");
  EXPECT_NEAR(best["margin"].get<double>(),
              tasks["s-lr1.0e-2"]["eval"]["eval_loss"].get<double>() -
                  tasks["s-lr1.0e-3"]["eval"]["eval_loss"].get<double>(),
              1e-9);
  // The report of the state so far, written once tasks ended, and served.
  ASSERT_TRUE(
      test::WaitUntil([&] { return Client().Get("/v1/tasks").body.contains("report"); }, 30.0));
  httplib::Client http(url_);
  auto page = http.Get("/report.html");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_THAT(page->body, HasSubstr("Best models"));
  EXPECT_THAT(page->body, HasSubstr("s-lr1.0e-5"));
  json report = json::parse(ReadFile(dir_ + "/state/report.json"));
  EXPECT_EQ(report["best"][0]["task"], "s-lr1.0e-3");
  // saturn status: the tasks, then the results with a column per swept field.
  ProcessSpec status;
  status.argv = {SATURN_BINARY_DIR "/src/cli/saturn", "status", "--server", url_};
  status.stdout_path = dir_ + "/status.txt";
  status.stderr_path = dir_ + "/status.txt";
  ASSERT_EQ(Process::Spawn(status).Wait(), 0) << ReadFile(dir_ + "/status.txt");
  std::string out = ReadFile(dir_ + "/status.txt");
  std::map<std::string, std::vector<std::string>> rows;  // first word -> the line's words
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;)
      w.push_back(word);
    if (!w.empty()) rows[w[0]] = w;
  }
  EXPECT_THAT(rows["RESULTS"],
              ::testing::ElementsAre("RESULTS", "lr", "EVAL", "LOSS", "SE", "STEP"))
      << out;
  ASSERT_GE(rows["s-lr1.0e-5"].size(), 3u) << out;
  EXPECT_EQ(rows["s-lr1.0e-5"][1], "1e-05") << out;  // the value swept, then its evaluation loss
  EXPECT_NEAR(std::stod(rows["s-lr1.0e-5"][2]), tasks["s-lr1.0e-5"]["eval"]["eval_loss"], 1e-4);
  EXPECT_THAT(out, HasSubstr("best so far of s: s-lr1.0e-3, eval_loss"));
  EXPECT_THAT(out, HasSubstr("ahead of s-lr1.0e-2 by"));
}

TEST_F(ServeApi, TheEventStreamReplaysAndFollows) {
  Start();
  ASSERT_EQ(Submit(Tasks("e", 1, 5)).status, 201);
  WaitAllEnded();
  // Read the stream until the finished task shows, from the start.
  std::string seen;
  httplib::Client http(url_);
  http.set_read_timeout(10);
  http.Get("/v1/events", [&](const char* data, size_t n) {
    seen.append(data, n);
    return seen.find("task_finished") == std::string::npos;
  });
  EXPECT_THAT(seen, HasSubstr("id: 1\n"));
  EXPECT_THAT(seen, HasSubstr("\"event\":\"task_arrived\""));
  EXPECT_THAT(seen, HasSubstr("\"event\":\"task_started\""));
}

TEST_F(ServeApi, ALaterWorkloadJoinsThePlanWithoutStoppingWhatItDoesNotMove) {
  Start();
  ASSERT_EQ(Submit(Tasks("a", 2, 80)).status, 201);
  ASSERT_TRUE(test::WaitUntil([&] {
    auto tasks = TaskMap();
    return tasks.count("a0") && tasks["a0"]["status"] == "running";
  })) << Client().Get("/v1/tasks").body.dump(1);
  // b0 differs from a0 only in its learning rate: its trials come from the
  // cache, so it joins while a0 and a1 train.
  ASSERT_EQ(Submit(Tasks("b", 1, 80, 0.05)).status, 201);
  auto tasks = WaitAllEnded();
  ASSERT_EQ(tasks.size(), 3u);
  for (const auto& [id, t] : tasks)
    EXPECT_EQ(t["status"], "finished") << id;
  // One plan holds all three; a task was stopped only if a new plan moved it.
  std::set<std::string> moved;
  bool extended = false;
  for (const Event& e : Events()) {
    if (e.kind == EventKind::kPlanSwitched) {
      for (const json& p : e.extra["preempted"])
        moved.insert(p.get<std::string>());
      extended = extended ||
                 (e.extra.value("why", "") == "arrivals" && e.extra["arrived"] == json({"b0"}));
    }
    if (e.kind == EventKind::kTaskStopped) {
      EXPECT_TRUE(moved.count(e.task)) << e.task << " was stopped";
    }
  }
  EXPECT_TRUE(extended);
  std::set<std::string> planned;
  // The plan that took b0 in (plan-N.json) still held a0 and a1, running.
  for (int n = 0; fs::exists(dir_ + "/state/plan-" + std::to_string(n) + ".json") || n < 2; ++n) {
    std::string path = dir_ + "/state/plan-" + std::to_string(n) + ".json";
    if (!fs::exists(path)) continue;
    std::set<std::string> names;
    json plan = json::parse(ReadFile(path));
    for (const json& p : plan["tasks"])
      names.insert(p["task"].get<std::string>());
    if (names.count("b0")) {
      planned = names;
      break;
    }
  }
  EXPECT_EQ(planned, (std::set<std::string>{"a0", "a1", "b0"}));
}

TEST_F(ServeApi, CancelStopsATaskAndKeepsItsCheckpoint) {
  Start();
  ASSERT_EQ(Submit(Tasks("c", 1, 200)).status, 201);
  for (int i = 0; i < 300 && TaskMap()["c0"]["steps_done"].get<long>() < 25; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // As a user cancels it: `saturn cancel` says what happens (it said "c0: running").
  ProcessSpec cancel;
  cancel.argv = {SATURN_BINARY_DIR "/src/cli/saturn", "cancel", "c0", "--server", url_};
  cancel.stdout_path = dir_ + "/cancel.out";
  ASSERT_EQ(ExitCode(Process::Spawn(cancel).Wait()), 0) << ReadFile(dir_ + "/cancel.out");
  EXPECT_EQ(ReadFile(dir_ + "/cancel.out"),
            "cancelling: c0 is stopping (it checkpoints first, as on a plan switch), then ends "
            "cancelled (saturn status shows it)\n");
  auto tasks = WaitAllEnded();
  EXPECT_EQ(tasks["c0"]["status"], "cancelled");
  EXPECT_LT(tasks["c0"]["steps_done"].get<long>(), 200);
  bool checkpoint = false;
  for (const auto& e : fs::directory_iterator(dir_ + "/state/tasks/c0/checkpoints"))
    checkpoint = checkpoint || e.path().filename().string().rfind("checkpoint-", 0) == 0;
  EXPECT_TRUE(checkpoint);
  EXPECT_EQ(Client().Delete("/v1/tasks/zz").status, 404);
  // A cancelled name may be submitted again.
  EXPECT_EQ(Submit(Tasks("c", 1, 5)).status, 201);
  EXPECT_EQ(WaitAllEnded()["c0"]["status"], "finished");
}

TEST_F(ServeApi, AKilledServiceRestartedOnItsStateFinishesEveryTaskFromCheckpoints) {
  Start({"--checkpoint-every", "5"});
  ASSERT_EQ(Submit(Tasks("k", 3, 40)).status, 201);
  for (int i = 0; i < 400; ++i) {
    if (fs::exists(dir_ + "/state/events.jsonl") &&
        ReadFile(dir_ + "/state/events.jsonl").find("\"step\":10") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(server_->pid(), SIGKILL);
  server_->Wait();
  server_.reset();
  ASSERT_EQ(test::WaitForOrphanedWorkers(dir_ + "/state"), "");  // they checkpoint
  size_t before = Events().size();
  Start({"--checkpoint-every", "5"});
  auto tasks = WaitAllEnded();
  ASSERT_EQ(tasks.size(), 3u);
  for (const auto& [id, t] : tasks) {
    EXPECT_EQ(t["status"], "finished") << id;
    EXPECT_EQ(t["steps_done"], 40);
  }
  std::vector<Event> after = Events();
  bool resumed = false;
  for (size_t i = before; i < after.size(); ++i) {
    resumed = resumed || after[i].kind == EventKind::kResumed;
    if (after[i].kind == EventKind::kTaskStarted) {
      EXPECT_EQ(after[i].extra["step"].get<long>() % 5, 0);
    }
  }
  EXPECT_TRUE(resumed);
}

TEST_F(ServeApi, ATokenIsRequiredWhenGivenAndLargeOrBadBodiesAreRefused) {
  WriteFileAtomic(dir_ + "/token", "s3cret\n");
  Start({"--token-file", dir_ + "/token", "--max-body", "4096"});
  EXPECT_EQ(Client().Get("/v1/tasks").status, 401);
  EXPECT_EQ(Client("wrong").Get("/v1/tasks").status, 401);
  EXPECT_EQ(Client("s3cret").Get("/v1/tasks").status, 200);
  EXPECT_EQ(Client().Get("/v1/plan").status, 401);
  httplib::Client page(url_);
  EXPECT_EQ(page.Get("/v1/tasks?access_token=s3cret")->status, 200);
  EXPECT_EQ(page.Get("/")->status, 200) << "the page holds no data";
  // Over the cap: 413.
  EXPECT_EQ(Submit(Tasks("big", 60, 5), "s3cret").status, 413);
  // A bad workload: 400 with the file, line and field, and nothing stored.
  std::string bad = Tasks("x", 1, 5);
  bad.replace(bad.find("batch_size: 4"), 13, "batch_size: -4");
  ServiceClient::Reply r = Submit(bad, "s3cret");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body["error"].get<std::string>(), HasSubstr("w.yaml:"));
  EXPECT_THAT(r.body["error"].get<std::string>(), HasSubstr("batch_size"));
  EXPECT_TRUE(Client("s3cret").Get("/v1/tasks").body["tasks"].empty());
}

TEST(ServeOptions, ListeningBeyondLoopbackNeedsAToken) {
  EXPECT_TRUE(IsLoopback("127.0.0.1"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_FALSE(IsLoopback("0.0.0.0"));
  ServeOptions o;
  o.source.cluster_path = "missing.yaml";
  o.listen = "0.0.0.0:8470";
  try {
    Serve(o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--token-file"));
  }
}

TEST(ServeOptions, ListenAddressesAndTokens) {
  EXPECT_EQ(ParseListen("127.0.0.1:8470").port, 8470);
  EXPECT_EQ(ParseListen(":0").host, "127.0.0.1");
  EXPECT_EQ(ParseListen("[::1]:80").host, "::1");
  EXPECT_THROW(ParseListen("8470"), InputError);
  EXPECT_THROW(ParseListen("h:99999"), InputError);
  EXPECT_TRUE(SameToken("abc", "abc"));
  EXPECT_FALSE(SameToken("abc", "abd"));
  EXPECT_FALSE(SameToken("abc", "abcd"));
  EXPECT_EQ(UrlPathEscape("a b/c"), "a%20b%2Fc");
}

}  // namespace
}  // namespace saturn
