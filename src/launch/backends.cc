// The one place launch backends are registered.
#include "common/error.h"
#include "launch/backend.h"

namespace saturn {

std::unique_ptr<LaunchBackend> MakeBackend(const std::string& name) {
  if (name == "local") return MakeLocalBackend();
  throw InputError("", 0, "--backend",
                   "unknown launch backend " + Quote(name) + "; expected local");
}

}  // namespace saturn
