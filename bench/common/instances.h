// Seeded generators of planning instances for benchmarks and tests.
//
// Saturn-like: the paper's TXT and IMG workloads (12 tasks: 2 models x 2
// batch sizes x 3 learning rates, techniques ddp/fsdp/pipeline/spill (and tp) on 1..8
// GPUs), with runtimes from the analytic model documented in bench/README.md
// (A100-40GB-class devices: compute at a fixed model-FLOPs utilisation,
// NVLink collectives, PCIe paging and host-side optimizer for spilling,
// per-technique memory with activation checkpointing when needed). Large
// models get no row where they do not fit (GPT-J: no ddp; fsdp and pipeline
// only from 4 GPUs).
//
// Gavel-derived: job types with measured V100 throughputs on 1/2/4/8 GPUs
// (bench/data/gavel_v100.csv); each task draws a job type and a duration on
// one GPU the way Gavel's generator does (10^U(1.5,3) minutes with
// probability 0.8, else 10^U(3,4)); runtime on g GPUs = steps / throughput(g).
//
//   Instance txt = SaturnLikeInstance(Workload::kText, {8}, /*seed=*/1);
//   Instance g = GavelInstance(LoadGavelThroughputs(path), 500, 64, 8, /*seed=*/1);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/profile.h"

namespace saturn::bench {

struct Instance {
  std::string name;
  Cluster cluster;
  ProfileTable profile;
};

enum class Workload { kText, kImage };

// `node_gpus`: GPUs of each node, e.g. {8}, {8, 8}, {8, 4}, {2, 2, 4, 8}.
// `seed` perturbs nothing in the model (profiles are deterministic, as in the
// paper, where learning-rate variants share profiles) but names the instance.
// `tensor_parallel`: also `tp` rows for the transformers at GPU counts that
// divide their heads (GPT-2 XL's 25: 5; GPT-J's and ViT-G's 16: 2, 4, 8),
// and rows of its hybrids tp-ddp and pipeline-tp (degrees dividing both the
// GPU count, into 2 or more groups, and the heads; knob tp=<degree>); the
// tasks and every other row are the same as without.
Instance SaturnLikeInstance(Workload workload, const std::vector<int>& node_gpus, uint64_t seed,
                            bool tensor_parallel = false);

struct GavelJob {
  std::string type;
  std::vector<std::pair<int, double>> steps_per_s;  // (gpus, throughput)
};
std::vector<GavelJob> LoadGavelThroughputs(const std::string& csv_path);
Instance GavelInstance(const std::vector<GavelJob>& jobs, int tasks, int nodes, int gpus_per_node,
                       uint64_t seed);

// The repository root (from SATURN_SOURCE_DIR at build time) for data paths.
std::string SourceDir();

}  // namespace saturn::bench
