#include "spec/cluster.h"

#include <algorithm>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "spec/yaml_fields.h"

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

int Cluster::NodeIndex(std::string_view name) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

Cluster ParseCluster(const YAML::Node& root, std::string_view source, const std::string& path) {
  YamlFields top(root, std::string(source), path);
  top.AllowOnly({"nodes"});
  YAML::Node list = top.Required("nodes");
  std::string list_path = top.FieldPath("nodes");
  if (!list.IsSequence() || list.size() == 0) {
    throw InputError(source, YamlLine(list), list_path, "expected a non-empty list of nodes");
  }
  Cluster cluster;
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    YamlFields f(list[i], std::string(source), list_path + "[" + std::to_string(i) + "]");
    f.AllowOnly({"name", "gpus", "gpu_memory_gib", "device", "threads_per_gpu"});
    ClusterNode node;
    node.name = f.String("name");
    if (!names.insert(node.name).second) {
      f.Fail("name", "duplicate node name " + Quote(node.name) + "; names must be unique");
    }
    long gpus = f.Int("gpus", 1);
    if (gpus > 4096) f.Fail("gpus", "expected at most 4096 device slots per node");
    node.gpus = static_cast<int>(gpus);
    node.gpu_memory_gib = f.OptionalDouble("gpu_memory_gib", 0.0);
    node.device = f.OptionalString("device").value_or("cpu");
    if (node.device != "cpu" && node.device != "cuda") {
      f.Fail("device", "expected cpu or cuda, got " + Quote(node.device));
    }
    node.threads_per_gpu = static_cast<int>(f.OptionalInt("threads_per_gpu", 1).value_or(1));
    cluster.nodes.push_back(std::move(node));
  }
  return cluster;
}

Cluster LoadClusterFile(const std::string& path) {
  return ParseCluster(ParseYamlText(ReadFile(path), path), path);
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
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace saturn
