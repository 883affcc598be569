#include "common/csv.h"

#include <functional>

#include "common/error.h"

namespace saturn {
namespace {

bool IsBlank(const CsvRecord& record) {
  return record.fields.size() == 1 && record.fields[0].empty();
}

}  // namespace

void ForEachCsvRecord(std::string_view text, std::string_view source,
                      const std::function<void(CsvRecord&)>& each) {
  CsvRecord record;
  std::string field;
  int line = 1;
  record.line = 1;
  bool quoted = false;
  bool field_was_quoted = false;
  size_t i = 0;
  auto end_record = [&]() {
    record.fields.push_back(std::move(field));
    field.clear();
    field_was_quoted = false;
    if (!IsBlank(record)) each(record);
    record.fields.clear();
  };
  while (i < text.size()) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      ++i;
      continue;
    }
    if (c == '"' && field.empty() && !field_was_quoted) {
      quoted = true;
      field_was_quoted = true;
    } else if (c == ',') {
      record.fields.push_back(std::move(field));
      field.clear();
      field_was_quoted = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      ++line;
      record.line = line;
    } else if (field_was_quoted) {
      throw InputError(source, line, "", "unexpected character after a closing quote");
    } else {
      field += c;
    }
    ++i;
  }
  if (quoted) throw InputError(source, record.line, "", "unterminated quoted field");
  if (!field.empty() || !record.fields.empty() || field_was_quoted) end_record();
}

CsvTable ParseCsv(std::string_view text, std::string_view source) {
  CsvTable table;
  ForEachCsvRecord(text, source,
                   [&](CsvRecord& record) { table.records.push_back(std::move(record)); });
  return table;
}

std::string CsvLine(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    const std::string& f = fields[i];
    if (f.find_first_of(",\"\n\r") == std::string::npos) {
      out += f;
      continue;
    }
    out += '"';
    for (char c : f) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
  }
  out += '\n';
  return out;
}

}  // namespace saturn
