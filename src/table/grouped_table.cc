#include "table/grouped_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>
#include <utility>

#include "common/csv.h"
#include "common/error.h"
#include "common/fs.h"

namespace saturn::table {
namespace {

// More distinct labels than this cannot be classes (and are not interned).
constexpr size_t kMaxClasses = 10000;

// A missing number: empty, NA, NaN or null (any case, spaces around).
bool IsMissing(const std::string& v) {
  std::string lower;
  for (char c : v)
    if (!std::isspace(static_cast<unsigned char>(c))) lower += static_cast<char>(std::tolower(c));
  return lower.empty() || lower == "na" || lower == "nan" || lower == "null";
}

bool IsBlank(const std::string& v) {
  return std::all_of(v.begin(), v.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

// Classes inferred (no task: declared) from more distinct labels than this
// are more likely a numeric target with a stray value.
constexpr size_t kMaxInferredClasses = 100;

// The number `v` holds, whole and finite; false otherwise.
bool ParseNumber(const std::string& v, double* out) {
  const char* begin = v.c_str();
  char* end = nullptr;
  double d = std::strtod(begin, &end);
  if (end == begin) return false;
  while (*end != '\0' && std::isspace(static_cast<unsigned char>(*end)))
    ++end;
  if (*end != '\0' || !std::isfinite(d)) return false;
  *out = d;
  return true;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

// What one pass over the CSV collects, in file order.
struct RawRows {
  std::vector<float> features;       // [rows x features]
  std::vector<double> label_values;  // NaN where not a number
  std::vector<int32_t> label_ids;    // interned label strings (-1: past kMaxClasses)
  std::vector<std::string> label_strings;
  int first_non_numeric_line = 0;  // a label that is not a number, if any
  std::string first_non_numeric;
  std::vector<int32_t> group_ids;
  std::vector<std::string> group_names;
};

class Reader {
 public:
  Reader(const TableSpec& spec, const std::string& workload, int line, const std::string& field)
      : spec_(spec), workload_(workload), line_(line), field_(field) {}

  RawRows Read() {
    std::string text = ReadFile(spec_.path);
    bool header = true;
    ForEachCsvRecord(text, spec_.path, [&](CsvRecord& r) {
      if (header) {
        Header(r);
        header = false;
      } else {
        Row(r);
      }
    });
    if (header) throw InputError(spec_.path, 0, "", "empty: expected a header and rows");
    if (raw_.group_ids.empty()) {
      throw InputError(spec_.path, 0, "", "has a header but no rows");
    }
    return std::move(raw_);
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

  void Header(const CsvRecord& r) {
    header_ = r.fields;
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
      feature_columns_.push_back(Column(f, field));
    }
    label_column_ = Column(spec_.label, "label");
    group_column_ = Column(spec_.group_by, "group_by");
  }

  [[noreturn]] void Fail(const CsvRecord& r, int column, const std::string& message) const {
    throw InputError(spec_.path, r.line, header_[static_cast<size_t>(column)], message);
  }

  void Row(const CsvRecord& r) {
    if (r.fields.size() != header_.size()) {
      throw InputError(spec_.path, r.line, "",
                       "has " + std::to_string(r.fields.size()) + " fields; the header has " +
                           std::to_string(header_.size()));
    }
    for (int c : feature_columns_) {
      const std::string& v = r.fields[static_cast<size_t>(c)];
      double d = 0;
      if (IsMissing(v)) Fail(r, c, "missing value (" + Quote(v) + ")");
      if (!ParseNumber(v, &d)) {
        Fail(r, c,
             "feature is not a number: " + Quote(v) +
                 " (features are numeric; encode a category as numeric columns first)");
      }
      raw_.features.push_back(static_cast<float>(d));
    }
    Label(r);
    const std::string& g = r.fields[static_cast<size_t>(group_column_)];
    if (IsBlank(g)) Fail(r, group_column_, "missing group (an empty value)");
    auto [it, added] = group_index_.emplace(g, static_cast<int32_t>(raw_.group_names.size()));
    if (added) raw_.group_names.push_back(g);
    raw_.group_ids.push_back(it->second);
  }

  void Label(const CsvRecord& r) {
    const std::string& v = r.fields[static_cast<size_t>(label_column_)];
    if (IsMissing(v)) Fail(r, label_column_, "missing label (" + Quote(v) + ")");
    double d = std::nan("");
    if (!ParseNumber(v, &d)) {
      if (spec_.task == "regression") {
        Fail(r, label_column_, "a regression label must be a number, got " + Quote(v));
      }
      if (raw_.first_non_numeric_line == 0) {
        raw_.first_non_numeric_line = r.line;
        raw_.first_non_numeric = v;
      }
    }
    raw_.label_values.push_back(d);
    int32_t id = -1;
    auto it = label_index_.find(v);
    if (it != label_index_.end()) {
      id = it->second;
    } else if (raw_.label_strings.size() < kMaxClasses) {
      id = static_cast<int32_t>(raw_.label_strings.size());
      label_index_.emplace(v, id);
      raw_.label_strings.push_back(v);
    }
    raw_.label_ids.push_back(id);
  }

  const TableSpec& spec_;
  std::string workload_;
  int line_;
  std::string field_;
  std::vector<std::string> header_;
  std::vector<int> feature_columns_;
  int label_column_ = 0, group_column_ = 0;
  std::unordered_map<std::string, int32_t> group_index_, label_index_;
  RawRows raw_;
};

// Each group's rows (file order), groups sorted by name; an InputError
// naming every group that is too small.
std::vector<std::pair<std::string, std::vector<int64_t>>> GroupRows(const RawRows& raw,
                                                                    const TableSpec& spec) {
  std::vector<std::vector<int64_t>> rows(raw.group_names.size());
  for (size_t i = 0; i < raw.group_ids.size(); ++i)
    rows[static_cast<size_t>(raw.group_ids[i])].push_back(static_cast<int64_t>(i));
  std::map<std::string, std::vector<int64_t>> by_name;
  for (size_t g = 0; g < rows.size(); ++g)
    by_name.emplace(raw.group_names[g], std::move(rows[g]));
  std::vector<std::string> short_groups;
  for (const auto& [name, r] : by_name)
    if (static_cast<int64_t>(r.size()) < spec.min_group_rows)
      short_groups.push_back(Quote(name) + " (" + std::to_string(r.size()) + ")");
  if (!short_groups.empty()) {
    std::string listed;
    for (size_t i = 0; i < short_groups.size() && i < 5; ++i)
      listed += (i ? ", " : "") + short_groups[i];
    if (short_groups.size() > 5) listed += ", ...";
    throw InputError(spec.path, 0, spec.group_by,
                     std::to_string(short_groups.size()) + " of " + std::to_string(by_name.size()) +
                         " groups have fewer than " + std::to_string(spec.min_group_rows) +
                         " rows (data.min_group_rows), too few to train and hold out: " + listed);
  }
  return {by_name.begin(), by_name.end()};
}

// Whether the label is a class, and the class of each interned string.
bool Classify(const RawRows& raw, const TableSpec& spec) {
  if (spec.task == "classification") return true;
  if (spec.task == "regression") return false;
  return raw.first_non_numeric_line != 0;
}

}  // namespace

std::vector<int64_t> GroupShuffle(int64_t rows, uint64_t seed, const std::string& name) {
  uint64_t state = seed ^ 0x9e3779b97f4a7c15ULL;
  for (unsigned char c : name)
    state = (state ^ c) * 0x100000001b3ULL;  // FNV-1a over the name
  auto next = [&state]() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i)
    order[static_cast<size_t>(i)] = i;
  for (int64_t i = rows - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(next() % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

std::string GroupNameForTask(const std::string& group) {
  std::string out;
  for (char c : group)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return out.empty() ? "_" : out;
}

GroupedTable ReadGroupedTable(const TableSpec& spec, const std::string& workload, int line,
                              const std::string& field) {
  RawRows raw = Reader(spec, workload, line, field).Read();
  GroupedTable t;
  t.source = spec.path;
  t.feature_names = spec.features;
  t.label = spec.label;
  t.classification = Classify(raw, spec);
  std::vector<int32_t> class_of(raw.label_strings.size(), 0);
  if (t.classification) {
    if (spec.task.empty() && raw.label_strings.size() > kMaxInferredClasses) {
      throw InputError(spec.path, raw.first_non_numeric_line, spec.label,
                       Quote(raw.first_non_numeric) +
                           " is not a number, which makes the label a class, but it has " +
                           std::to_string(raw.label_strings.size()) +
                           (raw.label_strings.size() >= kMaxClasses ? " or more" : "") +
                           " distinct values: fix the value for a regression target, or "
                           "declare data.task: classification");
    }
    if (raw.label_strings.size() >= kMaxClasses) {
      throw InputError(spec.path, 0, spec.label,
                       "has " + std::to_string(kMaxClasses) +
                           " or more distinct values: too many classes (for a numeric target, "
                           "declare data.task: regression)");
    }
    if (raw.label_strings.size() < 2) {
      throw InputError(
          spec.path, 0, spec.label,
          "has one class (" + Quote(raw.label_strings[0]) + "): a classifier needs at least two");
    }
    t.classes = raw.label_strings;
    if (raw.first_non_numeric_line == 0) {  // class ids: 2 before 10
      std::sort(t.classes.begin(), t.classes.end(), [](const std::string& a, const std::string& b) {
        return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
      });
    } else {
      std::sort(t.classes.begin(), t.classes.end());
    }
    for (size_t i = 0; i < raw.label_strings.size(); ++i)
      class_of[i] = static_cast<int32_t>(
          std::find(t.classes.begin(), t.classes.end(), raw.label_strings[i]) - t.classes.begin());
  }
  const int64_t f = t.Features();
  t.features.reserve(raw.features.size());
  t.labels.reserve(raw.label_values.size());
  for (auto& [name, rows] : GroupRows(raw, spec)) {
    TableGroup g;
    g.name = name;
    g.first = t.Rows();
    g.rows = static_cast<int64_t>(rows.size());
    int64_t held = std::llround(static_cast<double>(g.rows) * spec.holdout);
    g.train_rows = g.rows - std::clamp<int64_t>(held, 1, g.rows - 1);
    for (int64_t k : GroupShuffle(g.rows, spec.split_seed, name)) {
      int64_t row = rows[static_cast<size_t>(k)];
      const float* x = raw.features.data() + row * f;
      t.features.insert(t.features.end(), x, x + f);
      t.labels.push_back(t.classification
                             ? static_cast<float>(class_of[static_cast<size_t>(raw.label_ids[row])])
                             : static_cast<float>(raw.label_values[static_cast<size_t>(row)]));
    }
    t.groups.push_back(std::move(g));
  }
  return t;
}

}  // namespace saturn::table
