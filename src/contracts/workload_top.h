// A workload's top-level fields besides its tasks (contracts/workload.h):
// the cluster (a file beside the workload, an allocation's, or inline) and
// the technique plug-ins.
//
//   ReadWorkloadCluster(top, w);              // InputError naming the field
//   ReadPlugins(top, extra_plugins, w);
#pragma once

#include <string>
#include <vector>

#include "contracts/workload.h"
#include "contracts/yaml_fields.h"

namespace saturn {

void ReadWorkloadCluster(const YamlFields& top, Workload& w);
void ReadPlugins(const YamlFields& top, const std::vector<std::string>& extra_plugins,
                 Workload& w);

}  // namespace saturn
