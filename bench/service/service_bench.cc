// saturn serve's targets (issue 13), measured against a live service with
// the fake worker (tests/testing/fake_worker.sh) so that the figures are the
// service's, not training's:
//  1. submission to first training step, minus the profiling it needed,
//     with a device free (target <= 2 s);
//  2. API latency (GET /v1/tasks and /v1/tasks/{id}) at 50 requests/s
//     while tasks train: p50, p99 (target p99 <= 50 ms), against a bare
//     loopback HTTP round trip measured in the same run (GET of an unknown
//     path, answered without the service);
//  3. how long after an event happens the event stream delivers it (target
//     <= 2 s).
//
//   build/bench/service/service_bench [--seconds 10]
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/process.h"
#include "service/client.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string Task(const std::string& name, int steps) {
  return "  - name: " + name +
         "\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
         "\n    data: {type: text, path: corpus.txt}\n    batch_size: 4"
         "\n    optimizer: {type: sgd, lr: 0.1}\n    steps: " +
         std::to_string(steps) + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 10;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--seconds") seconds = std::stod(argv[i + 1]);
  std::string dir = fs::temp_directory_path() / "saturn_service_bench";
  fs::remove_all(dir);
  fs::create_directories(dir);
  saturn::WriteFileAtomic(dir + "/corpus.txt", std::string(3000, 'z'));
  saturn::WriteFileAtomic(dir + "/cluster.yaml",
                          "nodes: [{name: n0, gpus: 8, gpu_memory_gib: 1}]\n");
  saturn::ProcessSpec spec;
  spec.argv = {SATURN_BINARY_DIR "/src/cli/saturn",
               "serve",
               "--cluster",
               dir + "/cluster.yaml",
               "--listen",
               "127.0.0.1:0",
               "--state-dir",
               dir + "/state",
               "--cache",
               dir + "/cache.sqlite"};
  spec.env = {{"SATURN_WORKER", SATURN_SOURCE_DIR "/tests/testing/fake_worker.sh"},
              {"FAKE_STEP_S", "0.1"}};
  spec.stdout_path = dir + "/serve.log";
  spec.stderr_path = dir + "/serve.log";
  saturn::Process server = saturn::Process::Spawn(spec);
  while (!fs::exists(dir + "/state/server.json"))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string url = json::parse(saturn::ReadFile(dir + "/state/server.json"))["url"];
  saturn::ServiceClient client(url, "");

  // 3. The event stream, followed from the start on its own thread: the
  // wall time each event arrives, keyed by its sequence number.
  std::vector<std::pair<json, Clock::time_point>> received;
  std::mutex mu;
  httplib::Client stream(url);
  stream.set_read_timeout(3600);
  std::thread follower([&] {
    std::string buffer;
    stream.Get("/v1/events", [&](const char* data, size_t n) {
      buffer.append(data, n);
      size_t end;
      while ((end = buffer.find("\n\n")) != std::string::npos) {
        std::string message = buffer.substr(0, end);
        buffer.erase(0, end + 2);
        size_t d = message.find("data: ");
        if (d == std::string::npos) continue;
        std::lock_guard<std::mutex> lock(mu);
        received.emplace_back(json::parse(message.substr(d + 6)), Clock::now());
      }
      return true;
    });
  });

  // 1. Submission to first step: a first task (profiled from nothing), then
  // one that differs only in name (its trials come from the cache).
  auto submit = [&](const std::string& name, int steps) {
    return client.Post("/v1/workloads",
                       {{"workload", "tasks:\n" + Task(name, steps)}, {"base_dir", dir}});
  };
  auto submitted = Clock::now();
  submit("first", 30);
  auto first_step = [&](const std::string& task) {
    while (true) {
      json t = client.Get("/v1/tasks/" + task).body;
      if (t.value("steps_done", 0L) > 0 || t.value("status", "") == "finished")
        return Since(submitted);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  double first_s = first_step("first");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  submitted = Clock::now();
  submit("second", 120 * static_cast<int>(seconds));
  double cached_s = first_step("second");

  // 2. API latency at 50 requests/s while "second" trains.
  std::vector<double> api_ms, bare_ms;
  auto start = Clock::now();
  httplib::Client bare(url);
  for (int i = 0; Since(start) < seconds; ++i) {
    auto t0 = Clock::now();
    if (i % 2) {
      client.Get("/v1/tasks");
    } else {
      client.Get("/v1/tasks/second");
    }
    api_ms.push_back(1000 * Since(t0));
    t0 = Clock::now();
    bare.Get("/nothing-here");
    bare_ms.push_back(1000 * Since(t0));
    auto next = start + std::chrono::milliseconds(20 * (i + 1));
    std::this_thread::sleep_until(next);
  }
  ::kill(server.pid(), SIGTERM);
  server.Wait();
  stream.stop();
  follower.join();

  // Event delay: an event's "t" is on the service's clock; align the two
  // clocks on the earliest event and report how much later each came.
  std::vector<double> delay;
  {
    std::lock_guard<std::mutex> lock(mu);
    double offset = 1e18;
    for (const auto& [e, at] : received) {
      double wall = std::chrono::duration<double>(at.time_since_epoch()).count();
      offset = std::min(offset, wall - e.value("t", 0.0));
    }
    for (const auto& [e, at] : received) {
      double wall = std::chrono::duration<double>(at.time_since_epoch()).count();
      delay.push_back(wall - e.value("t", 0.0) - offset);
    }
  }
  std::printf("submission -> first step, profiled from scratch: %.2f s\n", first_s);
  std::printf(
      "submission -> first step, trials from the cache: %.2f s (target <= 2 s beyond "
      "profiling)\n",
      cached_s);
  std::printf(
      "API at 50 req/s while training: %zu requests, p50 %.2f ms, p99 %.2f ms "
      "(target p99 <= 50 ms); bare loopback round trip p50 %.2f ms, p99 %.2f ms; "
      "p99 ratio %.1fx\n",
      api_ms.size(), Percentile(api_ms, 0.5), Percentile(api_ms, 0.99), Percentile(bare_ms, 0.5),
      Percentile(bare_ms, 0.99),
      Percentile(api_ms, 0.99) / std::max(1e-6, Percentile(bare_ms, 0.99)));
  std::printf(
      "event stream: %zu messages, delay beyond the earliest p50 %.3f s, max %.3f s "
      "(target <= 2 s)\n",
      delay.size(), Percentile(delay, 0.5), Percentile(delay, 1.0));
  return 0;
}
