#include "executor/shared_placements.h"

namespace saturn {

void SharedPlacements::Reset(const std::vector<NodeDevices>& nodes, int tasks) {
  std::lock_guard<std::mutex> lock(mu_);
  p_.Reset(nodes, tasks);
}

void SharedPlacements::Renumber(const std::vector<int>& old_of_new) {
  std::lock_guard<std::mutex> lock(mu_);
  p_.Renumber(old_of_new);
}

bool SharedPlacements::TrialWaiting() const {
  return waiting_gpus_ > 0 &&
         std::chrono::steady_clock::now() - waiting_since_ < std::chrono::milliseconds(500);
}

bool SharedPlacements::Place(int j, const Assignment& a) {
  std::lock_guard<std::mutex> lock(mu_);
  // A trial that found no devices gets the next ones freed first.
  if (TrialWaiting() && p_.FreeOn(a.node) >= waiting_gpus_) return false;
  return p_.Place(j, a);
}

void SharedPlacements::Free(int j) {
  std::lock_guard<std::mutex> lock(mu_);
  p_.Free(j);
}

void SharedPlacements::Undo(int j) {
  std::lock_guard<std::mutex> lock(mu_);
  p_.Undo(j);
}

void SharedPlacements::Move(int from, int to, int option) {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Assignment> a = p_.On(from);
  if (!a) return;
  p_.Free(from);
  a->option = option;
  p_.Place(to, *a);
}

std::optional<Assignment> SharedPlacements::On(int j) const {
  std::lock_guard<std::mutex> lock(mu_);
  return p_.On(j);
}

std::optional<Assignment> SharedPlacements::Last(int j) const {
  std::lock_guard<std::mutex> lock(mu_);
  return p_.Last(j);
}

bool SharedPlacements::DeviceFree(int node, int gpu) const {
  std::lock_guard<std::mutex> lock(mu_);
  return p_.DeviceFree(node, gpu);
}

int SharedPlacements::TaskOn(int node, int gpu) const {
  std::lock_guard<std::mutex> lock(mu_);
  return p_.TaskOn(node, gpu);
}

std::optional<TrialDevices::Lease> SharedPlacements::Acquire(int gpus,
                                                             const std::string& gpu_type) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::optional<Placements::TrialHold> hold = p_.HoldForTrial(gpus, gpu_type)) {
    waiting_gpus_ = 0;
    return Lease{p_.NodeName(hold->node), hold->gpu_ids};
  }
  if (!TrialWaiting() || gpus < waiting_gpus_) waiting_gpus_ = gpus;
  waiting_since_ = std::chrono::steady_clock::now();
  return std::nullopt;
}

void SharedPlacements::Release(const Lease& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  int node = p_.NodeIndex(lease.node);
  if (node >= 0) p_.ReleaseTrial({node, lease.gpu_ids});
}

}  // namespace saturn
