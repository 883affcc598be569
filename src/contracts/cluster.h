// Contract 1: the cluster file (YAML).
//
//   nodes:
//     - name: node0        # unique
//       gpus: 8            # device slots, >= 1
//       gpu_memory_gib: 40 # optional capacity of each device
//       device: cpu        # extension: cpu (default) or cuda
//       threads_per_gpu: 1 # extension: intra-op threads of a CPU device
//
//   Cluster c = LoadClusterFile("cluster.yaml");   // InputError on bad input
//   c.TotalGpus(); c.MaxGpusPerNode(); c.NodeIndex("node0");
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

struct ClusterNode {
  std::string name;
  int gpus = 0;
  std::optional<double> gpu_memory_gib;
  std::string device = "cpu";  // what a device slot is: a CPU device or a CUDA GPU
  int threads_per_gpu = 1;     // CPU devices: threads each one computes with
  // The kind of device (e.g. V100, A100): runtimes are measured and planned
  // per type. "" (unset) is the one type of a cluster that names none.
  std::string gpu_type = {};
  // How fast its devices are, for analytic estimates (engine/estimate.h):
  // dense peak TFLOP/s at bf16 and at fp32, and GB/s to another device of
  // the node; unset: the built-in figures of its gpu_type (common/gpu_specs.h).
  std::optional<double> tflops = {}, tflops_fp32 = {}, link_gb_s = {};
};

// A node's device speed for a task at `precision` (fp32 | bf16): its own
// fields, else its gpu_type's published figures; nullopt when neither says
// the TFLOP/s (an unknown type without `tflops`). tflops_fp32 defaults to
// tflops for a type the table does not know; link_gb_s 0 when unknown.
struct DeviceSpeed {
  double tflops = 0.0;
  double link_gb_s = 0.0;
};
std::optional<DeviceSpeed> NodeSpeed(const ClusterNode& node, const std::string& precision);

struct Cluster {
  std::vector<ClusterNode> nodes;

  int TotalGpus() const;
  int MaxGpusPerNode() const;
  // The most GPUs any node of `gpu_type` has (0: no node of it).
  int MaxGpusPerNode(std::string_view gpu_type) const;
  // Index of the node with this name, or -1.
  int NodeIndex(std::string_view name) const;
  // The distinct GPU types of the nodes, in order of first appearance.
  std::vector<std::string> GpuTypes() const;
  // Whether the nodes are of more than one type.
  bool Mixed() const { return GpuTypes().size() > 1; }
};

// A type for messages and pictures: its name, or "default" for "".
std::string GpuTypeLabel(std::string_view gpu_type);

// Reads a cluster from a YAML map with a `nodes` list. `source` names the
// file in errors, `path` the field path of `root` ("" at the top of a file).
Cluster ParseCluster(const YAML::Node& root, std::string_view source, const std::string& path = "");
Cluster LoadClusterFile(const std::string& path);
// A workload's `cluster: {from: slurm, ...}`: the nodes come from the Slurm
// allocation Saturn runs in; the other fields (`gpus`, `gpu_memory_gib`,
// `device`, default cuda, `threads_per_gpu`) describe every node's device
// slots. `gpus` unset: the GPUs the allocation holds on each node.
struct AllocationTemplate {
  std::optional<int> gpus;
  std::optional<double> gpu_memory_gib;
  std::string device = "cuda";
  int threads_per_gpu = 1;
};
AllocationTemplate ParseAllocationTemplate(const YAML::Node& root, std::string_view source,
                                           const std::string& path);
// The cluster of an allocation: its nodes (Slurm's names, in Slurm's order)
// with the GPUs it holds on each. Nodes left without a device slot are
// dropped; InputError (naming `source`'s `path`) if none is left.
Cluster ClusterFromAllocation(const AllocationTemplate& templ,
                              const std::vector<std::pair<std::string, int>>& nodes,
                              std::string_view source, const std::string& path);

// A cluster file as `saturn serve --cluster` takes it: its nodes, or
// `from: slurm` with the fields of AllocationTemplate (the nodes come from
// the allocation the service runs in; `cluster` stays empty until then).
struct ClusterSource {
  Cluster cluster;
  std::optional<AllocationTemplate> from_allocation;
};
ClusterSource LoadClusterSourceFile(const std::string& path);

// A cluster as YAML text (round-trips through LoadClusterFile).
std::string ClusterToYaml(const Cluster& cluster);

}  // namespace saturn
