// Table data in a workload (docs/groups.md): `data: {type: table, path,
// features, label, group_by, ...}` makes one task per group.
//
// The CSV is read once per process (and its group file written once per
// content, in the cache: table/group_file.h); each group's task gets
// data {type: table, path: <group file>, group, train_rows} and its mlp the
// table's shape (inputs, outputs, loss).
//
//   json data = ReadTableData(d, base_dir, model_type);   // InputError naming the field
//   for (WorkloadTask& g : ExpandGroups(task, w)) ...     // one per group, named <task>-<group>
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "contracts/workload.h"
#include "contracts/yaml_fields.h"

namespace saturn {

// Reads and checks a table data field (writing the group file if need be).
nlohmann::json ReadTableData(const YamlFields& d, const std::string& base_dir,
                             const std::string& model_type);

// Whether a task's worker JSON trains on table data (before expansion).
bool IsTableTask(const WorkloadTask& t);

// One task per group of a table task, in the groups' order; InputError at
// the task's data field when they would take the workload past max_tasks.
std::vector<WorkloadTask> ExpandGroups(const WorkloadTask& t, const Workload& w);

}  // namespace saturn
