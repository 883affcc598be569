#include "bench/paper/table.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>

namespace saturn::bench {

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::Add(std::vector<std::string> row) {
  if (row.size() != header_.size()) throw std::logic_error("Table: row width differs from header");
  rows_.push_back(std::move(row));
}

std::string Table::Text() const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = header_[c].size();
    for (const auto& row : rows_)
      width[c] = std::max(width[c], row[c].size());
  }
  // First column (names) left-aligned, figures right-aligned.
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string pad(width[c] - cells[c].size(), ' ');
      out += c == 0 ? cells[c] + pad : "  " + pad + cells[c];
    }
    return out + "\n";
  };
  std::string out = line(header_);
  for (const auto& row : rows_)
    out += line(row);
  return out;
}

std::string Table::Markdown() const {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const std::string& c : cells)
      out += " " + c + " |";
    return out + "\n";
  };
  std::string out = line(header_) + "|";
  for (size_t c = 0; c < header_.size(); ++c)
    out += c == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& row : rows_)
    out += line(row);
  return out;
}

std::string Fmt(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? n : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

}  // namespace saturn::bench
