#include "contracts/sweep.h"

#include <cctype>
#include <limits>

#include "common/error.h"

namespace saturn {

std::string SweepNameValue(const YAML::Node& v) {
  std::string s = v.IsScalar() ? v.Scalar() : "x";
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+') c = '_';
  }
  return s;
}

void SetYamlPath(YAML::Node node, const std::string& path, const YAML::Node& value) {
  size_t dot = path.find('.');
  if (dot == std::string::npos) {
    node[path] = value;
    return;
  }
  std::string key = path.substr(0, dot);
  // A field the task does not have yet becomes a map (then read as any other).
  if (!node[key].IsMap()) node[key] = YAML::Node(YAML::NodeType::Map);
  SetYamlPath(node[key], path.substr(dot + 1), value);
}

std::string SweepShortKey(const std::string& path) {
  std::string last = path.substr(path.rfind('.') + 1);
  if (last == "batch_size") return "bs";
  return last;
}

std::vector<SweepAxis> ReadSweepAxes(const YamlFields& task) {
  std::vector<SweepAxis> axes;
  if (!task.Has("sweep")) return axes;
  YAML::Node sweep = task.Required("sweep");
  if (!sweep.IsMap()) task.Fail("sweep", "expected a map from field to list of values");
  for (const auto& kv : sweep) {
    std::string key = YamlKey(kv.first, task.source(), task.FieldPath("sweep"));
    std::string field = task.FieldPath("sweep") + "." + key;
    if (!kv.second.IsSequence() || kv.second.size() == 0) {
      throw InputError(task.source(), YamlLine(kv.second), field,
                       "expected a non-empty list of values");
    }
    CheckVariedField(task, key, YamlLine(kv.second), field, "sweep");
    axes.push_back({key, kv.second});
  }
  return axes;
}

void CheckVariedField(const YamlFields& task, const std::string& key, int line,
                      const std::string& field, const std::string& verb) {
  const std::string first = key.substr(0, key.find('.'));
  if (first == "name" || first == "sweep" || first == "search" || first == "type") {
    throw InputError(task.source(), line, field, "cannot " + verb + " over " + key);
  }
  // Each part before the last must be a map of the task (or absent).
  YAML::Node at = task.node();
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
    std::string part = key.substr(0, dot);
    // A const look-up adds no key (but gives an invalid node for a missing
    // one); reset() rebinds `at` (operator= would overwrite the node it
    // refers to).
    const YAML::Node parent = at;
    const YAML::Node next = parent[part.substr(part.rfind('.') + 1)];
    if (!next.IsDefined() || next.IsNull()) break;  // made by the variant
    if (!next.IsMap()) {
      throw InputError(task.source(), line, field,
                       "cannot " + verb + " over " + key + ": " + part + " is not a map");
    }
    at.reset(next);
  }
}

long SweepSize(const std::vector<SweepAxis>& axes) {
  constexpr long kMost = std::numeric_limits<long>::max();
  long size = 1;
  for (const SweepAxis& axis : axes) {
    long values = static_cast<long>(axis.values.size());
    if (size > kMost / values) return kMost;
    size *= values;
  }
  return size;
}

std::vector<std::vector<size_t>> SweepCombinations(const std::vector<SweepAxis>& axes) {
  std::vector<std::vector<size_t>> combos = {{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::vector<size_t>> next;
    for (const auto& c : combos) {
      for (size_t v = 0; v < axis.values.size(); ++v) {
        auto d = c;
        d.push_back(v);
        next.push_back(std::move(d));
      }
    }
    combos = std::move(next);
  }
  return combos;
}

}  // namespace saturn
