// A small RFC 4180 CSV reader and writer.
//
// Fields may be quoted ("a,b" and "say ""hi"""); lines end in LF, CRLF or
// CR; blank lines are skipped. Every record remembers the line it started
// on so that errors can point at it.
//
//   CsvTable t = ParseCsv(ReadFile(path), path);   // InputError on a broken quote
//   for (const CsvRecord& r : t.records) use(r.fields, r.line);
//   std::string line = CsvLine({"a", "b,c"});      // -> a,"b,c"
//
//   CsvReader reader(text, path);                  // millions of rows, no copies
//   for (CsvRow row; reader.Next(row);) use(row.fields, row.line);
#pragma once

#include <deque>
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

// A record whose fields are views: into the text, or (a quoted field with
// an escaped quote) into the reader's own storage.
struct CsvRow {
  int line = 0;  // 1-based line number where the record starts
  std::vector<std::string_view> fields;
};

// Reads the records of `text` one at a time, as ParseCsv does, without
// copying unquoted fields. `text` must outlive the reader.
class CsvReader {
 public:
  // `first_line`: the line `text` starts on (a part of a larger text).
  CsvReader(std::string_view text, std::string_view source, int first_line = 1)
      : text_(text), source_(source), line_(first_line) {}
  // The next non-blank record into `row` (its views valid until the next
  // call); false at the end of the text. InputError as ParseCsv.
  bool Next(CsvRow& row);
  // Where the next record starts: its offset in the text, and its line.
  size_t offset() const { return pos_; }
  int line() const { return line_; }

 private:
  std::string_view Quoted(int record_line);

  std::string_view text_, source_;
  int line_;
  size_t pos_ = 0;
  std::deque<std::string> unescaped_;  // quoted fields with "" in them, this record's
  size_t used_ = 0;
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
