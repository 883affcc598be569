// The local launch backend: workers are child processes of the orchestrator.
#include "launch/backend.h"

namespace saturn {
namespace {

class LocalBackend final : public LaunchBackend {
 public:
  std::string Name() const override { return "local"; }
  Process Start(const WorkerJob& job) override {
    ProcessSpec spec;
    spec.argv = job.argv;
    spec.env = job.env;
    spec.cwd = job.cwd;
    spec.stdout_path = job.stdout_path;
    spec.stderr_path = job.stderr_path;
    spec.pipe_stdout = job.pipe_stdout;
    spec.die_with_parent = job.die_with_parent;
    if (job.device_kind == "cuda") {
      std::string ids;
      for (int g : job.gpu_ids)
        ids += (ids.empty() ? "" : ",") + std::to_string(g);
      spec.env["CUDA_VISIBLE_DEVICES"] = ids;
    }
    return Process::Spawn(spec);
  }
};

}  // namespace

std::unique_ptr<LaunchBackend> MakeLocalBackend() {
  return std::make_unique<LocalBackend>();
}

}  // namespace saturn
