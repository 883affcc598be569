// One training task as the worker receives it (Contract 5 field names), read
// from JSON defensively: every problem is an InputError naming the file and
// the field ("task.json: model.layers: expected an integer >= 1, got '0'").
// Torch-free, so the orchestrators and fast tests can use it.
//
//   TaskSpec task = LoadTask("/runs/x/task.json");
//   if (task.model_type == "gpt") ...;
//   JsonFields model(task.model, task.source, "model");
//   int64_t layers = model.Int("layers", 1);   // InputError if missing or < 1
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace saturn::engine {

// The learning rate over training, as Hugging Face's
// get_{constant,linear,cosine}_schedule_with_warmup define it: the
// multiplier of step s (counted from 0) applies to step s's update; it rises
// linearly from 0 over `warmup_steps`, then stays (constant), falls linearly
// to 0 at `total_steps` (linear) or along half a cosine to 0 (cosine).
struct ScheduleSpec {
  std::string type = "constant";  // constant | linear | cosine
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;  // the task's steps
  // The multiplier of the base learning rate for step `step` (from 0).
  double Multiplier(int64_t step) const;
};

struct OptimizerSpec {
  std::string type;  // sgd | adam | adamw
  double lr = 0.0;
  ScheduleSpec schedule = {};
  // Before each update, every trainable gradient is scaled so that their
  // global L2 norm is at most this (torch.nn.utils.clip_grad_norm_); 0: not.
  double clip_grad_norm = 0.0;
  double momentum = 0.0;       // sgd; PyTorch's default
  double weight_decay = 0.01;  // adamw; PyTorch's default
  double beta1 = 0.9;          // adam, adamw
  double beta2 = 0.999;
  double eps = 1e-8;
};

struct DataSpec {
  std::string type;     // text | synthetic | tokens | tensors | table
  std::string path;     // text: any file, read as bytes; tokens: a token file; tensors: torch.save
  uint64_t seed = 0;    // synthetic: defaults to the task's seed
  int64_t seq_len = 0;  // tokens
  int64_t vocab = 0;    // tokens: every id must be < vocab
  // tokens, tensors: a separate held-out file for evaluation; "" = the
  // held-out split of `path` (data.h)
  std::string eval_path;
  // table: the group whose rows of the group file at `path` are the task's
  // (table/group_file.h; the workload writes the file, docs/groups.md)
  std::string group;
};

// Evaluation on held-out data (data.h: the split): after every `every`
// steps and after the last one, the mean loss (and accuracy, for
// cross-entropy models) over `batches` held-out batches of batch_size
// samples, the same batches each time.
struct EvalSpec {
  int64_t every = 0;  // 0: the task does not evaluate
  int64_t batches = 1;
};

// finetune.lora: low-rank adapters (LoRA, Hu et al. 2021) on the linear
// maps of `targets` (attn: the attention's input and output projections;
// mlp: both MLP layers; for llama also Hugging Face PEFT's module names,
// q_proj k_proj v_proj o_proj of attn, gate_proj up_proj down_proj of
// mlp); the model's own weights are frozen and only the
// adapters train. Each adapted map computes W x + b + (alpha / rank) B A x,
// A [rank, in] seeded uniform(+-1/sqrt(in)), B [out, rank] zeros.
struct LoraSpec {
  int64_t rank = 0;  // 0: no LoRA, every weight trains
  double alpha = 0.0;
  std::vector<std::string> targets;  // as given, without repeats: "attn", "mlp", "q_proj", ...

  // A pack (engine/pack.h): one adapter set per member, in member order,
  // each drawn from its member's seed (`seed`); rank, alpha and targets of
  // the pack's own spec are then unused.
  uint64_t seed = 0;
  std::vector<LoraSpec> pack;

  bool Enabled() const { return rank > 0 || !pack.empty(); }
  double Scale() const { return alpha / static_cast<double>(rank); }
  // Whether `part` is adapted: listed itself, or a PEFT module name whose
  // shorthand is listed (Targets("q_proj") with targets [attn]). "attn" and
  // "mlp" answer for themselves only: [q_proj] does not make Targets("attn").
  bool Targets(const std::string& part) const;
};

struct TaskSpec {
  std::string source;  // where the task came from, for error messages
  std::string name;
  std::string model_type;
  nlohmann::json model;  // the whole model object; families read their own fields
  DataSpec data;
  OptimizerSpec optimizer;
  int64_t batch_size = 0;
  int64_t steps = 0;  // 0 when the task does not say
  uint64_t seed = 0;
  // fp32, or bf16: forward passes under bf16 autocast, with fp32 parameters
  // (master weights), gradients, optimizer state and checkpoints.
  std::string precision = "fp32";
  EvalSpec eval;
  LoraSpec lora;
  // The task's `finetune` object as given (part of a checkpoint's identity).
  nlohmann::json finetune = nlohmann::json::object();
  // A pack's members (engine/pack.h: LoRA tasks over one frozen base trained
  // as this one task); empty for a task alone.
  std::vector<TaskSpec> pack;
  // The members are table tasks trained as a fused array (engine/array.h),
  // each to its own steps (`steps`: the most of them).
  bool array = false;
};

// Typed, checked access to the fields of one JSON object. `path` prefixes
// field names in errors ("model" -> "model.layers").
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string source, std::string path);

  bool Has(std::string_view key) const;
  int64_t Int(std::string_view key, int64_t min) const;
  int64_t IntOr(std::string_view key, int64_t fallback, int64_t min) const;
  // A finite number; `positive` requires > 0, otherwise >= 0.
  double Number(std::string_view key, bool positive) const;
  double NumberOr(std::string_view key, double fallback, bool positive) const;
  std::string String(std::string_view key) const;
  std::string StringOr(std::string_view key, std::string fallback) const;
  const nlohmann::json& Object(std::string_view key) const;
  // An InputError for `key` of this object.
  [[noreturn]] void Fail(std::string_view key, std::string_view message) const;

 private:
  const nlohmann::json& Get(std::string_view key) const;
  std::string Field(std::string_view key) const;

  const nlohmann::json& object_;
  std::string source_;
  std::string path_;
};

// The pack of `members` (engine/pack.h) as one task, its `pack` holding
// them: InputError, naming the member and the field, when they cannot share
// a base (not LoRA tasks; different models, precisions, optimizer state or
// seeds without model.init; evaluation) or are fewer than two.
TaskSpec PackTasks(std::vector<TaskSpec> members, const std::string& source);

// A task object, or a pack: {"pack": [task, task, ...]}.
TaskSpec ParseTask(const nlohmann::json& json, const std::string& source);
// A pack whose members all train table data: a fused array (checked by
// FusedArray, engine/array.h). ParseTask makes one of {"pack": [...]} so.
TaskSpec ArrayTasks(std::vector<TaskSpec> members, const std::string& source);
// Reads and parses a task file; InputError if unreadable or not valid JSON.
TaskSpec LoadTask(const std::string& path);

}  // namespace saturn::engine
