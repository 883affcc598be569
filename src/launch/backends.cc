// The one place launch backends are registered.
#include "common/error.h"
#include "launch/backend.h"
#include "launch/slurm_backend.h"

namespace saturn {

std::unique_ptr<LaunchBackend> MakeBackend(const std::string& name) {
  if (name == "local") return MakeLocalBackend();
  if (name == "slurm") return MakeSlurmBackend();
  throw InputError("", 0, "--backend",
                   "unknown launch backend " + Quote(name) + "; expected local or slurm");
}

}  // namespace saturn
