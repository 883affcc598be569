#include "table/table_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>

#include "common/csv.h"
#include "common/error.h"
#include "table/csv_text.h"
#include "table/csv_values.h"

namespace saturn::table {
namespace {

// Parts smaller than this are not worth a thread.
constexpr size_t kMinPartBytes = size_t{4} << 20;
constexpr size_t kMaxParts = 8;

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The rows a CSV of `text` holds, about (from its first MiB's lines), and
// at most one per `columns` bytes (a row's commas and line end).
size_t EstimatedRows(std::string_view text, size_t columns) {
  std::string_view sample = text.substr(0, size_t{1} << 20);
  double lines = static_cast<double>(std::count(sample.begin(), sample.end(), '\n')) + 1;
  double scale = static_cast<double>(text.size()) / static_cast<double>(sample.size() + 1);
  return std::min(static_cast<size_t>(lines * scale * 1.05), text.size() / columns) + 16;
}

// What one part's reader collects; its lines count from 1 (the first
// part's from the line after the header).
struct PartState {
  RawPart raw;
  std::vector<std::string> label_strings, group_names;
  StringIndex labels, groups;
  int first_non_numeric_line = 0;
  std::string first_non_numeric;
  int end_line = 0;  // the line after the part
  std::exception_ptr error;
};

// Where the rows after the header split into parts: at line ends, none
// inside a quoted field (a text with a quote is one part).
std::vector<size_t> PartBounds(std::string_view text, size_t begin, size_t parts) {
  std::vector<size_t> bounds = {begin};
  if (parts == 0) {
    size_t hardware = std::max(1u, std::thread::hardware_concurrency());
    parts = std::min({hardware, kMaxParts, (text.size() - begin) / kMinPartBytes});
  }
  if (parts > 1 && std::memchr(text.data() + begin, '"', text.size() - begin) == nullptr) {
    for (size_t k = 1; k < parts; ++k) {
      size_t at = begin + (text.size() - begin) * k / parts;
      at = std::max(at, bounds.back());
      const void* end = std::memchr(text.data() + at, '\n', text.size() - at);
      if (end == nullptr) break;
      bounds.push_back(static_cast<size_t>(static_cast<const char*>(end) - text.data()) + 1);
    }
  }
  bounds.push_back(text.size());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  if (bounds.size() == 1) bounds.push_back(text.size());  // no rows: one empty part
  return bounds;
}

class Reader {
 public:
  Reader(const TableSpec& spec, const std::string& workload, int line, const std::string& field)
      : spec_(spec), workload_(workload), line_(line), field_(field) {}

  RawRows Read(std::string_view text, size_t parts) {
    CsvReader csv(text, spec_.path);
    CsvRow row;
    if (!csv.Next(row)) throw InputError(spec_.path, 0, "", "empty: expected a header and rows");
    Header(row);
    std::vector<size_t> bounds = PartBounds(text, csv.offset(), parts);
    std::vector<PartState> states(bounds.size() - 1);
    RunParts(states.size(), [&](size_t k) {
      std::string_view part = text.substr(bounds[k], bounds[k + 1] - bounds[k]);
      ReadPart(part, k == 0 ? csv.line() : 1, states[k]);
    });
    return Merge(states);
  }

 private:
  int Column(const std::string& name, const std::string& field) const {
    auto it = std::find(header_.begin(), header_.end(), name);
    if (it == header_.end()) {
      throw InputError(workload_, line_, field_ + "." + field,
                       "column " + Quote(name) + " is not in " + spec_.path +
                           "'s header (its columns: " + Joined(header_) + ")");
    }
    return static_cast<int>(it - header_.begin());
  }

  void Header(const CsvRow& r) {
    header_.assign(r.fields.begin(), r.fields.end());
    if (!header_.empty() && header_[0].rfind("\xEF\xBB\xBF", 0) == 0) header_[0].erase(0, 3);
    for (std::string& name : header_) {  // "a, b": the names without the spaces
      name.erase(0, name.find_first_not_of(" \t"));
      name.erase(name.find_last_not_of(" \t") + 1);
    }
    for (size_t i = 0; i < spec_.features.size(); ++i) {
      const std::string& f = spec_.features[i];
      std::string field = "features[" + std::to_string(i) + "]";
      if (f == spec_.label || f == spec_.group_by) {
        throw InputError(workload_, line_, field_ + "." + field,
                         Quote(f) + " is the " + (f == spec_.label ? "label" : "group_by") +
                             " column; a feature cannot be");
      }
      feature_columns_.push_back(static_cast<size_t>(Column(f, field)));
    }
    label_column_ = static_cast<size_t>(Column(spec_.label, "label"));
    group_column_ = static_cast<size_t>(Column(spec_.group_by, "group_by"));
    intern_labels_ = spec_.task != "regression";
  }

  // Reads one part's rows into `s`; its first error into s.error.
  void ReadPart(std::string_view text, int first_line, PartState& s) const {
    try {
      const size_t rows = EstimatedRows(text, std::max<size_t>(header_.size(), 1));
      ReserveHuge(s.raw.features, rows * feature_columns_.size());
      ReserveHuge(s.raw.label_values, rows);
      if (intern_labels_) ReserveHuge(s.raw.label_ids, rows);
      ReserveHuge(s.raw.group_ids, rows);
      CsvReader csv(text, spec_.path, first_line);
      for (CsvRow row; csv.Next(row);)
        Row(row, s);
      s.end_line = csv.line();
    } catch (...) {
      s.error = std::current_exception();
    }
  }

  // Models train in float32: a value beyond its range would be inf.
  static std::string BeyondFloat(std::string_view v) {
    return Quote(v) + " is beyond float32's range (magnitudes up to about 3.4e38; scale the column)";
  }

  [[noreturn]] void Fail(const CsvRow& r, size_t column, const std::string& message) const {
    throw InputError(spec_.path, r.line, header_[column], message);
  }

  void Row(const CsvRow& r, PartState& s) const {
    if (r.fields.size() != header_.size()) {
      throw InputError(spec_.path, r.line, "",
                       "has " + std::to_string(r.fields.size()) + " fields; the header has " +
                           std::to_string(header_.size()));
    }
    for (size_t c : feature_columns_) {
      std::string_view v = r.fields[c];
      double d = 0;
      if (!ParseTableNumber(v, &d)) {  // a missing value is never a number
        if (IsMissingValue(v)) Fail(r, c, "missing value (" + Quote(v) + ")");
        Fail(r, c,
             "feature is not a number: " + Quote(v) +
                 " (features are numeric; encode a category as numeric columns first)");
      }
      if (!std::isfinite(static_cast<float>(d))) Fail(r, c, BeyondFloat(v));
      s.raw.features.push_back(static_cast<float>(d));
    }
    Label(r, s);
    std::string_view g = r.fields[group_column_];
    if (IsBlankValue(g)) Fail(r, group_column_, "missing group (an empty value)");
    auto it = s.groups.find(g);
    if (it == s.groups.end()) {
      it = s.groups.emplace(g, static_cast<int32_t>(s.group_names.size())).first;
      s.group_names.emplace_back(g);
    }
    s.raw.group_ids.push_back(it->second);
  }

  void Label(const CsvRow& r, PartState& s) const {
    std::string_view v = r.fields[label_column_];
    double d = 0;
    if (!ParseTableNumber(v, &d)) {
      if (IsMissingValue(v)) Fail(r, label_column_, "missing label (" + Quote(v) + ")");
      if (spec_.task == "regression") {
        Fail(r, label_column_, "a regression label must be a number, got " + Quote(v));
      }
      if (s.first_non_numeric_line == 0) {
        s.first_non_numeric_line = r.line;
        s.first_non_numeric = v;
      }
      d = std::nan("");
    } else if (!std::isfinite(static_cast<float>(d))) {
      Fail(r, label_column_, BeyondFloat(v));
    }
    s.raw.label_values.push_back(static_cast<float>(d));
    if (!intern_labels_) return;  // a regression: no classes
    // Past kMaxClasses distinct labels the ids are never used: the label
    // cannot be a class.
    int32_t id = -1;
    if (s.label_strings.size() < kMaxClasses) {
      auto it = s.labels.find(v);
      if (it != s.labels.end()) {
        id = it->second;
      } else {
        id = static_cast<int32_t>(s.label_strings.size());
        s.labels.emplace(v, id);
        s.label_strings.emplace_back(v);
      }
    }
    s.raw.label_ids.push_back(id);
  }

  // The parts as one reader reading them in order: its first error, its
  // lines, its labels and groups interned in order of their first rows.
  RawRows Merge(std::vector<PartState>& parts) const;

  const TableSpec& spec_;
  std::string workload_;
  int line_;
  std::string field_;
  std::vector<std::string> header_;
  std::vector<size_t> feature_columns_;
  size_t label_column_ = 0, group_column_ = 0;
  bool intern_labels_ = true;
};

// Interns `strings` (one part's, in its order) into `all`, at most `most`;
// the id of each in `all` (-1 where past it).
std::vector<int32_t> Intern(const std::vector<std::string>& strings, std::vector<std::string>& all,
                            StringIndex& index, size_t most) {
  std::vector<int32_t> ids(strings.size(), -1);
  for (size_t i = 0; i < strings.size(); ++i) {
    auto it = index.find(strings[i]);
    if (it != index.end()) {
      ids[i] = it->second;
    } else if (all.size() < most) {
      ids[i] = static_cast<int32_t>(all.size());
      index.emplace(strings[i], ids[i]);
      all.push_back(strings[i]);
    }
  }
  return ids;
}

void Renumber(std::vector<int32_t>& ids, const std::vector<int32_t>& to) {
  for (int32_t& id : ids)
    id = id < 0 ? -1 : to[static_cast<size_t>(id)];
}

RawRows Reader::Merge(std::vector<PartState>& parts) const {
  RawRows raw;
  StringIndex labels, groups;
  int line = 0;  // the line part k starts on, less one (its lines count from 1)
  for (size_t k = 0; k < parts.size(); ++k) {
    PartState& s = parts[k];
    if (s.error) {
      if (k == 0) std::rethrow_exception(s.error);
      try {
        std::rethrow_exception(s.error);
      } catch (const InputError& e) {
        throw e.line() > 0 ? e.AtLine(e.line() + line) : e;
      }
    }
    if (raw.first_non_numeric_line == 0 && s.first_non_numeric_line != 0) {
      raw.first_non_numeric_line = s.first_non_numeric_line + line;
      raw.first_non_numeric = std::move(s.first_non_numeric);
    }
    line += s.end_line - 1;
    Renumber(s.raw.label_ids, Intern(s.label_strings, raw.label_strings, labels, kMaxClasses));
    Renumber(s.raw.group_ids, Intern(s.group_names, raw.group_names, groups, SIZE_MAX));
    raw.parts.push_back(std::move(s.raw));
  }
  return raw;
}

}  // namespace

RawRows ReadRawRows(const TableSpec& spec, std::string_view text, const std::string& workload,
                    int line, const std::string& field, size_t parts) {
  RawRows raw = Reader(spec, workload, line, field).Read(text, parts);
  size_t rows = 0;
  for (const RawPart& p : raw.parts)
    rows += p.Rows();
  if (rows == 0) throw InputError(spec.path, 0, "", "has a header but no rows");
  return raw;
}

}  // namespace saturn::table
