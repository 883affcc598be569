#include "fuzz/targets.h"

namespace saturn::fuzz {

const std::vector<Target>& Targets() {
  static const std::vector<Target> targets = {
      {"cluster", FuzzCluster},      {"workload", FuzzWorkload},
      {"profile", FuzzProfile},      {"plan", FuzzPlan},
      {"events", FuzzEvents},        {"protocol", FuzzProtocol},
      {"step_lines", FuzzStepLines}, {"command_task", FuzzCommandTask},
      {"weights", FuzzWeights},
  };
  return targets;
}

const Target* FindTarget(std::string_view name) {
  for (const Target& t : Targets()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

}  // namespace saturn::fuzz
