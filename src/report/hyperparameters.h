// The hyper-parameters of a sweep's or search's tasks, as the report shows
// them: per task the values its sweep varied and its search drew (`sweep:
// {optimizer.lr: [...], seed: [...]}` gives each task its lr and seed), by
// the field's dotted path as written.
//
// Carried by the tasks themselves (WorkloadTask::varied, contracts/
// task_variants.h): a searched field is always shown; a swept one where its
// values differ among the tasks of its sweep (those written as one task), so
// a sweep of one value shows none. A value that only follows from a swept
// one (steps from epochs when batch_size is swept, a LoRA alpha that
// defaults to the rank) is not among them; a swept or searched map counts
// as its fields, each by its own path.
//
//   std::vector<HyperParameters> hp = SweptValues({{"gpt-lr1e-3", "gpt", task.varied}, ...});
//   // hp[0] == {{"optimizer.lr", 0.001}}
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "contracts/workload.h"

namespace saturn {

// A field's dotted path ("optimizer.lr") and the task's value, in the
// order written.
using HyperParameters = std::vector<std::pair<std::string, nlohmann::json>>;

struct SweptTask {
  std::string name;
  std::string sweep;                // the name it was written under ("": its own)
  std::vector<VariedValue> varied;  // what its sweep and search set (WorkloadTask::varied)
};

// Per task, in the order given: the values its sweep varied and its search
// drew, in the order written (none for a task of neither, or a sweep of
// one value).
std::vector<HyperParameters> SweptValues(const std::vector<SweptTask>& tasks);

// The columns of hyper-parameter fields `paths` (distinct, in order): each
// path and its header, the short key the task names use ("lr"), or the
// whole path where two fields share one.
std::vector<std::pair<std::string, std::string>> HyperParameterHeaders(
    const std::vector<std::string>& paths);

// A value as a table cell shows it: strings bare, integers as JSON writes
// them, other numbers to 6 significant digits (a sampled learning rate
// 3.1622776601683794e-05 as 3.16228e-05; report.json keeps every digit).
std::string HyperParameterText(const nlohmann::json& value);

}  // namespace saturn
