// Inside table/grouped_table.cc: one pass over a table's CSV, in parts read
// at once by threads where the text allows (no quoted fields: then records
// are lines), merged into what one reader reading it in order collects:
// the same rows, interned labels and groups, and the same first error.
//
//   RawRows raw = ReadRawRows(spec, text, "w.yaml", 12, "tasks[0].data");
//   for (const RawPart& p : raw.parts) p.features, p.label_values, p.group_ids;
//   GroupedTable t = GroupedTableOf(spec, raw);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "table/grouped_table.h"

namespace saturn::table {

// More distinct labels than this cannot be classes (and are not interned).
constexpr size_t kMaxClasses = 10000;

// Consecutive rows of the CSV, in file order.
struct RawPart {
  std::vector<float> features;      // [rows x features]
  std::vector<float> label_values;  // NaN where not a number
  std::vector<int32_t> label_ids;   // into RawRows::label_strings (-1: past kMaxClasses);
                                    // none when the task is a regression
  std::vector<int32_t> group_ids;   // into RawRows::group_names
  size_t Rows() const { return group_ids.size(); }
};

struct RawRows {
  std::vector<RawPart> parts;              // in file order
  std::vector<std::string> label_strings;  // distinct labels by first row, at most kMaxClasses
  int first_non_numeric_line = 0;          // a label that is not a number, if any
  std::string first_non_numeric;
  std::vector<std::string> group_names;  // by first row
};

// Reads and checks the CSV `text` of `spec` (errors as ReadGroupedTable's),
// in `parts` parts where it has no quote (0: by its size and the cores).
RawRows ReadRawRows(const TableSpec& spec, std::string_view text, const std::string& workload,
                    int line, const std::string& field, size_t parts = 0);

// The grouped table of `raw` (ReadGroupedTable's checks and split).
GroupedTable GroupedTableOf(const TableSpec& spec, const RawRows& raw);

}  // namespace saturn::table
