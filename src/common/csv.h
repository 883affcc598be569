// A small RFC 4180 CSV reader and writer.
//
// Fields may be quoted ("a,b" and "say ""hi"""); lines end in LF or CRLF;
// blank lines are skipped. Every record remembers the line it started on so
// that errors can point at it.
//
//   CsvTable t = ParseCsv(ReadFile(path), path);   // InputError on a broken quote
//   for (const CsvRecord& r : t.records) use(r.fields, r.line);
//   std::string line = CsvLine({"a", "b,c"});      // -> a,"b,c"
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

struct CsvRecord {
  int line = 0;  // 1-based line number where the record starts
  std::vector<std::string> fields;
};

struct CsvTable {
  std::vector<CsvRecord> records;  // the header, if any, is records[0]
};

// Calls `each` with every non-blank record in order (the record may be moved
// from; its fields' storage is reused for the next one), without keeping
// the table: for files of millions of rows. InputError as ParseCsv.
void ForEachCsvRecord(std::string_view text, std::string_view source,
                      const std::function<void(CsvRecord&)>& each);

// `source` names the input in error messages.
CsvTable ParseCsv(std::string_view text, std::string_view source);

// One CSV line (with trailing newline), quoting fields that need it.
std::string CsvLine(const std::vector<std::string>& fields);

}  // namespace saturn
