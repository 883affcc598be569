// `saturn serve` with the real engine: a service SIGKILLed while it trains
// and started again on its state folder ends every task with the loss an
// uninterrupted `saturn run` of the same tasks ends with.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/fs.h"
#include "common/process.h"
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
  ServiceClient::Reply r =
      client.Post("/v1/workloads", {{"workload", tasks}, {"source", "w.yaml"}, {"base_dir", dir_}});
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

}  // namespace
}  // namespace saturn
