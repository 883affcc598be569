// One profiling trial in a process: the profiler's (profiler.h) runner that
// starts a technique's search in a worker, or a user's program (a command
// task) for a few steps, through the launch backend, and turns how the
// process ended into the trial's result.
//
//   TrialRunner runner(options, backend, worker, dir, workload.plugins);
//   TrialRunner::Running r = runner.Start(index, trial, task_spec);
//   r.process.Wait();
//   runner.Finish(r, trial, /*timed_out=*/false);  // trial.result is filled
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "common/process.h"
#include "launch/backend.h"
#include "profiler/profiler.h"

namespace saturn {

class TrialRunner {
 public:
  TrialRunner(const ProfilerOptions& o, LaunchBackend& backend, std::string worker, std::string dir,
              std::vector<std::string> plugins)
      : o_(o),
        backend_(backend),
        worker_(std::move(worker)),
        dir_(std::move(dir)),
        plugins_(std::move(plugins)) {}

  struct Running {
    int trial;
    Process process;
    std::string result_path, log_path;
    std::chrono::steady_clock::time_point started;
    double spawned_unix_s;  // to compare with the worker's ready_unix_s
  };

  // Starts the trial's search in a worker (or a user's program for a few
  // steps) through the backend.
  Running Start(int index, const Trial& t, const nlohmann::json& task_spec);

  // Fills the trial's outcome once its process has ended (or timed out).
  void Finish(Running& r, Trial& t, bool timed_out);

 private:
  int Warmup() const { return o_.warmup >= 0 ? o_.warmup : 2; }
  long CommandSteps() const { return Warmup() + (o_.measure > 0 ? o_.measure : 5); }

  const ProfilerOptions& o_;
  LaunchBackend& backend_;
  std::string worker_;
  std::string dir_;
  std::vector<std::string> plugins_;
};

}  // namespace saturn
