// fsdp's trainer (fsdp.cc), for its technique (fsdp_technique.cc).
#pragma once

#include <memory>

#include "engine/technique.h"

namespace saturn::engine {

// Host to device and back for offloaded shards (PCIe 4.0 x16, as measured).
constexpr double kHostLinkBytesS = 25e9;

// Knobs: `checkpointing` recomputes each block's forward in backward;
// `offload` keeps the shards and runs the optimizer in host memory.
std::unique_ptr<Trainer> MakeFsdpTrainer(TrainContext& ctx, bool checkpointing, bool offload);

}  // namespace saturn::engine
