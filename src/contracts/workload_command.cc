#include "contracts/workload_command.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/format.h"
#include "common/limits.h"
#include "contracts/workload_model.h"

namespace saturn {
namespace {

using nlohmann::json;

const std::vector<std::string> kPlaceholders = {"gpus",       "gpu_ids",        "steps",
                                                "start_step", "checkpoint_dir", "node"};

// The first placeholder of a command template that Saturn does not fill
// ("{name}" with no braces inside), if any.
std::optional<std::string> UnknownPlaceholder(const std::string& tmpl) {
  size_t open = tmpl.find('{');
  while (open != std::string::npos) {
    size_t close = tmpl.find_first_of("{}", open + 1);
    if (close == std::string::npos) break;
    if (tmpl[close] == '}') {
      std::string name = tmpl.substr(open + 1, close - open - 1);
      if (std::find(kPlaceholders.begin(), kPlaceholders.end(), name) == kPlaceholders.end()) {
        return name;
      }
      close = tmpl.find('{', close);
    }
    open = close;
  }
  return std::nullopt;
}

// `gpus:` of a template: a count or a list of distinct counts, each >= 1.
std::vector<int> ReadServedCounts(const YAML::Node& node, const std::string& source,
                                  const std::string& field) {
  std::vector<int> counts;
  if (node.IsScalar()) {
    counts.push_back(static_cast<int>(YamlToInt(node, source, field, 1, limits::kMaxGpusPerNode)));
    return counts;
  }
  if (!node.IsSequence() || node.size() == 0) {
    throw InputError(source, YamlLine(node), field,
                     "expected the GPU counts this template serves, e.g. [1] or [2, 4]");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    std::string item = field + "[" + std::to_string(i) + "]";
    int g = static_cast<int>(YamlToInt(node[i], source, item, 1, limits::kMaxGpusPerNode));
    if (std::find(counts.begin(), counts.end(), g) != counts.end()) {
      throw InputError(source, YamlLine(node[i]), item, std::to_string(g) + " is listed twice");
    }
    counts.push_back(g);
  }
  std::sort(counts.begin(), counts.end());
  return counts;
}

// One entry of `commands`: its template, and the counts it serves (empty:
// every count).
std::string ReadTemplate(const YAML::Node& value, const std::string& source,
                         const std::string& field, std::vector<int>* served) {
  std::string tmpl;
  if (value.IsMap()) {
    YamlFields t(value, source, field);
    t.AllowOnly({"run", "gpus"});
    tmpl = t.String("run");
    if (t.Has("gpus")) *served = ReadServedCounts(t.Required("gpus"), source, t.FieldPath("gpus"));
  } else if (value.IsScalar()) {
    tmpl = YamlToString(value, source, field);
  } else {
    throw InputError(source, YamlLine(value), field,
                     "expected a command template, or {run: TEMPLATE, gpus: [COUNTS]}");
  }
  if (std::optional<std::string> name = UnknownPlaceholder(tmpl)) {
    throw InputError(source, YamlLine(value), field,
                     "unknown placeholder {" + *name +
                         "}; expected {gpus}, {gpu_ids}, {steps}, {start_step}, "
                         "{checkpoint_dir} or {node}" +
                         SuggestionFor(*name, kPlaceholders));
  }
  return tmpl;
}

}  // namespace

void ReadCommandFields(const YamlFields& f, const Workload& w, WorkloadTask* t) {
  YAML::Node commands = f.Required("commands");
  std::string field = f.FieldPath("commands");
  if (!commands.IsMap() || commands.size() == 0) {
    f.Fail("commands", "expected a map from technique name to command template");
  }
  json cmds = json::object();
  for (const auto& kv : commands) {
    std::string technique = YamlKey(kv.first, w.source, field);
    std::vector<int> served;
    cmds[technique] = ReadTemplate(kv.second, w.source, field + "." + technique, &served);
    if (!served.empty()) t->command_gpus[technique] = std::move(served);
    t->techniques.push_back(technique);
  }
  t->spec = {{"name", t->name},
             {"type", "command"},
             {"commands", cmds},
             {"working_dir", w.base_dir},
             {"seed", f.OptionalInt("seed", 0).value_or(0)}};
  if (f.Has("env")) {
    YAML::Node env = f.Required("env");
    if (!env.IsMap()) f.Fail("env", "expected a map of environment variables");
    for (const auto& kv : env) {
      std::string name = YamlKey(kv.first, w.source, f.FieldPath("env"));
      t->spec["env"][name] = YamlToString(kv.second, w.source, f.FieldPath("env") + "." + name);
    }
  }
}

void CheckServedCounts(const YamlFields& f, const Workload& w, const WorkloadTask& t) {
  if (w.from_allocation) return;  // the allocation's nodes are not known yet
  const int hi = std::min(t.gpu_max, w.cluster.MaxGpusPerNode());
  std::string listed;
  for (const std::string& technique : t.techniques) {
    auto it = t.command_gpus.find(technique);
    if (it == t.command_gpus.end()) return;  // serves every count
    for (int g : it->second) {
      if (g >= t.gpu_min && g <= hi) return;
      listed += (listed.empty() ? "" : ", ") + std::to_string(g);
    }
  }
  f.Fail("commands",
         "its templates serve " + listed + " GPUs, but this task may use " +
             (t.gpu_min == hi ? std::to_string(hi)
                              : std::to_string(t.gpu_min) + " to " + std::to_string(hi)) +
             " (gpu_range and the largest node): no configuration to profile");
}

}  // namespace saturn
