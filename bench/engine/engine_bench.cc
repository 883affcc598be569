// bench/engine: how fast do the engine's techniques train, against PyTorch
// and against each other? Everything is measured in this run, side by side:
//   - C++ single and ddp (2 ranks) step time over the same model in Python
//     PyTorch (same LibTorch, model, batch, optimizer and threads);
//   - fsdp over ddp at 2 ranks; pipeline's measured bubble against GPipe's
//     (p-1)/(m+p-1); spill over single for a model that fits both;
//   - model FLOPs utilisation: a step's model FLOPs per second over this
//     machine's measured matrix-multiply FLOP/s (per device x devices).
// See README.md for how to run it.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fs.h"
#include "engine/device.h"

namespace {

using nlohmann::json;

struct Config {
  int layers = 4, d_model = 128, heads = 4, seq_len = 64, batch = 16;
  int warmup = 2, measure = 8, threads = 1;
  int rounds = 3;  // C++ against PyTorch
};

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// fp32 matrix-multiply FLOP/s of one device with its thread budget.
double MatmulFlops(int threads) {
  saturn::engine::Device device(
      saturn::engine::DeviceSpec{saturn::engine::DeviceKind::kCpu, 0, threads, 0});
  constexpr int64_t n = 1024;
  at::Tensor a = at::randn({n, n}), b = at::randn({n, n});
  at::mm(a, b);
  std::vector<double> seconds;
  for (int i = 0; i < 9; ++i) {
    double start = Now();
    at::mm(a, b);
    seconds.push_back(Now() - start);
  }
  return 2.0 * n * n * n / Median(seconds);
}

std::string Python() {
  if (const char* python = std::getenv("SATURN_PYTHON")) return python;
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

json RunPyTorch(const Config& c, int ranks) {
  std::string command =
      "OPENBLAS_NUM_THREADS=" + std::to_string(c.threads) + " " + Python() + " " +
      SATURN_BENCH_DIR + "/torch_bench.py" + " --layers " + std::to_string(c.layers) +
      " --d-model " + std::to_string(c.d_model) + " --heads " + std::to_string(c.heads) +
      " --seq-len " + std::to_string(c.seq_len) + " --batch " + std::to_string(c.batch) +
      " --threads " + std::to_string(c.threads) + " --warmup " + std::to_string(c.warmup) +
      " --measure " + std::to_string(c.measure) + " --ranks " + std::to_string(ranks);
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  size_t n;
  while (pipe != nullptr && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, n);
  int status = pipe != nullptr ? pclose(pipe) : -1;
  json result = json::parse(out, nullptr, false);
  if (status != 0 || result.is_discarded()) {
    std::fprintf(stderr, "engine_bench: PyTorch run failed: %s\n", command.c_str());
    return json::object();
  }
  return result;
}

json RunSearch(const Config& c, const std::string& dir, const std::string& task,
               const std::string& technique, int gpus) {
  std::string out = dir + "/" + technique + "-" + std::to_string(gpus) + ".json";
  std::string command = std::string(SATURN_WORKER_PATH) + " search --task " + task +
                        " --technique " + technique + " --gpus " + std::to_string(gpus) +
                        " --out " + out + " --threads " + std::to_string(c.threads) + " --warmup " +
                        std::to_string(c.warmup) + " --measure " + std::to_string(c.measure);
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "engine_bench: search failed: %s\n", command.c_str());
    return json::object();
  }
  return json::parse(saturn::ReadFile(out));
}

std::string Ratio(double numerator, double denominator) {
  if (!(numerator > 0) || !(denominator > 0)) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", numerator / denominator);
  return text;
}

double StepS(const json& result) {
  return result.contains("step_s") && result["step_s"].is_number() ? result["step_s"].get<double>()
                                                                   : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      c = Config{2, 64, 2, 32, 8, 1, 3, 1, 1};
    } else if (arg == "--rounds" && i + 1 < argc) {
      c.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--threads" && i + 1 < argc) {
      c.threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: engine_bench [--quick] [--threads N] [--rounds R]\n");
      return 2;
    }
  }
  std::string dir = std::filesystem::temp_directory_path().string() + "/saturn-engine-bench";
  std::filesystem::remove_all(dir);
  json model = {{"type", "gpt"},
                {"layers", c.layers},
                {"d_model", c.d_model},
                {"heads", c.heads},
                {"seq_len", c.seq_len}};
  json task_json = {{"name", "bench"},
                    {"model", model},
                    {"data", {{"type", "synthetic"}}},
                    {"batch_size", c.batch},
                    {"optimizer", {{"type", "adamw"}, {"lr", 1e-3}}}};
  std::string task = dir + "/task.json";
  saturn::WriteFileAtomic(task, task_json.dump());

  std::printf(
      "engine benchmark: gpt layers=%d d_model=%d heads=%d seq_len=%d, batch %d, AdamW, "
      "%d thread(s) per device, median of %d steps after %d\n",
      c.layers, c.d_model, c.heads, c.seq_len, c.batch, c.threads, c.measure, c.warmup);
  double matmul = MatmulFlops(c.threads);
  std::printf("matmul 1024x1024 fp32: %.1f GFLOP/s per device\n\n", matmul / 1e9);

  struct Row {
    std::string technique;
    int gpus;
    json result;
  };
  // C++ and PyTorch alternate, round after round, so that changing load on
  // the machine hits both alike; each figure is the median over the rounds.
  std::vector<double> cpp_single, torch_single, cpp_ddp, torch_ddp;
  json single_result, ddp_result;
  for (int round = 0; round < c.rounds; ++round) {
    single_result = RunSearch(c, dir, task, "single", 1);
    cpp_single.push_back(StepS(single_result));
    torch_single.push_back(StepS(RunPyTorch(c, 1)));
    ddp_result = RunSearch(c, dir, task, "ddp", 2);
    cpp_ddp.push_back(StepS(ddp_result));
    torch_ddp.push_back(StepS(RunPyTorch(c, 2)));
  }
  single_result["step_s"] = Median(cpp_single);
  ddp_result["step_s"] = Median(cpp_ddp);
  std::vector<Row> rows{{"single", 1, single_result}, {"ddp", 2, ddp_result}};
  for (auto [technique, gpus] :
       std::vector<std::pair<std::string, int>>{{"fsdp", 2}, {"pipeline", 2}, {"spill", 1}}) {
    rows.push_back({technique, gpus, RunSearch(c, dir, task, technique, gpus)});
  }

  std::printf("%-10s %-8s %-10s %-14s %-6s %s\n", "technique", "devices", "step_s", "peak MiB/dev",
              "MFU", "knobs");
  for (const Row& row : rows) {
    double step_s = StepS(row.result);
    double peak = 0;
    for (const json& bytes : row.result.value("peak_memory_bytes", json::array())) {
      peak = std::max(peak, bytes.get<double>() / (1 << 20));
    }
    double mfu =
        step_s > 0 ? row.result["model_flops_per_step"].get<double>() / step_s / (matmul * row.gpus)
                   : 0.0;
    std::printf("%-10s %-8d %-10.4f %-14.1f %-5.1f%% %s\n", row.technique.c_str(), row.gpus, step_s,
                peak, 100 * mfu, row.result.value("knobs", json::object()).dump().c_str());
  }
  std::printf("%-10s %-8d %-10.4f (PyTorch)\n", "single", 1, Median(torch_single));
  std::printf("%-10s %-8d %-10.4f (PyTorch)\n\n", "ddp", 2, Median(torch_ddp));

  double single = StepS(rows[0].result), ddp = StepS(rows[1].result);
  std::printf("ratios, measured in this run\n");
  std::printf("  C++ single / PyTorch single   %s   (target <= 1.0; median of %d rounds)\n",
              Ratio(single, Median(torch_single)).c_str(), c.rounds);
  std::printf("  C++ ddp / PyTorch ddp (2)     %s   (target <= 1.0; median of %d rounds)\n",
              Ratio(ddp, Median(torch_ddp)).c_str(), c.rounds);
  std::printf("  fsdp / ddp (2 ranks)          %s\n", Ratio(StepS(rows[2].result), ddp).c_str());
  std::printf("  spill / single                %s  (best blocks_per_shard)\n",
              Ratio(StepS(rows[4].result), single).c_str());
  for (const json& candidate : rows[4].result.value("candidates", json::array())) {
    if (candidate.contains("step_s")) {
      std::printf("    blocks_per_shard %-3d          %s\n",
                  candidate["knobs"]["blocks_per_shard"].get<int>(),
                  Ratio(candidate["step_s"].get<double>(), single).c_str());
    }
  }
  std::printf("  pipeline bubble (2 stages), measured vs GPipe (p-1)/(m+p-1)\n");
  for (const json& candidate : rows[3].result.value("candidates", json::array())) {
    if (!candidate.contains("stats") || !candidate["stats"].contains("bubble")) continue;
    const json& stats = candidate["stats"];
    std::printf("    m=%-3d measured %.2f  GPipe %.2f  (step %.4f s)\n",
                stats["micro_batches"].get<int>(), stats["bubble"].get<double>(),
                stats["gpipe_bubble"].get<double>(), candidate["step_s"].get<double>());
  }
  std::filesystem::remove_all(dir);
  return 0;
}
