// The `model:` and `finetune:` fields of a train task (Contract 5), read
// and checked for workload.cc: each zoo family's fields, gpt2's sizes (its
// fields, preset, or what the init checkpoint's config.json or task.json
// says), `init:` paths, LoRA settings.
//
//   json model = ReadModelField(YamlFields(node, source, "tasks[0].model"), base_dir);
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "contracts/yaml_fields.h"

namespace saturn {

// The model as the worker reads it (task.json's "model"), relative paths
// resolved against `base_dir`; InputError naming the field otherwise.
nlohmann::json ReadModelField(const YamlFields& model, const std::string& base_dir);
// finetune: {lora: {rank, alpha, targets}} for a model of `model_type`.
nlohmann::json ReadFinetuneField(const YamlFields& finetune, const std::string& source,
                                 const std::string& model_type);
// "; did you mean 'x'?" for a name that is none of `known` but close to one
// (common/format.h, ClosestName), else "": appended to "unknown ..." messages.
std::string SuggestionFor(std::string_view name, const std::vector<std::string>& known);
// The absolute path of the existing file `key` names (relative to `base_dir`).
std::string ExistingFile(const YamlFields& f, std::string_view key, const std::string& base_dir);

}  // namespace saturn
