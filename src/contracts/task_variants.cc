#include "contracts/task_variants.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace saturn {
namespace {

using nlohmann::json;

// A YAML value as JSON: quoted scalars strings, others an integer, a
// number, a boolean or null where they read as one.
json YamlJson(const YAML::Node& node) {
  if (node.IsSequence()) {
    json out = json::array();
    for (const auto& item : node)
      out.push_back(YamlJson(item));
    return out;
  }
  if (node.IsMap()) {
    json out = json::object();
    for (const auto& kv : node)
      out[kv.first.Scalar()] = YamlJson(kv.second);
    return out;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& s = node.Scalar();
  if (node.Tag() == "!" || s.empty()) return s;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(s.c_str(), &end, 10);
  if (*end == '\0' && errno == 0) return n;
  const double d = std::strtod(s.c_str(), &end);
  if (*end == '\0' && errno == 0 && std::isfinite(d)) return d;
  if (s == "true" || s == "false") return s == "true";
  if (s == "null" || s == "~") return nullptr;
  return s;
}

// The value at a dotted path of `spec`, or null when it has none.
const json* Find(const json& spec, const std::string& path) {
  const json* at = &spec;
  for (size_t begin = 0;;) {
    const size_t dot = path.find('.', begin);
    const std::string key = path.substr(begin, dot == std::string::npos ? dot : dot - begin);
    if (!at->is_object() || !at->contains(key)) return nullptr;
    at = &(*at)[key];
    if (dot == std::string::npos) return at;
    begin = dot + 1;
  }
}

}  // namespace

TaskExpansion::TaskExpansion(const YamlFields& task)
    : axes_(ReadSweepAxes(task)), search_(ReadSearchSpace(task, axes_)) {
  if (!axes_.empty()) sweep_line_ = YamlLine(task.Required("sweep"));
}

long TaskExpansion::Size() const {
  const long grid = SweepSize(axes_);
  const long samples = Searched() ? search_.samples : 1;
  if (grid > std::numeric_limits<long>::max() / samples) return std::numeric_limits<long>::max();
  return grid * samples;
}

std::vector<TaskVariant> TaskExpansion::Variants(const YAML::Node& task,
                                                 const std::string& base_name) const {
  if (Empty()) return {{base_name, task, {}}};
  std::vector<SearchSample> samples = {SearchSample{}};  // one of no fields
  if (Searched()) samples = DrawSamples(search_);
  std::vector<TaskVariant> variants;
  for (const auto& combo : SweepCombinations(axes_)) {
    TaskVariant grid_point{base_name, YAML::Node(), {}};
    for (size_t a = 0; a < axes_.size(); ++a) {
      const YAML::Node& value = axes_[a].values[combo[a]];
      grid_point.set.push_back({axes_[a].path, value, sweep_line_, false});
      grid_point.name += "-" + SweepShortKey(axes_[a].path) + SweepNameValue(value);
    }
    for (const SearchSample& sample : samples) {
      TaskVariant v = grid_point;
      for (size_t f = 0; f < sample.values.size(); ++f) {
        const SearchField& field = search_.fields[f];
        v.set.push_back({field.path, sample.values[f], field.line, true});
      }
      v.name += sample.suffix;
      v.node = WithValues(task, v.set);
      v.node["name"] = v.name;
      variants.push_back(std::move(v));
    }
  }
  return variants;
}

YAML::Node WithValues(const YAML::Node& task, const std::vector<SetValue>& set) {
  YAML::Node node = YAML::Clone(task);
  node.remove("sweep");
  node.remove("search");
  for (const SetValue& s : set)
    SetYamlPath(node, s.path, s.value);
  return node;
}

std::vector<VariedValue> VariedValues(const std::vector<SetValue>& set, const json& spec) {
  std::vector<VariedValue> out;
  for (const SetValue& s : set) {
    const json* read = Find(spec, s.path);
    out.push_back({s.path, read != nullptr ? *read : YamlJson(s.value), s.sampled});
  }
  return out;
}

void KeepLines(const WorkloadTask& written, const std::vector<SetValue>& set, int fallback,
               WorkloadTask& variant) {
  // The line of what sets `field` (or a field inside it); 0 if nothing does.
  auto set_at = [&](const std::string& field) {
    for (const SetValue& s : set) {
      if (s.path == field || s.path.rfind(field + ".", 0) == 0) return s.line;
    }
    return 0;
  };
  variant.line = written.line;
  if (variant.batch_size_line <= 1) {
    const int at = set_at("batch_size");
    variant.batch_size_line = at > 0 ? at : written.batch_size_line;
  }
  const int techniques_at = set_at("techniques");
  for (size_t i = 0; i < variant.technique_lines.size(); ++i) {
    if (variant.technique_lines[i] > 1) continue;
    variant.technique_lines[i] = techniques_at == 0 && i < written.technique_lines.size()
                                     ? written.technique_lines[i]
                                     : (techniques_at > 0 ? techniques_at : fallback);
  }
}

}  // namespace saturn
