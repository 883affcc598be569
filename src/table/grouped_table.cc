#include "table/grouped_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
#include <utility>

#include "common/error.h"
#include "table/csv_text.h"
#include "table/csv_values.h"
#include "table/table_reader.h"

namespace saturn::table {
namespace {

// Classes inferred (no task: declared) from more distinct labels than this
// are more likely a numeric target with a stray value.
constexpr size_t kMaxInferredClasses = 100;

// GroupShuffle into `order` (its storage reused).
void ShuffleInto(std::vector<int64_t>& order, int64_t rows, uint64_t seed,
                 const std::string& name) {
  uint64_t state = seed ^ 0x9e3779b97f4a7c15ULL;
  for (unsigned char c : name)
    state = (state ^ c) * 0x100000001b3ULL;  // FNV-1a over the name
  auto next = [&state]() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  order.resize(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i)
    order[static_cast<size_t>(i)] = i;
  for (int64_t i = rows - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(next() % static_cast<uint64_t>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
}

// Where each row goes: groups sorted by name, each group's rows in the
// order of its shuffle.
struct Layout {
  std::vector<int32_t> sorted;  // group ids by name
  std::vector<int64_t> first;   // by group id: its first row in the table
  std::vector<int64_t> count;   // by group id
  // By part, by group id: the group's rows in the parts before it.
  std::vector<std::vector<int64_t>> before;
  // At first[g] + i: where group g's i-th row (in file order) goes, from first[g].
  std::vector<int64_t> place;
};

// An InputError naming every group (sorted) with too few rows, if any.
void CheckGroupSizes(const RawRows& raw, const Layout& layout, const TableSpec& spec) {
  std::vector<std::string> short_groups;
  for (int32_t id : layout.sorted) {
    const int64_t n = layout.count[static_cast<size_t>(id)];
    if (n < spec.min_group_rows)
      short_groups.push_back(Quote(raw.group_names[static_cast<size_t>(id)]) + " (" +
                             std::to_string(n) + ")");
  }
  if (short_groups.empty()) return;
  std::string listed;
  for (size_t i = 0; i < short_groups.size() && i < 5; ++i)
    listed += (i ? ", " : "") + short_groups[i];
  if (short_groups.size() > 5) listed += ", ...";
  throw InputError(spec.path, 0, spec.group_by,
                   std::to_string(short_groups.size()) + " of " +
                       std::to_string(raw.group_names.size()) + " groups have fewer than " +
                       std::to_string(spec.min_group_rows) +
                       " rows (data.min_group_rows), too few to train and hold out: " + listed);
}

Layout GroupLayout(const RawRows& raw, const TableSpec& spec) {
  Layout l;
  const size_t groups = raw.group_names.size();
  l.before.assign(raw.parts.size(), std::vector<int64_t>(groups, 0));
  RunParts(raw.parts.size(), [&](size_t k) {
    for (int32_t id : raw.parts[k].group_ids)
      ++l.before[k][static_cast<size_t>(id)];
  });
  l.count.assign(groups, 0);
  for (std::vector<int64_t>& in_part : l.before) {  // its rows -> the rows before it
    for (size_t g = 0; g < groups; ++g) {
      const int64_t n = in_part[g];
      in_part[g] = l.count[g];
      l.count[g] += n;
    }
  }
  l.sorted.resize(groups);
  for (size_t i = 0; i < groups; ++i)
    l.sorted[i] = static_cast<int32_t>(i);
  std::sort(l.sorted.begin(), l.sorted.end(), [&](int32_t a, int32_t b) {
    return raw.group_names[static_cast<size_t>(a)] < raw.group_names[static_cast<size_t>(b)];
  });
  CheckGroupSizes(raw, l, spec);
  l.first.assign(groups, 0);
  int64_t rows = 0;
  for (int32_t id : l.sorted) {
    l.first[static_cast<size_t>(id)] = rows;
    rows += l.count[static_cast<size_t>(id)];
  }
  ReserveHuge(l.place, static_cast<size_t>(rows));
  l.place.resize(static_cast<size_t>(rows));
  std::vector<int64_t> order;
  ReserveHuge(order, static_cast<size_t>(*std::max_element(l.count.begin(), l.count.end())));
  for (int32_t id : l.sorted) {
    const size_t g = static_cast<size_t>(id);
    int64_t* place = l.place.data() + l.first[g];
    ShuffleInto(order, l.count[g], spec.split_seed, raw.group_names[g]);
    for (size_t k = 0; k < order.size(); ++k)
      place[order[k]] = static_cast<int64_t>(k);
  }
  return l;
}

// Whether the label is a class, and the class of each interned string.
bool Classify(const RawRows& raw, const TableSpec& spec) {
  if (spec.task == "classification") return true;
  if (spec.task == "regression") return false;
  return raw.first_non_numeric_line != 0;
}

// The classes, sorted, into `classes`, and the class of each interned
// label; an InputError for too many or too few.
std::vector<int32_t> Classes(const RawRows& raw, const TableSpec& spec,
                             std::vector<std::string>& classes) {
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
  classes = raw.label_strings;
  if (raw.first_non_numeric_line == 0) {  // class ids: 2 before 10
    std::sort(classes.begin(), classes.end(), [](const std::string& a, const std::string& b) {
      return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
    });
  } else {
    std::sort(classes.begin(), classes.end());
  }
  StringIndex index;
  for (size_t k = 0; k < classes.size(); ++k)
    index.emplace(classes[k], static_cast<int32_t>(k));
  std::vector<int32_t> class_of(raw.label_strings.size());
  for (size_t i = 0; i < raw.label_strings.size(); ++i)
    class_of[i] = index.at(raw.label_strings[i]);
  return class_of;
}

}  // namespace

std::vector<int64_t> GroupShuffle(int64_t rows, uint64_t seed, const std::string& name) {
  std::vector<int64_t> order;
  ShuffleInto(order, rows, seed, name);
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
  CsvText text(spec.path);
  return ReadGroupedTable(spec, text.view(), workload, line, field);
}

GroupedTable ReadGroupedTable(const TableSpec& spec, std::string_view text,
                              const std::string& workload, int line, const std::string& field) {
  return GroupedTableOf(spec, ReadRawRows(spec, text, workload, line, field));
}

GroupedTable GroupedTableOf(const TableSpec& spec, const RawRows& raw) {
  GroupedTable t;
  t.source = spec.path;
  t.feature_names = spec.features;
  t.label = spec.label;
  t.classification = Classify(raw, spec);
  std::vector<int32_t> class_of;
  if (t.classification) class_of = Classes(raw, spec, t.classes);
  const Layout layout = GroupLayout(raw, spec);
  for (int32_t id : layout.sorted) {
    TableGroup g;
    g.name = raw.group_names[static_cast<size_t>(id)];
    g.first = layout.first[static_cast<size_t>(id)];
    g.rows = layout.count[static_cast<size_t>(id)];
    int64_t held = std::llround(static_cast<double>(g.rows) * spec.holdout);
    g.train_rows = g.rows - std::clamp<int64_t>(held, 1, g.rows - 1);
    t.groups.push_back(std::move(g));
  }
  const size_t f = static_cast<size_t>(t.Features());
  ReserveHuge(t.features, layout.place.size() * f);
  t.features.resize(layout.place.size() * f);
  ReserveHuge(t.labels, layout.place.size());
  t.labels.resize(layout.place.size());
  RunParts(raw.parts.size(), [&](size_t k) {  // each part's rows into their places
    const RawPart& part = raw.parts[k];
    std::vector<int64_t> seen = layout.before[k];
    for (size_t i = 0; i < part.Rows(); ++i) {
      const size_t g = static_cast<size_t>(part.group_ids[i]);
      const int64_t first = layout.first[g];
      const size_t to =
          static_cast<size_t>(first + layout.place[static_cast<size_t>(first + seen[g]++)]);
      std::copy_n(part.features.data() + i * f, f, t.features.data() + to * f);
      t.labels[to] = t.classification
                         ? static_cast<float>(class_of[static_cast<size_t>(part.label_ids[i])])
                         : part.label_values[i];
    }
  });
  return t;
}

}  // namespace saturn::table
