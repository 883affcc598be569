#include "contracts/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "common/csv.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "common/limits.h"

namespace saturn {
namespace {

constexpr const char* kRequired[] = {"task", "technique", "gpus", "runtime_s"};
constexpr const char* kTypeColumn = "gpu_type";

bool MarksInfeasible(const std::string& text) {
  return text.empty() || text == "inf" || text == "infeasible";
}

}  // namespace

std::vector<std::string> ProfileTable::TaskNames() const {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const ProfileRow& r : rows) {
    if (seen.insert(r.task).second) names.push_back(r.task);
  }
  return names;
}

int ProfileTable::ExtraColumn(std::string_view name) const {
  for (size_t i = 0; i < extra_columns.size(); ++i) {
    if (extra_columns[i] == name) return static_cast<int>(i);
  }
  return -1;
}

void ProfileTable::Append(const ProfileTable& other) {
  std::vector<size_t> column_of;  // other's extra column -> this table's
  for (const std::string& name : other.extra_columns) {
    int c = ExtraColumn(name);
    if (c < 0) {
      extra_columns.push_back(name);
      for (ProfileRow& r : rows)
        r.extra.resize(extra_columns.size());
      c = static_cast<int>(extra_columns.size()) - 1;
    }
    column_of.push_back(static_cast<size_t>(c));
  }
  for (const ProfileRow& r : other.rows) {
    ProfileRow& row = rows.emplace_back(r);
    row.extra.assign(extra_columns.size(), "");
    for (size_t i = 0; i < column_of.size() && i < r.extra.size(); ++i)
      row.extra[column_of[i]] = r.extra[i];
  }
}

double ProfileTable::TrainingSeconds(const ProfileRow& row) const {
  try {
    double training = std::stod(Extra(row, "step_s")) * std::stod(Extra(row, "steps"));
    return training > 0 && training <= row.runtime_s ? training : 0.0;
  } catch (const std::exception&) {
    return 0.0;
  }
}

std::string ProfileTable::Extra(const ProfileRow& row, std::string_view column) const {
  int i = ExtraColumn(column);
  if (i < 0 || static_cast<size_t>(i) >= row.extra.size()) return "";
  return row.extra[i];
}

const ProfileRow* ProfileTable::Find(std::string_view task, std::string_view technique, int gpus,
                                     std::string_view gpu_type) const {
  for (const ProfileRow& r : rows) {
    if (r.feasible && r.task == task && r.technique == technique && r.gpus == gpus &&
        r.gpu_type == gpu_type) {
      return &r;
    }
  }
  return nullptr;
}

bool ProfileTable::Typed() const {
  return std::any_of(rows.begin(), rows.end(),
                     [](const ProfileRow& r) { return !r.gpu_type.empty(); });
}

namespace {

// A row's type must be one of the cluster's; a cluster of several types
// needs every row typed.
void CheckRowType(const ProfileRow& r, std::string_view source, const Cluster& cluster,
                  const std::vector<std::string>& types) {
  if (std::find(types.begin(), types.end(), r.gpu_type) != types.end()) return;
  std::string names;
  for (const std::string& t : types)
    names += (names.empty() ? "" : ", ") + GpuTypeLabel(t);
  if (r.gpu_type.empty()) {
    throw InputError(source, r.line, "gpu_type",
                     "the cluster's nodes are of several GPU types (" + names +
                         "): every row needs its gpu_type (saturn profile measures each)");
  }
  throw InputError(source, r.line, "gpu_type",
                   "no node of the cluster is of type " + Quote(r.gpu_type) + " (" +
                       (cluster.Mixed() ? "its types: " : "its type: ") + names + ")");
}

}  // namespace

void CheckProfile(const ProfileTable& table, std::string_view source, const Cluster& cluster) {
  if (table.rows.empty()) {
    throw InputError(source, 0, "", "the profile has no rows; expected one per configuration");
  }
  std::vector<std::string> types = cluster.GpuTypes();
  std::map<std::tuple<std::string, std::string, int, std::string>, int> seen;
  std::map<std::string, bool> any_feasible;
  for (const ProfileRow& r : table.rows) {
    if (r.task.empty()) throw InputError(source, r.line, "task", "expected a task name");
    if (r.technique.empty()) {
      throw InputError(source, r.line, "technique", "expected a technique name");
    }
    if (r.gpus < 1) throw InputError(source, r.line, "gpus", "expected an integer >= 1");
    CheckRowType(r, source, cluster, types);
    int max_gpus = cluster.MaxGpusPerNode(r.gpu_type);
    if (r.gpus > max_gpus) {
      throw InputError(source, r.line, "gpus",
                       std::to_string(r.gpus) + " GPUs is more than any node" +
                           (r.gpu_type.empty() ? "" : " of type " + r.gpu_type) +
                           " has (the largest has " + std::to_string(max_gpus) + ")");
    }
    if (r.feasible && !(std::isfinite(r.runtime_s) && r.runtime_s > 0)) {
      throw InputError(source, r.line, "runtime_s",
                       "expected a positive number of seconds, got " + FormatNumber(r.runtime_s));
    }
    if (r.feasible && r.runtime_s > limits::kMaxNumber) {
      throw InputError(source, r.line, "runtime_s",
                       "expected at most " + FormatNumber(limits::kMaxNumber) + " seconds, got " +
                           FormatNumber(r.runtime_s));
    }
    auto key = std::make_tuple(r.task, r.technique, r.gpus, r.gpu_type);
    auto [it, inserted] = seen.emplace(key, r.line);
    if (!inserted) {
      throw InputError(source, r.line, "",
                       "duplicate row for task " + Quote(r.task) + ", technique " +
                           Quote(r.technique) + ", " + std::to_string(r.gpus) + " GPUs" +
                           (r.gpu_type.empty() ? "" : " of type " + r.gpu_type) +
                           " (first at line " + std::to_string(it->second) + ")");
    }
    any_feasible[r.task] = any_feasible[r.task] || r.feasible;
  }
  for (const auto& [task, feasible] : any_feasible) {
    if (!feasible) {
      throw InputError(source, 0, "task " + Quote(task),
                       "has no feasible configuration; expected at least one row with a runtime");
    }
  }
}

ProfileTable ParseProfileCsv(std::string_view text, std::string_view source,
                             const Cluster& cluster) {
  CsvTable csv = ParseCsv(text, source);
  if (csv.records.empty()) {
    throw InputError(source, 1, "",
                     "empty file; expected the header task,technique,gpus,runtime_s");
  }
  if (csv.records.size() - 1 > static_cast<size_t>(limits::kMaxProfileRows)) {
    throw InputError(source, csv.records[limits::kMaxProfileRows + 1].line, "",
                     "more than " + std::to_string(limits::kMaxProfileRows) +
                         " rows; expected one per task, technique and GPU count");
  }
  const CsvRecord& header = csv.records[0];
  std::map<std::string, int> column;
  for (size_t i = 0; i < header.fields.size(); ++i) {
    if (std::string why = UnlessUtf8(header.fields[i]); !why.empty()) {
      throw InputError(source, header.line, "header", why);
    }
    if (!column.emplace(header.fields[i], static_cast<int>(i)).second) {
      throw InputError(source, header.line, "header",
                       "duplicate column " + Quote(header.fields[i]));
    }
  }
  for (const char* name : kRequired) {
    if (!column.count(name)) {
      throw InputError(source, header.line, "header",
                       std::string("missing column '") + name +
                           "'; expected task,technique,gpus,runtime_s then any extra columns");
    }
  }
  ProfileTable table;
  std::vector<int> extra_index;
  int type_column = column.count(kTypeColumn) ? column[kTypeColumn] : -1;
  std::vector<std::string> cluster_types = cluster.GpuTypes();
  for (size_t i = 0; i < header.fields.size(); ++i) {
    bool required = header.fields[i] == kTypeColumn;
    for (const char* name : kRequired)
      required = required || header.fields[i] == name;
    if (!required) {
      table.extra_columns.push_back(header.fields[i]);
      extra_index.push_back(static_cast<int>(i));
    }
  }
  for (size_t r = 1; r < csv.records.size(); ++r) {
    const CsvRecord& rec = csv.records[r];
    if (rec.fields.size() != header.fields.size()) {
      throw InputError(source, rec.line, "",
                       "expected " + std::to_string(header.fields.size()) + " fields, got " +
                           std::to_string(rec.fields.size()));
    }
    for (size_t i = 0; i < rec.fields.size(); ++i) {
      if (std::string why = UnlessUtf8(rec.fields[i]); !why.empty()) {
        throw InputError(source, rec.line, header.fields[i], why);
      }
    }
    ProfileRow row;
    row.line = rec.line;
    row.task = rec.fields[column["task"]];
    row.technique = rec.fields[column["technique"]];
    // No column: the cluster's one type (CheckProfile refuses several).
    if (type_column >= 0) {
      row.gpu_type = rec.fields[type_column];
    } else if (cluster_types.size() == 1) {
      row.gpu_type = cluster_types[0];
    }
    const std::string& gpus = rec.fields[column["gpus"]];
    char* end = nullptr;
    long g = std::strtol(gpus.c_str(), &end, 10);
    if (gpus.empty() || *end != '\0' || g < 1 || g > 1 << 20) {
      throw InputError(source, rec.line, "gpus", "expected an integer >= 1, got " + Quote(gpus));
    }
    row.gpus = static_cast<int>(g);
    const std::string& runtime = rec.fields[column["runtime_s"]];
    if (MarksInfeasible(runtime)) {
      row.feasible = false;
    } else {
      row.runtime_s = std::strtod(runtime.c_str(), &end);
      if (*end != '\0') {
        throw InputError(source, rec.line, "runtime_s",
                         "expected a positive number of seconds, got " + Quote(runtime));
      }
    }
    for (int i : extra_index)
      row.extra.push_back(rec.fields[i]);
    table.rows.push_back(std::move(row));
  }
  CheckProfile(table, source, cluster);
  return table;
}

ProfileTable LoadProfileFile(const std::string& path, const Cluster& cluster) {
  return ParseProfileCsv(ReadFile(path), path, cluster);
}

std::string ProfileToCsv(const ProfileTable& table) {
  std::vector<std::string> header = {"task", "technique", "gpus", "runtime_s"};
  bool typed = table.Typed();
  if (typed) header.push_back(kTypeColumn);
  header.insert(header.end(), table.extra_columns.begin(), table.extra_columns.end());
  std::string out = CsvLine(header);
  for (const ProfileRow& r : table.rows) {
    std::vector<std::string> fields = {r.task, r.technique, std::to_string(r.gpus),
                                       r.feasible ? FormatNumber(r.runtime_s) : "infeasible"};
    if (typed) fields.push_back(r.gpu_type);
    for (size_t i = 0; i < table.extra_columns.size(); ++i) {
      fields.push_back(i < r.extra.size() ? r.extra[i] : "");
    }
    out += CsvLine(fields);
  }
  return out;
}

std::map<std::string, double> ArrivalTimes(const ProfileTable& profile, std::string_view source) {
  std::map<std::string, double> arrival;
  if (profile.ExtraColumn("arrival_s") < 0) return arrival;
  for (const ProfileRow& r : profile.rows) {
    std::string text = profile.Extra(r, "arrival_s");
    if (text.empty()) continue;
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v) || v < 0) {
      throw InputError(source, r.line, "arrival_s",
                       "expected a number of seconds >= 0, got " + Quote(text));
    }
    auto [it, fresh] = arrival.emplace(r.task, v);
    if (!fresh) it->second = std::max(it->second, v);
  }
  return arrival;
}

}  // namespace saturn
