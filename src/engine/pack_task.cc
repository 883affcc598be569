// PackTasks (engine/task.h): a pack's members checked and made one task.
// Torch-free, like the rest of the task file's reading.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "engine/task.h"

namespace saturn::engine {
namespace {

// An InputError about member `k`'s field.
[[noreturn]] void MemberFails(const TaskSpec& member, size_t k, const std::string& field,
                              const std::string& message) {
  throw InputError(member.source, 0, "pack[" + std::to_string(k) + "]." + field,
                   "task " + Quote(member.name) + ": " + message);
}

// The optimizer as far as its state goes: "sgd with momentum", "adamw".
std::string OptimizerKind(const OptimizerSpec& o) {
  if (o.type != "sgd") return o.type;
  return o.momentum == 0.0 ? "sgd without momentum" : "sgd with momentum";
}

// "d_model (32, here 64), init (..., here absent)": the model fields that differ.
std::string ModelDifferences(const nlohmann::json& first, const nlohmann::json& other) {
  std::string out;
  auto shown = [](const nlohmann::json& model, const std::string& key) {
    return model.contains(key) ? model[key].dump() : std::string("absent");
  };
  std::vector<std::string> keys;
  for (const auto& [key, value] : first.items())
    keys.push_back(key);
  for (const auto& [key, value] : other.items())
    if (!first.contains(key)) keys.push_back(key);
  for (const std::string& key : keys) {
    if (first.contains(key) && other.contains(key) && first[key] == other[key]) continue;
    out += (out.empty() ? "" : ", ") + key + " (" + shown(first, key) + ", here " +
           shown(other, key) + ")";
  }
  return out;
}

}  // namespace

TaskSpec PackTasks(std::vector<TaskSpec> members, const std::string& source) {
  if (members.size() < 2) {
    throw InputError(source, 0, "pack",
                     "a pack needs at least two tasks, got " + std::to_string(members.size()));
  }
  const TaskSpec& first = members[0];
  bool pretrained = first.model.contains("init");
  for (size_t k = 0; k < members.size(); ++k) {
    const TaskSpec& m = members[k];
    if (!m.lora.Enabled() || !m.lora.pack.empty()) {
      MemberFails(m, k, "finetune.lora", "only LoRA tasks pack (they share a frozen base)");
    }
    // Language models whose LoRA tasks train adapters only (ViT's head
    // trains too, and one head cannot serve several members).
    if (m.model_type != "gpt" && m.model_type != "gpt2" && m.model_type != "llama") {
      MemberFails(m, k, "model.type",
                  "packs take gpt, gpt2 and llama models (their LoRA tasks train adapters only), "
                  "not " +
                      m.model_type);
    }
    if (m.model != first.model) {
      MemberFails(m, k, "model",
                  "members share one base, so their models are equal; this one differs from " +
                      Quote(first.name) + " in " + ModelDifferences(first.model, m.model));
    }
    if (!pretrained && m.seed != first.seed) {
      MemberFails(m, k, "seed",
                  "without model.init the base's weights come from the seed, so members share "
                  "one: " +
                      std::to_string(first.seed) + " (" + Quote(first.name) + "'s), got " +
                      std::to_string(m.seed));
    }
    if (m.precision != first.precision) {
      MemberFails(m, k, "precision",
                  "members share one precision: " + first.precision + ", got " + m.precision);
    }
    if (m.optimizer.type != first.optimizer.type ||
        (m.optimizer.momentum == 0.0) != (first.optimizer.momentum == 0.0)) {
      MemberFails(m, k, "optimizer",
                  "members' optimizers keep the same kind of state: " + Quote(first.name) +
                      " has " + OptimizerKind(first.optimizer) + ", this one " +
                      OptimizerKind(m.optimizer));
    }
    for (size_t j = 0; j < k; ++j) {
      if (members[j].name == m.name) MemberFails(m, k, "name", "two members named alike");
    }
  }
  TaskSpec pack;
  pack.source = source;
  pack.name = "pack";
  pack.model_type = first.model_type;
  pack.model = first.model;
  pack.data = first.data;
  pack.optimizer = first.optimizer;
  pack.seed = first.seed;
  pack.precision = first.precision;
  pack.steps = 0;
  for (const TaskSpec& m : members) {
    pack.batch_size += m.batch_size;
    pack.steps = std::max(pack.steps, m.steps);
    LoraSpec lora = m.lora;
    lora.seed = m.seed;
    pack.lora.pack.push_back(std::move(lora));
  }
  pack.finetune = {{"pack", static_cast<int64_t>(members.size())}};
  pack.pack = std::move(members);
  return pack;
}

}  // namespace saturn::engine
