// Contract 5: the workload file (YAML) — what to train, and on what cluster.
//
//   cluster: cluster.yaml            # or an inline cluster (Contract 1)
//   tasks:
//     - name: gpt-small
//       model: {type: gpt, layers: 4, d_model: 256, heads: 4, seq_len: 128}
//       data: {type: text, path: data/corpus.txt}
//       batch_size: 16
//       optimizer: {type: adamw, lr: 1.0e-4}
//       steps: 400                    # or epochs: N
//       sweep: {optimizer.lr: [1.0e-5, 1.0e-4], batch_size: [16, 32]}
//       search: {samples: 8, space: {optimizer.weight_decay: {uniform: [0, 0.1]}}}
//       techniques: [ddp, fsdp]       # optional restriction
//       gpu_range: [1, 8]             # optional
//       eval: {every: 100, batches: 4}  # optional: loss on held-out data
//   early_stop: {asha: {metric: eval_loss, grace_steps: 100, reduction_factor: 2}}
//
// Loading validates every field (one InputError naming file, line and field),
// resolves paths against the workload's folder, expands sweeps into one task
// per combination (named by the values: gpt-small-lr1.0e-5-bs16), times each
// of a search's samples (contracts/search_space.h, task_variants.h), and
// computes each task's total steps. Each task carries its JSON for the worker
// (docs/worker.md) and a trial key: everything that can change its speed or
// memory, so tasks that differ only in learning rate or seed share trials.
//
//   Workload w = LoadWorkloadFile("workload.yaml");
//   for (const WorkloadTask& t : w.tasks) worker_json(t.spec), t.steps, t.trial_key;
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/early_stop.h"

namespace saturn {

// A value a task's sweep or search gave it (the report's hyper-parameters,
// report/hyperparameters.h).
struct VariedValue {
  std::string path;      // the dotted field as written in sweep: or search.space:
  nlohmann::json value;  // the task's setting there, as read (1.0e-4 -> 0.0001)
  bool sampled = false;  // drawn by search: (else set by sweep:)
};

// Techniques built into the engine; plug-ins may add more.
struct WorkloadTask {
  std::string name;
  bool is_command = false;              // type: command (the user's own program)
  nlohmann::json spec;                  // the worker's task JSON (Contract 5 names)
  long steps = 0;                       // total training steps
  std::vector<std::string> techniques;  // allowed; empty = every technique
  // A command task's templates that serve only some GPU counts (`commands:
  // {single: {run: ..., gpus: [1]}}`): technique -> the counts, ascending.
  // A technique not here serves every count.
  std::map<std::string, std::vector<int>> command_gpus;
  // Where each of `techniques` and batch_size are written, for the errors of
  // checks that need the worker's technique catalogue (launch/worker.h).
  std::vector<int> technique_lines;
  int batch_size_line = 0;
  std::string field;  // "tasks[0]"
  int gpu_min = 1;
  int gpu_max = 1 << 20;
  bool gpu_range_given = false;  // gpu_range: written (gpu_max is then the user's)
  std::string trial_key;         // canonical JSON of what determines speed and memory
  std::string sweep;             // the name as written: tasks of one sweep share it
  // A table task's group (its data's group_by value; docs/groups.md), else
  // empty. Its sweep is then "<name as written>@<group>".
  std::string group;
  // What its sweep and search set, in the order written (the sweep's
  // fields, then the search's); empty for a task of neither.
  std::vector<VariedValue> varied;
  // Its workload's early_stop: and the group the rule compares it within
  // (the workload's source: a submission's tasks are a group of their own).
  EarlyStopSpec early_stop;
  std::string stop_group;
  // Its place in the workload as written and expanded (0, 1, ...): the
  // tasks of a group the rule shuffled (early_stop's order) stand in
  // another order, and the report lists them in this one.
  int written = 0;
  SelectSpec select;  // its workload's select: (what "best" means)
  int line = 0;       // where the task is defined
};

struct Workload {
  std::string source;    // the workload file
  std::string base_dir;  // its folder; relative paths are resolved against it
  Cluster cluster;       // empty until UseAllocation when the cluster comes from one
  std::optional<AllocationTemplate> from_allocation;  // `cluster: {from: slurm, ...}`
  std::vector<WorkloadTask> tasks;
  std::vector<std::string> plugins;  // technique plug-ins (shared libraries), absolute paths
  // The most tasks it may expand to: --max-tasks, else its `max_tasks:`,
  // else defaults::kMaxWorkloadTasks. More is an InputError at the task
  // (or its sweep or search) that goes past it, before any task is expanded.
  long max_tasks = 0;
  // `early_stop:` (contracts/early_stop.h): one rule over all its tasks;
  // `select:`, what "best" means among them.
  EarlyStopSpec early_stop;
  SelectSpec select;
};

// `extra_plugins`: technique plug-ins given on the command line (--plugin),
// added after the workload's own `plugins:`; `max_tasks`: --max-tasks (0:
// not given).
Workload LoadWorkloadFile(const std::string& path,
                          const std::vector<std::string>& extra_plugins = {}, long max_tasks = 0);
Workload ParseWorkload(const std::string& text, const std::string& source,
                       const std::string& base_dir,
                       const std::vector<std::string>& extra_plugins = {}, long max_tasks = 0);

// Fills the cluster of a `cluster: {from: slurm}` workload from the
// allocation's nodes and GPUs, and checks every task's gpu_range against it.
// InputError naming the workload's field.
void UseAllocation(Workload& w, const std::vector<std::pair<std::string, int>>& nodes);

// Techniques a task may use: its own list, or `available`.
std::vector<std::string> TaskTechniques(const WorkloadTask& task,
                                        const std::vector<std::string>& available);

}  // namespace saturn
