// `saturn serve` with the real engine: a service SIGKILLed while it trains
// and started again on its state folder ends every task with the loss an
// uninterrupted `saturn run` of the same tasks ends with.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/process.h"
#include "contracts/events.h"
#include "service/client.h"
#include "tests/e2e/saturn_test_base.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ServeEndToEnd : public SaturnTestBase {
 protected:
  static std::string Gpt(const std::string& name, int layers, int d_model, int steps) {
    return "  - name: " + name + "\n    model: {type: gpt, layers: " + std::to_string(layers) +
           ", d_model: " + std::to_string(d_model) +
           ", heads: 4, seq_len: 32}\n    data: {type: text, path: " SATURN_SOURCE_DIR
           "/examples/data/corpus.txt}\n    batch_size: 8\n    optimizer: {type: adamw, lr: "
           "1.0e-3}\n    steps: " +
           std::to_string(steps) + "\n    techniques: [single, ddp]\n";
  }

  // Starts the service; returns its URL.
  std::string Start(std::optional<Process>& server) {
    fs::remove(dir_ + "/state/server.json");
    server.emplace(Process::Spawn(
        Saturn({"serve", "--cluster", dir_ + "/cluster.yaml", "--listen", "127.0.0.1:0",
                "--state-dir", dir_ + "/state", "--cache", dir_ + "/cache.sqlite",
                "--checkpoint-every", "10", "--no-introspection"})));
    for (int i = 0; i < 600 && !fs::exists(dir_ + "/state/server.json"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return json::parse(ReadFile(dir_ + "/state/server.json"))["url"];
  }

  // Submits a workload's `tasks` (paths relative to the test's folder).
  ServiceClient::Reply Submit(const ServiceClient& client, const std::string& tasks) const {
    return client.Post("/v1/workloads",
                       {{"workload", tasks}, {"source", "w.yaml"}, {"base_dir", dir_}});
  }
};

TEST_F(ServeEndToEnd, AKilledServiceEndsWithTheLossesOfAnUninterruptedRun) {
  std::string cluster = "nodes: [{name: n0, gpus: 2, gpu_memory_gib: 0.5}]\n";
  std::string tasks = "tasks:\n" + Gpt("small", 2, 64, 400) + Gpt("other", 2, 64, 300);
  WriteFileAtomic(dir_ + "/cluster.yaml", cluster);
  WriteFileAtomic(dir_ + "/w.yaml", "cluster: cluster.yaml\n" + tasks);
  ASSERT_EQ(Run({"run", dir_ + "/w.yaml", "--run-dir", dir_ + "/straight", "--cache",
                 dir_ + "/cache.sqlite", "--no-introspection", "--checkpoint-every", "10"}),
            0)
      << Log();
  json straight = json::parse(ReadFile(dir_ + "/straight/report.json"));

  std::optional<Process> server;
  std::string url = Start(server);
  ServiceClient client(url, "");
  ServiceClient::Reply r = Submit(client, tasks);
  ASSERT_EQ(r.status, 201) << r.body.dump();
  // Kill it once a checkpoint beyond the start exists.
  for (int i = 0; i < 2400; ++i) {
    std::error_code ec;
    if (fs::exists(dir_ + "/state/tasks/small/checkpoints/checkpoint-20", ec) ||
        fs::exists(dir_ + "/state/tasks/other/checkpoints/checkpoint-20", ec)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(server->pid(), SIGKILL);
  server->Wait();
  std::this_thread::sleep_for(std::chrono::seconds(3));  // workers get SIGTERM and checkpoint
  url = Start(server);
  ServiceClient again(url, "");
  json tasks_now;
  for (int i = 0; i < 2400; ++i) {
    tasks_now = again.Get("/v1/tasks").body["tasks"];
    bool ended = tasks_now.size() == 2;
    for (const json& t : tasks_now)
      ended = ended && t["status"] != "running" && t["status"] != "queued" &&
              t["status"] != "profiling";
    if (ended) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  server->SignalGroup(SIGTERM);
  server->Wait();
  for (const json& s : straight["tasks"]) {
    bool found = false;
    for (const json& t : tasks_now) {
      if (t["id"] != s["task"]) continue;
      found = true;
      EXPECT_EQ(t["status"], "finished") << t.dump();
      // Techniques may differ between the two (each plans for itself): the
      // same training in another layout agrees to float rounding.
      EXPECT_NEAR(t["final_loss"].get<double>(), s["final_loss"].get<double>(), 1e-3) << t["id"];
    }
    EXPECT_TRUE(found) << s["task"];
  }
}

// `saturn cancel` of one member of a running pack: it leaves the pack at
// its next step with its own checkpoint and ends cancelled; the others
// train on in the same worker (nothing starts again: one attempt each) and
// finish.
TEST_F(ServeEndToEnd, CancellingAPackMemberLeavesTheOthersTraining) {
  WriteFileAtomic(dir_ + "/cluster.yaml", "nodes: [{name: n0, gpus: 1, gpu_memory_gib: 0.5}]\n");
  std::string tasks = "tasks:\n";
  const char* lrs[] = {"0.01", "0.003", "0.03"};
  for (int i = 0; i < 3; ++i) {
    tasks += "  - name: m" + std::to_string(i) +
             "\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
             "\n    data: {type: text, path: " SATURN_SOURCE_DIR
             "/examples/data/corpus.txt}\n    batch_size: 4\n    seed: 7"
             "\n    optimizer: {type: adamw, lr: " +
             std::string(lrs[i]) +
             "}\n    finetune: {lora: {rank: 2}}\n    steps: 4000\n    techniques: [single]\n";
  }
  std::optional<Process> server;
  // A failed assertion returns early: the service goes with it.
  struct KillAtExit {
    std::optional<Process>& server;
    ~KillAtExit() {
      if (!server) return;
      server->SignalGroup(SIGKILL);
      server->Wait();
    }
  } kill_at_exit{server};
  std::string url = Start(server);
  ServiceClient client(url, "");
  ServiceClient::Reply r = Submit(client, tasks);
  ASSERT_EQ(r.status, 201) << r.body.dump();
  auto by_name = [&] {
    std::map<std::string, json> out;
    const json tasks_now = client.Get("/v1/tasks").body["tasks"];
    for (const json& t : tasks_now)
      out[t["id"].get<std::string>()] = t;
    return out;
  };
  // Once a pack trains (its members run at once on the one device). Which
  // tasks it holds is the plan's (profiled here, on a loaded machine it may
  // leave one alone): a pack of two or more.
  std::vector<std::string> pack;
  for (int i = 0; i < 2400 && pack.size() < 2; ++i) {
    std::map<std::string, std::vector<std::string>> packs;
    for (const auto& [name, t] : by_name())
      if (t.contains("pack") && t["status"] == "running" && t["steps_done"].get<long>() >= 100)
        packs[t["pack"]].push_back(name);
    for (const auto& [name, members] : packs)
      if (members.size() > pack.size()) pack = members;
    if (pack.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(pack.size(), 2u) << client.Get("/v1/tasks").body.dump(1) << Log();
  const std::string cancelled = pack[1];
  EXPECT_EQ(client.Delete("/v1/tasks/" + cancelled).status, 200);
  std::map<std::string, json> ended;
  for (int i = 0; i < 2400; ++i) {
    ended = by_name();
    bool done = true;
    for (const auto& [name, t] : ended)
      done = done && (t["status"] == "finished" || t["status"] == "cancelled");
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  server->SignalGroup(SIGTERM);
  server->Wait();
  server.reset();
  ASSERT_EQ(ended.size(), 3u);
  EXPECT_EQ(ended[cancelled]["status"], "cancelled") << ended[cancelled].dump();
  const long left = ended[cancelled]["steps_done"].get<long>();
  EXPECT_GE(left, 100);
  EXPECT_LT(left, 4000);
  EXPECT_TRUE(fs::exists(dir_ + "/state/tasks/" + cancelled + "/checkpoints/checkpoint-" +
                         std::to_string(left)))
      << left;
  std::map<std::string, double> end_t;
  for (const Event& e : ParseEventLines(ReadFile(dir_ + "/state/events.jsonl"), "events"))
    if (e.kind == EventKind::kTaskCancelled || e.kind == EventKind::kTaskFinished)
      end_t[e.task] = e.t;
  ASSERT_EQ(end_t.size(), 3u);
  for (const auto& [name, t] : ended) {
    if (name == cancelled) continue;
    EXPECT_EQ(t["status"], "finished") << t.dump();
    EXPECT_EQ(t["steps_done"], 4000) << name;
    EXPECT_EQ(t["attempts"], 1) << name;
    // The cancelled member ended while the others of its pack still trained.
    if (std::find(pack.begin(), pack.end(), name) != pack.end()) {
      EXPECT_LT(end_t[cancelled], end_t[name]) << name;
    }
  }
}

}  // namespace
}  // namespace saturn
