// Where workers run: the launch backend. The executor and the profiler hand a
// WorkerJob (a command line, the node and the devices it may use) to a
// backend, which turns it into a local process: `local` runs it on this
// machine with the devices in the environment; `slurm` (slurm_backend.h)
// wraps it in an `srun` job step on the planned node. Either way the caller
// gets a Process it can wait for, signal (pre-emption: SIGTERM, then SIGKILL
// after a grace period) and read progress lines from.
//
//   std::unique_ptr<LaunchBackend> b = MakeLocalBackend();
//   Process p = b->Start(job);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <signal.h>

#include "common/process.h"
#include "common/registry.h"
#include "contracts/cluster.h"

namespace saturn {

struct Workload;

struct WorkerJob {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string cwd;
  std::string node;          // planned node (cluster name)
  std::vector<int> gpu_ids;  // planned devices on it
  std::string device_kind = "cpu";
  int ranks = 1;            // processes the job needs (one per device for multi-rank)
  std::string stdout_path;  // empty with pipe_stdout
  std::string stderr_path;
  bool pipe_stdout = false;
  bool die_with_parent = true;
};

// The process that runs `job` as written (its argv, environment, folder and
// output); a backend changes what it must (srun's argv, CUDA devices).
ProcessSpec ProcessOf(const WorkerJob& job);

class LaunchBackend {
 public:
  virtual ~LaunchBackend() = default;
  virtual std::string Name() const = 0;
  // Throws std::runtime_error if the job cannot be started.
  virtual Process Start(const WorkerJob& job) = 0;
  // Asks a job to checkpoint and stop (pre-emption), then, after the grace
  // period, forces it.
  virtual void Stop(Process& process) { process.SignalGroup(SIGTERM); }
  virtual void Kill(Process& process) { process.KillGroup(); }
  // True if the backend starts one process per rank itself (e.g. srun
  // --ntasks); then workers are told --rank-from-env and a rendezvous folder.
  virtual bool LaunchesRanks() const { return false; }
  // Checks that the cluster a run plans for is what the backend can run on
  // (e.g. the nodes and GPUs of a Slurm allocation); InputError if not.
  virtual void CheckCluster(const Cluster& cluster) { (void)cluster; }
  // The nodes the backend's allocation holds, in its order, with their GPU
  // counts; nullopt if it has no allocation to read (a workload's
  // `cluster: {from: slurm}` then cannot run on it).
  virtual std::optional<std::vector<std::pair<std::string, int>>> AllocatedNodes() {
    return std::nullopt;
  }
  // Checks that `dir` (run state, checkpoints) is visible from every node of
  // `cluster`; InputError naming the node that cannot see it.
  virtual void CheckSharedDir(const std::string& dir, const Cluster& cluster) {
    (void)dir;
    (void)cluster;
  }
};

// This machine. CUDA jobs see their devices as CUDA_VISIBLE_DEVICES.
std::unique_ptr<LaunchBackend> MakeLocalBackend();

// A kind of backend as the registry holds it: its name and how to make one.
struct BackendKind {
  std::string name;
  std::function<std::unique_ptr<LaunchBackend>()> make;
  std::string_view Name() const { return name; }
};

class BackendRegistry : public Registry<BackendKind> {
 public:
  BackendRegistry() : Registry("launch backend", "--backend") {}
};

// Every backend, registered in one place (launch/backends.cc).
const BackendRegistry& Backends();

// A backend by name ("local", "slurm"). InputError for an unknown name.
std::unique_ptr<LaunchBackend> MakeBackend(const std::string& name);

// Fills a workload's cluster from the backend's allocation when it says
// `cluster: {from: slurm}` (InputError outside one), then lets the backend
// check the cluster. `saturn run` and `saturn profile` both start with it.
void UseBackendAllocation(Workload& workload, LaunchBackend& backend);

}  // namespace saturn
