#include "contracts/cluster.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "common/gpu_specs.h"
#include "common/limits.h"
#include "contracts/yaml_fields.h"

namespace saturn {

int Cluster::TotalGpus() const {
  int total = 0;
  for (const ClusterNode& n : nodes)
    total += n.gpus;
  return total;
}

int Cluster::MaxGpusPerNode() const {
  int best = 0;
  for (const ClusterNode& n : nodes)
    best = std::max(best, n.gpus);
  return best;
}

int Cluster::MaxGpusPerNode(std::string_view gpu_type) const {
  int best = 0;
  for (const ClusterNode& n : nodes) {
    if (n.gpu_type == gpu_type) best = std::max(best, n.gpus);
  }
  return best;
}

std::vector<std::string> Cluster::GpuTypes() const {
  std::vector<std::string> types;
  for (const ClusterNode& n : nodes) {
    if (std::find(types.begin(), types.end(), n.gpu_type) == types.end()) {
      types.push_back(n.gpu_type);
    }
  }
  return types;
}

std::optional<DeviceSpeed> NodeSpeed(const ClusterNode& node, const std::string& precision) {
  const GpuSpec* spec = FindGpuSpec(node.gpu_type);
  DeviceSpeed speed;
  if (precision == "bf16") {
    speed.tflops = node.tflops.value_or(spec ? spec->bf16_tflops : 0.0);
  } else {
    speed.tflops = node.tflops_fp32.value_or(spec ? spec->fp32_tflops : node.tflops.value_or(0.0));
  }
  speed.link_gb_s = node.link_gb_s.value_or(spec ? spec->link_gb_s : 0.0);
  if (!(speed.tflops > 0)) return std::nullopt;
  return speed;
}

std::string GpuTypeLabel(std::string_view gpu_type) {
  return gpu_type.empty() ? "default" : std::string(gpu_type);
}

int Cluster::NodeIndex(std::string_view name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

namespace {

// Type names go into CSV cells, file names and pictures: kept plain.
bool ValidTypeName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name == "default") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// The fields that say what a node's device slots are.
void ReadSlotFields(YamlFields& f, const std::string& default_device,
                    std::optional<double>* memory_gib, std::string* device, int* threads) {
  *memory_gib = f.OptionalDouble("gpu_memory_gib", 0.0);
  *device = f.OptionalString("device").value_or(default_device);
  if (*device != "cpu" && *device != "cuda") {
    f.Fail("device", "expected cpu or cuda, got " + Quote(*device));
  }
  *threads = static_cast<int>(
      f.OptionalInt("threads_per_gpu", 1, limits::kMaxThreadsPerDevice).value_or(1));
}

}  // namespace

Cluster ParseCluster(const YAML::Node& root, std::string_view source, const std::string& path) {
  YamlFields top(root, std::string(source), path);
  top.AllowOnly({"nodes"});
  YAML::Node list = top.Required("nodes");
  std::string list_path = top.FieldPath("nodes");
  if (!list.IsSequence() || list.size() == 0) {
    throw InputError(source, YamlLine(list), list_path, "expected a non-empty list of nodes");
  }
  if (list.size() > static_cast<size_t>(limits::kMaxNodes)) {
    throw InputError(source, YamlLine(list), list_path,
                     "expected at most " + std::to_string(limits::kMaxNodes) + " nodes, got " +
                         std::to_string(list.size()));
  }
  Cluster cluster;
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    YamlFields f(list[i], std::string(source), list_path + "[" + std::to_string(i) + "]");
    f.AllowOnly({"name", "gpus", "gpu_memory_gib", "device", "threads_per_gpu", "gpu_type",
                 "tflops", "tflops_fp32", "link_gb_s"});
    ClusterNode node;
    node.name = f.String("name");
    node.gpu_type = f.OptionalString("gpu_type").value_or("");
    if (f.Has("gpu_type") && !ValidTypeName(node.gpu_type)) {
      f.Fail("gpu_type", "expected a name of letters, digits, '-', '_' or '.' (e.g. A100), got " +
                             Quote(node.gpu_type));
    }
    if (!names.insert(node.name).second) {
      f.Fail("name", "duplicate node name " + Quote(node.name) + "; names must be unique");
    }
    node.gpus = static_cast<int>(f.Int("gpus", 1, limits::kMaxGpusPerNode));
    ReadSlotFields(f, "cpu", &node.gpu_memory_gib, &node.device, &node.threads_per_gpu);
    node.tflops = f.OptionalDouble("tflops", 0.0);
    node.tflops_fp32 = f.OptionalDouble("tflops_fp32", 0.0);
    node.link_gb_s = f.OptionalDouble("link_gb_s", 0.0);
    cluster.nodes.push_back(std::move(node));
  }
  return cluster;
}

AllocationTemplate ParseAllocationTemplate(const YAML::Node& root, std::string_view source,
                                           const std::string& path) {
  YamlFields f(root, std::string(source), path);
  f.AllowOnly({"from", "gpus", "gpu_memory_gib", "device", "threads_per_gpu"});
  std::string from = f.String("from");
  if (from != "slurm") f.Fail("from", "expected slurm (the allocation Saturn runs in)");
  AllocationTemplate t;
  if (f.Has("gpus")) {
    t.gpus = static_cast<int>(f.Int("gpus", 1, limits::kMaxGpusPerNode));
  }
  ReadSlotFields(f, "cuda", &t.gpu_memory_gib, &t.device, &t.threads_per_gpu);
  return t;
}

Cluster ClusterFromAllocation(const AllocationTemplate& templ,
                              const std::vector<std::pair<std::string, int>>& nodes,
                              std::string_view source, const std::string& path) {
  Cluster cluster;
  std::string seen;
  for (const auto& [name, allocated] : nodes) {
    seen += (seen.empty() ? "" : ", ") + name + " (" + std::to_string(allocated) + " GPUs)";
    ClusterNode node;
    node.name = name;
    node.gpus = templ.gpus.value_or(allocated);
    node.gpu_memory_gib = templ.gpu_memory_gib;
    node.device = templ.device;
    node.threads_per_gpu = templ.threads_per_gpu;
    if (node.gpus > 0) cluster.nodes.push_back(std::move(node));
  }
  if (cluster.nodes.empty()) {
    throw InputError(source, 0, path,
                     "the allocation holds no GPU on any node (" +
                         (seen.empty() ? "no nodes" : seen) +
                         "); ask Slurm for GPUs (e.g. --gpus-per-node) or set `gpus:` to the "
                         "device slots per node");
  }
  return cluster;
}

Cluster LoadClusterFile(const std::string& path) {
  return ParseCluster(ParseYamlText(ReadFile(path), path), path);
}

ClusterSource LoadClusterSourceFile(const std::string& path) {
  YAML::Node root = ParseYamlText(ReadFile(path), path);
  ClusterSource source;
  if (root.IsMap() && root["from"]) {
    source.from_allocation = ParseAllocationTemplate(root, path, "");
  } else {
    source.cluster = ParseCluster(root, path);
  }
  return source;
}

std::string ClusterToYaml(const Cluster& cluster) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const ClusterNode& n : cluster.nodes) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << n.name;
    out << YAML::Key << "gpus" << YAML::Value << n.gpus;
    if (n.gpu_memory_gib) {
      out << YAML::Key << "gpu_memory_gib" << YAML::Value << *n.gpu_memory_gib;
    }
    if (n.device != "cpu") out << YAML::Key << "device" << YAML::Value << n.device;
    if (n.threads_per_gpu != 1) {
      out << YAML::Key << "threads_per_gpu" << YAML::Value << n.threads_per_gpu;
    }
    if (!n.gpu_type.empty()) out << YAML::Key << "gpu_type" << YAML::Value << n.gpu_type;
    if (n.tflops) out << YAML::Key << "tflops" << YAML::Value << *n.tflops;
    if (n.tflops_fp32) out << YAML::Key << "tflops_fp32" << YAML::Value << *n.tflops_fp32;
    if (n.link_gb_s) out << YAML::Key << "link_gb_s" << YAML::Value << *n.link_gb_s;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace saturn
