// Sweep expansion for the workload reader (workload.h): a task's `sweep:` map
// from a dotted field to a list of values becomes one variant of the task per
// combination of values, in the order written (the last axis varies fastest),
// each named by its values.
//
//   std::vector<SweepAxis> axes = ReadSweepAxes(task_fields);  // {optimizer.lr: [..]}
//   for (const auto& combo : SweepCombinations(axes)) {
//     SweepVariant v = MakeSweepVariant(task_node, "gpt", axes, combo);  // "gpt-lr1e-4"
//   }
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "contracts/yaml_fields.h"

namespace saturn {

struct SweepAxis {
  std::string path;   // dotted field, e.g. "optimizer.lr"
  YAML::Node values;  // a non-empty sequence
};

// The axes of the task's `sweep:` map (none when it has none). InputError
// naming the sweep field for a value that is not a non-empty list, or for a
// field that cannot be swept (name, sweep, type).
std::vector<SweepAxis> ReadSweepAxes(const YamlFields& task);

// How many combinations `axes` make (LONG_MAX if more), without making them.
long SweepSize(const std::vector<SweepAxis>& axes);

// Every combination of value indices, one per axis; one empty combination
// when there are no axes.
std::vector<std::vector<size_t>> SweepCombinations(const std::vector<SweepAxis>& axes);

// The key a variant's name gives a swept field: "optimizer.lr" -> "lr",
// "batch_size" -> "bs", others their last component ("finetune.lora.rank"
// -> "rank"). The report reads the swept fields back by it.
std::string SweepShortKey(const std::string& path);

struct SweepVariant {
  std::string name;  // base name, then "-<short key><value>" per axis
  YAML::Node node;   // the task with the values set and no `sweep:`
};

SweepVariant MakeSweepVariant(const YAML::Node& task, const std::string& base_name,
                              const std::vector<SweepAxis>& axes, const std::vector<size_t>& combo);

}  // namespace saturn
