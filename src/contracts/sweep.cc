#include "contracts/sweep.h"

#include <cctype>
#include <limits>

#include "common/error.h"

namespace saturn {
namespace {

std::string NameValue(const YAML::Node& v) {
  std::string s = v.IsScalar() ? v.Scalar() : "x";
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+') c = '_';
  }
  return s;
}

// Sets a dotted field (e.g. "optimizer.lr") of a task's YAML map.
void SetPath(YAML::Node node, const std::string& path, const YAML::Node& value) {
  size_t dot = path.find('.');
  if (dot == std::string::npos) {
    node[path] = value;
    return;
  }
  std::string key = path.substr(0, dot);
  // A field the task does not have yet becomes a map (then read as any other).
  if (!node[key].IsMap()) node[key] = YAML::Node(YAML::NodeType::Map);
  SetPath(node[key], path.substr(dot + 1), value);
}

}  // namespace

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
    if (key == "name" || key == "sweep" || key == "type") {
      throw InputError(task.source(), YamlLine(kv.second), field, "cannot sweep over " + key);
    }
    // Each part before the last must be a map of the task (or absent).
    YAML::Node at = task.node();
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
      std::string part = key.substr(0, dot);
      // A const look-up adds no key (but gives an invalid node for a
      // missing one); reset() rebinds `at` (operator= would overwrite the
      // node it refers to).
      const YAML::Node parent = at;
      const YAML::Node next = parent[part.substr(part.rfind('.') + 1)];
      if (!next.IsDefined() || next.IsNull()) break;  // made by the sweep
      if (!next.IsMap()) {
        throw InputError(task.source(), YamlLine(kv.second), field,
                         "cannot sweep over " + key + ": " + part + " is not a map");
      }
      at.reset(next);
    }
    axes.push_back({key, kv.second});
  }
  return axes;
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

SweepVariant MakeSweepVariant(const YAML::Node& task, const std::string& base_name,
                              const std::vector<SweepAxis>& axes,
                              const std::vector<size_t>& combo) {
  SweepVariant v{base_name, YAML::Clone(task)};
  v.node.remove("sweep");
  for (size_t a = 0; a < axes.size(); ++a) {
    SetPath(v.node, axes[a].path, axes[a].values[combo[a]]);
    v.name += "-" + SweepShortKey(axes[a].path) + NameValue(axes[a].values[combo[a]]);
  }
  v.node["name"] = v.name;
  return v;
}

}  // namespace saturn
