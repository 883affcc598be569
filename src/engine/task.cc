#include "engine/task.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

#include "common/error.h"
#include "common/fs.h"

namespace saturn::engine {
namespace {

std::string Shown(const nlohmann::json& value) {
  return Quote(value.dump());
}

}  // namespace

JsonFields::JsonFields(const nlohmann::json& object, std::string source, std::string path)
    : object_(object), source_(std::move(source)), path_(std::move(path)) {
  if (!object_.is_object()) {
    throw InputError(source_, 0, path_.empty() ? "task" : path_,
                     "expected an object, got " + Shown(object_));
  }
}

std::string JsonFields::Field(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonFields::Fail(std::string_view key, std::string_view message) const {
  throw InputError(source_, 0, Field(key), message);
}

bool JsonFields::Has(std::string_view key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const nlohmann::json& JsonFields::Get(std::string_view key) const {
  if (!Has(key)) Fail(key, "missing (required)");
  return *object_.find(key);
}

int64_t JsonFields::Int(std::string_view key, int64_t min) const {
  const nlohmann::json& value = Get(key);
  bool integral =
      value.is_number_integer() || (value.is_number_float() && std::isfinite(value.get<double>()) &&
                                    std::floor(value.get<double>()) == value.get<double>() &&
                                    std::fabs(value.get<double>()) < 9e15);
  if (!integral)
    Fail(key, "expected an integer >= " + std::to_string(min) + ", got " + Shown(value));
  int64_t n =
      value.is_number_integer() ? value.get<int64_t>() : static_cast<int64_t>(value.get<double>());
  if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{INT64_MAX}) {
    Fail(key, "integer too large: " + Shown(value));
  }
  if (n < min) Fail(key, "expected an integer >= " + std::to_string(min) + ", got " + Shown(value));
  return n;
}

int64_t JsonFields::IntOr(std::string_view key, int64_t fallback, int64_t min) const {
  return Has(key) ? Int(key, min) : fallback;
}

double JsonFields::Number(std::string_view key, bool positive) const {
  const nlohmann::json& value = Get(key);
  const char* expected = positive ? "expected a number > 0, got " : "expected a number >= 0, got ";
  if (!value.is_number()) Fail(key, expected + Shown(value));
  double x = value.get<double>();
  if (!std::isfinite(x) || x < 0 || (positive && x == 0)) Fail(key, expected + Shown(value));
  return x;
}

double JsonFields::NumberOr(std::string_view key, double fallback, bool positive) const {
  return Has(key) ? Number(key, positive) : fallback;
}

std::string JsonFields::String(std::string_view key) const {
  const nlohmann::json& value = Get(key);
  if (!value.is_string() || value.get<std::string>().empty()) {
    Fail(key, "expected a non-empty string, got " + Shown(value));
  }
  return value.get<std::string>();
}

std::string JsonFields::StringOr(std::string_view key, std::string fallback) const {
  return Has(key) ? String(key) : fallback;
}

const nlohmann::json& JsonFields::Object(std::string_view key) const {
  const nlohmann::json& value = Get(key);
  if (!value.is_object()) Fail(key, "expected an object, got " + Shown(value));
  return value;
}

bool LoraSpec::Targets(const std::string& part) const {
  // Hugging Face PEFT's module names (llama) and the shorthand covering each.
  static const std::map<std::string, std::string> kShorthand = {
      {"q_proj", "attn"},   {"k_proj", "attn"}, {"v_proj", "attn"},  {"o_proj", "attn"},
      {"gate_proj", "mlp"}, {"up_proj", "mlp"}, {"down_proj", "mlp"}};
  auto shorthand = kShorthand.find(part);
  for (const std::string& t : targets) {
    if (t == part || (shorthand != kShorthand.end() && t == shorthand->second)) return true;
  }
  return false;
}

namespace {

// finetune: {lora: {rank, alpha, targets}}.
void ParseFinetune(const JsonFields& task, TaskSpec& spec) {
  const std::string& source = spec.source;
  spec.finetune = task.Object("finetune");
  JsonFields finetune(spec.finetune, source, "finetune");
  if (finetune.Has("lora")) {
    JsonFields lora(finetune.Object("lora"), source, "finetune.lora");
    spec.lora.rank = lora.Int("rank", 1);
    spec.lora.alpha = lora.NumberOr("alpha", static_cast<double>(spec.lora.rank), true);
    const nlohmann::json& targets =
        lora.Has("targets") ? spec.finetune["lora"]["targets"] : nlohmann::json::array({"attn"});
    // llama also takes PEFT's module names.
    std::set<std::string> accepted = {"attn", "mlp"};
    if (spec.model_type == "llama") {
      accepted.insert(
          {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
    }
    const char* listed = spec.model_type == "llama"
                             ? "attn, mlp, q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj "
                               "or down_proj"
                             : "attn or mlp";
    if (!targets.is_array() || targets.empty()) {
      lora.Fail("targets", std::string("expected a non-empty list of ") + listed);
    }
    for (const nlohmann::json& t : targets) {
      if (!t.is_string() || !accepted.contains(t.get<std::string>())) {
        lora.Fail("targets", std::string("expected ") + listed + ", got " + Shown(t));
      }
      const std::string name = t.get<std::string>();
      if (std::find(spec.lora.targets.begin(), spec.lora.targets.end(), name) ==
          spec.lora.targets.end()) {
        spec.lora.targets.push_back(name);
      }
    }
  }
}

// optimizer.schedule: {type, warmup_steps | warmup_ratio} (warmup_ratio of
// the task's steps, rounded up, as Hugging Face's Trainer does).
ScheduleSpec ParseSchedule(const nlohmann::json& object, const std::string& source, int64_t steps) {
  JsonFields f(object, source, "optimizer.schedule");
  ScheduleSpec s;
  s.type = f.StringOr("type", "constant");
  if (s.type != "constant" && s.type != "linear" && s.type != "cosine") {
    f.Fail("type", "expected one of constant, linear, cosine, got " + Quote(s.type));
  }
  if (f.Has("warmup_steps") && f.Has("warmup_ratio")) {
    f.Fail("warmup_ratio", "give warmup_steps or warmup_ratio, not both");
  }
  s.warmup_steps = f.IntOr("warmup_steps", 0, 0);
  if (f.Has("warmup_ratio")) {
    double ratio = f.Number("warmup_ratio", false);
    if (ratio > 1.0) f.Fail("warmup_ratio", "expected a number in [0, 1]");
    s.warmup_steps = static_cast<int64_t>(std::ceil(ratio * static_cast<double>(steps)));
  }
  return s;
}

}  // namespace

TaskSpec ArrayTasks(std::vector<TaskSpec> members, const std::string& source) {
  TaskSpec array;
  array.source = source;
  array.name = "array";
  array.model_type = members[0].model_type;
  array.model = members[0].model;
  array.data = members[0].data;
  array.optimizer = members[0].optimizer;
  array.batch_size = members[0].batch_size;
  for (const TaskSpec& m : members)
    array.steps = std::max(array.steps, m.steps);
  array.array = true;
  array.pack = std::move(members);
  return array;
}

TaskSpec ParseTask(const nlohmann::json& json, const std::string& source) {
  // A pack (engine/pack.h): {"pack": [task, task, ...]}.
  if (json.is_object() && json.contains("pack")) {
    const nlohmann::json& list = json["pack"];
    if (!list.is_array()) throw InputError(source, 0, "pack", "expected a list of tasks");
    std::vector<TaskSpec> members;
    for (const nlohmann::json& member : list)
      members.push_back(ParseTask(member, source));
    bool tables = !members.empty();
    for (const TaskSpec& m : members)
      tables = tables && m.data.type == "table";
    if (tables) return ArrayTasks(std::move(members), source);
    return PackTasks(std::move(members), source);
  }
  JsonFields task(json, source, "");
  TaskSpec spec;
  spec.source = source;
  spec.name = task.StringOr("name", "task");
  JsonFields model(task.Object("model"), source, "model");
  spec.model = task.Object("model");
  spec.model_type = model.String("type");
  spec.batch_size = task.Int("batch_size", 1);
  spec.steps = task.IntOr("steps", 0, 1);
  spec.seed = static_cast<uint64_t>(task.IntOr("seed", 0, 0));
  spec.precision = task.StringOr("precision", "fp32");
  if (spec.precision != "fp32" && spec.precision != "bf16") {
    task.Fail("precision", "expected fp32 or bf16, got " + Quote(spec.precision));
  }

  JsonFields data(task.Object("data"), source, "data");
  spec.data.type = data.String("type");
  if (spec.data.type == "text") {
    spec.data.path = data.String("path");
  } else if (spec.data.type == "synthetic") {
    spec.data.seed = static_cast<uint64_t>(data.IntOr("seed", static_cast<int64_t>(spec.seed), 0));
  } else if (spec.data.type == "tokens") {
    spec.data.path = data.String("path");
    spec.data.seq_len = data.Int("seq_len", 1);
    spec.data.vocab = data.Int("vocab", 2);
    if (spec.data.vocab > INT32_MAX) {
      data.Fail("vocab", "at most 2147483647 (token ids are int32 in the engine)");
    }
  } else if (spec.data.type == "tensors") {
    spec.data.path = data.String("path");
  } else if (spec.data.type == "table") {
    spec.data.path = data.String("path");
    spec.data.group = data.String("group");
  } else {
    data.Fail("type",
              "expected text, synthetic, tokens, tensors or table, got " + Quote(spec.data.type));
  }
  if (data.Has("eval_path")) {
    if (spec.data.type != "tokens" && spec.data.type != "tensors") {
      data.Fail("eval_path", "only tokens and tensors data take a separate held-out file");
    }
    spec.data.eval_path = data.String("eval_path");
  }
  if (task.Has("eval")) {
    JsonFields eval(task.Object("eval"), source, "eval");
    spec.eval.every = eval.Int("every", 1);
    spec.eval.batches = eval.IntOr("batches", 1, 1);
  }

  if (task.Has("finetune")) ParseFinetune(task, spec);

  JsonFields optimizer(task.Object("optimizer"), source, "optimizer");
  spec.optimizer.type = optimizer.String("type");
  if (spec.optimizer.type != "sgd" && spec.optimizer.type != "adam" &&
      spec.optimizer.type != "adamw") {
    optimizer.Fail("type", "expected one of sgd, adam, adamw, got " + Quote(spec.optimizer.type));
  }
  spec.optimizer.lr = optimizer.Number("lr", true);
  spec.optimizer.momentum = optimizer.NumberOr("momentum", spec.optimizer.momentum, false);
  if (spec.optimizer.momentum >= 1.0) optimizer.Fail("momentum", "expected a number in [0, 1)");
  spec.optimizer.weight_decay =
      optimizer.NumberOr("weight_decay", spec.optimizer.weight_decay, false);
  spec.optimizer.clip_grad_norm = optimizer.NumberOr("clip_grad_norm", 0.0, false);
  if (optimizer.Has("schedule")) {
    spec.optimizer.schedule = ParseSchedule(optimizer.Object("schedule"), source, spec.steps);
  }
  spec.optimizer.schedule.total_steps = spec.steps;
  return spec;
}

TaskSpec LoadTask(const std::string& path) {
  std::string text = ReadFile(path);
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) throw InputError(path, 0, "", "not valid JSON");
  return ParseTask(json, path);
}

double ScheduleSpec::Multiplier(int64_t step) const {
  const double s = static_cast<double>(step), warmup = static_cast<double>(warmup_steps);
  if (step < warmup_steps) return s / std::max(1.0, warmup);
  if (type == "constant") return 1.0;
  const double total = static_cast<double>(total_steps);
  const double after = std::max(1.0, total - warmup);
  if (type == "linear") return std::max(0.0, (total - s) / after);
  const double progress = (s - warmup) / after;  // cosine, half a period
  return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace saturn::engine
