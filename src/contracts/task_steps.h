// A workload task's total training steps (workload.h): `steps` as given, or
// `epochs` times the batches in one epoch of its data (a text or tokens
// file's samples, synthetic data's `size`), within limits::kMaxSteps. A
// command task must give steps.
//
//   SetSteps(variant_node, "w.yaml", "tasks[0]", task);  // task.steps, task.spec["steps"]
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "contracts/workload.h"

namespace saturn {

// Reads steps or epochs from `effective` (the task as swept); InputError
// naming `source`, `path` and the field.
void SetSteps(const YAML::Node& effective, const std::string& source, const std::string& path,
              WorkloadTask& task);

}  // namespace saturn
