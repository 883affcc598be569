// One profiling trial in a process: the profiler's (profiler.h) runner that
// starts a technique's search in a worker, or a user's program (a command
// task) for a few steps, through the launch backend, and turns how the
// process ended into the trial's result.
//
//   TrialRunner runner(options, clock, backend, worker, dir, workload.plugins);
//   TrialRunner::Running r = runner.Start(index, trial, task_spec);
//   r.process.Wait();
//   runner.Finish(r, trial, /*timed_out=*/false);  // trial.result is filled
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "launch/backend.h"
#include "profiler/profiler.h"

namespace saturn {

class TrialRunner {
 public:
  TrialRunner(const ProfilerOptions& o, const Clock& clock, LaunchBackend& backend,
              std::string worker, std::string dir, std::vector<std::string> plugins)
      : o_(o),
        clock_(clock),
        backend_(backend),
        worker_(std::move(worker)),
        dir_(std::move(dir)),
        plugins_(std::move(plugins)) {}

  struct Running {
    int trial;
    Process process;
    std::string result_path, log_path;
    double started;         // on the runner's clock
    double spawned_unix_s;  // to compare with the worker's ready_unix_s
    std::optional<TrialDevices::Lease> lease;
  };

  // Starts the trial's search in a worker (or a user's program for a few
  // steps) through the backend.
  // `lease`: the devices to run on (nullopt: devices 0..gpus-1 of any node).
  Running Start(int index, const Trial& t, const nlohmann::json& task_spec,
                const std::optional<TrialDevices::Lease>& lease = std::nullopt);

  // Seconds since the trial started, on the runner's clock.
  double Age(const Running& r) const { return clock_.Now() - r.started; }

  // Fills the trial's outcome once its process has ended (or timed out).
  void Finish(Running& r, Trial& t, bool timed_out);

 private:
  int Warmup() const { return o_.warmup; }
  long CommandSteps() const { return o_.warmup + o_.measure; }

  const ProfilerOptions& o_;
  const Clock& clock_;
  LaunchBackend& backend_;
  std::string worker_;
  std::string dir_;
  std::vector<std::string> plugins_;
};

}  // namespace saturn
