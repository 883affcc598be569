// fsdp: fully sharded data parallelism (ZeRO-3). Each block's parameters are
// flattened, padded and cut into one shard per rank; a rank keeps only its
// shards of parameters, gradients and optimizer state. A block's full
// parameters are all-gathered just before its forward (the next block's
// gather overlaps the current block's compute) and freed after it; before
// its backward they are gathered again, and its gradients are reduce-
// scattered so each rank receives the summed gradient of its shard.
//
// Without activation checkpointing, autograd keeps each block's graph from
// forward to backward; the gathered parameters' storage is freed meanwhile
// and refilled in place for the backward (as PyTorch's FSDP does). With it,
// only each block's input is kept and the block's forward is recomputed
// during backward. With CPU offload, the shards live in host memory and the
// optimizer runs there.
//
// Knobs: checkpointing, offload (search measures all four and keeps the
// fastest that fits).
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "engine/blocks.h"
#include "engine/phases.h"

namespace saturn::engine {
namespace {

struct ShardedBlock {
  std::unique_ptr<Block> block;  // slots hold views of `full` while gathered
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t> offsets;
  int64_t padded = 0;  // flat size, a multiple of the group size
  at::Tensor shard;    // this rank's slice of the flat parameters
  at::Tensor grad;     // ... of the summed gradient
  std::vector<at::Tensor> state;
  at::Tensor full;  // gathered flat parameters, when materialised
};

class FsdpTrainer final : public Trainer {
 public:
  FsdpTrainer(TrainContext& ctx, bool checkpointing, bool offload)
      : ctx_(ctx), checkpointing_(checkpointing), offload_(offload) {
    for (int i = 0; i < ctx.model.NumBlocks(); ++i)
      blocks_.push_back(Shard(i));
  }

  double Step(int64_t step) override {
    int n = static_cast<int>(blocks_.size());
    auto [begin, end] = SliceOf(ctx_.BatchSize(), ctx_.comm.Rank(), ctx_.comm.Size());
    Batch batch = ctx_.StepSamples(step, begin, end - begin);

    std::vector<at::Tensor> inputs(n), outputs(n);
    Work gather = StartGather(0);
    at::Tensor x = batch.inputs;
    for (int i = 0; i < n; ++i) {
      gather.Wait();
      if (i + 1 < n) gather = StartGather(i + 1);
      BindParams(i);
      inputs[i] = i == 0 ? x : x.detach().requires_grad_(!checkpointing_);
      if (checkpointing_) {
        at::NoGradGuard no_grad;
        x = RunBlock(*blocks_[i].block, inputs[i], ctx_);
      } else {
        x = outputs[i] = RunBlock(*blocks_[i].block, inputs[i], ctx_);
      }
      if (i < n - 1) Evict(i, /*graph_holds_views=*/!checkpointing_);
    }
    // The last block's parameters stay: its backward comes next.
    at::Tensor loss;
    Work reduce;
    at::Tensor upstream;
    gather = Work();
    for (int i = n - 1; i >= 0; --i) {
      gather.Wait();
      if (i > 0) gather = StartGather(i - 1);
      if (checkpointing_) {
        BindParams(i);
        if (i > 0) inputs[i].requires_grad_(true);
        outputs[i] = RunBlock(*blocks_[i].block, inputs[i], ctx_);
      }
      if (i == n - 1) {
        loss =
            ctx_.model.LossSum(outputs[i], batch.targets) / static_cast<double>(ctx_.LossItems());
        PhaseScope backward(Phase::kBackward);
        loss.backward();
      } else {
        PhaseScope backward(Phase::kBackward);
        torch::autograd::backward({outputs[i]}, {upstream});
      }
      if (i > 0) upstream = inputs[i].grad();
      outputs[i].reset();
      inputs[i].reset();
      reduce.Wait();
      reduce = StartReduceScatter(i);
      Evict(i, /*graph_holds_views=*/false);
    }
    reduce.Wait();
    {
      PhaseScope phase(Phase::kOptimizer);
      std::optional<HostMemoryScope> host;
      if (offload_) host.emplace();
      for (ShardedBlock& sharded : blocks_) {
        ctx_.optimizer.Update(sharded.shard, sharded.grad, sharded.state, step + 1);
      }
    }
    return ctx_.comm.SumOf(loss.item<double>());
  }

  // Each block is gathered whole (parameters and state) and written by one
  // rank, in turn, so no rank ever holds more than one full block.
  void Save(CheckpointWriter& out) override {
    std::vector<std::string> slots = ctx_.optimizer.Slots();
    for (size_t i = 0; i < blocks_.size(); ++i) {
      ShardedBlock& sharded = blocks_[i];
      StartGather(static_cast<int>(i)).Wait();
      BindParams(static_cast<int>(i));
      BlockState state(sharded.shapes.size());
      for (size_t s = 0; s < slots.size(); ++s) {
        at::Tensor full = at::empty({sharded.padded}, ctx_.device.Options());
        ctx_.comm.AllGather(ToComm(sharded.state[s]), full).Wait();
        for (size_t p = 0; p < sharded.shapes.size(); ++p)
          state[p].push_back(View(full, sharded, p));
      }
      if (static_cast<int>(i) % ctx_.comm.Size() == ctx_.comm.Rank()) {
        out.WriteBlock(static_cast<int>(i), BlockTensors(*sharded.block, state, slots));
      }
      Evict(static_cast<int>(i), /*graph_holds_views=*/false);
    }
  }

  void Load(const CheckpointReader& in) override {
    std::vector<std::string> slots = ctx_.optimizer.Slots();
    for (size_t i = 0; i < blocks_.size(); ++i) {
      ShardedBlock& sharded = blocks_[i];
      NamedTensors tensors = in.ReadBlock(static_cast<int>(i));
      std::string where = "block " + std::to_string(i);
      std::vector<at::Tensor> params;
      std::vector<std::vector<at::Tensor>> state(slots.size());
      for (const ParamSlot& slot : sharded.block->Params()) {
        params.push_back(Lookup(tensors, "param/" + slot.name, where));
        for (size_t s = 0; s < slots.size(); ++s) {
          state[s].push_back(Lookup(tensors, slots[s] + "/" + slot.name, where));
        }
      }
      at::NoGradGuard no_grad;
      sharded.shard.copy_(MyShard(Flatten(params, sharded)));
      for (size_t s = 0; s < slots.size(); ++s) {
        sharded.state[s].copy_(MyShard(Flatten(state[s], sharded)));
      }
    }
  }

 private:
  ShardedBlock Shard(int index) {
    ShardedBlock sharded;
    sharded.block = ctx_.model.BuildBlock(index, /*materialize=*/true);
    std::vector<at::Tensor> params;
    int64_t offset = 0;
    for (const ParamSlot& slot : sharded.block->Params()) {
      sharded.shapes.push_back(slot.tensor->sizes().vec());
      sharded.offsets.push_back(offset);
      offset += slot.tensor->numel();
      params.push_back(*slot.tensor);
    }
    int64_t ranks = ctx_.comm.Size();
    sharded.padded = (offset + ranks - 1) / ranks * ranks;
    at::Tensor flat = Flatten(params, sharded);
    for (const ParamSlot& slot : sharded.block->Params())
      slot.tensor->reset();
    sharded.shard =
        offload_ ? ctx_.device.ToHost(MyShard(flat)) : ctx_.device.ToDevice(MyShard(flat));
    std::optional<HostMemoryScope> host;
    if (offload_) host.emplace();
    sharded.grad = at::zeros_like(sharded.shard);
    sharded.state = ctx_.optimizer.NewState(sharded.shard);
    return sharded;
  }

  static at::Tensor Flatten(const std::vector<at::Tensor>& tensors, const ShardedBlock& sharded) {
    HostMemoryScope host;
    at::Tensor flat = at::zeros({sharded.padded}, at::kFloat);
    for (size_t p = 0; p < tensors.size(); ++p) {
      flat.narrow(0, sharded.offsets[p], tensors[p].numel()).copy_(tensors[p].reshape({-1}));
    }
    return flat;
  }

  at::Tensor MyShard(const at::Tensor& flat) const {
    return flat.chunk(ctx_.comm.Size())[ctx_.comm.Rank()];
  }

  // Collectives run on the device: offloaded shards travel there first.
  at::Tensor ToComm(const at::Tensor& shard) const {
    return offload_ ? ctx_.device.ToDevice(shard) : shard;
  }

  static at::Tensor View(const at::Tensor& full, const ShardedBlock& sharded, size_t p) {
    int64_t numel = 1;
    for (int64_t d : sharded.shapes[p])
      numel *= d;
    return full.narrow(0, sharded.offsets[p], numel).view(sharded.shapes[p]);
  }

  // Gathers block i's parameters into its full buffer: a new buffer, or,
  // when autograd still holds views of the old one, the old storage refilled.
  Work StartGather(int i) {
    ShardedBlock& sharded = blocks_[i];
    size_t bytes = static_cast<size_t>(sharded.padded) * sizeof(float);
    if (sharded.full.defined() && sharded.full.storage().nbytes() == 0) {
      RefillStorage(sharded.full, bytes);
    } else if (!sharded.full.defined()) {
      sharded.full = at::empty({sharded.padded}, ctx_.device.Options());
    }
    return ctx_.comm.AllGather(ToComm(sharded.shard), sharded.full);
  }

  void BindParams(int i) {
    ShardedBlock& sharded = blocks_[i];
    const std::vector<ParamSlot>& slots = sharded.block->Params();
    for (size_t p = 0; p < slots.size(); ++p) {
      if (slots[p].tensor->defined()) continue;
      *slots[p].tensor = View(sharded.full, sharded, p).requires_grad_(true);
    }
  }

  // Drops block i's full parameters. Between forward and backward without
  // checkpointing, autograd keeps views of them: the storage object stays
  // (to be refilled for the backward) but its memory goes.
  void Evict(int i, bool graph_holds_views) {
    ShardedBlock& sharded = blocks_[i];
    if (graph_holds_views) {
      ReleaseStorage(sharded.full);
      return;
    }
    for (const ParamSlot& slot : sharded.block->Params())
      slot.tensor->reset();
    sharded.full.reset();
  }

  // Sums block i's gradients over ranks into this rank's gradient shard.
  Work StartReduceScatter(int i) {
    ShardedBlock& sharded = blocks_[i];
    std::vector<at::Tensor> grads;
    for (const ParamSlot& slot : sharded.block->Params())
      grads.push_back(slot.tensor->grad());
    at::Tensor flat = at::zeros({sharded.padded}, ctx_.device.Options());
    for (size_t p = 0; p < grads.size(); ++p) {
      flat.narrow(0, sharded.offsets[p], grads[p].numel()).copy_(grads[p].reshape({-1}));
    }
    for (const ParamSlot& slot : sharded.block->Params())
      slot.tensor->mutable_grad().reset();
    if (!offload_) return ctx_.comm.ReduceScatter(flat, sharded.grad);
    at::Tensor received = at::empty({sharded.padded / ctx_.comm.Size()}, ctx_.device.Options());
    Work work = ctx_.comm.ReduceScatter(flat, received);
    work.Then([this, received, i] { blocks_[i].grad.copy_(received); });
    return work;
  }

  TrainContext& ctx_;
  bool checkpointing_, offload_;
  std::vector<ShardedBlock> blocks_;
};

class Fsdp final : public Technique {
 public:
  std::string_view Name() const override { return "fsdp"; }
  std::string_view Description() const override {
    return "fully sharded data parallel (ZeRO-3), optional activation checkpointing and CPU "
           "offload";
  }
  Layout ProcessLayout() const override { return Layout::kRankPerDevice; }
  int MinGpus() const override { return 2; }
  bool SplitsBatch() const override { return true; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (std::string why = model.WhyNotSplittable(); !why.empty()) return why;
    return Technique::Unsupported(task, model, gpus);
  }

  std::vector<Knobs> SearchSpace(TrainContext&) const override {
    std::vector<Knobs> space;
    for (bool offload : {false, true}) {
      for (bool checkpointing : {false, true}) {
        space.push_back({{"checkpointing", checkpointing}, {"offload", offload}});
      }
    }
    return space;
  }

  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs& knobs) const override {
    std::vector<int64_t> counts = ctx.model.BlockParamCounts();
    int64_t sharded = 0, largest = 0;
    for (int64_t count : counts) {
      sharded += (count + ctx.gpus - 1) / ctx.gpus;
      largest = std::max(largest, count);
    }
    int64_t per_param = KnobBool(knobs, "offload", false)
                            ? 0
                            : 2 + static_cast<int64_t>(ctx.optimizer.Slots().size());
    return static_cast<int64_t>(sizeof(float)) * (sharded * per_param + largest);
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return std::make_unique<FsdpTrainer>(ctx, KnobBool(knobs, "checkpointing", false),
                                         KnobBool(knobs, "offload", false));
  }
};

}  // namespace

std::unique_ptr<Technique> MakeFsdpTechnique() {
  return std::make_unique<Fsdp>();
}

}  // namespace saturn::engine
