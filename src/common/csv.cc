#include "common/csv.h"

#include <algorithm>
#include <functional>

#include "common/error.h"

namespace saturn {

// At an opening quote: the field's content (the quotes off, "" made ").
std::string_view CsvReader::Quoted(int record_line) {
  const size_t start = ++pos_;
  std::string* unescaped = nullptr;
  size_t segment = start;
  for (;;) {
    size_t quote = text_.find('"', pos_);
    if (quote == std::string_view::npos) {
      throw InputError(source_, record_line, "", "unterminated quoted field");
    }
    line_ += static_cast<int>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         text_.begin() + static_cast<std::ptrdiff_t>(quote), '\n'));
    if (quote + 1 < text_.size() && text_[quote + 1] == '"') {  // "" is one quote
      if (unescaped == nullptr) {
        if (used_ == unescaped_.size()) unescaped_.emplace_back();
        unescaped = &unescaped_[used_++];
        unescaped->clear();
      }
      unescaped->append(text_.substr(segment, quote + 1 - segment));
      pos_ = segment = quote + 2;
      continue;
    }
    pos_ = quote + 1;
    if (unescaped == nullptr) return text_.substr(start, quote - start);
    unescaped->append(text_.substr(segment, quote - segment));
    return *unescaped;
  }
}

bool CsvReader::Next(CsvRow& row) {
  const size_t n = text_.size();
  while (pos_ < n) {
    row.fields.clear();
    row.line = line_;
    used_ = 0;
    for (;;) {
      if (pos_ < n && text_[pos_] == '"') {
        row.fields.push_back(Quoted(row.line));
        if (pos_ < n && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r') {
          throw InputError(source_, line_, "", "unexpected character after a closing quote");
        }
      } else {
        const size_t start = pos_;
        while (pos_ < n && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r')
          ++pos_;
        row.fields.push_back(text_.substr(start, pos_ - start));
      }
      if (pos_ >= n) break;  // the text's end ends the record
      const char c = text_[pos_++];
      if (c == ',') continue;
      if (c == '\r' && pos_ < n && text_[pos_] == '\n') ++pos_;
      ++line_;
      break;
    }
    if (row.fields.size() != 1 || !row.fields[0].empty()) return true;  // else blank
  }
  return false;
}

void ForEachCsvRecord(std::string_view text, std::string_view source,
                      const std::function<void(CsvRecord&)>& each) {
  CsvReader reader(text, source);
  CsvRecord record;
  for (CsvRow row; reader.Next(row);) {
    record.line = row.line;
    record.fields.resize(row.fields.size());
    for (size_t i = 0; i < row.fields.size(); ++i)
      record.fields[i].assign(row.fields[i]);
    each(record);
  }
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
