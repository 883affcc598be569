// The tasks one written task becomes (workload.h): one per combination of
// its `sweep:` values (contracts/sweep.h; the last axis varies fastest),
// times each of its `search:` samples (contracts/search_space.h; the samples
// vary fastest). Every grid point gets the same samples, so a grid over
// batch sizes compares the same learning rates. A variant is named
// "<task>-<sweep's values>-<sample's values>" (gpt-bs16-lr3.162e-5).
//
//   TaskExpansion expansion(task_fields);          // reads sweep: and search:
//   expansion.Size();                              // grid points x samples
//   for (const TaskVariant& v : expansion.Variants(task_node, "gpt")) v.name, v.node, v.set;
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "contracts/search_space.h"
#include "contracts/sweep.h"
#include "contracts/workload.h"
#include "contracts/yaml_fields.h"

namespace saturn {

// A field a variant sets.
struct SetValue {
  std::string path;  // dotted field, as written
  YAML::Node value;
  int line = 0;          // the sweep's line, or the searched field's
  bool sampled = false;  // by the search (else by the sweep)
};

struct TaskVariant {
  std::string name;
  YAML::Node node;            // the task with `set` set, without sweep: or search:
  std::vector<SetValue> set;  // the sweep's values, then the sample's, in the order written
};

class TaskExpansion {
 public:
  // Reads the task's sweep: and search:; InputError naming the field.
  explicit TaskExpansion(const YamlFields& task);

  // Neither sweep nor search: the task as written is its only task.
  bool Empty() const { return axes_.empty() && search_.samples == 0; }
  bool Swept() const { return !axes_.empty(); }
  bool Searched() const { return search_.samples > 0; }
  int SweepLine() const { return sweep_line_; }
  int SearchLine() const { return search_.line; }
  // How many variants (LONG_MAX when more), without making them.
  long Size() const;
  // Every variant, grid point by grid point, its samples within; the task
  // itself (not a copy, no fields set) when Empty().
  std::vector<TaskVariant> Variants(const YAML::Node& task, const std::string& base_name) const;

 private:
  std::vector<SweepAxis> axes_;
  int sweep_line_ = 0;
  SearchSpace search_;
};

// A copy of `task` with each of `set` set, without sweep: or search:.
YAML::Node WithValues(const YAML::Node& task, const std::vector<SetValue>& set);

// The values a variant's fields took: each as the reader made it (its
// place in `spec`, the worker's JSON), else as written (a field the JSON
// does not carry, such as epochs).
std::vector<VariedValue> VariedValues(const std::vector<SetValue>& set, const nlohmann::json& spec);

// A variant is a copy, and a copy's nodes have no lines (YAML::Clone gives
// line 1, values set none): the lines later checks name are the task's as
// written, or those of the sweep or search fields that set them (`fallback`
// where there is none).
void KeepLines(const WorkloadTask& written, const std::vector<SetValue>& set, int fallback,
               WorkloadTask& variant);

}  // namespace saturn
