#include "contracts/task_steps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/limits.h"
#include "contracts/yaml_fields.h"
#include "tokenizer/token_file.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The elements of a sequence file a task trains on: all of them, or, when
// it evaluates on a held-out part of the same file, those before its last
// tenth (at least seq_len + 2 elements; engine/data.h).
long TrainingElements(const json& spec, long size, long seq_len) {
  bool split = spec.contains("eval") && !spec["data"].contains("eval_path");
  return split ? size - std::max(size / 10, seq_len + 2) : size;
}

// The ids in a token file (tokenizer/token_file.h: headerless uint16, or
// uint16 or uint32 after a header); 0 if it cannot be read.
long TokenCount(const std::string& path) {
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return 0;
  std::ifstream in(path, std::ios::binary);
  std::string head(kTokenFileHeaderBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (!HasTokenFileMagic(head)) return static_cast<long>(size / 2);
  if (head.size() < kTokenFileHeaderBytes) return 0;
  long id_bytes = static_cast<unsigned char>(head[10]) | static_cast<unsigned char>(head[11]) << 8;
  if (id_bytes != 2 && id_bytes != 4) return 0;  // the worker names the file
  return static_cast<long>((size - kTokenFileHeaderBytes) / id_bytes);
}

// Samples in one epoch of a task's data, or 0 if unknown.
long SamplesPerEpoch(const json& spec) {
  const json& data = spec["data"];
  std::string type = data["type"];
  if (type == "synthetic") return data.value("size", 0L);
  if (type == "table") return data.value("train_rows", 0L);
  std::error_code ec;
  if (type == "text") {
    long seq = spec["model"].value("seq_len", 0L);
    long bytes = TrainingElements(
        spec, static_cast<long>(fs::file_size(data["path"].get<std::string>(), ec)), seq);
    return seq > 0 ? std::max(0L, (bytes - 1) / seq) : 0;
  }
  if (type == "tokens") {
    long seq = data["seq_len"].get<long>();
    long tokens = TrainingElements(spec, TokenCount(data["path"].get<std::string>()), seq);
    return std::max(0L, (tokens - 1) / seq);
  }
  return 0;
}

}  // namespace

void SetSteps(const YAML::Node& effective, const std::string& source, const std::string& path,
              WorkloadTask& task) {
  YamlFields f(effective, source, path);
  bool has_steps = effective["steps"].IsDefined(), has_epochs = effective["epochs"].IsDefined();
  if (task.is_command) {
    if (!has_steps) f.Fail("steps", "missing required field");
    task.steps = f.Int("steps", 1, limits::kMaxSteps);
  } else if (has_steps == has_epochs) {
    f.Fail(has_steps ? "epochs" : "steps",
           has_steps ? "give steps or epochs, not both" : "missing: give steps or epochs");
  } else if (has_steps) {
    task.steps = f.Int("steps", 1, limits::kMaxSteps);
  } else {
    long epochs = f.Int("epochs", 1, limits::kMaxSteps);
    long samples = SamplesPerEpoch(task.spec);
    if (samples <= 0) {
      f.Fail("epochs",
             "cannot count the samples of this data; give steps, or data.size "
             "for synthetic data");
    }
    long batch = task.spec["batch_size"].get<long>();
    long per_epoch = samples / batch + (samples % batch != 0);
    if (per_epoch > limits::kMaxSteps / epochs) {
      f.Fail("epochs", std::to_string(epochs) + " epochs of " + std::to_string(per_epoch) +
                           " steps is more than " + std::to_string(limits::kMaxSteps) + " steps");
    }
    task.steps = epochs * per_epoch;
  }
  task.spec["steps"] = task.steps;
}

}  // namespace saturn
