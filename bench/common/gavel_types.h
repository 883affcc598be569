// Mixed-GPU-type instances from Gavel's measurements (issue 29's benchmark):
// the 26 job types' throughputs on K80, P100 and V100 GPUs at 1/2/4/8 GPUs
// (bench/data/gavel_types.csv, the "null" entries of Gavel's
// simulation_throughputs.json: each job running alone). A task draws a job
// type and a duration as Gavel's generator does (10^U(1.5,3) minutes with
// probability 0.8, else 10^U(3,4)), read as its time on one V100 (its steps
// = minutes x 60 x that throughput); its runtime on g GPUs of type t is
// steps / throughput(g, t). A (job type, g, t) Gavel measured as 0 (out of
// memory) has no row. Every row is `ddp`: Gavel's jobs are data-parallel.
//
//   auto jobs = LoadGavelTypedThroughputs(SourceDir() + "/bench/data/gavel_types.csv");
//   Instance inst = GavelTypedInstance(jobs, /*tasks=*/120, {{"k80", 4}, {"p100", 4},
//                                      {"v100", 4}}, /*gpus_per_node=*/4, /*seed=*/1);
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/common/instances.h"

namespace saturn::bench {

// Job type -> GPU type -> (gpus, steps per second), positive throughputs only.
using TypedThroughputs = std::map<std::string, std::map<std::string, std::map<int, double>>>;

TypedThroughputs LoadGavelTypedThroughputs(const std::string& csv_path);

// `nodes`: (GPU type, node count) in the order the nodes are listed.
Instance GavelTypedInstance(const TypedThroughputs& jobs, int tasks,
                            const std::vector<std::pair<std::string, int>>& nodes,
                            int gpus_per_node, uint64_t seed);

}  // namespace saturn::bench
