// The group file: a grouped table (table/grouped_table.h) in one binary file
// that the workload writes once and each group's worker reads its own rows
// from, without the CSV.
//
//   "SATURN-GROUPS 1\n", then the header's length (8 bytes, little-endian),
//   the header (JSON: source, features, label, classification, classes,
//   rows, groups [{name, first, rows, train_rows}]), then float32 features
//   [rows x features] and float32 labels [rows], little-endian, each group's
//   rows together (training rows first).
//
//   WriteGroupFile(table, "cache/tables/ab12.groups");         // atomic
//   GroupedTable head = ReadGroupFile(path);                    // no rows
//   GroupedTable one = ReadGroupFile(path, "store-7");          // that group's rows only
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "table/grouped_table.h"

namespace saturn::table {

void WriteGroupFile(const GroupedTable& t, const std::string& path);

// The header (groups, features, classes) and, with `group`, that group's
// rows only: `groups` then holds that group alone, its `first` 0.
// InputError naming the file when it is not a group file, is cut short,
// or has no such group.
GroupedTable ReadGroupFile(const std::string& path,
                           const std::optional<std::string>& group = std::nullopt);

// The header alone, read once by a process that reads many groups of one
// file (a fused array's members): then ReadGroupRows for each.
struct GroupFileHeader {
  GroupedTable table;  // without rows
  uint64_t data_offset = 0;
  int64_t rows = 0;                               // in the whole file
  std::unordered_map<std::string, size_t> index;  // group name -> table.groups
};
GroupFileHeader ReadGroupFileHeader(const std::string& path);
// The header of `path`, read once per process (group files are named by
// their contents, so one path never holds another table). Thread-safe.
const GroupFileHeader& CachedGroupFileHeader(const std::string& path);
GroupedTable ReadGroupRows(const std::string& path, const GroupFileHeader& header,
                           const std::string& group);

}  // namespace saturn::table
