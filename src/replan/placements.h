// Where each task runs, and who holds each device: the one placement owner
// of `saturn run`, `saturn serve` (through the executor's SharedPlacements,
// which adds a lock and lends devices to profiling trials) and the
// simulator. A device is free, held by a task (placed when its worker
// starts, freed when it exits), or held for a profiling trial.
//
//   Placements p; p.Reset({{"n0", 4, ""}}, /*tasks=*/3);
//   if (p.Place(0, a)) start();      // false: one of a's devices is held
//   p.On(0);                         // where task 0 runs now (nullopt: nowhere)
//   p.Free(0);                       // its worker exited; p.Last(0) stays
//   auto trial = p.HoldForTrial(2, "");   // two free devices of one node (of a type)
//   p.ReleaseTrial(*trial);
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "replan/dispatch.h"

namespace saturn {

class Placements {
 public:
  // A node: its name, devices and GPU type.
  struct NodeDevices {
    std::string name;
    int gpus = 0;
    std::string gpu_type = {};
  };
  // Devices of one node held for a trial.
  struct TrialHold {
    int node = -1;
    std::vector<int> gpu_ids;
  };

  // The nodes, all free; `tasks` tasks, none placed.
  void Reset(const std::vector<NodeDevices>& nodes, int tasks);
  // The task set changed (arrivals joined, cancelled tasks left): new task
  // j was task `old_of_new[j]` (-1: new). Devices and trial holds are kept.
  void Renumber(const std::vector<int>& old_of_new);

  // Task j starts on `a`'s devices. False, and nothing changes, if one of
  // them is not free.
  bool Place(int j, const Assignment& a);
  // Task j's worker exited (or its simulated segment ended): its devices
  // are free again.
  void Free(int j);
  // The Place just made did not take (its worker could not be started): as
  // if the task had never been placed there (Last is what it was before).
  void Undo(int j);

  // Where task j runs now; nullopt when it is not placed.
  std::optional<Assignment> On(int j) const;
  // Where task j runs or last ran; nullopt if never.
  std::optional<Assignment> Last(int j) const;
  // Whether neither a task nor a trial holds the device.
  bool DeviceFree(int node, int gpu) const;
  // The task holding the device, or -1.
  int TaskOn(int node, int gpu) const;
  // Devices of `node` that nothing holds.
  int FreeOn(int node) const;

  // `gpus` free devices of one node of `gpu_type`, now held for a trial;
  // nullopt if no node has them.
  std::optional<TrialHold> HoldForTrial(int gpus, const std::string& gpu_type);
  void ReleaseTrial(const TrialHold& hold);
  const std::string& NodeName(int node) const { return names_.at(static_cast<size_t>(node)); }
  int NodeIndex(const std::string& name) const;

 private:
  static constexpr int kFree = -1;
  static constexpr int kTrial = -2;

  std::vector<std::string> names_;
  std::vector<std::string> types_;
  std::vector<std::vector<int>> holder_;  // [node][gpu]: a task, kFree or kTrial
  // Per task: where it runs or last ran (option < 0: never), and whether now.
  std::vector<Assignment> last_;
  std::vector<bool> placed_;
  std::pair<int, Assignment> before_last_place_{-1, {}};  // for Undo
};

}  // namespace saturn
