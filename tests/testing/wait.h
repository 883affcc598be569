// Waiting on a condition rather than for a while (machines are noisy: a
// fixed sleep is either too short there or wasted here).
//
//   ASSERT_TRUE(test::WaitUntil([&] { return fs::exists(path); })) << path;
//   ASSERT_TRUE(test::ProcessGroupGone(pgid));
//   ASSERT_EQ(test::WaitForOrphanedWorkers(run_dir), "");
#pragma once

#include <signal.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "executor/run_state.h"

namespace saturn::test {

// Polls `done` every 20 ms for up to `limit_s` seconds; whether it came true.
template <typename F>
bool WaitUntil(F done, double limit_s = 60.0) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Waits until no process of group `pgid` is left (a worker orphaned by a
// killed orchestrator checkpoints on SIGTERM, then exits).
inline bool ProcessGroupGone(int pgid, double limit_s = 60.0) {
  return WaitUntil([&] { return ::kill(-pgid, 0) != 0; }, limit_s);
}

// Waits until the workers a killed `saturn run` or `saturn serve` left
// (the run state in `run_dir` names their process groups) have exited;
// "" once they have, else which still runs.
inline std::string WaitForOrphanedWorkers(const std::string& run_dir) {
  std::vector<int> groups;
  {
    RunState state = RunState::Open(run_dir, /*create=*/false);
    for (const TaskRecord& t : state.Tasks())
      if (t.worker_pgid > 0) groups.push_back(t.worker_pgid);
  }
  for (int g : groups) {
    if (!ProcessGroupGone(g))
      return "the worker of process group " + std::to_string(g) + " still runs";
  }
  return "";
}

}  // namespace saturn::test
