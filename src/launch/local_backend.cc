// The local launch backend: workers are child processes of the orchestrator.
#include "launch/backend.h"

namespace saturn {
namespace {

class LocalBackend final : public LaunchBackend {
 public:
  std::string Name() const override { return "local"; }
  Process Start(const WorkerJob& job) override {
    ProcessSpec spec = ProcessOf(job);
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
