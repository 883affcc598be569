// The fields of a `type: command` task (Contract 5; docs/byo.md), read and
// checked for workload.cc: one command template per technique, each either
// a string or a map that also says which GPU counts it serves,
//
//   commands:
//     single: {run: "exec python3 train.py", gpus: [1]}
//     ddp: "torchrun --nproc_per_node={gpus} train.py"     # every count
//
// its placeholders ({gpus}, ...; any other {name} is an error), `env`, and
// the task's spec for launch/command_task.h.
//
//   ReadCommandFields(fields, workload, &task);   // task.spec, .techniques, .command_gpus
#pragma once

#include <string>

#include "contracts/workload.h"
#include "contracts/yaml_fields.h"

namespace saturn {

// Fills task->spec ({"name", "type": "command", "commands": {technique:
// template}, "working_dir", "seed", "env"}), task->techniques (in the order
// written) and task->command_gpus; InputError naming the field otherwise.
void ReadCommandFields(const YamlFields& f, const Workload& w, WorkloadTask* task);

// Once task->gpu_min / gpu_max are read: some template serves a GPU count the
// task may use on `w`'s cluster (one not yet known passes), else InputError
// naming the task's `commands`.
void CheckServedCounts(const YamlFields& f, const Workload& w, const WorkloadTask& task);

}  // namespace saturn
