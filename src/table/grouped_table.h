// Grouped tables: a CSV file read as numeric features and a label, its rows
// split by the values of one column (learning over groups, docs/groups.md).
// Torch-free: the workload reads the CSV once, the engine reads one group's
// rows from the group file it writes (table/group_file.h).
//
// The CSV has a header. Features are numbers (a category is an InputError:
// encode it as numeric columns first); a missing value (an empty field, NA,
// NaN, null) is an InputError naming its line and column. The label is a
// class (classification: cross-entropy over the classes, sorted, shared by
// every group) or a number (regression: mean squared error). Without a
// declared `task`, a label column holding any non-number is a class label
// and an all-numeric one is a regression target; declare
// `task: classification` for integer class ids.
//
// Groups are the group column's distinct values, sorted. Each group's rows
// are shuffled with a generator seeded by (split seed, group name), and the
// last round(rows x holdout) of them, at least one, are held out for
// evaluation; the rest, at least one, train. A group with fewer than
// `min_group_rows` rows is an InputError naming it (every such group is
// counted; none is skipped).
//
//   TableSpec spec{.path = "sales.csv", .features = {"price", "week"}, .label = "units",
//                  .group_by = "store"};
//   GroupedTable t = ReadGroupedTable(spec, "workload.yaml", 12, "tasks[0].data");
//   for (const TableGroup& g : t.groups) g.name, g.rows, g.train_rows;
//   t.Row(t.groups[0].first + r)  // its features, then t.labels[...]
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace saturn::table {

struct TableSpec {
  std::string path;                   // the CSV file
  std::vector<std::string> features;  // columns, in the model's input order
  std::string label;
  std::string group_by;
  std::string task;            // "regression", "classification", or "" (inferred)
  double holdout = 0.2;        // the fraction of each group held out for evaluation
  uint64_t split_seed = 0;     // seeds each group's shuffle
  int64_t min_group_rows = 5;  // fewer is an error naming the group
};

struct TableGroup {
  std::string name;   // the group column's value
  int64_t first = 0;  // its first row in GroupedTable (rows are grouped)
  int64_t rows = 0;   // training rows first, then held-out ones
  int64_t train_rows = 0;
  int64_t EvalRows() const { return rows - train_rows; }
};

struct GroupedTable {
  std::string source;  // the CSV file
  std::vector<std::string> feature_names;
  std::string label;
  bool classification = false;
  std::vector<std::string> classes;  // classification: sorted; label value k is classes[k]
  std::vector<TableGroup> groups;    // sorted by name
  std::vector<float> features;       // row-major [rows x features], grouped
  std::vector<float> labels;         // a class index, or the target

  int64_t Features() const { return static_cast<int64_t>(feature_names.size()); }
  int64_t Rows() const { return static_cast<int64_t>(labels.size()); }
  const float* Row(int64_t row) const { return features.data() + row * Features(); }
  // Outputs a model needs: the classes, or 1.
  int64_t Outputs() const { return classification ? static_cast<int64_t>(classes.size()) : 1; }
};

// Reads and checks the CSV of `spec`. InputError naming `workload` at
// `line` and `field` (the data: field) for a column that is not in the
// header, else the CSV file, its line and column for a bad value.
GroupedTable ReadGroupedTable(const TableSpec& spec, const std::string& workload, int line,
                              const std::string& field);
// The same from `text`, the bytes of spec.path (table/csv_text.h's
// CsvText), read once by a caller that also hashes them.
GroupedTable ReadGroupedTable(const TableSpec& spec, std::string_view text,
                              const std::string& workload, int line, const std::string& field);

// A group value made fit for a task's name: letters, digits, '.', '_' and
// '-' kept, anything else '_' (an empty value is "_").
std::string GroupNameForTask(const std::string& group);

// The shuffle of `rows` indices of one group, seeded by (seed, name):
// Fisher-Yates with splitmix64, the same on every machine.
std::vector<int64_t> GroupShuffle(int64_t rows, uint64_t seed, const std::string& name);

}  // namespace saturn::table
