#include "worker/options.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/error.h"

namespace saturn::worker {
namespace {

int EnvInt(const char* name) {
  const char* value = std::getenv(name);
  char* end = nullptr;
  long n = value ? std::strtol(value, &end, 10) : -1;
  if (value == nullptr || *end != '\0' || n < 0) {
    throw InputError("", 0, "--rank-from-env", std::string(name) + " is not set to a rank");
  }
  return static_cast<int>(n);
}

}  // namespace

WorkerRequest ReadCommandLine(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(WorkerUsage().c_str(), stdout);
      std::exit(0);
    }
  }
  WorkerRequest r = ParseWorkerRequest(argc, argv);
  if (r.rank_from_env && r.mode != WorkerMode::kTechniques) {
    r.rank = EnvInt("SLURM_PROCID");
    r.world_size = EnvInt("SLURM_NTASKS");
    CheckWorkerRequest(r);
  }
  return r;
}

}  // namespace saturn::worker
