// Tensor parallelism's pieces (tensor_parallel.h): the autograd functions
// around a split sub-layer and the slicing of whole parameters. Part of the
// engine, beside the blocks that call them (blocks.cc, models/layers.cc);
// the tp technique and its hybrids (techniques/) only choose the groups.
#include "engine/tensor_parallel.h"

#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <vector>

#include "engine/comm.h"
#include "engine/phases.h"

namespace saturn::engine {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The sum over the group of `x`, added in fp32 (bf16 partial sums would
// round differently on each split).
at::Tensor SumOverGroup(const at::Tensor& x, Communicator& comm) {
  PhaseScope phase(Phase::kCommunication);
  at::Tensor sum = x.to(at::kFloat).contiguous().clone();
  comm.AllReduceSum(sum);
  return sum.to(x.scalar_type());
}

Communicator& CommOf(AutogradContext* ctx) {
  return *reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
}

int64_t Handle(const TensorGroup& group) {
  return reinterpret_cast<int64_t>(group.comm);
}

struct Enter : torch::autograd::Function<Enter> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return x.clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {SumOverGroup(grads[0], CommOf(ctx)), at::Tensor()};
  }
};

struct Leave : torch::autograd::Function<Leave> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, int64_t comm) {
    return SumOverGroup(x, *reinterpret_cast<Communicator*>(comm));
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], at::Tensor()};
  }
};

// `whole`'s sizes with dimension `dim` as [groups, n / groups].
std::vector<int64_t> Grouped(at::IntArrayRef sizes, const ParamShard& shard) {
  std::vector<int64_t> grouped = sizes.vec();
  grouped[shard.dim] /= shard.groups;
  grouped.insert(grouped.begin() + shard.dim, shard.groups);
  return grouped;
}

}  // namespace

at::Tensor EnterGroup(const at::Tensor& x, const TensorGroup& group) {
  if (group.size == 1) return x;
  return Enter::apply(x, Handle(group));
}

at::Tensor LeaveGroup(const at::Tensor& x, const TensorGroup& group) {
  if (group.size == 1) return x;
  return Leave::apply(x, Handle(group));
}

at::Tensor ShardOf(const at::Tensor& whole, const ParamShard& shard, int rank, int size) {
  std::vector<int64_t> grouped = Grouped(whole.sizes(), shard);
  const int64_t slice = grouped[shard.dim + 1] / size;
  std::vector<int64_t> out = whole.sizes().vec();
  out[shard.dim] = shard.groups * slice;
  return whole.reshape(grouped)
      .narrow(shard.dim + 1, rank * slice, slice)
      .clone(at::MemoryFormat::Contiguous)
      .view(out);
}

at::Tensor Unshard(const std::vector<at::Tensor>& slices, const ParamShard& shard) {
  std::vector<at::Tensor> grouped;
  for (const at::Tensor& s : slices)
    grouped.push_back(s.reshape(Grouped(s.sizes(), shard)));
  at::Tensor joined = at::cat(grouped, shard.dim + 1);
  std::vector<int64_t> out = slices.at(0).sizes().vec();
  out[shard.dim] *= static_cast<int64_t>(slices.size());
  return joined.reshape(out);
}

}  // namespace saturn::engine
