// Measuring packs (ProfilerOptions::packs; `saturn profile` without
// --no-pack): the profile columns the planner chooses packs from
// (planner/packing.h, Contract 2: pack_class, pack_rows, pack_step_s).
//
// Tasks that may share a pack form a class: LoRA tasks of gpt, gpt2 or
// llama models with equal model objects, precision and optimizer state
// kind (and, without model.init, equal seeds), without evaluation — the
// rules the worker checks when it trains a pack (engine PackTasks). For
// each class of two or more tasks, the profiler measures packs of k = 2, 4
// and 8 copies of one member (its first task; up to twice the class's size)
// in each configuration that member measured feasible under a technique
// that takes packs (single, ddp, fsdp, spill), so a class costs at most
// three trials per configuration whatever its size. A pack that does not
// fit the device ends the curve there. Members' own batch sizes are their
// rows; the curve is over rows, so members of other batch sizes are
// placed on it; their adapter ranks are not (the measured member's rank
// stands for all).
//
//   std::vector<PackClassTrials> classes = AddPackTrials(workload, run, &specs);
//   ... measure the trials added ...
//   AddPackColumns(workload, classes, run);   // after BuildTable
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "contracts/workload.h"
#include "profiler/profiler.h"

namespace saturn {

// The class of a task ("" when it cannot pack; `why_not` then says why).
std::string PackClassOf(const WorkloadTask& task, std::string* why_not = nullptr);

struct PackClassTrials {
  std::string cls;
  std::vector<size_t> tasks;  // workload task indices, the measured member first
  struct Config {
    int base_trial = -1;                           // the member's own trial
    std::vector<std::pair<int, int>> pack_trials;  // (k, trial index), k ascending
  };
  std::vector<Config> configs;
};

// Adds the pack trials of every class to `run.trials` (after the tasks'
// own trials were measured) and their task files to `specs` (trial key ->
// the worker's task JSON).
std::vector<PackClassTrials> AddPackTrials(const Workload& workload, ProfileRun& run,
                                           std::map<std::string, nlohmann::json>* specs);

// Writes pack_class, pack_rows and pack_step_s into the table's rows of
// each class's tasks (after BuildTable), and run.pack_summary.
void AddPackColumns(const Workload& workload, const std::vector<PackClassTrials>& classes,
                    ProfileRun& run);

}  // namespace saturn
