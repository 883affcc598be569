// bench/engine/load_bench: what loading pretrained weights (model.init,
// engine/weights.h) costs against reading the file's bytes, and how much
// memory it takes against the model's size (issue 27's targets: <= 1.2x the
// read time, <= 1.2x the model's size at peak).
//
// It writes a GPT-2-layout checkpoint of >= 500 MB (GPT-2 small's sizes with
// 14 layers: 138 M parameters, float32, Hugging Face's keys) as safetensors
// and as a torch.save zip, then, in a fresh process per measurement (so
// that peak memory is the load's alone):
//   read   the file's bytes read() through a 64 MiB buffer: the yardstick
//   load   the model built from the file with init: index, checks, every
//          block's parameters ready to use (all blocks kept, as single or
//          spill hold them); float32 tensors are the file's pages, mapped
//          copy-on-write (engine/weights.h)
//   ready  load, then every block copied into device memory as a worker's
//          technique does (BlockToDevice; on these CPU devices a fresh
//          allocation): what a worker pays before its first step
// The load uses two threads, as it does in a worker: one reads the next
// tensor while the other converts or places the current one (on a one-thread
// device too); torch.load and the raw read use one.
//   torch.load  what a user would otherwise run for the torch.save file:
//          PyTorch's torch.load in a fresh interpreter (/usr/bin/python3, or
//          SATURN_PYTHON), timed around the call
// alternating, round after round, from the disk (the file's pages dropped
// from the page cache first, POSIX_FADV_DONTNEED) and from the page cache;
// medians over rounds.
//
//   build/bench/engine/load_bench [--rounds 3] [--layers 14] [--dir /tmp/x]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/common/command.h"
#include "common/fs.h"
#include "engine/blocks.h"
#include "engine/device.h"
#include "engine/formats/torch_save.h"
#include "engine/model.h"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// VmRSS or VmHWM of this process, bytes.
double StatusBytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::atof(line.c_str() + std::strlen(field)) * 1024.0;
  }
  return 0.0;
}

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
};

// GPT-2's tensors under Hugging Face's names, Conv1D weights [in, out].
std::vector<Tensor> Gpt2Tensors(int64_t layers, int64_t d, int64_t vocab, int64_t positions) {
  std::vector<Tensor> t = {{"transformer.wte.weight", {vocab, d}},
                           {"transformer.wpe.weight", {positions, d}}};
  for (int64_t i = 0; i < layers; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    for (const Tensor& x : std::vector<Tensor>{{"ln_1.weight", {d}},
                                               {"ln_1.bias", {d}},
                                               {"attn.c_attn.weight", {d, 3 * d}},
                                               {"attn.c_attn.bias", {3 * d}},
                                               {"attn.c_proj.weight", {d, d}},
                                               {"attn.c_proj.bias", {d}},
                                               {"ln_2.weight", {d}},
                                               {"ln_2.bias", {d}},
                                               {"mlp.c_fc.weight", {d, 4 * d}},
                                               {"mlp.c_fc.bias", {4 * d}},
                                               {"mlp.c_proj.weight", {4 * d, d}},
                                               {"mlp.c_proj.bias", {d}}})
      t.push_back({p + x.name, x.shape});
  }
  t.push_back({"transformer.ln_f.weight", {d}});
  t.push_back({"transformer.ln_f.bias", {d}});
  return t;
}

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t x : shape)
    n *= x;
  return n;
}

// Values that are not all zero (so nothing is special-cased), cheaply.
std::vector<float> Values(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t x = seed * 2654435761u + 1;
  for (float& f : v) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    f = static_cast<float>(x % 2001) * 1e-5f - 0.01f;
  }
  return v;
}

void WriteSafetensors(const std::string& path, const std::vector<Tensor>& tensors) {
  json header = json::object();
  uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    uint64_t bytes = static_cast<uint64_t>(Numel(t.shape)) * 4;
    header[t.name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  saturn::AtomicFileWriter out(path);
  uint64_t length = text.size();
  out.Write(&length, 8);
  out.Write(text.data(), text.size());
  uint32_t seed = 1;
  for (const Tensor& t : tensors) {
    std::vector<float> v = Values(Numel(t.shape), seed++);
    out.Write(v.data(), v.size() * 4);
  }
  out.Commit();
}

void WriteTorchSave(const std::string& path, const std::vector<Tensor>& tensors) {
  saturn::AtomicFileWriter out(path);
  saturn::engine::TorchSaveWriter writer([&](const void* p, size_t n) { out.Write(p, n); });
  uint32_t seed = 1;
  for (const Tensor& t : tensors) {
    std::vector<float> v = Values(Numel(t.shape), seed++);
    writer.Add(t.name, saturn::engine::StoredDtype::kF32, t.shape, v.data(), v.size() * 4);
  }
  writer.Finish();
  out.Commit();
}

// Drops the file's pages from the page cache (POSIX_FADV_DONTNEED: the
// next read comes from the disk).
void Evict(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// One measurement in this (fresh) process: {"seconds", "peak_bytes"}.
json Measure(const std::string& what, const std::string& path, int64_t layers, bool cold) {
  if (cold) Evict(path);
  double before = StatusBytes("VmRSS:");
  double start = Now();
  double checksum = 0;
  if (what == "read") {
    int fd = ::open(path.c_str(), O_RDONLY);
    std::vector<char> buffer(64 << 20);
    ssize_t n;
    while ((n = ::read(fd, buffer.data(), buffer.size())) > 0)
      checksum += buffer[static_cast<size_t>(n) - 1];
    ::close(fd);
  } else {
    saturn::engine::TaskSpec task;
    task.source = "load_bench";
    task.model_type = "gpt2";
    task.model = {{"type", "gpt2"}, {"preset", "small"}, {"layers", layers}, {"init", path}};
    std::unique_ptr<saturn::engine::Model> model = saturn::engine::BuildModel(task);
    std::vector<std::unique_ptr<saturn::engine::Block>> blocks;
    std::unique_ptr<saturn::engine::Device> device;
    if (what == "ready")
      device = std::make_unique<saturn::engine::Device>(saturn::engine::DeviceSpec{});
    for (int i = 0; i < model->NumBlocks(); ++i) {
      blocks.push_back(model->BuildBlock(i, /*materialize=*/true));
      if (device) saturn::engine::BlockToDevice(*blocks.back(), *device);
    }
    checksum = blocks.back()->Params()[0].tensor->sum().item<double>();
  }
  double seconds = Now() - start;
  return {
      {"seconds", seconds}, {"peak_bytes", StatusBytes("VmHWM:") - before}, {"checksum", checksum}};
}

json Child(const char* self, const std::string& what, const std::string& path, int64_t layers,
           bool cold) {
  std::string command = std::string(self) + " --child " + what + " " + path + " " +
                        std::to_string(layers) + (cold ? " cold" : " warm");
  int status = 0;
  std::string out = saturn::bench::CommandOutput(command, &status);
  if (status != 0) {
    std::fprintf(stderr, "load_bench: %s failed\n", command.c_str());
    std::exit(1);
  }
  return json::parse(out);
}

// torch.load of `path` in a fresh Python, seconds (0 without torch).
double TorchLoad(const std::string& path, bool cold) {
  if (cold) Evict(path);
  const char* python = std::getenv("SATURN_PYTHON");
  std::string command = std::string(python ? python : "/usr/bin/python3") +
                        " -c 'import time, torch; t = time.perf_counter(); torch.load(\"" + path +
                        "\"); print(time.perf_counter() - t)' 2>/dev/null";
  int status = 0;
  std::string out = saturn::bench::CommandOutput(command, &status);
  return status == 0 ? std::atof(out.c_str()) : 0.0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--child") {
    json m = Measure(argv[2], argv[3], std::atoll(argv[4]), std::string(argv[5]) == "cold");
    std::printf("%s\n", m.dump().c_str());
    return 0;
  }
  int rounds = 3;
  int64_t layers = 14;
  std::string dir = fs::temp_directory_path().string() + "/saturn-load-bench";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--rounds")
      rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (arg == "--layers")
      layers = std::max(1, std::atoi(argv[i + 1]));
    else if (arg == "--dir")
      dir = argv[i + 1];
  }
  const int64_t d = 768, vocab = 50257, positions = 1024;
  std::vector<Tensor> tensors = Gpt2Tensors(layers, d, vocab, positions);
  int64_t params = 0;
  for (const Tensor& t : tensors)
    params += Numel(t.shape);
  // The parameters, the tied embedding once (the head shares it).
  double model_bytes = 4.0 * static_cast<double>(params);
  fs::create_directories(dir);
  std::string safetensors = dir + "/model.safetensors", torch_save = dir + "/pytorch_model.bin";
  double t = Now();
  WriteSafetensors(safetensors, tensors);
  WriteTorchSave(torch_save, tensors);
  std::printf(
      "load_bench: GPT-2 layout, %lld layers x 768, %.1f M parameters; files %.0f MB each "
      "(written in %.1f s); the model %.0f MB (its head shares the tied embedding)\n",
      static_cast<long long>(layers), static_cast<double>(params) / 1e6,
      static_cast<double>(fs::file_size(safetensors)) / 1e6, Now() - t, model_bytes / 1e6);
  std::printf("%-18s %-6s %-8s %-8s %-7s %-8s %-7s %-12s %-9s %s\n", "file", "cache", "read s",
              "load s", "ratio", "ready s", "ratio", "torch.load s", "peak MB", "peak / model");
  for (const std::string& path : {safetensors, torch_save}) {
    for (bool cold : {true, false}) {
      std::vector<double> read, load, ready, peak, theirs;
      bool zip = path == torch_save;
      Child(argv[0], "read", path, layers, false);  // warms the cache for the warm rounds
      for (int r = 0; r < rounds; ++r) {
        read.push_back(Child(argv[0], "read", path, layers, cold)["seconds"].get<double>());
        json loaded = Child(argv[0], "load", path, layers, cold);
        load.push_back(loaded["seconds"].get<double>());
        peak.push_back(loaded["peak_bytes"].get<double>());
        ready.push_back(Child(argv[0], "ready", path, layers, cold)["seconds"].get<double>());
        if (zip) theirs.push_back(TorchLoad(path, cold));
      }
      double rd = Median(read), ld = Median(load), rdy = Median(ready), pk = Median(peak);
      std::string torch_load = zip ? std::to_string(Median(theirs)).substr(0, 5) : "-";
      std::printf("%-18s %-6s %-8.3f %-8.3f %-6.2fx %-8.3f %-6.2fx %-12s %-9.0f %.2fx\n",
                  fs::path(path).filename().c_str(), cold ? "cold" : "warm", rd, ld, ld / rd, rdy,
                  rdy / rd, torch_load.c_str(), pk / 1e6, pk / model_bytes);
      std::fflush(stdout);
    }
  }
  std::printf(
      "targets: load <= 1.2x read (cold: bytes from the disk), peak <= 1.2x the model; ready "
      "adds the copy into device memory every technique makes (no target)\n");
  if (!std::getenv("LOAD_BENCH_KEEP")) fs::remove_all(dir);
  return 0;
}
