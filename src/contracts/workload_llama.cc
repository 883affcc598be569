// `model: {type: llama}` (contracts/workload_llama.h).
#include "contracts/workload_llama.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "common/limits.h"
#include "common/model_presets.h"
#include "contracts/workload_model.h"

namespace saturn {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The model's keys, in the order they are resolved (a default may depend on
// an earlier key), each with config.json's name. sliding_window is only
// checked (seq_len stays within it), not written: the engine attends over
// whole windows.
struct Key {
  const char* ours;
  const char* hf;
};
constexpr Key kKeys[] = {{"flavor", "model_type"},
                         {"layers", "num_hidden_layers"},
                         {"d_model", "hidden_size"},
                         {"heads", "num_attention_heads"},
                         {"kv_heads", "num_key_value_heads"},
                         {"head_dim", "head_dim"},
                         {"ffn", "intermediate_size"},
                         {"vocab", "vocab_size"},
                         {"positions", "max_position_embeddings"},
                         {"rope_theta", "rope_theta"},
                         {"rope_scaling", "rope_scaling"},
                         {"norm_eps", "rms_norm_eps"},
                         {"tie_embeddings", "tie_word_embeddings"},
                         {"attention_bias", "attention_bias"},
                         {"sliding_window", "sliding_window"}};

const std::vector<std::string> kFlavors = {"llama", "mistral", "qwen2"};
const std::vector<std::string> kPeftTargets = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                               "gate_proj", "up_proj", "down_proj"};

// What a preset or a checkpoint says of the model: the keys it fixes and,
// for messages, the file and its name for each (empty: the file leaves the
// key out and the value is Hugging Face's default).
struct Known {
  std::string file;
  json values = json::object();
  std::map<std::string, std::string> names;
};

json RopeScalingOf(const LlamaRopeScaling& r) {
  std::string type = r.type;
  if (type.empty()) return nullptr;
  if (type == "linear") return {{"type", "linear"}, {"factor", r.factor}};
  return {{"type", type},
          {"factor", r.factor},
          {"low_freq_factor", r.low_freq_factor},
          {"high_freq_factor", r.high_freq_factor},
          {"original_max_position_embeddings", r.original_max_position_embeddings}};
}

Known FromPreset(const LlamaPreset& p) {
  Known k;
  k.file = "preset";
  k.values = {{"flavor", p.flavor},
              {"layers", p.layers},
              {"d_model", p.d_model},
              {"heads", p.heads},
              {"kv_heads", p.kv_heads},
              {"head_dim", p.head_dim},
              {"ffn", p.ffn},
              {"vocab", p.vocab},
              {"positions", p.positions},
              {"rope_theta", p.rope_theta},
              {"rope_scaling", RopeScalingOf(p.rope_scaling)},
              {"norm_eps", p.norm_eps},
              {"tie_embeddings", p.tie_embeddings},
              {"attention_bias", p.attention_bias},
              {"sliding_window", p.sliding_window}};
  return k;
}

// Checked reads of a checkpoint's JSON object (`prefix` names a nested
// one); every error is model.init's, naming the file and the key.
class ConfigReader {
 public:
  ConfigReader(const YamlFields& m, std::string file, const json& j, std::string prefix = "")
      : m_(m), file_(std::move(file)), j_(j), prefix_(std::move(prefix)) {}

  [[noreturn]] void Fail(const std::string& key, const std::string& message) const {
    m_.Fail("init", file_ + ": " + prefix_ + key + ": " + message);
  }
  bool Has(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  const json& Get(const std::string& key) const {
    if (!Has(key)) Fail(key, "missing");
    return j_[key];
  }
  long Int(const std::string& key, long min, long max) const {
    std::optional<long> v = JsonInt(Get(key), min, max);
    if (!v) {
      Fail(key, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                    ", got " + Get(key).dump());
    }
    return *v;
  }
  double Number(const std::string& key, double max = limits::kMaxNumber) const {
    const json& v = Get(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0 ||
        v.get<double>() > max) {
      Fail(key, "expected a number > 0 and <= " + FormatNumber(max) + ", got " + v.dump());
    }
    return v.get<double>();
  }
  bool Bool(const std::string& key) const {
    if (!Get(key).is_boolean()) Fail(key, "expected true or false, got " + Get(key).dump());
    return Get(key).get<bool>();
  }
  std::string String(const std::string& key) const {
    if (!Get(key).is_string()) Fail(key, "expected a string, got " + Get(key).dump());
    return Get(key).get<std::string>();
  }
  // The reader of the object at `key`, its errors naming "key.inner".
  ConfigReader Nested(const std::string& key) const {
    return ConfigReader(m_, file_, j_[key], prefix_ + key + ".");
  }

 private:
  const YamlFields& m_;
  std::string file_;
  const json& j_;
  std::string prefix_;
};

// config.json's rope_scaling: absent, null or of rope_type "default" (none),
// llama3 or linear; "type" is the older name of "rope_type".
json RopeScalingFromConfig(const ConfigReader& c) {
  if (!c.Has("rope_scaling")) return nullptr;
  const json& r = c.Get("rope_scaling");
  if (!r.is_object()) c.Fail("rope_scaling", "expected an object or null, got " + r.dump());
  ConfigReader s = c.Nested("rope_scaling");
  std::string type = s.Has("rope_type") ? s.String("rope_type") : s.String("type");
  if (type == "default") return nullptr;
  if (type == "linear") return {{"type", "linear"}, {"factor", s.Number("factor")}};
  if (type != "llama3") {
    s.Fail(s.Has("rope_type") ? "rope_type" : "type",
           "the rope scaling " + Quote(type) + " is not supported (llama3 and linear are)");
  }
  return {{"type", "llama3"},
          {"factor", s.Number("factor")},
          {"low_freq_factor", s.Number("low_freq_factor")},
          {"high_freq_factor", s.Number("high_freq_factor")},
          {"original_max_position_embeddings",
           s.Int("original_max_position_embeddings", 1, limits::kMaxModelSize)}};
}

// A Hugging Face config.json of model_type llama, mistral or qwen2, with
// Hugging Face's defaults for the keys it leaves out.
Known FromConfig(const YamlFields& m, const std::string& file, const json& j) {
  ConfigReader c(m, file, j);
  std::string type =
      c.Has("model_type") && j["model_type"].is_string() ? c.String("model_type") : "";
  if (std::find(kFlavors.begin(), kFlavors.end(), type) == kFlavors.end()) {
    m.Fail("init", file + ": model_type " +
                       (c.Has("model_type") ? j["model_type"].dump() : "missing") +
                       ": a llama task loads model_type llama, mistral or qwen2");
  }
  if (c.Has("mlp_bias") && c.Bool("mlp_bias")) c.Fail("mlp_bias", "true is not supported");
  if (c.Has("use_sliding_window") && c.Bool("use_sliding_window")) {
    c.Fail("use_sliding_window", "true is not supported (Qwen2's sliding window layers)");
  }
  Known k;
  k.file = file;
  auto put = [&](const char* ours, const char* hf, json value) {
    k.values[ours] = std::move(value);
    k.names[ours] = c.Has(hf) ? hf : "";
  };
  const long kMax = limits::kMaxModelSize;
  put("flavor", "model_type", type);
  put("layers", "num_hidden_layers", c.Int("num_hidden_layers", 1, kMax));
  long d_model = c.Int("hidden_size", 1, kMax), heads = c.Int("num_attention_heads", 1, kMax);
  put("d_model", "hidden_size", d_model);
  put("heads", "num_attention_heads", heads);
  put("kv_heads", "num_key_value_heads",
      c.Has("num_key_value_heads") ? c.Int("num_key_value_heads", 1, kMax) : heads);
  if (!c.Has("head_dim") && d_model % heads != 0) {
    c.Fail("hidden_size", "not a multiple of num_attention_heads, and no head_dim");
  }
  put("head_dim", "head_dim", c.Has("head_dim") ? c.Int("head_dim", 1, kMax) : d_model / heads);
  put("ffn", "intermediate_size", c.Int("intermediate_size", 1, kMax));
  put("vocab", "vocab_size", c.Int("vocab_size", 2, limits::kMaxVocab));
  put("positions", "max_position_embeddings", c.Int("max_position_embeddings", 1, kMax));
  put("rope_theta", "rope_theta", c.Has("rope_theta") ? c.Number("rope_theta") : 10000.0);
  put("rope_scaling", "rope_scaling", RopeScalingFromConfig(c));
  put("norm_eps", "rms_norm_eps", c.Has("rms_norm_eps") ? c.Number("rms_norm_eps", 1) : 1e-6);
  put("tie_embeddings", "tie_word_embeddings",
      c.Has("tie_word_embeddings") && c.Bool("tie_word_embeddings"));
  // Qwen2 always has q/k/v biases, whatever its config says.
  put("attention_bias", "attention_bias",
      type == "qwen2" || (c.Has("attention_bias") && c.Bool("attention_bias")));
  put("sliding_window", "sliding_window",
      type == "mistral" && c.Has("sliding_window") ? c.Int("sliding_window", 1, kMax) : 0);
  return k;
}

// The task.json beside a finished llama task's model.pt: our own names.
Known FromTask(const std::string& file, const json& model) {
  Known k;
  k.file = file;
  for (const Key& key : kKeys) {
    if (!model.contains(key.ours) || std::string(key.ours) == "sliding_window") continue;
    k.values[key.ours] = model[key.ours];
    k.names[key.ours] = key.ours;
  }
  return k;
}

// What the init checkpoint says of itself; nothing when its folder has
// neither a config.json nor a llama task's task.json.
Known FromCheckpoint(const YamlFields& m, const std::string& init) {
  std::error_code ec;
  fs::path dir = fs::is_directory(init, ec) ? fs::path(init) : fs::path(init).parent_path();
  for (const char* name : {"config.json", "task.json"}) {
    fs::path file = dir / name;
    if (!fs::is_regular_file(file, ec)) continue;
    json j;
    std::string why;
    if (!ParseJsonText(ReadFile(file.string()), &j, &why) || !j.is_object()) {
      m.Fail("init", file.string() + " is not valid JSON" + (why.empty() ? "" : ": " + why));
    }
    if (std::string(name) == "config.json") return FromConfig(m, file.string(), j);
    if (j.contains("model") && j["model"].is_object() && j["model"].value("type", "") == "llama") {
      return FromTask(file.string(), j["model"]);
    }
  }
  return {};
}

// model.rope_scaling as the user writes it: none, {type: linear, factor} or
// {type: llama3, factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}.
json RopeScalingFromYaml(const YamlFields& m) {
  YAML::Node node = m.Required("rope_scaling");
  if (node.IsScalar() && node.Scalar() == "none") return nullptr;
  YamlFields r(node, m.source(), m.FieldPath("rope_scaling"));
  std::string type = r.String("type");
  if (type == "linear") {
    r.AllowOnly({"type", "factor"});
    return {{"type", "linear"}, {"factor", r.Double("factor", 0.0)}};
  }
  if (type != "llama3") {
    r.Fail("type", "unknown rope scaling " + Quote(type) + "; expected llama3 or linear" +
                       SuggestionFor(type, {"llama3", "linear"}));
  }
  r.AllowOnly({"type", "factor", "low_freq_factor", "high_freq_factor",
               "original_max_position_embeddings"});
  return {{"type", "llama3"},
          {"factor", r.Double("factor", 0.0)},
          {"low_freq_factor", r.Double("low_freq_factor", 0.0)},
          {"high_freq_factor", r.Double("high_freq_factor", 0.0)},
          {"original_max_position_embeddings",
           r.Int("original_max_position_embeddings", 1, limits::kMaxModelSize)}};
}

// The fields the task gives, checked.
json FromUser(const YamlFields& m) {
  json v = json::object();
  for (const char* k : {"layers", "d_model", "heads", "kv_heads", "head_dim", "ffn", "positions"})
    if (m.Has(k)) v[k] = m.Int(k, 1, limits::kMaxModelSize);
  if (m.Has("vocab")) v["vocab"] = m.Int("vocab", 2, limits::kMaxVocab);
  if (m.Has("rope_theta")) v["rope_theta"] = m.Double("rope_theta", 0.0);
  if (m.Has("rope_scaling")) v["rope_scaling"] = RopeScalingFromYaml(m);
  if (m.Has("norm_eps")) v["norm_eps"] = m.Double("norm_eps", 0.0, 1.0);
  for (const char* k : {"tie_embeddings", "attention_bias"})
    if (auto b = m.OptionalBool(k)) v[k] = *b;
  return v;
}

// Values equal but for the last bits of a float (a YAML 1e-5 and a JSON
// 1e-05 are one number; 500000 and 500000.0 too).
bool Same(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    return std::fabs(x - y) <= 1e-12 * std::max(std::fabs(x), std::fabs(y));
  }
  if (a.is_object() && b.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !Same(it.value(), b[it.key()])) return false;
    return true;
  }
  return a == b;
}

std::string HfName(const std::string& key) {
  for (const Key& k : kKeys)
    if (key == k.ours) return k.hf;
  return key;
}

std::string Shown(const json& v) {
  return v.is_null() ? "none" : v.dump();
}

// A value the task leaves to Hugging Face's default (no checkpoint says it).
json Default(const YamlFields& m, const std::string& key, const json& model) {
  if (key == "flavor") return "llama";
  if (key == "kv_heads") return model["heads"];
  if (key == "head_dim") {
    long d_model = model["d_model"], heads = model["heads"];
    if (d_model % heads != 0) {
      m.Fail("heads",
             "must divide d_model (" + std::to_string(d_model) + ") unless head_dim is given");
    }
    return d_model / heads;
  }
  if (key == "positions" && m.Has("seq_len")) return m.Int("seq_len", 1, limits::kMaxModelSize);
  if (key == "rope_theta") return 10000.0;
  if (key == "rope_scaling") return nullptr;
  if (key == "norm_eps") return 1e-6;
  if (key == "tie_embeddings") return false;
  if (key == "attention_bias") return model["flavor"] == "qwen2";
  if (key == "sliding_window") return 0;
  m.Fail(key, "missing: give " + key + ", a preset (" + LlamaPresetNames() +
                  ") or an init checkpoint whose config.json says it");
}

[[noreturn]] void Contradiction(const YamlFields& m, const std::string& given,
                                const std::string& key, const json& value,
                                const Known& checkpoint) {
  const std::string& name = checkpoint.names.at(key);
  const json& theirs = checkpoint.values[key];
  std::string says = name.empty() ? "leaves " + HfName(key) + " out, which means " + Shown(theirs)
                                  : "says " + name + " " + Shown(theirs);
  m.Fail(given, key + " " + Shown(value) + " does not fit the init checkpoint, whose " +
                    checkpoint.file + " " + says + " (leave the " +
                    (given == "preset" ? "preset" : "field") + " out to take the checkpoint's)");
}

// The rules every configuration keeps, and seq_len within positions (and
// Mistral's sliding window).
void CheckShapes(const YamlFields& m, json& model) {
  long heads = model["heads"], kv_heads = model["kv_heads"], head_dim = model["head_dim"];
  if (heads % kv_heads != 0) {
    m.Fail("kv_heads", "must divide heads (" + std::to_string(heads) + "), got " +
                           std::to_string(kv_heads) + " (each key/value head serves a group of " +
                           "query heads)");
  }
  if (head_dim % 2 != 0) {
    m.Fail("head_dim", "must be even (rotary embeddings turn pairs of dimensions), got " +
                           std::to_string(head_dim));
  }
  long positions = model["positions"];
  long window = model["flavor"] == "mistral" ? model["sliding_window"].get<long>() : 0;
  long fallback = std::min(positions, 2048L);
  if (window > 0) fallback = std::min(fallback, window);
  long seq_len = m.OptionalInt("seq_len", 1, limits::kMaxModelSize).value_or(fallback);
  if (seq_len > positions) {
    m.Fail("seq_len", "at most positions (" + std::to_string(positions) +
                          ", the model's max_position_embeddings)");
  }
  if (window > 0 && seq_len > window) {
    m.Fail("seq_len", "at most the sliding window (" + std::to_string(window) +
                          "): Mistral attends over the last " + std::to_string(window) +
                          " positions, and training with full attention is exact only up to "
                          "the window");
  }
  model["seq_len"] = seq_len;
  model.erase("sliding_window");
}

}  // namespace

json ReadLlamaModel(const YamlFields& m, const std::string& init) {
  m.AllowOnly({"type", "preset", "layers", "d_model", "heads", "kv_heads", "head_dim", "ffn",
               "vocab", "positions", "seq_len", "rope_theta", "rope_scaling", "norm_eps",
               "tie_embeddings", "attention_bias", "init"});
  std::optional<Known> preset;
  json out = {{"type", "llama"}};
  if (m.Has("preset")) {
    std::string name = m.String("preset");
    const LlamaPreset* p = FindLlamaPreset(name);
    if (p == nullptr) {
      m.Fail("preset", "expected one of " + LlamaPresetNames() + ", got " + Quote(name) +
                           SuggestionFor(name, LlamaPresetNameList()));
    }
    preset = FromPreset(*p);
    out["preset"] = name;
  }
  Known checkpoint = init.empty() ? Known{} : FromCheckpoint(m, init);
  json user = FromUser(m);
  json model = json::object();
  for (const Key& key : kKeys) {
    std::string k = key.ours;
    bool known = checkpoint.values.contains(k);
    std::string given = user.contains(k) ? k : preset ? "preset" : "";
    json value = user.contains(k) ? user[k]
                 : preset         ? preset->values[k]
                 : known          ? checkpoint.values[k]
                                  : Default(m, k, model);
    if (known && !Same(value, checkpoint.values[k])) {
      Contradiction(m, given, k, value, checkpoint);
    }
    model[k] = value;
  }
  CheckShapes(m, model);
  out.update(model);
  return out;
}

std::vector<std::string> LoraTargetsOf(const std::string& model_type) {
  std::vector<std::string> out = {"attn", "mlp"};
  if (model_type == "llama") out.insert(out.end(), kPeftTargets.begin(), kPeftTargets.end());
  return out;
}

}  // namespace saturn
