// Measuring packs (ProfilerOptions::packs; `saturn profile` without
// --no-pack): the profile columns the planner chooses packs from
// (planner/packing.h, Contract 2: pack_class, pack_rows, pack_step_s,
// pack_start_s, pack_knobs).
//
// Tasks that may share a pack form a class: LoRA tasks of gpt, gpt2 or
// llama models with equal model objects, precision and optimizer state
// kind (and, without model.init, equal seeds) — the rules the worker checks
// when it trains a pack (engine PackTasks). Members that evaluate pack:
// each evaluates as alone (worker/pack_job.h), and an early_stop: rule
// judges each (one it stops leaves its pack). For
// each class of two or more tasks, the profiler measures packs of k = 2, 4
// and 8 copies of one member (its first task; up to twice the class's size),
// in rounds, each size only where it can matter:
//   - per GPU count (and type), first under the technique that takes packs
//     (the worker's `takes_packs`: single, ddp, fsdp, pipeline, spill and
//     any plug-in that says so) that was fastest for the member alone;
//     the next fastest only once a pack stopped fitting under the ones
//     before it (it may fit larger packs);
//   - a configuration's next size only while its last pack stepped at
//     least kPackGain faster than its members one after another: without
//     that gain a larger pack saves no more than its members' launches;
//   - and only while the next size, gaining at most what the last doubling
//     gained, could take fewer device-seconds a member step than the
//     member alone in its best configuration (a pack never steps a member
//     faster than alone on the same devices: it can only matter by that).
// A configuration's curve ends at its last measured pack (a pack that does
// not fit ends it before); one not measured has its member's point alone
// (no pack fits it). Members' own batch sizes are their
// rows; the curve is over rows, so members of other batch sizes are
// placed on it; their adapter ranks are not (the measured member's rank
// stands for all).
// A table's groups (fused arrays) are measured at every size at once, in
// the process of the first group's own single x1 trial (AddArrayTrials):
// a worker's start-up is most of a trial of a model this small.
//
//   AddArrayTrials(workload, run);            // before the tasks' own trials
//   ... measure the tasks' own trials ...
//   std::vector<PackClassTrials> classes = PackClasses(workload, run, takes_packs);
//   while (AddPackTrials(workload, classes, run, &specs)) {
//     ... measure the trials added ...
//     AfterPackRound(classes, run);
//   }
//   AddPackColumns(workload, classes, run);   // after BuildTable
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "contracts/workload.h"
#include "profiler/profiler.h"

namespace saturn {

// The class of a task ("" when it cannot pack; `why_not` then says why).
std::string PackClassOf(const WorkloadTask& task, std::string* why_not = nullptr);

// A pack of k measured worth a larger one when it steps at least this
// much faster than its k members one after another (1 - step_k / (k step_1)).
constexpr double kPackGain = 0.05;

struct PackClassTrials {
  std::string cls;
  std::vector<size_t> tasks;  // workload task indices, the measured member first
  std::vector<int> sizes;     // pack sizes that may be measured, ascending
  struct Config {
    int base_trial = -1;                           // the member's own trial
    std::vector<std::pair<int, int>> pack_trials;  // (k, trial index), k ascending
    bool measuring = false;                        // its next size is measured next round
    bool ended = false;                            // no more sizes: why, in `why_ended`
    std::string why_ended;
  };
  std::vector<Config> configs;  // per (GPU count, type), fastest alone first
  // Table tasks' fused arrays (engine/array.h): sizes on to 1024, each
  // measured while it fits, however its step compares with its members'
  // steps one after another (an array saves its members' launches, which
  // the planner counts).
  bool array = false;
};

// Before the tasks' own trials are measured: each table class's arrays
// (sizes 2, 16, 128, 1024 while below the class's size) as riders of its
// first task's single x1 trial (Trial::riders): that trial's worker
// measures them after the task alone (--pack-sizes), one start-up for all.
void AddArrayTrials(const Workload& workload, ProfileRun& run);

// Every class of two or more tasks (after the tasks' own trials were
// measured), the fastest configuration of each GPU count to be measured first.
// `takes_packs`: the techniques whose workers train packs.
std::vector<PackClassTrials> PackClasses(const Workload& workload, const ProfileRun& run,
                                         const std::set<std::string>& takes_packs);
// Adds a round of pack trials to `run.trials` (the next size of each
// configuration being measured) and their task files to `specs` (trial
// key -> the worker's task JSON); false when there is none to add.
bool AddPackTrials(const Workload& workload, std::vector<PackClassTrials>& classes, ProfileRun& run,
                   std::map<std::string, nlohmann::json>* specs);
// After a round was measured: which configurations go on (see the top).
void AfterPackRound(std::vector<PackClassTrials>& classes, const ProfileRun& run);

// Writes pack_class, pack_rows, pack_step_s and pack_start_s into the table's rows of
// each class's tasks (after BuildTable), and run.pack_summary.
void AddPackColumns(const Workload& workload, const std::vector<PackClassTrials>& classes,
                    ProfileRun& run);

}  // namespace saturn
