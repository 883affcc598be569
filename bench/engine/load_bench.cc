// bench/engine/load_bench: what loading pretrained weights (model.init,
// engine/weights.h) costs against reading the file's bytes, and how much
// memory it takes against the model's size (issue 27's targets: <= 1.2x the
// read time, <= 1.2x the model's size at peak).
//
// It writes a GPT-2-layout checkpoint of >= 500 MB (GPT-2 small's sizes with
// 14 layers: 138 M parameters, float32, Hugging Face's keys) as safetensors
// and as a torch.save zip; or, with --family llama (issue 42), a Hugging Face
// Llama checkpoint of >= 1 GB in bfloat16 (TinyLlama-1.1B's shapes with 9 of
// its 22 layers: 527 M parameters) as 3 safetensors shards with
// model.safetensors.index.json and config.json, loaded from the folder into
// the float32 model (every tensor converted, none mapped as the model's
// own). Then, in a fresh process per measurement (so that peak memory is the
// load's alone):
//   read   the file's bytes (every shard's) read() through a 64 MiB buffer:
//          the yardstick
//   fresh  the float32 model's bytes allocated and written once (the pages
//          populated for writing, as the load populates them, then filled):
//          what a load that converts pays beside the read, on this machine
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
//          SATURN_PYTHON), timed around the call (gpt2 only: Debian has no
//          safetensors for Python)
// alternating, round after round, from the disk (the file's pages dropped
// from the page cache first, POSIX_FADV_DONTNEED) and from the page cache;
// medians over rounds.
//
//   build/bench/engine/load_bench [--family gpt2|llama] [--rounds 3] [--layers 14|9]
//                                 [--dir /tmp/x]
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

// A Llama's tensors under Hugging Face's names (nn.Linear's [out, in]),
// in LlamaForCausalLM's state-dict order: TinyLlama-1.1B's shapes.
constexpr int64_t kLlamaWidth = 2048, kLlamaHeads = 32, kLlamaKvHeads = 4, kLlamaFfn = 5632,
                  kLlamaVocab = 32000;
std::vector<Tensor> LlamaTensors(int64_t layers) {
  const int64_t d = kLlamaWidth, kv = kLlamaKvHeads * (d / kLlamaHeads), f = kLlamaFfn;
  std::vector<Tensor> t = {{"model.embed_tokens.weight", {kLlamaVocab, d}}};
  for (int64_t i = 0; i < layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    for (const Tensor& x : std::vector<Tensor>{{"self_attn.q_proj.weight", {d, d}},
                                               {"self_attn.k_proj.weight", {kv, d}},
                                               {"self_attn.v_proj.weight", {kv, d}},
                                               {"self_attn.o_proj.weight", {d, d}},
                                               {"mlp.gate_proj.weight", {f, d}},
                                               {"mlp.up_proj.weight", {f, d}},
                                               {"mlp.down_proj.weight", {d, f}},
                                               {"input_layernorm.weight", {d}},
                                               {"post_attention_layernorm.weight", {d}}})
      t.push_back({p + x.name, x.shape});
  }
  t.push_back({"model.norm.weight", {d}});
  t.push_back({"lm_head.weight", {kLlamaVocab, d}});
  return t;
}

// The llama model fields of task.json (as the workload reader writes them
// from config.json) for LlamaTensors(layers).
json LlamaModel(int64_t layers) {
  return {{"type", "llama"},         {"flavor", "llama"},      {"layers", layers},
          {"d_model", kLlamaWidth},  {"heads", kLlamaHeads},   {"kv_heads", kLlamaKvHeads},
          {"ffn", kLlamaFfn},        {"vocab", kLlamaVocab},   {"positions", 2048},
          {"seq_len", 2048},         {"rope_theta", 10000.0},  {"norm_eps", 1e-5},
          {"tie_embeddings", false}, {"attention_bias", false}};
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

std::vector<Tensor> Tensors(const std::string& family, int64_t layers) {
  return family == "llama" ? LlamaTensors(layers) : Gpt2Tensors(layers, 768, 50257, 1024);
}

// bfloat16 of `v`, rounded to nearest even.
std::vector<uint16_t> Bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    out[i] = static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
  return out;
}

// One safetensors file of `tensors` (float32, or bfloat16 if bf16); values
// seeded from `seed` on, one per tensor.
void WriteSafetensors(const std::string& path, const std::vector<Tensor>& tensors,
                      bool bf16 = false, uint32_t seed = 1) {
  const uint64_t size = bf16 ? 2 : 4;
  json header = json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    uint64_t bytes = static_cast<uint64_t>(Numel(t.shape)) * size;
    header[t.name] = {{"dtype", bf16 ? "BF16" : "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  saturn::AtomicFileWriter out(path);
  uint64_t length = text.size();
  out.Write(&length, 8);
  out.Write(text.data(), text.size());
  for (const Tensor& t : tensors) {
    std::vector<float> v = Values(Numel(t.shape), seed++);
    if (bf16) {
      std::vector<uint16_t> half = Bf16(v);
      out.Write(half.data(), half.size() * 2);
    } else {
      out.Write(v.data(), v.size() * 4);
    }
  }
  out.Commit();
}

// A Hugging Face sharded checkpoint in `folder`: `shards` bfloat16
// safetensors files cut in state-dict order at about equal sizes (as
// save_pretrained's max_shard_size cuts), model.safetensors.index.json and
// config.json.
void WriteLlamaCheckpoint(const std::string& folder, const std::vector<Tensor>& tensors,
                          int64_t layers, int shards) {
  uint64_t total = 0;
  for (const Tensor& t : tensors)
    total += static_cast<uint64_t>(Numel(t.shape)) * 2;
  const uint64_t per_shard = (total + shards - 1) / shards;
  std::vector<std::vector<Tensor>> parts(1);
  uint64_t in_part = 0;
  for (const Tensor& t : tensors) {
    uint64_t bytes = static_cast<uint64_t>(Numel(t.shape)) * 2;
    if (in_part > 0 && in_part + bytes > per_shard && static_cast<int>(parts.size()) < shards) {
      parts.emplace_back();
      in_part = 0;
    }
    parts.back().push_back(t);
    in_part += bytes;
  }
  json weight_map = json::object();
  uint32_t seed = 1;
  for (size_t i = 0; i < parts.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, parts.size());
    WriteSafetensors(folder + "/" + name, parts[i], /*bf16=*/true, seed);
    for (const Tensor& t : parts[i])
      weight_map[t.name] = name;
    seed += static_cast<uint32_t>(parts[i].size());
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  saturn::WriteFileAtomic(folder + "/model.safetensors.index.json", index.dump(2));
  json config = {{"architectures", {"LlamaForCausalLM"}},
                 {"model_type", "llama"},
                 {"hidden_size", kLlamaWidth},
                 {"intermediate_size", kLlamaFfn},
                 {"num_hidden_layers", layers},
                 {"num_attention_heads", kLlamaHeads},
                 {"num_key_value_heads", kLlamaKvHeads},
                 {"vocab_size", kLlamaVocab},
                 {"max_position_embeddings", 2048},
                 {"rms_norm_eps", 1e-5},
                 {"rope_theta", 10000.0},
                 {"tie_word_embeddings", false},
                 {"hidden_act", "silu"},
                 {"torch_dtype", "bfloat16"}};
  saturn::WriteFileAtomic(folder + "/config.json", config.dump(2));
}

// The files whose bytes `path` holds: a folder's safetensors shards, or
// the file itself.
std::vector<std::string> Files(const std::string& path) {
  if (!fs::is_directory(path)) return {path};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.path().extension() == ".safetensors") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

uint64_t FilesBytes(const std::string& path) {
  uint64_t bytes = 0;
  for (const std::string& file : Files(path))
    bytes += fs::file_size(file);
  return bytes;
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

// Drops the files' pages from the page cache (POSIX_FADV_DONTNEED: the
// next read comes from the disk).
void Evict(const std::string& path) {
  for (const std::string& file : Files(path)) {
    int fd = ::open(file.c_str(), O_RDONLY);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// One measurement in this (fresh) process: {"seconds", "peak_bytes"}.
json Measure(const std::string& what, const std::string& family, const std::string& path,
             int64_t layers, bool cold) {
  if (cold) Evict(path);
  double before = StatusBytes("VmRSS:");
  double start = Now();
  double checksum = 0;
  if (what == "fresh") {
    // The float32 model's bytes in fresh memory, written once: what any
    // load into a float32 model pays beside reading the file.
    int64_t floats = 0;
    for (const Tensor& t : Tensors(family, layers))
      floats += Numel(t.shape);
    at::Tensor model = at::empty({floats}, at::kFloat);
    saturn::engine::PopulateForWrite(model);
    model.fill_(1.0f);
    checksum = model[floats - 1].item<double>();
  } else if (what == "read") {
    std::vector<char> buffer(64 << 20);
    for (const std::string& file : Files(path)) {
      int fd = ::open(file.c_str(), O_RDONLY);
      ssize_t n;
      while ((n = ::read(fd, buffer.data(), buffer.size())) > 0)
        checksum += buffer[static_cast<size_t>(n) - 1];
      ::close(fd);
    }
  } else {
    saturn::engine::TaskSpec task;
    task.source = "load_bench";
    task.model_type = family;
    task.model = family == "llama"
                     ? LlamaModel(layers)
                     : json{{"type", "gpt2"}, {"preset", "small"}, {"layers", layers}};
    task.model["init"] = path;
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

json Child(const char* self, const std::string& what, const std::string& family,
           const std::string& path, int64_t layers, bool cold) {
  std::string command = std::string(self) + " --child " + what + " " + family + " " + path + " " +
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

struct Options {
  std::string family = "gpt2";  // or llama
  int rounds = 3;
  int64_t layers = 0;  // 0: 14 (gpt2), 9 (llama)
  std::string dir = fs::temp_directory_path().string() + "/saturn-load-bench";
};

// What was written: the paths to load (a file, or a sharded checkpoint's
// folder) and the float32 model's bytes (the peak's yardstick).
struct Written {
  std::vector<std::string> paths;
  double model_bytes = 0;
};

Written WriteCheckpoints(const Options& o) {
  const bool llama = o.family == "llama";
  std::vector<Tensor> tensors = Tensors(o.family, o.layers);
  int64_t params = 0;
  for (const Tensor& t : tensors)
    params += Numel(t.shape);
  // The parameters, GPT-2's tied embedding once (the head shares it).
  Written w;
  w.model_bytes = 4.0 * static_cast<double>(params);
  fs::create_directories(o.dir);
  double t = Now();
  if (llama) {
    std::string folder = o.dir + "/llama";
    fs::create_directories(folder);
    WriteLlamaCheckpoint(folder, tensors, o.layers, 3);
    w.paths = {folder};
  } else {
    w.paths = {o.dir + "/model.safetensors", o.dir + "/pytorch_model.bin"};
    WriteSafetensors(w.paths[0], tensors);
    WriteTorchSave(w.paths[1], tensors);
  }
  const double file_bytes = static_cast<double>(FilesBytes(w.paths[0]));
  if (llama) {
    std::printf(
        "load_bench: Llama layout (TinyLlama-1.1B's shapes), %lld layers x %lld, %.1f M "
        "parameters; bfloat16, %zu safetensors shards, %.0f MB in all (written in %.1f s); the "
        "float32 model %.0f MB\n",
        static_cast<long long>(o.layers), static_cast<long long>(kLlamaWidth),
        static_cast<double>(params) / 1e6, Files(w.paths[0]).size(), file_bytes / 1e6, Now() - t,
        w.model_bytes / 1e6);
  } else {
    std::printf(
        "load_bench: GPT-2 layout, %lld layers x 768, %.1f M parameters; files %.0f MB each "
        "(written in %.1f s); the model %.0f MB (its head shares the tied embedding)\n",
        static_cast<long long>(o.layers), static_cast<double>(params) / 1e6, file_bytes / 1e6,
        Now() - t, w.model_bytes / 1e6);
  }
  return w;
}

std::string Label(const std::string& path) {
  if (!fs::is_directory(path)) return fs::path(path).filename().string();
  return std::to_string(Files(path).size()) + " shards, bf16";
}

// Each path from the disk and from the page cache: medians over rounds.
void MeasureAll(const char* self, const Options& o, const Written& w) {
  std::printf("%-18s %-6s %-7s %-7s %-7s %-7s %-11s %-7s %-7s %-12s %-8s %s\n", "file", "cache",
              "read s", "fresh s", "load s", "ratio", "/read+fresh", "ready s", "ratio",
              "torch.load s", "peak MB", "peak / model");
  for (const std::string& path : w.paths) {
    for (bool cold : {true, false}) {
      std::vector<double> read, fresh, load, ready, peak, theirs;
      bool zip = path.size() > 4 && path.compare(path.size() - 4, 4, ".bin") == 0;
      Child(self, "read", o.family, path, o.layers, false);  // warms the cache for the warm rounds
      auto seconds = [&](const char* what) {
        return Child(self, what, o.family, path, o.layers, cold)["seconds"].get<double>();
      };
      for (int r = 0; r < o.rounds; ++r) {
        read.push_back(seconds("read"));
        fresh.push_back(seconds("fresh"));
        json loaded = Child(self, "load", o.family, path, o.layers, cold);
        load.push_back(loaded["seconds"].get<double>());
        peak.push_back(loaded["peak_bytes"].get<double>());
        ready.push_back(seconds("ready"));
        if (zip) theirs.push_back(TorchLoad(path, cold));
      }
      double rd = Median(read), fr = Median(fresh), ld = Median(load), rdy = Median(ready),
             pk = Median(peak);
      std::string torch_load = zip ? std::to_string(Median(theirs)).substr(0, 5) : "-";
      std::printf(
          "%-18s %-6s %-7.3f %-7.3f %-7.3f %-6.2fx %-10.2fx %-7.3f %-6.2fx %-12s %-8.0f %.2fx\n",
          Label(path).c_str(), cold ? "cold" : "warm", rd, fr, ld, ld / rd, ld / (rd + fr), rdy,
          rdy / rd, torch_load.c_str(), pk / 1e6, pk / w.model_bytes);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--child") {
    json m =
        Measure(argv[2], argv[3], argv[4], std::atoll(argv[5]), std::string(argv[6]) == "cold");
    std::printf("%s\n", m.dump().c_str());
    return 0;
  }
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--rounds")
      o.rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (arg == "--layers")
      o.layers = std::max(1, std::atoi(argv[i + 1]));
    else if (arg == "--dir")
      o.dir = argv[i + 1];
    else if (arg == "--family")
      o.family = argv[i + 1];
  }
  if (o.family != "gpt2" && o.family != "llama") {
    std::fprintf(stderr, "load_bench: --family gpt2 or llama\n");
    return 2;
  }
  if (o.layers == 0) o.layers = o.family == "llama" ? 9 : 14;
  Written written = WriteCheckpoints(o);
  MeasureAll(argv[0], o, written);
  std::printf(
      "targets: load <= 1.2x read (cold: bytes from the disk), peak <= 1.2x the %smodel; fresh: "
      "the float32 model's bytes allocated and written once (what a load that converts pays "
      "beside the read; a float32 file mapped copy-on-write does not); ready adds the copy "
      "into device memory every technique makes (no target)\n",
      o.family == "llama" ? "float32 " : "");
  if (!std::getenv("LOAD_BENCH_KEEP")) fs::remove_all(o.dir);
  return 0;
}
