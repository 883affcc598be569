#include "executor/device_leases.h"

namespace saturn {

void DeviceLeases::Reset(const std::vector<std::pair<std::string, int>>& nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  names_.clear();
  holder_.clear();
  for (const auto& [name, gpus] : nodes) {
    names_.push_back(name);
    holder_.emplace_back(static_cast<size_t>(gpus), kFree);
  }
}

bool DeviceLeases::TrialWaiting() const {
  return waiting_gpus_ > 0 &&
         std::chrono::steady_clock::now() - waiting_since_ < std::chrono::milliseconds(500);
}

bool DeviceLeases::ClaimForTask(int node, const std::vector<int>& gpu_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  int free = 0;
  for (Holder h : holder_.at(node))
    free += h == kFree;
  if (TrialWaiting() && free >= waiting_gpus_) return false;
  for (int g : gpu_ids) {
    if (holder_.at(node).at(g) == kTrial) return false;
  }
  for (int g : gpu_ids)
    holder_[node][g] = kTask;
  return true;
}

void DeviceLeases::FreeFromTask(int node, const std::vector<int>& gpu_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int g : gpu_ids) {
    if (holder_.at(node).at(g) == kTask) holder_[node][g] = kFree;
  }
}

bool DeviceLeases::Lent(int node, int gpu) const {
  std::lock_guard<std::mutex> lock(mu_);
  return holder_.at(node).at(gpu) == kTrial;
}

std::optional<TrialDevices::Lease> DeviceLeases::Acquire(int gpus) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t n = 0; n < holder_.size(); ++n) {
    std::vector<int> free;
    for (size_t g = 0; g < holder_[n].size() && static_cast<int>(free.size()) < gpus; ++g) {
      if (holder_[n][g] == kFree) free.push_back(static_cast<int>(g));
    }
    if (static_cast<int>(free.size()) < gpus) continue;
    for (int g : free)
      holder_[n][g] = kTrial;
    waiting_gpus_ = 0;
    return Lease{names_[n], free};
  }
  if (!TrialWaiting() || gpus < waiting_gpus_) waiting_gpus_ = gpus;
  waiting_since_ = std::chrono::steady_clock::now();
  return std::nullopt;
}

void DeviceLeases::Release(const Lease& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t n = 0; n < names_.size(); ++n) {
    if (names_[n] != lease.node) continue;
    for (int g : lease.gpu_ids) {
      if (holder_[n].at(g) == kTrial) holder_[n][g] = kFree;
    }
  }
}

}  // namespace saturn
