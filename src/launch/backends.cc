// The one place launch backends are registered.
#include "common/error.h"
#include "launch/backend.h"
#include "launch/slurm_backend.h"
#include "contracts/workload.h"

namespace saturn {

ProcessSpec ProcessOf(const WorkerJob& job) {
  ProcessSpec spec;
  spec.argv = job.argv;
  spec.env = job.env;
  spec.cwd = job.cwd;
  spec.stdout_path = job.stdout_path;
  spec.stderr_path = job.stderr_path;
  spec.pipe_stdout = job.pipe_stdout;
  spec.die_with_parent = job.die_with_parent;
  return spec;
}

namespace {

void Add(BackendRegistry& registry, std::string name,
         std::function<std::unique_ptr<LaunchBackend>()> make) {
  registry.Register(std::make_unique<BackendKind>(BackendKind{std::move(name), std::move(make)}));
}

}  // namespace

const BackendRegistry& Backends() {
  static const BackendRegistry* registry = [] {
    auto* r = new BackendRegistry;
    Add(*r, "local", MakeLocalBackend);
    Add(*r, "slurm", MakeSlurmBackend);
    return r;
  }();
  return *registry;
}

std::unique_ptr<LaunchBackend> MakeBackend(const std::string& name) {
  return Backends().Get(name).make();
}

void UseBackendAllocation(Workload& workload, LaunchBackend& backend) {
  if (workload.from_allocation) {
    auto nodes = backend.AllocatedNodes();
    if (!nodes) {
      throw InputError(workload.source, 0, "cluster.from",
                       "the cluster comes from the Slurm allocation: run inside one (sbatch, "
                       "salloc) with --backend slurm, or list the nodes under cluster.nodes");
    }
    UseAllocation(workload, *nodes);
  }
  backend.CheckCluster(workload.cluster);
}

}  // namespace saturn
