// The run's placements (replan/placements.h) shared between the run's thread
// and the thread that profiles arriving tasks (part of the executor): every
// check and change is one step under one lock, so a device is never given
// to two holders. Devices are lent to profiling trials (the profiler's
// TrialDevices); a trial that found none gets the next ones freed before
// the plan's tasks take them.
//
//   SharedPlacements p; p.Reset({{"n0", 4, ""}}, /*tasks=*/3);
//   if (p.Place(0, a)) start();      // false: a trial holds or waits for a's devices
//   auto lease = p.Acquire(2, "");   // from the profiling thread
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "profiler/profiler.h"
#include "replan/placements.h"

namespace saturn {

class SharedPlacements final : public TrialDevices {
 public:
  using NodeDevices = Placements::NodeDevices;
  void Reset(const std::vector<NodeDevices>& nodes, int tasks);
  void Renumber(const std::vector<int>& old_of_new);
  // As Placements::Place, and false while a trial waits for devices of the
  // node that this would take.
  bool Place(int j, const Assignment& a);
  void Free(int j);
  void Undo(int j);
  // Task `to` holds task `from`'s devices from now on (a pack's worker
  // passing to another member), with its option `option`; `from` is freed.
  void Move(int from, int to, int option);
  std::optional<Assignment> On(int j) const;
  std::optional<Assignment> Last(int j) const;
  bool DeviceFree(int node, int gpu) const;
  int TaskOn(int node, int gpu) const;

  std::optional<Lease> Acquire(int gpus, const std::string& gpu_type) override;
  void Release(const Lease& lease) override;

 private:
  bool TrialWaiting() const;  // under mu_

  mutable std::mutex mu_;
  Placements p_;
  int waiting_gpus_ = 0;  // the smallest trial request that found no devices
  std::chrono::steady_clock::time_point waiting_since_;
};

}  // namespace saturn
