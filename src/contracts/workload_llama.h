// `model: {type: llama, ...}` of a train task (Contract 5): a Llama-family
// model (Llama, Mistral, Qwen2 as Hugging Face defines them), its
// configuration from, in order, the task's fields, its preset
// (common/model_presets.h) and what the init checkpoint says of itself (a
// Hugging Face folder's config.json, or the task.json beside a finished
// llama task's model.pt); a field or preset that contradicts the checkpoint
// is refused naming both. Written out in full, in the keys the engine's
// llama family reads (docs/contracts.md, "The llama model").
//
//   json model = ReadLlamaModel(YamlFields(node, source, "tasks[0].model"), "/abs/init");
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "contracts/yaml_fields.h"

namespace saturn {

// `init`: the absolute path of model.init, "" when the task has none (the
// caller writes it out).
nlohmann::json ReadLlamaModel(const YamlFields& m, const std::string& init);

// LoRA targets a model family takes (finetune.lora.targets): attn and mlp
// for every family; llama also takes Hugging Face PEFT's module names.
std::vector<std::string> LoraTargetsOf(const std::string& model_type);

}  // namespace saturn
