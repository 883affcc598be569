#include "report/hyperparameters.h"

#include <algorithm>
#include <map>

#include "contracts/sweep.h"

namespace saturn {
namespace {

using nlohmann::json;

// Every leaf of a task's settings by dotted path (arrays are leaves).
void Flatten(const json& value, const std::string& path, std::map<std::string, json>& out) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, v] : value.items())
      Flatten(v, path.empty() ? key : path + "." + key, out);
    return;
  }
  if (!path.empty()) out[path] = value;
}

// Where in `suffix` (a variant's name after its sweep's) the name says that
// `path`, or a field above it (a swept map), was swept; npos if it does not.
size_t SweptAt(const std::string& suffix, const std::string& path) {
  size_t at = std::string::npos;
  for (size_t dot = path.find('.');; dot = path.find('.', dot + 1)) {
    size_t found = suffix.find("-" + SweepShortKey(path.substr(0, dot)));
    at = std::min(at, found);
    if (dot == std::string::npos) break;
  }
  return at;
}

}  // namespace

std::vector<HyperParameters> SweptValues(const std::vector<SweptTask>& tasks) {
  std::vector<HyperParameters> out(tasks.size());
  std::map<std::string, std::vector<size_t>> sweeps;  // sweep -> its tasks
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!tasks[i].sweep.empty()) sweeps[tasks[i].sweep].push_back(i);
  }
  for (const auto& [sweep, members] : sweeps) {
    if (members.size() < 2) continue;
    std::vector<std::map<std::string, json>> leaves(members.size());
    std::map<std::string, int> paths;  // every path, and how many members have it
    for (size_t m = 0; m < members.size(); ++m) {
      Flatten(tasks[members[m]].spec, "", leaves[m]);
      leaves[m].erase("name");
      for (const auto& [path, v] : leaves[m])
        ++paths[path];
    }
    // The paths whose values differ among the members, where the names say
    // they were swept; in the order the names give them.
    const std::string& first = tasks[members[0]].name;
    const std::string suffix = first.rfind(sweep, 0) == 0 ? first.substr(sweep.size()) : first;
    std::vector<std::pair<size_t, std::string>> swept;
    for (const auto& [path, count] : paths) {
      bool differs = count != static_cast<int>(members.size());
      for (size_t m = 1; m < members.size() && !differs; ++m)
        differs = leaves[m].at(path) != leaves[0].at(path);
      size_t at = SweptAt(suffix, path);
      if (differs && at != std::string::npos) swept.push_back({at, path});
    }
    std::stable_sort(swept.begin(), swept.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t m = 0; m < members.size(); ++m) {
      for (const auto& [at, path] : swept) {
        auto it = leaves[m].find(path);
        if (it != leaves[m].end()) out[members[m]].push_back({path, it->second});
      }
    }
  }
  return out;
}

std::string HyperParameterText(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace saturn
