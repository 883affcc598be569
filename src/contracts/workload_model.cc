// The `model:` and `finetune:` fields of a train task (spec/workload_model.h).
#include "contracts/workload_model.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "common/limits.h"
#include "common/model_presets.h"
#include "contracts/workload_llama.h"

namespace saturn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A path as written, relative to the workload's folder unless absolute.
fs::path Resolved(const std::string& p, const std::string& base_dir) {
  return fs::path(p).is_absolute() ? fs::path(p) : fs::path(base_dir) / p;
}

}  // namespace

std::string SuggestionFor(std::string_view name, const std::vector<std::string>& known) {
  std::string hint = DidYouMean(name, known);
  return hint.empty() ? "" : "; " + hint;
}

std::string ExistingFile(const YamlFields& f, std::string_view key, const std::string& base_dir) {
  fs::path full = Resolved(f.String(key), base_dir);
  std::error_code ec;
  if (!fs::is_regular_file(full, ec)) {
    f.Fail(key, "no such file: " + full.string());
  }
  return fs::absolute(full).lexically_normal().string();
}

namespace {

// model.init: pretrained weights, a file or a folder holding one.
std::string InitPath(const YamlFields& m, const std::string& base_dir) {
  fs::path full = Resolved(m.String("init"), base_dir);
  std::error_code ec;
  if (!fs::is_regular_file(full, ec) && !fs::is_directory(full, ec)) {
    m.Fail("init", "no such file or folder: " + full.string() +
                       " (a model.safetensors, pytorch_model.bin or model.pt, or a folder "
                       "holding one)");
  }
  return fs::absolute(full).lexically_normal().string();
}

// What a checkpoint says of its own sizes: a Hugging Face folder's
// config.json (n_layer, n_embd, ...), or the task.json beside a finished
// task's model.pt (Saturn's names); `file` says which. Nothing when
// neither is there.
struct CheckpointSizes {
  std::string file;
  std::map<std::string, std::pair<std::string, long>> sizes;  // ours -> (its name, value)
};

CheckpointSizes Gpt2Sizes(const YamlFields& m, const std::string& base_dir) {
  CheckpointSizes out;
  if (!m.Has("init")) return out;
  fs::path init = InitPath(m, base_dir);
  fs::path dir = fs::is_directory(init) ? init : init.parent_path();
  const std::vector<std::pair<std::string, std::string>> kHf = {{"layers", "n_layer"},
                                                                {"d_model", "n_embd"},
                                                                {"heads", "n_head"},
                                                                {"vocab", "vocab_size"},
                                                                {"positions", "n_positions"}};
  std::error_code ec;
  for (const char* name : {"config.json", "task.json"}) {
    fs::path file = dir / name;
    if (!fs::is_regular_file(file, ec)) continue;
    nlohmann::json json;
    std::string why;
    if (!ParseJsonText(ReadFile(file.string()), &json, &why) || !json.is_object()) {
      m.Fail("init", file.string() + " is not valid JSON: " + why);
    }
    bool task = std::string(name) == "task.json";
    if (task) {
      if (!json.contains("model") || !json["model"].is_object() ||
          json["model"].value("type", "") != "gpt2") {
        continue;  // another model's task: its shapes are checked as the worker loads it
      }
      json = json["model"];
    }
    out.file = file.string();
    for (const auto& [ours, theirs] : kHf) {
      std::string key = task ? ours : theirs;
      if (auto value = JsonInt(json.value(key, nlohmann::json()), 1, limits::kMaxModelSize)) {
        out.sizes[ours] = {key, *value};
      }
    }
    return out;
  }
  return out;
}

// GPT-2: its sizes from, in order, the task's fields, its preset, what the
// init checkpoint says of itself (Gpt2Sizes), GPT-2 small; written out in
// full. A field or preset that contradicts the checkpoint is refused here
// (its tensors would not fit the model).
json ReadGpt2(const YamlFields& m, const std::string& base_dir) {
  m.AllowOnly(
      {"type", "preset", "layers", "d_model", "heads", "vocab", "positions", "seq_len", "init"});
  json out = {{"type", "gpt2"}};
  std::string preset_name = m.OptionalString("preset").value_or("small");
  const Gpt2Preset* preset = FindGpt2Preset(preset_name);
  if (preset == nullptr) {
    m.Fail("preset", "expected small, medium, large or xl, got " + Quote(preset_name));
  }
  if (m.Has("preset")) out["preset"] = preset_name;
  CheckpointSizes checkpoint = Gpt2Sizes(m, base_dir);
  const std::map<std::string, long> defaults = {{"layers", preset->layers},
                                                {"d_model", preset->d_model},
                                                {"heads", preset->heads},
                                                {"vocab", kGpt2Vocab},
                                                {"positions", kGpt2Positions}};
  for (const char* key : {"layers", "d_model", "heads", "vocab", "positions"}) {
    auto known = checkpoint.sizes.find(key);
    bool from_preset =
        m.Has("preset") && std::string(key) != "vocab" && std::string(key) != "positions";
    long value =
        m.OptionalInt(key, key == std::string("vocab") ? 2 : 1,
                      key == std::string("vocab") ? limits::kMaxVocab : limits::kMaxModelSize)
            .value_or(known != checkpoint.sizes.end() && !from_preset ? known->second.second
                                                                      : defaults.at(key));
    if (known != checkpoint.sizes.end() && value != known->second.second) {
      std::string given = m.Has(key) ? key : "preset";
      m.Fail(given, std::string(key) + " " + std::to_string(value) +
                        " does not fit the init "
                        "checkpoint, whose " +
                        checkpoint.file + " says " + known->second.first + " " +
                        std::to_string(known->second.second) +
                        " (leave the field out to take the checkpoint's)");
    }
    out[key] = value;
  }
  long d_model = out["d_model"], heads = out["heads"], positions = out["positions"];
  long seq_len = m.OptionalInt("seq_len", 1, limits::kMaxModelSize).value_or(positions);
  out["seq_len"] = seq_len;
  if (d_model % heads != 0) {
    m.Fail("heads", "must divide d_model (" + std::to_string(d_model) + ")");
  }
  if (seq_len > positions) {
    m.Fail("seq_len",
           "at most positions (" + std::to_string(positions) + ", the model's position table)");
  }
  return out;
}

}  // namespace

json ReadModelField(const YamlFields& m, const std::string& base_dir) {
  std::string type = m.String("type");
  json out = {{"type", type}};
  auto ints = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      out[k] = m.Int(k, 1, limits::kMaxModelSize);
  };
  if (type == "gpt2") {
    out = ReadGpt2(m, base_dir);
  } else if (type == "llama") {
    out = ReadLlamaModel(m, m.Has("init") ? InitPath(m, base_dir) : "");
  } else if (type == "gpt") {
    m.AllowOnly({"type", "layers", "d_model", "heads", "seq_len", "init"});
    ints({"layers", "d_model", "heads", "seq_len"});
    if (out["d_model"].get<long>() % out["heads"].get<long>() != 0) {
      m.Fail("heads", "must divide d_model (" + std::to_string(out["d_model"].get<long>()) + ")");
    }
  } else if (type == "vit") {
    m.AllowOnly({"type", "layers", "d_model", "heads", "image_size", "patch", "init"});
    ints({"layers", "d_model", "heads", "image_size", "patch"});
    if (out["d_model"].get<long>() % out["heads"].get<long>() != 0) {
      m.Fail("heads", "must divide d_model (" + std::to_string(out["d_model"].get<long>()) + ")");
    }
    if (out["image_size"].get<long>() % out["patch"].get<long>() != 0) {
      m.Fail("patch",
             "must divide image_size (" + std::to_string(out["image_size"].get<long>()) + ")");
    }
  } else if (type == "resnet") {
    m.AllowOnly({"type", "blocks", "width", "image_size", "init"});
    ints({"blocks", "width", "image_size"});
  } else if (type == "mlp") {
    m.AllowOnly({"type", "layers", "width", "init"});
    out["layers"] = m.Int("layers", 0, limits::kMaxModelSize);  // 0: linear (table data)
    if (out["layers"] != 0 || m.Has("width")) ints({"width"});
  } else if (type == "torchscript") {
    m.AllowOnly({"type", "path", "loss"});
    out["path"] = ExistingFile(m, "path", base_dir);
    std::string loss = m.String("loss");
    if (loss != "cross_entropy" && loss != "mse") {
      m.Fail("loss", "expected cross_entropy or mse, got " + Quote(loss));
    }
    out["loss"] = loss;
  } else {
    m.Fail("type", "unknown model type " + Quote(type) +
                       "; expected gpt, gpt2, llama, vit, resnet, mlp or torchscript" +
                       SuggestionFor(
                           type, {"gpt", "gpt2", "llama", "vit", "resnet", "mlp", "torchscript"}));
  }
  if (m.Has("init")) out["init"] = InitPath(m, base_dir);
  return out;
}

namespace {

// finetune.lora.targets: attn and mlp, and for llama also PEFT's module names
// (q_proj, ..., down_proj), kept as written.
json ReadLoraTargets(const YamlFields& lora, const std::string& source,
                     const std::string& model_type) {
  std::vector<std::string> accepted = LoraTargetsOf(model_type);
  std::string listed = accepted.size() == 2 ? "attn or mlp" : "attn, mlp or a module name (";
  for (size_t i = 2; i < accepted.size(); ++i)
    listed += accepted[i] + (i + 1 < accepted.size() ? ", " : ")");
  YAML::Node list = lora.Required("targets");
  if (!list.IsSequence() || list.size() == 0) {
    lora.Fail("targets", "expected a non-empty list of " + listed);
  }
  json targets = json::array();
  for (size_t i = 0; i < list.size(); ++i) {
    std::string field = lora.FieldPath("targets") + "[" + std::to_string(i) + "]";
    std::string target = YamlToString(list[i], source, field);
    if (std::find(accepted.begin(), accepted.end(), target) == accepted.end()) {
      std::vector<std::string> llama = LoraTargetsOf("llama");
      bool peft = std::find(llama.begin(), llama.end(), target) != llama.end();
      throw InputError(
          source, YamlLine(list[i]), field,
          "expected " + listed + ", got " + Quote(target) +
              (peft ? " (module names are for llama; " + model_type + " takes attn and mlp)"
                    : SuggestionFor(target, accepted)));
    }
    targets.push_back(target);
  }
  return targets;
}

}  // namespace

// finetune: {lora: {rank, alpha, targets}}.
json ReadFinetuneField(const YamlFields& ft, const std::string& source,
                       const std::string& model_type) {
  ft.AllowOnly({"lora"});
  json out = json::object();
  if (!ft.Has("lora")) return out;
  YamlFields lora(ft.Required("lora"), source, ft.FieldPath("lora"));
  lora.AllowOnly({"rank", "alpha", "targets"});
  if (model_type != "gpt" && model_type != "gpt2" && model_type != "llama" && model_type != "vit") {
    ft.Fail("lora", "LoRA adapts transformer models (gpt, gpt2, llama, vit), not " + model_type);
  }
  long rank = lora.Int("rank", 1, limits::kMaxModelSize);
  json l = {{"rank", rank}};
  if (lora.Has("alpha")) l["alpha"] = lora.Double("alpha", 0.0);
  if (lora.Has("targets")) l["targets"] = ReadLoraTargets(lora, source, model_type);
  out["lora"] = l;
  return out;
}

}  // namespace saturn
