#include "executor/task_set.h"

#include <map>
#include <utility>

#include "common/error.h"
#include "common/format.h"

namespace saturn {

int TaskSet::IndexOf(const std::string& name) const {
  for (int j = 0; j < size(); ++j) {
    if (problem_.tasks[static_cast<size_t>(j)].name == name) return j;
  }
  return -1;
}

void TaskSet::BuildProblem(const std::string& profile_source) {
  problem_ = ProblemFromProfile(profile_, workload_.cluster);
  std::map<std::string, int> by_name;
  for (size_t k = 0; k < workload_.tasks.size(); ++k)
    by_name[workload_.tasks[k].name] = static_cast<int>(k);
  if (problem_.NumTasks() != static_cast<int>(workload_.tasks.size())) {
    throw InputError(profile_source, 0, "",
                     "the profile has " + std::to_string(problem_.NumTasks()) +
                         " tasks but the workload " + std::to_string(workload_.tasks.size()));
  }
  workload_index_.clear();
  for (const Task& t : problem_.tasks) {
    auto it = by_name.find(t.name);
    if (it == by_name.end()) {
      throw InputError(profile_source, 0, "task " + Quote(t.name), "is not in the workload");
    }
    workload_index_.push_back(it->second);
  }
}

void TaskSet::Build(const std::string& profile_source) {
  BuildProblem(profile_source);
  live_.clear();
  live_.resize(static_cast<size_t>(size()));
  for (int j = 0; j < size(); ++j)
    live_[static_cast<size_t>(j)].record.name = problem_.tasks[static_cast<size_t>(j)].name;
  std::vector<Placements::NodeDevices> nodes;
  for (const NodeSlots& n : problem_.nodes)
    nodes.push_back({n.name, n.gpus, problem_.TypeName(n.type)});
  placements_.Reset(nodes, size());
}

std::vector<int> TaskSet::Rebuild(const std::string& profile_source) {
  std::map<std::string, std::pair<int, LiveTask>> before;
  for (int j = 0; j < size(); ++j)
    before.emplace(problem_.tasks[static_cast<size_t>(j)].name,
                   std::make_pair(j, std::move(live_[static_cast<size_t>(j)])));
  BuildProblem(profile_source);
  live_.clear();
  live_.resize(static_cast<size_t>(size()));
  std::vector<int> old_of_new(static_cast<size_t>(size()), -1);
  std::vector<int> added;
  for (int j = 0; j < size(); ++j) {
    auto it = before.find(problem_.tasks[static_cast<size_t>(j)].name);
    if (it == before.end()) {
      live_[static_cast<size_t>(j)].record.name = problem_.tasks[static_cast<size_t>(j)].name;
      added.push_back(j);
      continue;
    }
    old_of_new[static_cast<size_t>(j)] = it->second.first;
    live_[static_cast<size_t>(j)] = std::move(it->second.second);
  }
  // Devices held by tasks and lent to trials stay as they are; so do packs.
  placements_.Renumber(old_of_new);
  std::vector<int> new_of_old(before.size(), -1);
  for (size_t j = 0; j < old_of_new.size(); ++j)
    if (old_of_new[j] >= 0) new_of_old[static_cast<size_t>(old_of_new[j])] = static_cast<int>(j);
  for (LiveTask& l : live_)
    if (l.pack_host >= 0) l.pack_host = new_of_old[static_cast<size_t>(l.pack_host)];
  ++version_;
  return added;
}

}  // namespace saturn
