#include "contracts/workload_table.h"

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "common/cache_dir.h"
#include "common/checksum.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "contracts/workload_model.h"
#include "table/csv_text.h"
#include "table/group_file.h"

namespace saturn {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// Group files made in this process: by the CSV (path, size, modification
// time) and the data fields, so that a sweep's variants read it once.
std::mutex tables_mutex;
std::map<std::string, std::string> made;

// The group file of `spec` (named by the CSV's bytes and the spec), written
// from the CSV unless it is there.
std::string GroupFile(const table::TableSpec& spec, const YamlFields& d) {
  json key = {{"features", spec.features},
              {"label", spec.label},
              {"group_by", spec.group_by},
              {"task", spec.task},
              {"holdout", spec.holdout},
              {"seed", spec.split_seed},
              {"min_group_rows", spec.min_group_rows},
              {"format", 1}};
  std::error_code ec;
  auto stamp = fs::last_write_time(spec.path, ec).time_since_epoch().count();
  std::string seen = spec.path + "|" + std::to_string(fs::file_size(spec.path, ec)) + "|" +
                     std::to_string(stamp) + "|" + key.dump();
  {
    std::lock_guard<std::mutex> lock(tables_mutex);
    auto it = made.find(seen);
    if (it != made.end() && fs::exists(it->second, ec)) return it->second;
  }
  // Read once: hashed for the name, and parsed unless the file is there.
  const table::CsvText csv(spec.path);
  const std::string_view bytes = csv.view();
  std::string text = key.dump();
  uint32_t crc = Crc32c(bytes.data(), bytes.size());
  crc = Crc32c(text.data(), text.size(), crc);
  std::string path = (fs::path(SaturnCacheDir()) / "tables" /
                      (Crc32cHex(crc) + "-" + std::to_string(bytes.size()) + ".groups"))
                         .string();
  if (!fs::exists(path, ec)) {
    table::GroupedTable t =
        table::ReadGroupedTable(spec, bytes, d.source(), YamlLine(d.node()), d.path());
    WriteGroupFile(t, path);
  }
  std::lock_guard<std::mutex> lock(tables_mutex);
  made[seen] = path;
  return path;
}

}  // namespace

json ReadTableData(const YamlFields& d, const std::string& base_dir,
                   const std::string& model_type) {
  d.AllowOnly({"type", "path", "features", "label", "group_by", "task", "holdout", "seed",
               "min_group_rows"});
  if (model_type != "mlp") {
    d.Fail("type",
           "table data feeds mlp models (layers: 0 for linear or logistic regression), "
           "not " +
               model_type);
  }
  table::TableSpec spec;
  spec.path = ExistingFile(d, "path", base_dir);
  YAML::Node features = d.Required("features");
  if (!features.IsSequence() || features.size() == 0) {
    d.Fail("features", "expected a non-empty list of column names");
  }
  for (size_t i = 0; i < features.size(); ++i)
    spec.features.push_back(YamlToString(features[i], d.source(),
                                         d.FieldPath("features") + "[" + std::to_string(i) + "]"));
  spec.label = d.String("label");
  spec.group_by = d.String("group_by");
  spec.task = d.OptionalString("task").value_or("");
  if (!spec.task.empty() && spec.task != "regression" && spec.task != "classification") {
    d.Fail("task", "expected regression or classification, got " + Quote(spec.task));
  }
  spec.holdout = d.OptionalDouble("holdout", 0.0, 0.9).value_or(spec.holdout);
  spec.split_seed = static_cast<uint64_t>(d.OptionalInt("seed", 0).value_or(0));
  spec.min_group_rows = d.OptionalInt("min_group_rows", 2).value_or(spec.min_group_rows);
  std::string file = GroupFile(spec, d);
  const table::GroupedTable& t = table::CachedGroupFileHeader(file).table;
  return {{"type", "table"}, {"path", file}, {"groups", t.groups.size()}};
}

bool IsTableTask(const WorkloadTask& t) {
  return !t.is_command && t.spec.contains("data") && t.spec["data"].value("type", "") == "table";
}

std::vector<WorkloadTask> ExpandGroups(const WorkloadTask& t, const Workload& w) {
  const table::GroupedTable* table = &table::CachedGroupFileHeader(t.spec["data"]["path"]).table;
  long room = w.max_tasks - static_cast<long>(w.tasks.size());
  if (static_cast<long>(table->groups.size()) > room) {
    throw InputError(w.source, t.line, t.field + ".data",
                     "makes " + Plural(static_cast<long>(table->groups.size()), "task") +
                         " (one per group), which takes the workload past its limit of " +
                         Plural(w.max_tasks, "task") +
                         "; raise it with max_tasks: in the workload or --max-tasks");
  }
  std::vector<WorkloadTask> out;
  out.reserve(table->groups.size());
  std::map<std::string, std::string> named;  // task name part -> group
  for (const table::TableGroup& g : table->groups) {
    WorkloadTask task = t;
    std::string part = table::GroupNameForTask(g.name);
    auto [it, added] = named.emplace(part, g.name);
    if (!added) {
      throw InputError(w.source, t.line, t.field + ".data.group_by",
                       "groups " + Quote(it->second) + " and " + Quote(g.name) +
                           " both make the task name " + Quote(t.name + "-" + part) +
                           " (names keep letters, digits, '.', '_' and '-'): rename one");
    }
    task.name = t.name + "-" + part;
    task.group = g.name;
    task.spec["name"] = task.name;
    task.spec["data"] = {{"type", "table"},
                         {"path", t.spec["data"]["path"]},
                         {"group", g.name},
                         {"train_rows", g.train_rows}};
    json& model = task.spec["model"];
    model["inputs"] = table->Features();
    model["outputs"] = table->Outputs();
    model["loss"] = table->classification ? "cross_entropy" : "mse";
    if (!model.contains("width")) model["width"] = 1;
    out.push_back(std::move(task));
  }
  return out;
}

}  // namespace saturn
