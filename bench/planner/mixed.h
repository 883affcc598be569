// Mixed Saturn-like instances for the planner benchmarks at scale:
// `tasks` tasks drawn from the eight distinct Saturn-like tasks (GPT-2 XL,
// GPT-J, ViT-G, ResNet-200M at two batch sizes each; learning-rate variants
// share profiles), each trained for 10^U(-1, 0) of the base run's 10 epochs
// (1 to 10 epochs: runtimes scale with the epochs), on `nodes` 8-GPU nodes.
//
//   Instance inst = MixedSaturnInstance(/*tasks=*/300, /*nodes=*/32, /*seed=*/1);
#pragma once

#include <cstdint>

#include "bench/common/instances.h"

namespace saturn::bench {

Instance MixedSaturnInstance(int tasks, int nodes, uint64_t seed);

}  // namespace saturn::bench
