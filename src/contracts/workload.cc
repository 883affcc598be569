#include "contracts/workload.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>

#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "common/limits.h"
#include "common/model_presets.h"
#include "contracts/task_steps.h"
#include "contracts/task_variants.h"
#include "contracts/text_data.h"
#include "contracts/workload_command.h"
#include "contracts/workload_early_stop.h"
#include "contracts/workload_model.h"
#include "contracts/workload_table.h"
#include "contracts/workload_top.h"
#include "contracts/yaml_fields.h"

namespace saturn {
namespace {

std::string TooFewGpus(int gpu_min, const Cluster& cluster) {
  return "asks for at least " + std::to_string(gpu_min) + " GPUs but the largest node has " +
         std::to_string(cluster.MaxGpusPerNode());
}

namespace fs = std::filesystem;
using nlohmann::json;

// Task names name files and folders: letters, digits and . _ + -, not
// starting with a punctuation mark.
bool IsTaskName(const std::string& name) {
  auto allowed = [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '+' || c == '-';
  };
  return !name.empty() && std::isalnum(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), allowed);
}

class TaskReader {
 public:
  TaskReader(const Workload& workload, const YAML::Node& node, std::string path)
      : w_(workload), f_(node, workload.source, std::move(path)) {}

  // The task as defined, before sweep and search expansion.
  WorkloadTask Read() {
    WorkloadTask t;
    t.line = YamlLine(f_.node());
    t.name = f_.String("name");
    if (!IsTaskName(t.name)) {
      f_.Fail("name",
              "expected letters, digits and . _ + - (it names files), got " + Quote(t.name));
    }
    std::string type = f_.OptionalString("type").value_or("train");
    if (type == "command") {
      t.is_command = true;
      f_.AllowOnly(
          {"name", "type", "steps", "commands", "sweep", "search", "gpu_range", "seed", "env"});
      ReadCommandFields(f_, w_, &t);
    } else if (type == "train") {
      f_.AllowOnly({"name", "type", "model", "data", "batch_size", "optimizer", "steps", "epochs",
                    "seed", "sweep", "search", "techniques", "gpu_range", "precision", "eval",
                    "finetune"});
      t.spec = json::object();
      t.spec["name"] = t.name;
      t.spec["model"] = ReadModel();
      if (f_.Has("finetune")) t.spec["finetune"] = ReadFinetune();
      t.spec["data"] = ReadData();
      if (model_type_ == "mlp" && !t.spec["model"].contains("width") &&
          t.spec["data"]["type"] != "table") {
        f_.Fail("model", "an mlp on " + t.spec["data"]["type"].get<std::string>() +
                             " data needs width: (its vectors' width)");
      }
      t.spec["batch_size"] = f_.Int("batch_size", 1, limits::kMaxBatchSize);
      t.batch_size_line = YamlLine(f_.Required("batch_size"));
      t.field = f_.path();
      t.spec["optimizer"] = ReadOptimizer();
      t.spec["seed"] = f_.OptionalInt("seed", 0).value_or(0);
      std::string precision = f_.OptionalString("precision").value_or("fp32");
      if (precision != "fp32" && precision != "bf16") {
        f_.Fail("precision", "expected fp32 or bf16, got " + Quote(precision) +
                                 SuggestionFor(precision, {"fp32", "bf16"}));
      }
      if (precision != "fp32") t.spec["precision"] = precision;
      if (f_.Has("eval")) t.spec["eval"] = ReadEval();
      ReadTechniques(&t);
    } else {
      f_.Fail("type", "expected train (the default) or command, got " + Quote(type) +
                          SuggestionFor(type, {"train", "command"}));
    }
    ReadGpuRange(&t);
    if (t.is_command) CheckServedCounts(f_, w_, t);
    return t;
  }

  const YamlFields& fields() const { return f_; }

 private:
  json ReadModel() {
    YamlFields m(f_.Required("model"), w_.source, f_.FieldPath("model"));
    model_ = ReadModelField(m, w_.base_dir);
    model_type_ = model_["type"];
    return model_;
  }

  json ReadFinetune() {
    YamlFields ft(f_.Required("finetune"), w_.source, f_.FieldPath("finetune"));
    return ReadFinetuneField(ft, w_.source, model_type_);
  }

  json ReadData() {
    YamlFields d(f_.Required("data"), w_.source, f_.FieldPath("data"));
    std::string type = d.String("type");
    json out = {{"type", type}};
    if (type == "text" && d.Has("tokenizer")) {
      out = ReadTokenizedText(d);
    } else if (type == "text") {
      d.AllowOnly({"type", "path", "tokenizer"});
      out["path"] = ExistingFile(d, "path", w_.base_dir);
      if (model_type_ == "torchscript") {
        d.Fail("type", "a torchscript model takes tokens or tensors data (text is for gpt)");
      }
      if (TakesTokenIds()) {
        d.Fail("type", "text data without a tokenizer is bytes, for the byte-level gpt; " +
                           model_type_ +
                           " takes token ids: add tokenizer: DIR (the model's Hugging Face "
                           "tokenizer.json folder), or give tokens data or synthetic");
      }
      if (model_type_ != "gpt") {
        d.Fail("type", "text data feeds language models (gpt); use synthetic for " + model_type_);
      }
    } else if (type == "synthetic") {
      d.AllowOnly({"type", "seed", "size"});
      if (model_type_ == "torchscript") {
        d.Fail("type",
               "synthetic data is shaped for the zoo's models; a torchscript model takes "
               "tokens or tensors data");
      }
      if (auto seed = d.OptionalInt("seed", 0)) out["seed"] = *seed;
      if (auto size = d.OptionalInt("size", 1)) out["size"] = *size;
    } else if (type == "tokens") {
      out = ReadTokens(d);
    } else if (type == "table") {
      out = ReadTableData(d, w_.base_dir, model_type_);
    } else if (type == "tensors") {
      d.AllowOnly({"type", "path", "eval_path"});
      out["path"] = ExistingFile(d, "path", w_.base_dir);
      if (d.Has("eval_path")) out["eval_path"] = ExistingFile(d, "eval_path", w_.base_dir);
    } else {
      d.Fail("type", "unknown data type " + Quote(type) +
                         "; expected text, synthetic, tokens, tensors or table" +
                         SuggestionFor(type, {"text", "synthetic", "tokens", "tensors", "table"}));
    }
    return out;
  }

  // The model families whose tokens are a tokenizer's ids.
  bool TakesTokenIds() const { return model_type_ == "gpt2" || model_type_ == "llama"; }

  json ReadTokens(const YamlFields& d) {
    d.AllowOnly({"type", "path", "eval_path", "seq_len", "vocab"});
    json out = {{"type", "tokens"}};
    out["path"] = ExistingFile(d, "path", w_.base_dir);
    if (d.Has("eval_path")) out["eval_path"] = ExistingFile(d, "eval_path", w_.base_dir);
    out["seq_len"] = d.Int("seq_len", 1, limits::kMaxModelSize);
    long vocab = d.Int("vocab", 2, limits::kMaxVocab);
    out["vocab"] = vocab;
    if (TakesTokenIds()) {
      if (out["seq_len"] != model_["seq_len"]) {
        d.Fail("seq_len", "must be the model's seq_len (" + model_["seq_len"].dump() +
                              "); set model.seq_len to train on shorter windows");
      }
      if (vocab > model_["vocab"].get<long>()) {
        d.Fail("vocab", "at most the model's vocab (" + model_["vocab"].dump() + ")");
      }
    }
    return out;
  }

  // data: {type: text, path, tokenizer: DIR, field?, eos?}: the text's
  // tokens from the token cache (contracts/text_data.h), tokenized there
  // first if need be; the worker reads them as tokens data.
  json ReadTokenizedText(const YamlFields& d) {
    if (!TakesTokenIds()) {
      d.Fail("tokenizer", "a tokenizer makes token ids for gpt2 and llama models; " + model_type_ +
                              (model_type_ == "gpt" ? " reads text as bytes (leave tokenizer out)"
                                                    : " does not take them"));
    }
    long vocab = model_["vocab"], seq_len = model_["seq_len"];
    TextTokens t = ReadTextTokens(d, w_.base_dir, vocab);
    if (static_cast<long>(t.tokens) < seq_len + 2) {
      d.Fail("path", "makes " + std::to_string(t.tokens) + " tokens with this tokenizer; the " +
                         "model's seq_len " + std::to_string(seq_len) + " needs at least " +
                         std::to_string(seq_len + 2));
    }
    json out = {{"type", "tokens"}, {"path", t.path}, {"vocab", t.vocab}, {"seq_len", seq_len}};
    if (d.Has("eval_path")) {
      // Held-out text, tokenized alike (its own cache entry).
      out["eval_path"] = ReadTextTokens(d, w_.base_dir, vocab, "eval_path").path;
    }
    return out;
  }

  // eval: {every: STEPS, batches: N}: evaluation on held-out data.
  json ReadEval() {
    YamlFields e(f_.Required("eval"), w_.source, f_.FieldPath("eval"));
    e.AllowOnly({"every", "batches"});
    json out = {{"every", e.Int("every", 1, limits::kMaxSteps)},
                {"batches", e.OptionalInt("batches", 1, limits::kMaxBatchSize).value_or(1)}};
    return out;
  }

  json ReadOptimizer() {
    YamlFields o(f_.Required("optimizer"), w_.source, f_.FieldPath("optimizer"));
    std::string type = o.String("type");
    json out = {{"type", type}, {"lr", o.Double("lr", 0.0)}};
    if (type == "sgd") {
      o.AllowOnly({"type", "lr", "momentum", "schedule", "clip_grad_norm"});
      if (o.Has("momentum")) out["momentum"] = NonNegative(o, "momentum");
    } else if (type == "adam") {
      o.AllowOnly({"type", "lr", "schedule", "clip_grad_norm"});
    } else if (type == "adamw") {
      o.AllowOnly({"type", "lr", "weight_decay", "schedule", "clip_grad_norm"});
      if (o.Has("weight_decay")) out["weight_decay"] = NonNegative(o, "weight_decay");
    } else {
      o.Fail("type", "unknown optimizer " + Quote(type) + "; expected sgd, adam or adamw" +
                         SuggestionFor(type, {"sgd", "adam", "adamw"}));
    }
    if (o.Has("clip_grad_norm")) out["clip_grad_norm"] = o.Double("clip_grad_norm", 0.0);
    if (o.Has("schedule")) out["schedule"] = ReadSchedule(o);
    return out;
  }

  // optimizer.schedule: {type: constant | linear | cosine, warmup_steps: N
  // | warmup_ratio: R} (engine/task.h: Hugging Face's schedules).
  json ReadSchedule(const YamlFields& optimizer) {
    YamlFields f(optimizer.Required("schedule"), w_.source, optimizer.FieldPath("schedule"));
    f.AllowOnly({"type", "warmup_steps", "warmup_ratio"});
    std::string type = f.Has("type") ? f.String("type") : "constant";
    if (type != "constant" && type != "linear" && type != "cosine") {
      f.Fail("type", "unknown schedule " + Quote(type) + "; expected constant, linear or cosine" +
                         SuggestionFor(type, {"constant", "linear", "cosine"}));
    }
    json out = {{"type", type}};
    if (f.Has("warmup_steps") && f.Has("warmup_ratio")) {
      f.Fail("warmup_ratio", "give warmup_steps or warmup_ratio, not both");
    }
    if (f.Has("warmup_steps")) out["warmup_steps"] = *f.OptionalInt("warmup_steps", 0);
    if (f.Has("warmup_ratio")) {
      double ratio = NonNegative(f, "warmup_ratio");
      if (ratio > 1.0) f.Fail("warmup_ratio", "expected a fraction of the steps, in [0, 1]");
      out["warmup_ratio"] = ratio;
    }
    return out;
  }

  static double NonNegative(const YamlFields& f, std::string_view key) {
    double v = YamlToDouble(f.Required(key), f.source(), f.FieldPath(key),
                            -std::numeric_limits<double>::infinity());
    if (v < 0) f.Fail(key, "expected a number >= 0");
    return v;
  }

  void ReadTechniques(WorkloadTask* t) {
    if (!f_.Has("techniques")) return;
    YAML::Node list = f_.Required("techniques");
    if (!list.IsSequence() || list.size() == 0) {
      f_.Fail("techniques", "expected a non-empty list of technique names");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      std::string field = f_.FieldPath("techniques") + "[" + std::to_string(i) + "]";
      // Names are checked against the worker's techniques (AvailableTechniques).
      t->techniques.push_back(YamlToString(list[i], w_.source, field));
      t->technique_lines.push_back(YamlLine(list[i]));
    }
  }

  void ReadGpuRange(WorkloadTask* t) {
    if (!f_.Has("gpu_range")) return;
    YAML::Node range = f_.Required("gpu_range");
    std::string field = f_.FieldPath("gpu_range");
    if (!range.IsSequence() || range.size() != 2) {
      f_.Fail("gpu_range", "expected [min, max], e.g. [1, 8]");
    }
    t->gpu_min =
        static_cast<int>(YamlToInt(range[0], w_.source, field + "[0]", 1, limits::kMaxGpusPerNode));
    t->gpu_max =
        static_cast<int>(YamlToInt(range[1], w_.source, field + "[1]", 1, limits::kMaxGpusPerNode));
    if (t->gpu_max < t->gpu_min) f_.Fail("gpu_range", "expected min <= max");
    t->gpu_range_given = true;
    // A cluster from the allocation is checked once it is known (UseAllocation).
    if (!w_.from_allocation && t->gpu_min > w_.cluster.MaxGpusPerNode()) {
      f_.Fail("gpu_range", TooFewGpus(t->gpu_min, w_.cluster));
    }
  }

  const Workload& w_;
  YamlFields f_;
  std::string model_type_;
  json model_;  // the model as read
};

// What a trial measures does not depend on how long the task trains: the
// step count (steps, or epochs turned into steps) and how often it
// evaluates (a trial times one evaluation) are left out, so changing them
// reuses cached trials.
std::string TrialKey(const WorkloadTask& t) {
  json key = t.spec;
  key.erase("name");
  key.erase("seed");
  key.erase("steps");
  if (key.contains("model")) key["model"].erase("init");  // values, not speed or memory
  if (key.contains("eval")) key["eval"].erase("every");   // its cost is per evaluation
  if (key.contains("optimizer")) {  // values; clipping's reduction stays (it costs time)
    key["optimizer"].erase("lr");
    key["optimizer"].erase("schedule");
  }
  if (key.contains("data")) {  // a table's groups share one shape: their trials
    key["data"].erase("seed");
    key["data"].erase("group");
    key["data"].erase("train_rows");
  }
  return key.dump();  // nlohmann sorts object keys: canonical
}

// The tasks a task's sweep and search make keep the workload within its
// limit of tasks, or the task's field says by how much not.
void CheckTaskCount(const YamlFields& task, const TaskExpansion& expansion, const Workload& w) {
  const long adding = expansion.Size();
  long room = w.max_tasks - static_cast<long>(w.tasks.size());
  if (adding <= room) return;
  std::string limit = "the workload past its limit of " + Plural(w.max_tasks, "task") +
                      "; raise it with max_tasks: in the workload or --max-tasks";
  if (expansion.Empty()) {
    throw InputError(w.source, YamlLine(task.node()), task.path(), "takes " + limit);
  }
  task.Fail(expansion.Searched() ? "search" : "sweep",
            std::string(expansion.Swept() && expansion.Searched() ? "with the sweep, " : "") +
                "makes " + Plural(adding, "task") + ", which takes " + limit);
}

// Reads a variant of a task; an error that names no line of its own (the
// variant is a copy) is put at the sweep or search field that makes it
// fail: the first of them that fails set alone in the task as written, else
// the search (or the sweep).
WorkloadTask ReadVariant(const Workload& w, const YAML::Node& written, const std::string& label,
                         const TaskVariant& variant, const TaskExpansion& expansion) {
  try {
    return TaskReader(w, variant.node, label).Read();
  } catch (const InputError& e) {
    if (e.line() > 1) throw;  // a swept value or a choice keeps its own line
    for (const SetValue& s : variant.set) {
      try {
        TaskReader(w, WithValues(written, {s}), label).Read();
      } catch (const InputError&) {
        throw e.AtLine(s.line);
      }
    }
    throw e.AtLine(expansion.Searched() ? expansion.SearchLine() : expansion.SweepLine());
  }
}

// Adds a task of tasks[i] (a variant, or a group of one): its steps, trial
// key and sweep (`sweep`: the tasks its best is chosen among); names must
// be unique (`names` maps each to its line).
void AddTask(WorkloadTask task, const TaskVariant& variant, const TaskExpansion& expansion,
             const std::string& sweep, const std::string& path, std::map<std::string, int>& names,
             Workload& w) {
  try {
    SetSteps(variant.node, w.source, path, task);
  } catch (const InputError& e) {
    if (expansion.Empty() || e.line() > 1) throw;
    throw e.AtLine(expansion.Searched() ? expansion.SearchLine() : expansion.SweepLine());
  }
  task.trial_key = TrialKey(task);
  task.sweep = sweep;
  task.varied = VariedValues(variant.set, task.spec);
  auto [it, inserted] = names.emplace(task.name, task.line);
  if (!inserted) {
    // Samples have names of their own: a duplicate is the sweep's, or
    // another task's name.
    int line = task.line;
    std::string field = ".name";
    if (!expansion.Empty()) {
      line = expansion.Swept() ? expansion.SweepLine() : expansion.SearchLine();
      field = expansion.Swept() ? ".sweep" : ".search";
    }
    throw InputError(
        w.source, line, path + field,
        (expansion.Empty() ? "duplicate task name " : "makes the duplicate task name ") +
            Quote(task.name) + " (also at line " + std::to_string(it->second) + ")");
  }
  w.tasks.push_back(std::move(task));
}

// Reads tasks[i]: validates it as written, then each variant its sweep and
// search make (and each group of a table task's variants), and appends each
// resulting task.
void ReadTaskAndSweep(const YAML::Node& node, const std::string& path,
                      std::map<std::string, int>& names, Workload& w) {
  TaskReader base(w, node, path);
  WorkloadTask written = base.Read();
  TaskExpansion expansion(base.fields());
  CheckTaskCount(base.fields(), expansion, w);
  // A variant is a copy, and copies have no lines: its errors point at the
  // sweep or search (where it differs from the task as written), its task
  // at the task.
  const int made_at = expansion.Searched() ? expansion.SearchLine() : expansion.SweepLine();
  const std::string kind = expansion.Searched() ? " (search " : " (sweep ";
  for (const TaskVariant& variant : expansion.Variants(node, written.name)) {
    WorkloadTask task = written;
    if (!expansion.Empty()) {
      task = ReadVariant(w, node, path + kind + variant.name + ")", variant, expansion);
      KeepLines(written, variant.set, made_at, task);
    }
    if (!IsTableTask(task)) {
      AddTask(std::move(task), variant, expansion, written.name, path, names, w);
      continue;
    }
    // One task per group; a group's variants are its sweep.
    for (WorkloadTask& group : ExpandGroups(task, w)) {
      std::string sweep = written.name + "@" + group.group;
      // A group's model steps faster than one all-reduce: one device,
      // unless the task lists its techniques (docs/groups.md).
      if (group.techniques.empty()) group.techniques = {"single"};
      AddTask(std::move(group), variant, expansion, sweep, path, names, w);
    }
  }
}

}  // namespace

std::vector<std::string> TaskTechniques(const WorkloadTask& task,
                                        const std::vector<std::string>& available) {
  return task.techniques.empty() ? available : task.techniques;
}

Workload ParseWorkload(const std::string& text, const std::string& source,
                       const std::string& base_dir, const std::vector<std::string>& extra_plugins,
                       long max_tasks) {
  Workload w;
  w.source = source;
  w.base_dir = base_dir;
  YamlFields top(ParseYamlText(text, source), source, "");
  top.AllowOnly({"cluster", "tasks", "plugins", "max_tasks", "early_stop", "select"});
  w.max_tasks = max_tasks > 0
                    ? max_tasks
                    : top.OptionalInt("max_tasks", 1).value_or(defaults::kMaxWorkloadTasks);
  ReadWorkloadCluster(top, w);
  ReadPlugins(top, extra_plugins, w);
  YAML::Node tasks = top.Required("tasks");
  if (!tasks.IsSequence() || tasks.size() == 0) {
    top.Fail("tasks", "expected a non-empty list of tasks");
  }
  std::map<std::string, int> names;
  for (size_t i = 0; i < tasks.size(); ++i)
    ReadTaskAndSweep(tasks[i], "tasks[" + std::to_string(i) + "]", names, w);
  ReadModelSelection(top, w);
  return w;
}

void UseAllocation(Workload& w, const std::vector<std::pair<std::string, int>>& nodes) {
  if (!w.from_allocation) return;
  w.cluster = ClusterFromAllocation(*w.from_allocation, nodes, w.source, "cluster");
  for (const WorkloadTask& t : w.tasks) {
    if (t.gpu_min > w.cluster.MaxGpusPerNode()) {
      throw InputError(w.source, t.line, "tasks." + t.name + ".gpu_range",
                       TooFewGpus(t.gpu_min, w.cluster) + " in this allocation");
    }
  }
}

Workload LoadWorkloadFile(const std::string& path, const std::vector<std::string>& extra_plugins,
                          long max_tasks) {
  std::string dir = fs::absolute(fs::path(path)).parent_path().string();
  return ParseWorkload(ReadFile(path), path, dir, extra_plugins, max_tasks);
}

}  // namespace saturn
