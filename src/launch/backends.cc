// The one place launch backends are registered.
#include "common/error.h"
#include "launch/backend.h"
#include "launch/slurm_backend.h"
#include "spec/workload.h"

namespace saturn {

std::unique_ptr<LaunchBackend> MakeBackend(const std::string& name) {
  if (name == "local") return MakeLocalBackend();
  if (name == "slurm") return MakeSlurmBackend();
  throw InputError("", 0, "--backend",
                   "unknown launch backend " + Quote(name) + "; expected local or slurm");
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
