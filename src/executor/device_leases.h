// Who holds each device while a run trains: a task (the dispatcher claims
// its devices when it starts it) or a profiling trial of a task that arrived
// (lent through the profiler's TrialDevices). The dispatcher runs on the
// executor's thread and arrivals are profiled on another, so every check and
// change is one step under a lock: a device is never given to both.
//
//   DeviceLeases d; d.Reset({{"n0", 4}});
//   if (d.ClaimForTask(0, {0, 1})) start();   // false: a trial holds one
//   auto lease = d.Acquire(2);                 // a trial: two free devices of a node
//   d.Release(*lease); d.FreeFromTask(0, {0, 1});
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler/profiler.h"

namespace saturn {

class DeviceLeases final : public TrialDevices {
 public:
  // Nodes (name, devices), all free.
  void Reset(const std::vector<std::pair<std::string, int>>& nodes);

  bool ClaimForTask(int node, const std::vector<int>& gpu_ids);
  void FreeFromTask(int node, const std::vector<int>& gpu_ids);
  // Whether a trial holds the device.
  bool Lent(int node, int gpu) const;

  std::optional<Lease> Acquire(int gpus) override;
  void Release(const Lease& lease) override;

 private:
  enum Holder : char { kFree, kTask, kTrial };
  bool TrialWaiting() const;  // under mu_

  mutable std::mutex mu_;
  int waiting_gpus_ = 0;  // the smallest request that found no devices
  std::chrono::steady_clock::time_point waiting_since_;
  std::vector<std::string> names_;
  std::vector<std::vector<Holder>> holder_;  // [node][gpu]
};

}  // namespace saturn
