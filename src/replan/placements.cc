#include "replan/placements.h"

#include <stdexcept>

namespace saturn {

void Placements::Reset(const std::vector<NodeDevices>& nodes, int tasks) {
  names_.clear();
  types_.clear();
  holder_.clear();
  for (const NodeDevices& n : nodes) {
    names_.push_back(n.name);
    types_.push_back(n.gpu_type);
    holder_.emplace_back(static_cast<size_t>(n.gpus), kFree);
  }
  last_.assign(static_cast<size_t>(tasks), Assignment{});
  placed_.assign(static_cast<size_t>(tasks), false);
}

void Placements::Renumber(const std::vector<int>& old_of_new) {
  std::vector<int> new_of_old(last_.size(), -1);
  std::vector<Assignment> last(old_of_new.size());
  std::vector<bool> placed(old_of_new.size(), false);
  for (size_t j = 0; j < old_of_new.size(); ++j) {
    int old = old_of_new[j];
    if (old < 0) continue;
    new_of_old.at(old) = static_cast<int>(j);
    last[j] = last_[old];
    placed[j] = placed_[old];
  }
  for (size_t old = 0; old < placed_.size(); ++old) {
    if (placed_[old] && new_of_old[old] < 0) {
      throw std::logic_error("a running task left the run");
    }
  }
  for (auto& node : holder_) {
    for (int& h : node) {
      if (h >= 0) h = new_of_old.at(h);
    }
  }
  last_ = std::move(last);
  placed_ = std::move(placed);
}

bool Placements::Place(int j, const Assignment& a) {
  if (placed_.at(j)) throw std::logic_error("a task placed twice");
  const std::vector<int>& node = holder_.at(a.node);
  for (int g : a.gpu_ids) {
    if (node.at(g) != kFree) return false;
  }
  for (int g : a.gpu_ids)
    holder_[a.node][g] = j;
  before_last_place_ = {j, last_[j]};
  last_[j] = a;
  placed_[j] = true;
  return true;
}

void Placements::Free(int j) {
  if (!placed_.at(j)) return;
  const Assignment& a = last_[j];
  for (int g : a.gpu_ids) {
    if (holder_.at(a.node).at(g) == j) holder_[a.node][g] = kFree;
  }
  placed_[j] = false;
}

void Placements::Undo(int j) {
  Free(j);
  if (before_last_place_.first == j) last_[j] = before_last_place_.second;
  before_last_place_.first = -1;
}

std::optional<Assignment> Placements::On(int j) const {
  if (!placed_.at(j)) return std::nullopt;
  return last_[j];
}

std::optional<Assignment> Placements::Last(int j) const {
  if (last_.at(j).option < 0) return std::nullopt;
  return last_[j];
}

bool Placements::DeviceFree(int node, int gpu) const {
  return holder_.at(node).at(gpu) == kFree;
}

int Placements::TaskOn(int node, int gpu) const {
  int h = holder_.at(node).at(gpu);
  return h >= 0 ? h : -1;
}

int Placements::FreeOn(int node) const {
  int free = 0;
  for (int h : holder_.at(node))
    free += h == kFree;
  return free;
}

std::optional<Placements::TrialHold> Placements::HoldForTrial(int gpus,
                                                              const std::string& gpu_type) {
  for (size_t n = 0; n < holder_.size(); ++n) {
    if (types_[n] != gpu_type) continue;
    std::vector<int> free;
    for (size_t g = 0; g < holder_[n].size() && static_cast<int>(free.size()) < gpus; ++g) {
      if (holder_[n][g] == kFree) free.push_back(static_cast<int>(g));
    }
    if (static_cast<int>(free.size()) < gpus) continue;
    for (int g : free)
      holder_[n][g] = kTrial;
    return TrialHold{static_cast<int>(n), free};
  }
  return std::nullopt;
}

void Placements::ReleaseTrial(const TrialHold& hold) {
  for (int g : hold.gpu_ids) {
    if (holder_.at(hold.node).at(g) == kTrial) holder_[hold.node][g] = kFree;
  }
}

int Placements::NodeIndex(const std::string& name) const {
  for (size_t n = 0; n < names_.size(); ++n) {
    if (names_[n] == name) return static_cast<int>(n);
  }
  return -1;
}

}  // namespace saturn
