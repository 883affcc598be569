// tp: tensor parallelism as in Megatron-LM (Shoeybi et al. 2019). Every
// rank trains on the whole batch; each transformer layer's attention heads
// and MLP hidden units are split across the ranks (q, k, v and the MLP's
// first map by columns, the attention output and the MLP's second map by
// rows), with one all-reduce of activations forward and one of gradients
// backward per sub-layer (engine/tensor_parallel.h). Blocks that do not
// split (embeddings, the head) are whole on every rank: every rank computes
// them on the same inputs, so their gradients come out the same everywhere
// and nothing else is reduced. A layer's parameters, gradients and optimizer
// state take 1/ranks of a device each, so a layer too large for one device
// (even one at a time, as fsdp gathers them) trains on several.
// Checkpoints hold whole blocks (gathered on save, sliced on load), so a
// task moves between tp and any other technique at a checkpoint.
//
// Also here: engine/tensor_parallel.h's functions (the layers call them).
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/blocks.h"
#include "engine/phases.h"
#include "engine/tensor_parallel.h"

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

namespace {

class TpTrainer final : public Trainer {
 public:
  explicit TpTrainer(TrainContext& ctx)
      : ctx_(ctx),
        group_{&ctx.comm, ctx.comm.Rank(), ctx.comm.Size()},
        shards_(static_cast<size_t>(ctx.model.NumBlocks())),
        blocks_(ctx, 0, ctx.model.NumBlocks(), Placement::kDevice, [this](int index, Block& block) {
          shards_[index] = block.SplitTensorParallel(group_);
        }) {}

  double Step(int64_t step) override { return WholeBatchStep(ctx_, blocks_, step); }

  // Whole blocks: every rank's slices gathered (collective), rank 0 writes.
  void Save(CheckpointWriter& out) override {
    const std::vector<std::string> slots = ctx_.optimizer.Slots();
    for (int i = 0; i < ctx_.model.NumBlocks(); ++i) {
      NamedTensors tensors = BlockTensors(blocks_.At(i), blocks_.StateOf(i), slots);
      for (auto& [name, tensor] : tensors) {
        const ParamShard* shard = ShardOf(i, name);
        if (!shard) continue;
        // Whole tensors go to host memory one at a time: a block's gathered
        // parameters and optimizer state together would not fit the device
        // that only tp can train on.
        at::Tensor whole = Gathered(tensor, *shard);
        HostMemoryScope host;
        tensor = whole.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
      }
      if (ctx_.comm.Rank() == 0) out.WriteBlock(i, tensors);
    }
  }

  void Load(const CheckpointReader& in) override {
    const std::vector<std::string> slots = ctx_.optimizer.Slots();
    for (int i = 0; i < ctx_.model.NumBlocks(); ++i) {
      NamedTensors tensors = in.ReadBlock(i);
      for (auto& [name, tensor] : tensors) {
        if (const ParamShard* shard = ShardOf(i, name))
          tensor = engine::ShardOf(tensor, *shard, group_.rank, group_.size);
      }
      AssignBlockTensors(blocks_.At(i), blocks_.StateOf(i), slots, tensors,
                         "block " + std::to_string(i));
    }
  }

 private:
  // How checkpoint tensor `name` ("param/<p>" or "<slot>/<p>") of block
  // `index` is split; nullptr when whole.
  const ParamShard* ShardOf(int index, const std::string& name) const {
    const std::map<std::string, ParamShard>& shards = shards_[index];
    auto it = shards.find(name.substr(name.find('/') + 1));
    return it == shards.end() ? nullptr : &it->second;
  }

  at::Tensor Gathered(const at::Tensor& slice, const ParamShard& shard) {
    at::Tensor mine = slice.contiguous();
    at::Tensor all = at::empty({group_.size * mine.numel()}, mine.options());
    ctx_.comm.AllGather(mine.view({-1}), all).Wait();
    std::vector<at::Tensor> slices;
    for (at::Tensor part : all.chunk(group_.size))
      slices.push_back(part.view(mine.sizes()));
    return Unshard(slices, shard);
  }

  TrainContext& ctx_;
  TensorGroup group_;
  std::vector<std::map<std::string, ParamShard>> shards_;  // per block, by parameter
  BlockSet blocks_;
};

class Tp final : public Technique {
 public:
  std::string_view Name() const override { return "tp"; }
  std::string_view Description() const override {
    return "tensor parallel (Megatron-style): each transformer layer's heads and MLP split "
           "across the devices, an all-reduce per sub-layer";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 2; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (gpus < 2) return "tp splits layers across devices: it needs at least 2";
    if (task.lora.Enabled()) {
      return "tp does not split LoRA adapters: fine-tune with LoRA under ddp, fsdp or pipeline";
    }
    bool splits = false;
    for (int i = 0; i < model.NumBlocks(); ++i) {
      const int64_t parts = model.BuildBlock(i, /*materialize=*/false)->TensorParallelParts();
      if (parts == 0) continue;
      splits = true;
      if (parts % gpus != 0) {
        return "the model's " + std::to_string(parts) + " attention heads do not split evenly " +
               "across " + std::to_string(gpus) + " devices";
      }
    }
    if (!splits) return "the model has no transformer layers to split across devices";
    return "";
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs&) const override {
    return std::make_unique<TpTrainer>(ctx);
  }
};

}  // namespace

std::unique_ptr<Technique> MakeTpTechnique() {
  return std::make_unique<Tp>();
}

}  // namespace saturn::engine
