// The `slurm` launch backend: workers run as job steps of the Slurm
// allocation (sbatch or salloc) that the orchestrator itself runs in.
//
// Each job becomes `srun --jobid=J --exact --nodes=1 --nodelist=NODE
// --ntasks=N --gpus=K --kill-on-bad-exit=1 -- ARGV...`: the plan decides the
// node and how many GPUs, Slurm decides which ones (the step sees them as
// CUDA_VISIBLE_DEVICES / SLURM_STEP_GPUS), and concurrent steps never share
// a GPU because Slurm accounts for them. N is the job's rank count when the
// worker takes its rank from the environment (--rank-from-env), else 1. The
// caller still gets a local Process: the srun client, whose stdout carries
// the tasks' stdout.
//
// Facts of Slurm 22.05 this is built on (measured; docs/slurm.md):
// - In an allocation whose nodes have different GPU counts, a step's
//   `--gres=gpu:K` is capped at the smallest node's count; `--gpus=K` is not.
// - SIGTERM to srun makes it SIGKILL the tasks ("forcing job termination"),
//   so pre-emption goes through the controller: Stop sends
//   `scancel --signal=TERM J.S` (SIGTERM only; the tasks checkpoint), Kill
//   sends `scancel J.S` (SIGKILL; the step is gone). A step not created yet
//   (srun waiting for busy GPUs) is abandoned by signalling srun instead.
// - A Process's step is found by its srun pid: `scontrol show step` lists
//   `SrunHost:Pid` for every step, pending ones included.
//
// SATURN_SRUN_ARGS adds options to every step (split on spaces), e.g.
// "--cpus-per-gpu=8 --mem-per-gpu=40G" where the cluster tracks memory.
//
//   std::unique_ptr<LaunchBackend> b = MakeSlurmBackend();  // InputError outside an allocation
//   b->CheckCluster(workload.cluster);   // nodes and GPUs against the allocation
//   Process p = b->Start(job);           // srun ... on job.node
//   b->Stop(p);                          // the step's tasks get SIGTERM
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/backend.h"

namespace saturn {

// What a short command printed and how it ended (a wait status).
struct CommandOutput {
  int status = 0;
  std::string out;
  std::string err;
};

// Runs a command to completion. The backend's queries (scontrol, scancel and
// the shared-folder check) go through one, so tests can answer them.
using CommandRunner = std::function<CommandOutput(const std::vector<std::string>& argv)>;

// Runs `argv` as a child process; killed after `timeout_s` (status then
// says so). Throws std::runtime_error if it cannot be started.
CommandOutput RunCommand(const std::vector<std::string>& argv, double timeout_s = 120.0);

// GPUs in a GRES string of `scontrol show job -d`: "gpu:4(IDX:0-3)" -> 4,
// "gpu:a100:2(IDX:0-1),gpu:v100:1(IDX:2)" -> 3, "" or "(null)" -> 0.
int GresGpus(std::string_view gres);

struct SlurmAllocation {
  std::string job_id;
  std::vector<std::string> nodes;   // in Slurm's order
  std::map<std::string, int> gpus;  // GPUs the job holds on each node
};

// The nodes and GPUs per node of job `job_id`, from `scontrol show job -d`
// (node groups expanded with `scontrol show hostnames`). InputError if
// Slurm cannot tell (e.g. a stale SLURM_JOB_ID).
SlurmAllocation ReadAllocation(const std::string& job_id, const CommandRunner& run);

struct SlurmOptions {
  std::string job_id;                  // SLURM_JOB_ID
  std::string host;                    // where srun clients run (this host)
  std::vector<std::string> srun_args;  // SATURN_SRUN_ARGS
  CommandRunner run;                   // RunCommand if empty
  // After Kill has cancelled a step, how long srun may take to end before
  // it is killed itself (it may have lost the controller or the node).
  double kill_escalation_s = 10.0;
};

class SlurmBackend final : public LaunchBackend {
 public:
  explicit SlurmBackend(SlurmOptions options);

  std::string Name() const override { return "slurm"; }
  Process Start(const WorkerJob& job) override;
  void Stop(Process& process) override;
  void Kill(Process& process) override;
  bool LaunchesRanks() const override { return true; }
  void CheckCluster(const Cluster& cluster) override;
  std::optional<std::vector<std::pair<std::string, int>>> AllocatedNodes() override;
  void CheckSharedDir(const std::string& dir, const Cluster& cluster) override;

  // The srun command line Start runs for `job`.
  std::vector<std::string> SrunArgv(const WorkerJob& job);
  // Read once, on first use.
  const SlurmAllocation& Allocation();

 private:
  struct Step {
    std::string id;  // "J.S"; empty while pending
  };
  // The step whose srun client is `pid` on this host, if Slurm knows it.
  std::optional<Step> FindStep(pid_t pid);

  SlurmOptions o_;
  std::optional<SlurmAllocation> allocation_;
  // When Kill first acted on each srun client (seconds, steady clock).
  std::map<pid_t, double> kill_started_;
};

// A backend for the allocation in this process's environment (SLURM_JOB_ID);
// InputError if there is none.
std::unique_ptr<LaunchBackend> MakeSlurmBackend();

}  // namespace saturn
