#include "report/hyperparameters.h"

#include <cstdio>
#include <map>

#include "contracts/sweep.h"

namespace saturn {
namespace {

using nlohmann::json;

// Each leaf of a value by dotted path (a map's fields; lists are leaves),
// in order.
void Flatten(const json& value, const std::string& path,
             std::vector<std::pair<std::string, json>>& out) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, v] : value.items())
      Flatten(v, path + "." + key, out);
    return;
  }
  out.push_back({path, value});
}

// A task's varied values, leaf by leaf: path -> value, and the paths in order.
struct Leaves {
  std::map<std::string, json> values;
  std::map<std::string, bool> sampled;
  std::vector<std::string> order;
};

Leaves LeavesOf(const std::vector<VariedValue>& varied) {
  Leaves leaves;
  for (const VariedValue& v : varied) {
    std::vector<std::pair<std::string, json>> flat;
    Flatten(v.value, v.path, flat);
    for (auto& [path, value] : flat) {
      if (leaves.values.emplace(path, std::move(value)).second) leaves.order.push_back(path);
      leaves.sampled[path] = v.sampled;
    }
  }
  return leaves;
}

}  // namespace

std::vector<HyperParameters> SweptValues(const std::vector<SweptTask>& tasks) {
  std::vector<HyperParameters> out(tasks.size());
  std::map<std::string, std::vector<size_t>> groups;  // sweep -> its tasks
  for (size_t i = 0; i < tasks.size(); ++i)
    groups[tasks[i].sweep.empty() ? tasks[i].name : tasks[i].sweep].push_back(i);
  for (const auto& [sweep, members] : groups) {
    std::vector<Leaves> leaves;
    std::vector<std::string> paths;  // every member's, in the order written
    std::map<std::string, bool> sampled;
    for (size_t m : members) {
      leaves.push_back(LeavesOf(tasks[m].varied));
      for (const std::string& path : leaves.back().order) {
        if (sampled.emplace(path, leaves.back().sampled[path]).second) paths.push_back(path);
      }
    }
    // A sampled field always; a swept one where its values differ.
    for (const std::string& path : paths) {
      bool shown = sampled[path];
      const json* first = nullptr;
      for (size_t m = 0; m < members.size() && !shown; ++m) {
        auto it = leaves[m].values.find(path);
        if (it == leaves[m].values.end()) {
          shown = true;  // some members have it, others not
        } else if (first == nullptr) {
          first = &it->second;
        } else {
          shown = it->second != *first;
        }
      }
      if (!shown) continue;
      for (size_t m = 0; m < members.size(); ++m) {
        auto it = leaves[m].values.find(path);
        if (it != leaves[m].values.end()) out[members[m]].push_back({path, it->second});
      }
    }
  }
  return out;
}

std::string HyperParameterText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_number_float()) return value.dump();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value.get<double>());
  return buf;
}

std::vector<std::pair<std::string, std::string>> HyperParameterHeaders(
    const std::vector<std::string>& paths) {
  std::map<std::string, int> uses;
  for (const std::string& p : paths)
    ++uses[SweepShortKey(p)];
  std::vector<std::pair<std::string, std::string>> columns;  // path, header
  for (const std::string& p : paths)
    columns.push_back({p, uses[SweepShortKey(p)] > 1 ? p : SweepShortKey(p)});
  return columns;
}

}  // namespace saturn
