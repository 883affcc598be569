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
// Frozen parameters (LoRA's base) are sharded and gathered like the others,
// in a flat buffer of their own without gradient or optimizer state. Tied
// copies (GPT-2's embedding in its first and last blocks) have their local
// gradients summed before those blocks are reduced.
//
// Knobs: checkpointing, offload (search measures all four and keeps the
// fastest that fits). This file is the trainer; fsdp_technique.cc the
// technique (its search space, memory and estimate).
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "common/error.h"
#include "engine/blocks.h"
#include "engine/estimate.h"
#include "engine/grad_clip.h"
#include "engine/phases.h"
#include "engine/techniques/fsdp.h"

namespace saturn::engine {
namespace {

// Some of a block's parameters as one flat buffer, cut into a shard per rank.
struct Flat {
  std::vector<size_t> params;  // indices into the block's Params()
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t> offsets;
  int64_t padded = 0;  // flat size, a multiple of the group size; 0: no parameters
  at::Tensor shard;    // this rank's slice
  at::Tensor full;     // gathered, when materialised
};

// A block's trainable parameters, which carry a gradient and optimizer
// state, and its frozen ones (LoRA's base weights), which are only sharded
// and gathered.
struct ShardedBlock {
  std::unique_ptr<Block> block;  // slots hold views of the fulls while gathered
  Flat train, frozen;
  at::Tensor grad;  // train's shard of the summed gradient
  std::vector<at::Tensor> state;
};

// Operations in flight together.
struct Works {
  std::vector<Work> all;
  void Add(Work work) { all.push_back(std::move(work)); }
  void Wait() {
    for (Work& work : all)
      work.Wait();
    all.clear();
  }
};

class FsdpTrainer final : public Trainer {
 public:
  FsdpTrainer(TrainContext& ctx, bool checkpointing, bool offload)
      : ctx_(ctx), checkpointing_(checkpointing), offload_(offload) {
    for (int i = 0; i < ctx.model.NumBlocks(); ++i)
      blocks_.push_back(Shard(i));
    // Tied copies (GPT-2's embedding and its head's copy): their blocks'
    // gradients are reduced once every copy's local gradient exists, with
    // the copies' regions summed first (TiedRegions).
    for (const TiedParam& tied : ctx.model.TiedParams()) {
      std::vector<std::pair<int, size_t>> regions;
      for (const auto& [block, name] : tied.copies) {
        const Flat& flat = blocks_[block].train;
        for (size_t k = 0; k < flat.params.size(); ++k) {
          if (blocks_[block].block->Params()[flat.params[k]].name == name) {
            regions.push_back({block, k});
          }
        }
      }
      if (regions.size() < 2) continue;  // frozen (LoRA): nothing to sum
      for (const auto& [block, k] : regions)
        tied_blocks_.insert(block);
      tied_.push_back(std::move(regions));
    }
  }

  double Step(int64_t step) override {
    int n = static_cast<int>(blocks_.size());
    auto [begin, end] = SliceOf(ctx_.BatchSize(), ctx_.comm.Rank(), ctx_.comm.Size());
    Batch batch = ctx_.StepSamples(step, begin, end - begin);

    std::vector<at::Tensor> inputs(n), outputs(n);
    Works gather = StartGather(0);
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
    Works reduce;
    at::Tensor upstream;
    gather = Works();
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
        // A block before every trainable parameter (LoRA's frozen
        // embeddings) has nothing to back-propagate into.
        if (outputs[i].requires_grad()) torch::autograd::backward({outputs[i]}, {upstream});
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
      ClipGrads();
      if (ctx_.optimizer.PerParam()) {
        UpdateEachParam(step + 1);
      } else {
        for (ShardedBlock& sharded : blocks_) {
          if (sharded.train.padded == 0) continue;
          ctx_.optimizer.Update(sharded.train.shard, sharded.grad, sharded.state, step + 1);
        }
      }
    }
    return ctx_.comm.SumOf(loss.item<double>());
  }

  // Calls part(k, name, cut) for each trainable parameter k of the block
  // that has elements in this rank's shard; cut(t) narrows a shard-sized
  // tensor to them.
  template <typename Part>
  void ForEachPart(const ShardedBlock& sharded, const Part& part) const {
    const Flat& train = sharded.train;
    int64_t size = train.shard.numel(), first = size * ctx_.comm.Rank();
    const std::vector<ParamSlot>& slots = sharded.block->Params();
    for (size_t k = 0; k < train.params.size(); ++k) {
      int64_t numel = 1;
      for (int64_t d : train.shapes[k])
        numel *= d;
      int64_t begin = std::max(train.offsets[k], first);
      int64_t end = std::min(train.offsets[k] + numel, first + size);
      if (end <= begin) continue;
      auto cut = [=](const at::Tensor& t) { return t.narrow(0, begin - first, end - begin); };
      part(k, slots[train.params[k]].name, cut);
    }
  }

  // An optimizer that differs by parameter (a pack's: engine/pack.h) steps
  // each parameter's part of this rank's shards with its own (element-wise
  // updates: the same as stepping the whole parameter), all of one
  // optimizer's parts in one UpdateMany call (a pack member's adapters:
  // multi-tensor on a GPU).
  void UpdateEachParam(int64_t optimizer_step) {
    std::vector<UpdateBatch> batches;
    std::deque<std::vector<at::Tensor>> states;  // the parts' slots, at stable addresses
    for (ShardedBlock& sharded : blocks_) {
      if (sharded.train.padded == 0) continue;
      ForEachPart(sharded, [&](size_t, const std::string& name, const auto& cut) {
        std::vector<at::Tensor>& state = states.emplace_back();
        for (const at::Tensor& slot : sharded.state)
          state.push_back(cut(slot));
        BatchOf(batches, ctx_.optimizer.ForParam(name))
            .Add(cut(sharded.train.shard), cut(sharded.grad), &state);
      });
    }
    for (UpdateBatch& batch : batches)
      batch.Step(optimizer_step);
  }

  // Gradient clipping (engine/grad_clip.h): each rank's gradient shards hold
  // every element once over the ranks, but a tied copy's region holds the
  // copies' sum again: only the first copy counts.
  void ClipGrads() {
    GradClip clip(ctx_.optimizer);
    if (!clip.Enabled()) return;
    std::set<std::pair<int, size_t>> later_copies;
    for (const auto& regions : tied_)
      later_copies.insert(regions.begin() + 1, regions.end());
    for (size_t i = 0; i < blocks_.size(); ++i) {
      ForEachPart(blocks_[i], [&](size_t k, const std::string& name, const auto& cut) {
        if (!later_copies.count({static_cast<int>(i), k})) clip.Add(name, cut(blocks_[i].grad));
      });
    }
    clip.Reduce(&ctx_.comm);
    for (ShardedBlock& sharded : blocks_) {
      ForEachPart(sharded, [&](size_t, const std::string& name, const auto& cut) {
        clip.Apply(name, cut(sharded.grad));
      });
    }
  }

  // Each block is gathered whole (parameters and state) and written by one
  // rank, in turn, so no rank ever holds more than one full block.
  void Save(CheckpointWriter& out) override {
    std::vector<std::string> slots = ctx_.optimizer.Slots();
    for (size_t i = 0; i < blocks_.size(); ++i) {
      ShardedBlock& sharded = blocks_[i];
      StartGather(static_cast<int>(i)).Wait();
      BindParams(static_cast<int>(i));
      BlockState state(sharded.block->Params().size());
      const Flat& train = sharded.train;
      for (size_t s = 0; s < slots.size() && train.padded > 0; ++s) {
        at::Tensor full = at::empty({train.padded}, ctx_.device.Options());
        ctx_.comm.AllGather(ToComm(sharded.state[s]), full).Wait();
        for (size_t k = 0; k < train.params.size(); ++k)
          state[train.params[k]].push_back(View(full, train, k));
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
      const std::vector<ParamSlot>& slots_of_block = sharded.block->Params();
      at::NoGradGuard no_grad;
      for (Flat* flat : {&sharded.train, &sharded.frozen}) {
        if (flat->padded == 0) continue;
        // Frozen parameters left out of the checkpoint (it names their
        // base) keep the base's values they were built with.
        if (flat == &sharded.frozen &&
            !Holds(tensors, "param/" + slots_of_block[flat->params[0]].name))
          continue;
        std::vector<at::Tensor> params;
        for (size_t index : flat->params)
          params.push_back(Lookup(tensors, "param/" + slots_of_block[index].name, where));
        flat->shard.copy_(MyShard(Flatten(params, *flat)));
      }
      for (size_t s = 0; s < slots.size() && sharded.train.padded > 0; ++s) {
        std::vector<at::Tensor> state;
        for (size_t index : sharded.train.params)
          state.push_back(Lookup(tensors, slots[s] + "/" + slots_of_block[index].name, where));
        sharded.state[s].copy_(MyShard(Flatten(state, sharded.train)));
      }
    }
  }

 private:
  // Lays out `indices` of `params` in `flat` and returns their values, flat.
  at::Tensor Layout(Flat& flat, const std::vector<ParamSlot>& params,
                    const std::vector<size_t>& indices) {
    flat.params = indices;
    std::vector<at::Tensor> values;
    int64_t offset = 0;
    for (size_t index : indices) {
      const at::Tensor& t = *params[index].tensor;
      flat.shapes.push_back(t.sizes().vec());
      flat.offsets.push_back(offset);
      offset += t.numel();
      values.push_back(t);
    }
    int64_t ranks = ctx_.comm.Size();
    flat.padded = (offset + ranks - 1) / ranks * ranks;
    return Flatten(values, flat);
  }

  ShardedBlock Shard(int index) {
    ShardedBlock sharded;
    sharded.block = ctx_.model.BuildBlock(index, /*materialize=*/true);
    const std::vector<ParamSlot>& params = sharded.block->Params();
    std::vector<size_t> train, frozen;
    for (size_t p = 0; p < params.size(); ++p)
      (params[p].trainable ? train : frozen).push_back(p);
    at::Tensor train_values = Layout(sharded.train, params, train);
    at::Tensor frozen_values = Layout(sharded.frozen, params, frozen);
    for (const ParamSlot& slot : params)
      slot.tensor->reset();
    auto keep = [&](const at::Tensor& flat) {
      return offload_ ? ctx_.device.ToHost(MyShard(flat)) : ctx_.device.ToDevice(MyShard(flat));
    };
    if (sharded.train.padded > 0) sharded.train.shard = keep(train_values);
    if (sharded.frozen.padded > 0) sharded.frozen.shard = keep(frozen_values);
    if (sharded.train.padded > 0) {
      std::optional<HostMemoryScope> host;
      if (offload_) host.emplace();
      sharded.grad = at::zeros_like(sharded.train.shard);
      sharded.state = ctx_.optimizer.NewState(sharded.train.shard);
    }
    return sharded;
  }

  static at::Tensor Flatten(const std::vector<at::Tensor>& tensors, const Flat& flat) {
    HostMemoryScope host;
    at::Tensor out = at::zeros({flat.padded}, at::kFloat);
    for (size_t k = 0; k < tensors.size(); ++k) {
      out.narrow(0, flat.offsets[k], tensors[k].numel()).copy_(tensors[k].reshape({-1}));
    }
    return out;
  }

  at::Tensor MyShard(const at::Tensor& flat) const {
    return flat.chunk(ctx_.comm.Size())[ctx_.comm.Rank()];
  }

  // Collectives run on the device: offloaded shards travel there first.
  at::Tensor ToComm(const at::Tensor& shard) const {
    return offload_ ? ctx_.device.ToDevice(shard) : shard;
  }

  static at::Tensor View(const at::Tensor& full, const Flat& flat, size_t k) {
    int64_t numel = 1;
    for (int64_t d : flat.shapes[k])
      numel *= d;
    return full.narrow(0, flat.offsets[k], numel).view(flat.shapes[k]);
  }

  // Gathers block i's parameters into their full buffers: new buffers, or,
  // when autograd still holds views of the old ones, the old storage
  // refilled.
  Works StartGather(int i) {
    Works works;
    for (Flat* flat : {&blocks_[i].train, &blocks_[i].frozen}) {
      if (flat->padded == 0) continue;
      size_t bytes = static_cast<size_t>(flat->padded) * sizeof(float);
      if (flat->full.defined() && flat->full.storage().nbytes() == 0) {
        RefillStorage(flat->full, bytes);
      } else if (!flat->full.defined()) {
        flat->full = at::empty({flat->padded}, ctx_.device.Options());
      }
      works.Add(ctx_.comm.AllGather(ToComm(flat->shard), flat->full));
    }
    return works;
  }

  void BindParams(int i) {
    ShardedBlock& sharded = blocks_[i];
    const std::vector<ParamSlot>& slots = sharded.block->Params();
    for (const Flat* flat : {&sharded.train, &sharded.frozen}) {
      bool trainable = flat == &sharded.train;
      for (size_t k = 0; k < flat->params.size(); ++k) {
        at::Tensor* slot = slots[flat->params[k]].tensor;
        if (slot->defined()) continue;
        *slot = View(flat->full, *flat, k).requires_grad_(trainable);
      }
    }
  }

  // Drops block i's full parameters. Between forward and backward without
  // checkpointing, autograd keeps views of them: the storage object stays
  // (to be refilled for the backward) but its memory goes.
  void Evict(int i, bool graph_holds_views) {
    ShardedBlock& sharded = blocks_[i];
    for (Flat* flat : {&sharded.train, &sharded.frozen}) {
      if (flat->padded == 0) continue;
      if (graph_holds_views) {
        ReleaseStorage(flat->full);
        continue;
      }
      for (size_t index : flat->params)
        sharded.block->Params()[index].tensor->reset();
      flat->full.reset();
    }
  }

  // Block i's local gradients, flat; their sum over ranks goes to each
  // rank's gradient shard. A block holding tied copies waits until the
  // blocks of every copy have theirs; then the copies' regions are summed
  // and all of those blocks are reduced.
  Works StartReduceScatter(int i) {
    ShardedBlock& sharded = blocks_[i];
    Works works;
    if (sharded.train.padded == 0) return works;
    const std::vector<ParamSlot>& slots = sharded.block->Params();
    at::Tensor flat = at::zeros({sharded.train.padded}, ctx_.device.Options());
    for (size_t k = 0; k < sharded.train.params.size(); ++k) {
      at::Tensor* param = slots[sharded.train.params[k]].tensor;
      if (!param->grad().defined()) continue;
      flat.narrow(0, sharded.train.offsets[k], param->grad().numel())
          .copy_(param->grad().reshape({-1}));
      param->mutable_grad().reset();
    }
    if (!tied_blocks_.count(i)) {
      works.Add(Reduce(i, flat));
      return works;
    }
    pending_[i] = flat;
    if (pending_.size() < tied_blocks_.size()) return works;
    for (const auto& regions : tied_) {
      std::vector<at::Tensor> parts;
      for (const auto& [block, k] : regions)
        parts.push_back(Region(block, k));
      at::Tensor total = SumInOrder(parts);
      for (at::Tensor& part : parts)
        part.copy_(total);
    }
    // Highest block first, the order the reductions would have had.
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it)
      works.Add(Reduce(it->first, it->second));
    pending_.clear();
    return works;
  }

  at::Tensor Region(int block, size_t k) {
    const Flat& train = blocks_[block].train;
    int64_t numel = 1;
    for (int64_t d : train.shapes[k])
      numel *= d;
    return pending_.at(block).narrow(0, train.offsets[k], numel);
  }

  Work Reduce(int i, at::Tensor flat) {
    ShardedBlock& sharded = blocks_[i];
    if (!offload_) return ctx_.comm.ReduceScatter(flat, sharded.grad);
    at::Tensor received =
        at::empty({sharded.train.padded / ctx_.comm.Size()}, ctx_.device.Options());
    Work work = ctx_.comm.ReduceScatter(flat, received);
    work.Then([this, received, i] { blocks_[i].grad.copy_(received); });
    return work;
  }

  TrainContext& ctx_;
  bool checkpointing_, offload_;
  std::vector<ShardedBlock> blocks_;
  // Tied copies: per group, (block, index into its train flat) of each copy.
  std::vector<std::vector<std::pair<int, size_t>>> tied_;
  std::set<int> tied_blocks_;
  std::map<int, at::Tensor> pending_;  // local gradients waiting for their tied copies
};

}  // namespace

std::unique_ptr<Trainer> MakeFsdpTrainer(TrainContext& ctx, bool checkpointing, bool offload) {
  return std::make_unique<FsdpTrainer>(ctx, checkpointing, offload);
}

}  // namespace saturn::engine
