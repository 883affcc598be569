// The hyper-parameters of a sweep's tasks, as the report shows them: per
// task the values its sweep varied (`sweep: {optimizer.lr: [...], seed:
// [...]}` gives each task its lr and seed), by the field's dotted path.
//
// Read back from the tasks themselves: among the tasks of one sweep (those
// written as one task), the settings whose values differ, kept where the
// tasks' names say the field was swept (MakeSweepVariant names a variant
// "<task>-<short key><value>..."; contracts/sweep.h). So a value that only
// follows from a swept one (steps from epochs when batch_size is swept, a
// LoRA alpha that defaults to the rank) is not taken for a swept one.
//
//   std::vector<HyperParameters> hp = SweptValues({{"gpt-lr1e-3", "gpt", spec}, ...});
//   // hp[0] == {{"optimizer.lr", 0.001}}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace saturn {

// A field's dotted path ("optimizer.lr") and the task's value, in the
// order the sweep names them.
using HyperParameters = std::vector<std::pair<std::string, nlohmann::json>>;

struct SweptTask {
  std::string name;
  std::string sweep;    // the name it was written under ("" or its own name: no sweep)
  nlohmann::json spec;  // its settings (WorkloadTask::spec, Contract 5's names)
};

// Per task, in the order given: the values its sweep varied (none for a
// task alone or a sweep of one).
std::vector<HyperParameters> SweptValues(const std::vector<SweptTask>& tasks);

// A value as a table cell shows it: strings bare, numbers as JSON writes them.
std::string HyperParameterText(const nlohmann::json& value);

}  // namespace saturn
