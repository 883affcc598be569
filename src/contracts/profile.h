// Contract 2: the profile table (CSV with a header).
//
//   task,technique,gpus,runtime_s[,extra columns...]
//   gpt2-bs16-lr1e-5,fsdp,8,61234.5
//
// One row per feasible configuration: the total remaining runtime of the task
// with that technique on that many GPUs of one node. Extra columns (step_s,
// steps, peak_memory_gib, knobs, arrival_s, ...) are carried through. As an
// extension, a row whose runtime_s is empty, "inf" or "infeasible" records a
// configuration known not to run; the planner never uses it.
//
// Mixed GPU types: an optional `gpu_type` column says on which type of node
// (ClusterNode::gpu_type) a row was measured; one row per (task, technique,
// gpus, gpu_type). Without the column every row is of the cluster's one type
// (a cluster of several types needs the column). Written only when a row
// has a type, so profiles of one-type clusters stay as they were.
//
// Input errors (exit 2): missing column, bad number, duplicate
// (task,technique,gpus,gpu_type), non-positive runtime, gpus larger than
// every node (of the row's type), a type the cluster does not have, a task
// with no feasible row, an empty table.
//
//   ProfileTable p = LoadProfileFile("profile.csv", cluster);
//   for (const ProfileRow& r : p.rows) if (r.feasible) use(r.task, r.gpus, r.runtime_s);
//   std::string csv = ProfileToCsv(p);
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "contracts/cluster.h"

namespace saturn {

struct ProfileRow {
  std::string task;
  std::string technique;
  int gpus = 0;
  double runtime_s = 0.0;  // meaningful only when feasible
  bool feasible = true;
  std::string gpu_type = {};       // the node type it was measured on ("": the one type)
  int line = 0;                    // line in the source file, 0 if built in memory
  std::vector<std::string> extra;  // aligned with ProfileTable::extra_columns
};

struct ProfileTable {
  std::vector<std::string> extra_columns;
  std::vector<ProfileRow> rows;

  // Task names in order of first appearance.
  std::vector<std::string> TaskNames() const;
  // Index of an extra column, or -1.
  int ExtraColumn(std::string_view name) const;
  // The row's value in an extra column; empty if the column is absent.
  std::string Extra(const ProfileRow& row, std::string_view column) const;
  // The row's training seconds, step_s x steps (the rest of its runtime is
  // a launch's fixed costs: start-up, loading, checkpoints); 0 where the
  // table lacks those columns or they do not fit within the runtime.
  double TrainingSeconds(const ProfileRow& row) const;
  // The feasible row for (task, technique, gpus, gpu_type), or nullptr.
  const ProfileRow* Find(std::string_view task, std::string_view technique, int gpus,
                         std::string_view gpu_type = "") const;
  // Whether any row names a GPU type.
  bool Typed() const;
  // Appends `other`'s rows, its extra columns joined to these (a column
  // one table lacks is empty on its rows).
  void Append(const ProfileTable& other);
};

// Each task's arrival (seconds from the start) from the profile's optional
// arrival_s column, by task name (the latest of a task's rows; tasks without
// one are absent). InputError naming `source`, the line and the column for
// a value that is not seconds >= 0.
std::map<std::string, double> ArrivalTimes(const ProfileTable& profile, std::string_view source);

// `source` names the input in errors; rows are checked against `cluster`.
ProfileTable ParseProfileCsv(std::string_view text, std::string_view source,
                             const Cluster& cluster);
ProfileTable LoadProfileFile(const std::string& path, const Cluster& cluster);
// Re-checks a table built in memory (duplicates, runtimes, sizes, tasks).
void CheckProfile(const ProfileTable& table, std::string_view source, const Cluster& cluster);
std::string ProfileToCsv(const ProfileTable& table);

}  // namespace saturn
