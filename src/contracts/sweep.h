// Sweep axes for the workload reader (workload.h): a task's `sweep:` map
// from a dotted field to a list of values becomes one variant of the task per
// combination of values, in the order written (the last axis varies fastest),
// each named by its values (contracts/task_variants.h makes them).
//
//   std::vector<SweepAxis> axes = ReadSweepAxes(task_fields);  // {optimizer.lr: [..]}
//   for (const auto& combo : SweepCombinations(axes)) ...      // {0}, {1}, ...
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
// field that cannot be swept (CheckVariedField).
std::vector<SweepAxis> ReadSweepAxes(const YamlFields& task);

// Checks that a sweep or search may set the dotted field `key` of `task`:
// not name, sweep, search or type (nor a field under them), and each part
// before the last a map of the task (or absent: the variant makes it).
// InputError at `line` naming `field` ("cannot <verb> over ...").
void CheckVariedField(const YamlFields& task, const std::string& key, int line,
                      const std::string& field, const std::string& verb);

// How many combinations `axes` make (LONG_MAX if more), without making them.
long SweepSize(const std::vector<SweepAxis>& axes);

// Every combination of value indices, one per axis; one empty combination
// when there are no axes.
std::vector<std::vector<size_t>> SweepCombinations(const std::vector<SweepAxis>& axes);

// The key a variant's name gives a swept field: "optimizer.lr" -> "lr",
// "batch_size" -> "bs", others their last component ("finetune.lora.rank"
// -> "rank"). The report heads its hyper-parameter columns with it.
std::string SweepShortKey(const std::string& path);

// A value as a variant's name shows it: a scalar as written, with every
// character but letters, digits and . - + made '_'; "x" for a list or map.
std::string SweepNameValue(const YAML::Node& value);

// Sets a dotted field (e.g. "optimizer.lr") of a task's YAML map; a map on
// the way that the task does not have yet is made.
void SetYamlPath(YAML::Node node, const std::string& path, const YAML::Node& value);

}  // namespace saturn
