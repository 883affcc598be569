#include "contracts/workload_top.h"

#include <filesystem>

#include "common/error.h"

namespace saturn {

namespace fs = std::filesystem;

// The cluster: a file next to the workload, the allocation's, or inline.
void ReadWorkloadCluster(const YamlFields& top, Workload& w) {
  YAML::Node cluster = top.Required("cluster");
  if (cluster.IsScalar()) {
    fs::path p = (fs::path(w.base_dir) / cluster.Scalar()).lexically_normal();
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      top.Fail("cluster", "no such cluster file: " + p.string() +
                              " (a path relative to the workload's folder, or the nodes inline)");
    }
    if (!fs::is_regular_file(p, ec)) {
      top.Fail("cluster", "expected a cluster file, got " + Quote(p.string()));
    }
    w.cluster = LoadClusterFile(p.string());
  } else if (cluster.IsMap() && cluster["from"]) {
    w.from_allocation = ParseAllocationTemplate(cluster, w.source, "cluster");
  } else {
    w.cluster = ParseCluster(cluster, w.source, "cluster");
  }
}

// The workload's `plugins:`, then those given on the command line.
void ReadPlugins(const YamlFields& top, const std::vector<std::string>& extra_plugins,
                 Workload& w) {
  if (top.Has("plugins")) {
    YAML::Node list = top.Required("plugins");
    if (!list.IsSequence()) top.Fail("plugins", "expected a list of shared library paths");
    for (size_t i = 0; i < list.size(); ++i) {
      std::string field = "plugins[" + std::to_string(i) + "]";
      fs::path p = fs::path(w.base_dir) / YamlToString(list[i], w.source, field);
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) {
        throw InputError(w.source, YamlLine(list[i]), field, "no such file: " + p.string());
      }
      w.plugins.push_back(fs::absolute(p).lexically_normal().string());
    }
  }
  for (const std::string& p : extra_plugins) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) throw InputError(p, 0, "--plugin", "no such file");
    w.plugins.push_back(fs::absolute(p).lexically_normal().string());
  }
}

}  // namespace saturn
