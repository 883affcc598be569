// Tensor parallelism's pieces (Megatron-LM's, Shoeybi et al. 2019), used by
// the layers that split (models/layers.h) and by BlockSet, which slices and
// gathers whole parameters (blocks.cc). Defined in tensor_parallel.cc, in
// the engine beside the blocks: the tp technique and its hybrids
// (techniques/) only choose the groups.
//
// A split sub-layer runs between EnterGroup and LeaveGroup: its input is
// whole on every rank, each rank computes its slice of the heads or hidden
// units, and LeaveGroup sums the ranks' partial outputs into the whole
// output again. Backward mirrors it: LeaveGroup passes the gradient through,
// EnterGroup sums the ranks' input gradients. One all-reduce forward and one
// backward per sub-layer.
//
//   at::Tensor a = attention(EnterGroup(ln1(x), group));   // this rank's heads
//   at::Tensor h = x + proj_bias + LeaveGroup(a, group);    // summed over ranks
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "engine/model.h"

namespace saturn::engine {

// Identity forward; the gradient summed over the group backward.
at::Tensor EnterGroup(const at::Tensor& x, const TensorGroup& group);
// The partial results summed over the group forward (in fp32); identity
// backward.
at::Tensor LeaveGroup(const at::Tensor& x, const TensorGroup& group);

// Rank `rank`'s slice of a whole parameter split `size` ways by `shard`.
at::Tensor ShardOf(const at::Tensor& whole, const ParamShard& shard, int rank, int size);
// The whole parameter from every rank's slice, in rank order.
at::Tensor Unshard(const std::vector<at::Tensor>& slices, const ParamShard& shard);

}  // namespace saturn::engine
