// bench/engine: is a training step in our engine at least as fast as the
// PyTorch a user would otherwise write, and how do the techniques compare
// with PyTorch and with theory? Everything is measured in this run:
//   1. single against idiomatic PyTorch (idiomatic.py: standard modules,
//      torch.optim) for every zoo family at three sizes (llama: Hugging
//      Face's modeling_llama at two), 1 and 2 threads,
//      every optimizer on the middle size; with our step's phase breakdown
//      (data, forward, backward, optimizer, communication, bookkeeping) and
//      model FLOPs utilisation on both sides;
//   2. ddp against torch DistributedDataParallel over Gloo (2 processes),
//      fsdp over ddp, pipeline's bubble against GPipe's (p-1)/(m+p-1), and
//      spill over single.
// Our side and PyTorch's alternate, round after round, so that changing load
// hits both alike; each figure is the median over rounds. See README.md.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/command.h"
#include "common/fs.h"
#include "engine/device.h"

namespace {

using nlohmann::json;

struct Options {
  bool quick = false;
  int rounds = 3;
  int warmup = 2, measure = 6;
  std::vector<int> threads{1, 2};
  std::vector<std::string> families{"gpt", "vit", "resnet", "mlp", "llama"};
  std::vector<std::string> sizes{"S", "M", "L"};
  bool single = true, techniques = true, lora = false, tp = true;
  std::string device = "cpu";      // or cuda (a CUDA LibTorch; scripts/gpu-check.sh)
  std::string precision = "fp32";  // or bf16
  bool gpt2 = false;               // only GPT-2 small (type gpt2: 12 x 768, seq 1024, batch 8)
};

// One comparison: a model, a batch, an optimizer, a thread budget.
struct Case {
  std::string family, size;
  json model;
  int batch;
  std::string optimizer;
  int threads;
  json finetune = json::object();  // {"lora": {...}} for LoRA
};

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !(v > 0); }),
               values.end());
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// Matrix-multiply FLOP/s of one device with `threads` threads, in the
// precision the models compute in (fp32, or bf16 for bf16 autocast).
double MatmulFlops(const Options& o, int threads) {
  bool cuda = o.device == "cuda";
  saturn::engine::Device device(saturn::engine::DeviceSpec{
      cuda ? saturn::engine::DeviceKind::kCuda : saturn::engine::DeviceKind::kCpu, 0, threads, 0});
  int64_t n = cuda ? 8192 : 1024;
  at::TensorOptions options = device.Options(o.precision == "bf16" ? at::kBFloat16 : at::kFloat);
  at::Tensor a = at::randn({n, n}, options), b = at::randn({n, n}, options);
  at::mm(a, b);
  device.Synchronize();
  std::vector<double> seconds;
  for (int i = 0; i < 9; ++i) {
    double start = Now();
    at::mm(a, b);
    device.Synchronize();
    seconds.push_back(Now() - start);
  }
  return 2.0 * static_cast<double>(n * n * n) / Median(seconds);
}

std::string Python() {
  if (const char* python = std::getenv("SATURN_PYTHON")) return python;
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

std::string Quote(const std::string& text) {
  return "'" + text + "'";
}

json RunCommand(const std::string& command, const std::string& what) {
  int status = 0;
  std::string out = saturn::bench::CommandOutput(command, &status);
  json result = json::parse(out, nullptr, false);
  if (status != 0 || result.is_discarded()) {
    std::fprintf(stderr, "engine_bench: %s failed: %s\n", what.c_str(), command.c_str());
    return json::object();
  }
  return result;
}

json RunPyTorch(const Options& o, const Case& c, int ranks) {
  std::ostringstream command;
  command << "OPENBLAS_NUM_THREADS=" << c.threads << " " << Python() << " " << SATURN_BENCH_DIR
          << "/idiomatic.py --family " << c.family << " --model " << Quote(c.model.dump())
          << " --batch " << c.batch << " --optimizer " << c.optimizer << " --threads " << c.threads
          << " --warmup " << o.warmup << " --measure " << o.measure << " --ranks " << ranks
          << " --device " << o.device << " --precision " << o.precision;
  return RunCommand(command.str(), "PyTorch run");
}

std::string TaskFile(const Options& o, const std::string& dir, const Case& c) {
  json task = {{"name", "bench"},       {"precision", o.precision},
               {"model", c.model},      {"data", {{"type", "synthetic"}}},
               {"batch_size", c.batch}, {"optimizer", {{"type", c.optimizer}, {"lr", 1e-3}}}};
  if (c.optimizer == "sgd") task["optimizer"]["momentum"] = 0.9;
  if (!c.finetune.empty()) task["finetune"] = c.finetune;
  std::string path = dir + "/task-" + c.family + "-" + c.size + "-" + c.optimizer +
                     (c.finetune.empty() ? "" : "-lora") + ".json";
  saturn::WriteFileAtomic(path, task.dump());
  return path;
}

json RunSearch(const Options& o, const std::string& dir, const Case& c,
               const std::string& technique, int gpus) {
  std::string out = dir + "/" + technique + "-" + std::to_string(gpus) + ".json";
  std::ostringstream command;
  // What WorkerEnv (launch/worker.h) gives every worker Saturn starts.
  command << (std::getenv("OMP_WAIT_POLICY") ? "" : "OMP_WAIT_POLICY=PASSIVE ")
          << SATURN_WORKER_PATH << " search --task " << TaskFile(o, dir, c) << " --technique "
          << technique << " --gpus " << gpus << " --out " << out << " --threads " << c.threads
          << " --device-kind " << o.device << " --warmup " << o.warmup << " --measure " << o.measure
          << " >/dev/null";
  if (std::system(command.str().c_str()) != 0) {
    std::fprintf(stderr, "engine_bench: search failed: %s\n", command.str().c_str());
    return json::object();
  }
  return json::parse(saturn::ReadFile(out));
}

double StepS(const json& result) {
  return result.contains("step_s") && result["step_s"].is_number() ? result["step_s"].get<double>()
                                                                   : 0.0;
}

std::string Ratio(double numerator, double denominator) {
  if (!(numerator > 0) || !(denominator > 0)) return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", numerator / denominator);
  return text;
}

// A Llama with SmolLM-135M's shapes (d_model 576, 9 heads over 3 key/value
// heads, SwiGLU 1536, vocabulary 49152, untied head) at 4 of its 30 layers,
// sequence `seq_len`: its task.json model as the workload reader writes it.
json SmolLlama(int seq_len) {
  return {{"type", "llama"},
          {"flavor", "llama"},
          {"layers", 4},
          {"d_model", 576},
          {"heads", 9},
          {"kv_heads", 3},
          {"head_dim", 64},
          {"ffn", 1536},
          {"vocab", 49152},
          {"positions", 2048},
          {"seq_len", seq_len},
          {"rope_theta", 10000.0},
          {"norm_eps", 1e-5},
          {"tie_embeddings", false},
          {"attention_bias", false}};
}

// The zoo at three sizes per family; GPT's first two are the configurations
// a user compared by hand, the third has sequence 512. Llama has two sizes,
// sequence 256 and 512 with the same tokens per batch.
std::vector<Case> Cases(const Options& o) {
  struct Size {
    std::string family, size;
    json model;
    int batch;
  };
  std::vector<Size> sizes = {
      {"gpt",
       "S",
       {{"type", "gpt"}, {"layers", 4}, {"d_model", 512}, {"heads", 8}, {"seq_len", 32}},
       4},
      {"gpt",
       "M",
       {{"type", "gpt"}, {"layers", 4}, {"d_model", 256}, {"heads", 4}, {"seq_len", 128}},
       16},
      {"gpt",
       "L",
       {{"type", "gpt"}, {"layers", 2}, {"d_model", 256}, {"heads", 4}, {"seq_len", 512}},
       4},
      {"vit",
       "S",
       {{"type", "vit"},
        {"layers", 4},
        {"d_model", 128},
        {"heads", 4},
        {"image_size", 32},
        {"patch", 4}},
       16},
      {"vit",
       "M",
       {{"type", "vit"},
        {"layers", 6},
        {"d_model", 256},
        {"heads", 8},
        {"image_size", 32},
        {"patch", 4}},
       16},
      {"vit",
       "L",
       {{"type", "vit"},
        {"layers", 4},
        {"d_model", 256},
        {"heads", 8},
        {"image_size", 64},
        {"patch", 4}},
       8},
      {"resnet", "S", {{"type", "resnet"}, {"blocks", 2}, {"width", 32}, {"image_size", 32}}, 16},
      {"resnet", "M", {{"type", "resnet"}, {"blocks", 4}, {"width", 64}, {"image_size", 32}}, 16},
      {"resnet", "L", {{"type", "resnet"}, {"blocks", 4}, {"width", 128}, {"image_size", 32}}, 8},
      {"mlp", "S", {{"type", "mlp"}, {"layers", 4}, {"width", 512}}, 64},
      {"mlp", "M", {{"type", "mlp"}, {"layers", 4}, {"width", 1024}}, 64},
      {"mlp", "L", {{"type", "mlp"}, {"layers", 4}, {"width", 2048}}, 128},
      {"llama", "S", SmolLlama(256), 4},
      {"llama", "L", SmolLlama(512), 2},
  };
  std::vector<Case> cases;
  if (o.gpt2) {
    // GPT-2 small itself: vocabulary 50257, tied head, sequence 1024.
    json gpt2 = {{"type", "gpt2"}, {"preset", "small"}};
    for (int threads : o.threads)
      cases.push_back({"gpt2", "small", gpt2, 8, "adamw", threads});
    return cases;
  }
  for (const Size& s : sizes) {
    if (std::find(o.families.begin(), o.families.end(), s.family) == o.families.end()) continue;
    if (o.quick && s.size != "S") continue;
    if (std::find(o.sizes.begin(), o.sizes.end(), s.size) == o.sizes.end()) continue;
    for (int threads : o.threads) {
      cases.push_back({s.family, s.size, s.model, s.batch, "adamw", threads});
      if (s.size == "M" && threads == o.threads.front()) {
        cases.push_back({s.family, s.size, s.model, s.batch, "adam", threads});
        cases.push_back({s.family, s.size, s.model, s.batch, "sgd", threads});
      }
    }
  }
  return cases;
}

// "fwd 40 bwd 80 ..." in milliseconds per step.
std::string PhaseText(const json& result) {
  const json phases = result.value("stats", json::object()).value("phases", json::object());
  std::string text;
  for (const auto& [name, abbreviation] :
       std::vector<std::pair<std::string, std::string>>{{"data", "data"},
                                                        {"forward", "fwd"},
                                                        {"backward", "bwd"},
                                                        {"optimizer", "opt"},
                                                        {"communication", "comm"},
                                                        {"bookkeeping", "other"}}) {
    if (!phases.contains(name)) continue;
    char part[32];
    std::snprintf(part, sizeof part, "%s %.1f ", abbreviation.c_str(),
                  1000 * phases[name].get<double>());
    text += part;
  }
  return text;
}

int BenchSingle(const Options& o, const std::string& dir, std::map<int, double>& matmul) {
  std::printf("1. single against idiomatic PyTorch (median of %d rounds, %d steps after %d)\n",
              o.rounds, o.measure, o.warmup);
  std::printf("%-7s %-4s %-3s %-6s %-9s %-9s %-7s %-6s %-6s %s\n", "family", "size", "thr", "optim",
              "ours s", "torch s", "ratio", "MFU", "torch", "our phases, ms/step");
  std::vector<double> ratios;
  int within = 0;
  for (const Case& c : Cases(o)) {
    std::vector<double> ours, theirs;
    json last;
    for (int round = 0; round < o.rounds; ++round) {
      last = RunSearch(o, dir, c, "single", 1);
      ours.push_back(StepS(last));
      theirs.push_back(StepS(RunPyTorch(o, c, 1)));
    }
    double our = Median(ours), their = Median(theirs);
    double flops = last.value("model_flops_per_step", 0.0);
    double rate = matmul.at(c.threads);
    std::printf("%-7s %-4s %-3d %-6s %-9.4f %-9.4f %-7s %-5.0f%% %-5.0f%% %s\n", c.family.c_str(),
                c.size.c_str(), c.threads, c.optimizer.c_str(), our, their,
                Ratio(our, their).c_str(), our > 0 ? 100 * flops / our / rate : 0.0,
                their > 0 ? 100 * flops / their / rate : 0.0, PhaseText(last).c_str());
    std::fflush(stdout);
    if (our > 0 && their > 0) {
      ratios.push_back(our / their);
      within += our <= their ? 1 : 0;
    }
  }
  if (ratios.empty()) return 1;
  double log_sum = 0.0;
  for (double r : ratios)
    log_sum += std::log(r);
  std::printf(
      "  ours / PyTorch: geometric mean %.2fx, worst %.2fx, best %.2fx; %d of %zu at or below "
      "1.00x (target: all)\n\n",
      std::exp(log_sum / static_cast<double>(ratios.size())),
      *std::max_element(ratios.begin(), ratios.end()),
      *std::min_element(ratios.begin(), ratios.end()), within, ratios.size());
  return 0;
}

void BenchTechniques(const Options& o, const std::string& dir, std::map<int, double>& matmul) {
  Case c{"gpt",
         "M",
         {{"type", "gpt"}, {"layers", 4}, {"d_model", 256}, {"heads", 4}, {"seq_len", 128}},
         16,
         "adamw",
         o.threads.front()};
  if (o.quick) {
    c.model = {{"type", "gpt"}, {"layers", 2}, {"d_model", 64}, {"heads", 2}, {"seq_len", 32}};
    c.batch = 8;
  }
  std::printf("2. techniques on gpt %s, batch %d, AdamW, %d thread(s) per device\n",
              c.model.dump().c_str(), c.batch, c.threads);
  std::vector<double> our_single, torch_single, our_ddp, torch_ddp;
  json single, ddp;
  for (int round = 0; round < o.rounds; ++round) {
    single = RunSearch(o, dir, c, "single", 1);
    our_single.push_back(StepS(single));
    torch_single.push_back(StepS(RunPyTorch(o, c, 1)));
    ddp = RunSearch(o, dir, c, "ddp", 2);
    our_ddp.push_back(StepS(ddp));
    torch_ddp.push_back(StepS(RunPyTorch(o, c, 2)));
  }
  single["step_s"] = Median(our_single);
  ddp["step_s"] = Median(our_ddp);
  json fsdp = RunSearch(o, dir, c, "fsdp", 2);
  json pipeline = RunSearch(o, dir, c, "pipeline", 2);
  json spill = RunSearch(o, dir, c, "spill", 1);
  double rate = matmul.at(c.threads);
  std::printf("%-10s %-8s %-10s %-14s %-6s %s\n", "technique", "devices", "step_s", "peak MiB/dev",
              "MFU", "knobs / phases ms");
  for (auto [name, gpus, result] :
       std::vector<std::tuple<std::string, int, json>>{{"single", 1, single},
                                                       {"ddp", 2, ddp},
                                                       {"fsdp", 2, fsdp},
                                                       {"pipeline", 2, pipeline},
                                                       {"spill", 1, spill}}) {
    double step_s = StepS(result), peak = 0;
    for (const json& bytes : result.value("peak_memory_bytes", json::array()))
      peak = std::max(peak, bytes.get<double>() / (1 << 20));
    double mfu =
        step_s > 0 ? result.value("model_flops_per_step", 0.0) / step_s / (rate * gpus) : 0.0;
    std::printf("%-10s %-8d %-10.4f %-14.1f %-5.1f%% %s %s\n", name.c_str(), gpus, step_s, peak,
                100 * mfu, result.value("knobs", json::object()).dump().c_str(),
                PhaseText(result).c_str());
  }
  std::printf("%-10s %-8d %-10.4f (PyTorch, idiomatic)\n", "single", 1, Median(torch_single));
  std::printf("%-10s %-8d %-10.4f (PyTorch DistributedDataParallel, Gloo)\n\n", "ddp", 2,
              Median(torch_ddp));
  double s = StepS(single), d = StepS(ddp);
  std::printf("ratios, measured in this run\n");
  std::printf("  single / PyTorch               %s   (target <= 1.0)\n",
              Ratio(s, Median(torch_single)).c_str());
  std::printf("  ddp / PyTorch DDP (2 ranks)    %s   (target <= 1.0)\n",
              Ratio(d, Median(torch_ddp)).c_str());
  std::printf("  fsdp / ddp (2 ranks)           %s   (target <= 1.15)\n",
              Ratio(StepS(fsdp), d).c_str());
  std::printf("  spill / single                 %s   (target <= 1.2; best blocks_per_shard)\n",
              Ratio(StepS(spill), s).c_str());
  std::printf(
      "  pipeline bubble (2 stages), measured vs GPipe (p-1)/(m+p-1) (target: within 20%%"
      " for m >= 4)\n");
  for (const json& candidate : pipeline.value("candidates", json::array())) {
    if (!candidate.contains("stats") || !candidate["stats"].contains("bubble")) continue;
    const json& stats = candidate["stats"];
    std::printf("    m=%-3d measured %.2f  GPipe %.2f  (step %.4f s)\n",
                stats["micro_batches"].get<int>(), stats["bubble"].get<double>(),
                stats["gpipe_bubble"].get<double>(), candidate["step_s"].get<double>());
  }
}

// 4. tp against single on a wide GPT (d_model 1024, 16 heads), 1 thread per
// device, and against Megatron's model of tp's step on R = 2 devices:
// single's step / R (each rank runs 1/R of every layer) plus the step's
// all-reduces, 4 per layer (one forward and one backward per sub-layer) of
// the batch x seq x d_model fp32 activations, each timed as
// torch.distributed's Gloo all-reduce of that many bytes between two
// processes (idiomatic.py --allreduce-bytes). tp uses twice single's cores:
// the model, which assumes perfect scaling, is the yardstick of its overhead.
void BenchTp(const Options& o, const std::string& dir, std::map<int, double>& matmul) {
  Case c{"gpt",
         "W",
         {{"type", "gpt"}, {"layers", 2}, {"d_model", 1024}, {"heads", 16}, {"seq_len", 128}},
         8,
         "adamw",
         1};
  if (o.quick) {
    c.model["layers"] = 1;
    c.model["seq_len"] = 64;
    c.batch = 4;
  }
  const int ranks = 2;
  std::printf("4. tp on gpt %s, batch %d, AdamW, 1 thread per device\n", c.model.dump().c_str(),
              c.batch);
  std::vector<double> single_s, tp_s, allreduce_s;
  json single, tp;
  const int64_t activation_bytes = int64_t{c.batch} * c.model["seq_len"].get<int64_t>() * 1024 * 4;
  for (int round = 0; round < o.rounds; ++round) {
    single = RunSearch(o, dir, c, "single", 1);
    single_s.push_back(StepS(single));
    tp = RunSearch(o, dir, c, "tp", ranks);
    tp_s.push_back(StepS(tp));
    std::ostringstream command;
    command << "OPENBLAS_NUM_THREADS=1 " << Python() << " " << SATURN_BENCH_DIR
            << "/idiomatic.py --allreduce-bytes " << activation_bytes << " --ranks " << ranks
            << " --threads 1 --warmup " << o.warmup << " --measure " << 3 * o.measure;
    allreduce_s.push_back(RunCommand(command.str(), "Gloo all-reduce").value("allreduce_s", 0.0));
  }
  const double s = Median(single_s), t = Median(tp_s), a = Median(allreduce_s);
  const int allreduces = 4 * c.model["layers"].get<int>();
  const double model = s / ranks + allreduces * a;
  const double rate = matmul.count(1) ? matmul.at(1) : MatmulFlops(o, 1);
  const double flops = single.value("model_flops_per_step", 0.0);
  std::printf("%-10s %-8s %-10s %-6s %s\n", "technique", "devices", "step_s", "MFU", "phases ms");
  std::printf("%-10s %-8d %-10.4f %-5.1f%% %s\n", "single", 1, s,
              s > 0 ? 100 * flops / s / rate : 0, PhaseText(single).c_str());
  std::printf("%-10s %-8d %-10.4f %-5.1f%% %s\n", "tp", ranks, t,
              t > 0 ? 100 * flops / t / (rate * ranks) : 0, PhaseText(tp).c_str());
  std::printf(
      "%-10s %-8d %-10.4f        single / %d + %d all-reduces of %.1f MiB x %.4f s "
      "(Gloo, measured)\n",
      "Megatron", ranks, model, ranks, allreduces, activation_bytes / 1048576.0, a);
  std::printf("ratios, measured in this run\n");
  std::printf("  tp / single                    %s   (perfect scaling: 0.50)\n",
              Ratio(t, s).c_str());
  std::printf("  tp / Megatron's model          %s   (1.00: no overhead beyond the model)\n\n",
              Ratio(t, model).c_str());
}

// 3. LoRA against full fine-tuning on the same model, single, unlimited
// memory: peak and resident (between steps: parameters, gradients kept,
// optimizer state) bytes, step time. The yardstick is full fine-tuning in
// the same engine (Debian has no peft to run LoRA in PyTorch beside it).
void BenchLora(const Options& o, const std::string& dir) {
  std::printf(
      "3. LoRA (rank 8, attn + mlp) against full fine-tuning, single, AdamW, %d thread(s)\n",
      o.threads.front());
  std::printf("%-30s %-6s %-10s %-12s %s\n", "model", "tuning", "step_s", "peak MiB",
              "resident MiB (parameters + optimizer state)");
  json lora = {{"lora", {{"rank", 8}, {"alpha", 16}, {"targets", {"attn", "mlp"}}}}};
  std::vector<std::pair<std::string, Case>> models = {
      {"gpt2 4x256 vocab 4096 seq 32",
       {"gpt2",
        "example",
        {{"type", "gpt2"},
         {"layers", 4},
         {"d_model", 256},
         {"heads", 4},
         {"vocab", 4096},
         {"positions", 64},
         {"seq_len", 32}},
        8,
        "adamw",
        o.threads.front()}},
      {"gpt2 small (124M) seq 128",
       {"gpt2",
        "small",
        {{"type", "gpt2"}, {"preset", "small"}, {"seq_len", 128}},
        4,
        "adamw",
        o.threads.front()}}};
  for (auto& [label, c] : models) {
    json full, adapted;
    for (bool with_lora : {false, true}) {
      Case run = c;
      if (with_lora) run.finetune = lora;
      json r = RunSearch(o, dir, run, "single", 1);
      double peak = 0, resident = 0;
      for (const json& b : r.value("peak_memory_bytes", json::array()))
        peak = std::max(peak, b.get<double>() / (1 << 20));
      for (const json& b : r.value("resident_bytes", json::array()))
        resident = std::max(resident, b.get<double>() / (1 << 20));
      std::printf("%-30s %-6s %-10.4f %-12.1f %-12.1f\n", label.c_str(),
                  with_lora ? "lora" : "full", StepS(r), peak, resident);
      json& figures = with_lora ? adapted : full;
      figures = json{{"peak", peak}, {"resident", resident}, {"step", StepS(r)}};
    }
    std::printf("  full / lora: peak %s, resident %s, step %s\n",
                Ratio(full["peak"].get<double>(), adapted["peak"].get<double>()).c_str(),
                Ratio(full["resident"].get<double>(), adapted["resident"].get<double>()).c_str(),
                Ratio(full["step"].get<double>(), adapted["step"].get<double>()).c_str());
    std::fflush(stdout);
  }
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      o.quick = true, o.rounds = 1, o.warmup = 1, o.measure = 3, o.threads = {1};
    } else if (arg == "--rounds" && has_value) {
      o.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--warmup" && has_value) {
      o.warmup = std::max(0, std::atoi(argv[++i]));
    } else if (arg == "--measure" && has_value) {
      o.measure = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--threads" && has_value) {
      o.threads.clear();
      for (const std::string& t : Split(argv[++i]))
        o.threads.push_back(std::max(1, std::atoi(t.c_str())));
    } else if (arg == "--families" && has_value) {
      o.families = Split(argv[++i]);
    } else if (arg == "--sizes" && has_value) {
      o.sizes = Split(argv[++i]);
    } else if (arg == "--device" && has_value) {
      o.device = argv[++i];
    } else if (arg == "--precision" && has_value) {
      o.precision = argv[++i];
    } else if (arg == "--gpt2") {
      o.gpt2 = true;
    } else if (arg == "--only" && has_value) {
      std::string part = argv[++i];
      o.single = part == "single";
      o.techniques = part == "techniques";
      o.lora = part == "lora";
      o.tp = part == "tp";
    } else {
      std::fprintf(
          stderr,
          "usage: engine_bench [--quick] [--rounds R] [--warmup 2] [--measure 6] [--threads 1,2] "
          "[--families gpt,vit,resnet,mlp,llama] [--sizes S,M,L] [--only "
          "single|techniques|lora|tp] "
          "[--device cpu|cuda] "
          "[--precision fp32|bf16] [--gpt2]\n");
      return 2;
    }
  }
  std::string dir = std::filesystem::temp_directory_path().string() + "/saturn-engine-bench";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::map<int, double> matmul;
  for (int threads : o.threads) {
    matmul[threads] = MatmulFlops(o, threads);
    std::printf("matmul %s %s, %d thread(s): %.1f GFLOP/s (MFU denominator)\n", o.device.c_str(),
                o.precision.c_str(), threads, matmul[threads] / 1e9);
  }
  std::printf("\n");
  int status = o.single ? BenchSingle(o, dir, matmul) : 0;
  if (o.techniques) BenchTechniques(o, dir, matmul);
  if (o.lora) BenchLora(o, dir);
  if (o.tp) BenchTp(o, dir, matmul);
  std::filesystem::remove_all(dir);
  return status;
}
