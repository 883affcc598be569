// Where each task of a run runs, and who holds each device: the one record
// of placement in `saturn run` and `saturn serve`. A device is free, held by
// a task (placed by the dispatcher when it starts the task's worker, freed
// when the worker exits), or lent to a profiling trial of a task that
// arrived (the profiler's TrialDevices). The dispatcher runs on the run's
// thread and arrivals are profiled on another, so every check and change is
// one step under one lock: a device is never given to two holders.
//
//   Placements p; p.Reset({{"n0", 4, ""}}, /*tasks=*/3);
//   if (p.Place(0, a)) start();      // false: a trial holds one of a's devices
//   p.On(0);                         // where task 0 runs now (nullopt: nowhere)
//   p.Free(0);                       // its worker exited; p.Last(0) stays
//   auto lease = p.Acquire(2, "");   // a trial: two free devices of one node (of a type)
//   p.Release(*lease);
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "profiler/profiler.h"
#include "replan/dispatch.h"

namespace saturn {

class Placements final : public TrialDevices {
 public:
  // A node: its name, devices and GPU type.
  struct NodeDevices {
    std::string name;
    int gpus = 0;
    std::string gpu_type = {};
  };
  // The nodes, all free; `tasks` tasks, none placed.
  void Reset(const std::vector<NodeDevices>& nodes, int tasks);
  // The task set changed (arrivals joined, cancelled tasks left): new task
  // j was task `old_of_new[j]` (-1: new). Devices and leases are kept.
  void Renumber(const std::vector<int>& old_of_new);

  // Task j starts on `a`'s devices. False, and nothing changes, if one of
  // them is not free, or a trial waits for devices this would take.
  bool Place(int j, const Assignment& a);
  // Task j's worker exited: its devices are free again.
  void Free(int j);
  // The worker of the Place just made could not be started: as if the
  // task had never been placed there (Last is what it was before).
  void Undo(int j);

  // Where task j runs now; nullopt when it is not placed.
  std::optional<Assignment> On(int j) const;
  // Where task j runs or last ran in this process; nullopt if never.
  std::optional<Assignment> Last(int j) const;
  // Whether neither a task nor a trial holds the device.
  bool DeviceFree(int node, int gpu) const;
  // The task holding the device, or -1.
  int TaskOn(int node, int gpu) const;

  std::optional<Lease> Acquire(int gpus, const std::string& gpu_type) override;
  void Release(const Lease& lease) override;

 private:
  static constexpr int kFree = -1;
  static constexpr int kTrial = -2;
  bool TrialWaiting() const;  // under mu_

  mutable std::mutex mu_;
  int waiting_gpus_ = 0;  // the smallest trial request that found no devices
  std::chrono::steady_clock::time_point waiting_since_;
  std::vector<std::string> names_;
  std::vector<std::string> types_;
  std::vector<std::vector<int>> holder_;  // [node][gpu]: a task, kFree or kTrial
  // Per task: where it runs or last ran (option < 0: never), and whether now.
  std::vector<Assignment> last_;
  std::vector<bool> placed_;
  std::pair<int, Assignment> before_last_place_{-1, {}};  // for Undo
};

}  // namespace saturn
