// spill: Hydra-style model spilling on one device. Parameters and optimizer
// state live in host memory; the model runs as a sequence of shards of
// consecutive blocks, each paged onto the device only while it computes,
// with the next shard's copy made in the background meanwhile. The forward
// pass keeps only each shard's input; the backward pass pages shards in
// again in reverse, recomputes each one's forward and back-propagates
// through it, and the optimizer updates that shard in host memory. A model
// many times larger than the device trains as long as two shards fit.
//
// Without recomputation (knob recompute: false) the forward pass keeps each
// shard's graph, as single does, and releases only the memory of the
// shard's device parameters; the backward pass refills it from host memory
// (one copy, no second forward). Activation memory is then single's.
//
// Knobs: blocks_per_shard, recompute (tuned by search).
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <future>
#include <map>

#include "common/error.h"
#include "engine/blocks.h"
#include "engine/grad_clip.h"
#include "engine/phases.h"

namespace saturn::engine {
namespace {

class SpillTrainer final : public Trainer {
 public:
  SpillTrainer(TrainContext& ctx, int blocks_per_shard, bool recompute)
      : ctx_(ctx), host_(ctx, 0, ctx.model.NumBlocks(), Placement::kHost), recompute_(recompute) {
    for (int begin = 0; begin < ctx.model.NumBlocks(); begin += blocks_per_shard) {
      shards_.push_back({begin, std::min(begin + blocks_per_shard, ctx.model.NumBlocks())});
    }
    std::vector<TiedParam> tied = ctx.model.TiedParams();
    for (size_t g = 0; g < tied.size(); ++g) {
      for (const auto& copy : tied[g].copies)
        tied_group_[copy] = g;
    }
    tied_grads_.resize(tied.size());
  }

  double Step(int64_t step) override {
    int count = static_cast<int>(shards_.size());
    Batch batch = ctx_.StepSamples(step, 0, ctx_.BatchSize());
    std::vector<at::Tensor> inputs(count), outputs(count);
    std::vector<Paged> kept(count);
    std::future<Paged> next = PageIn(0);
    Paged current;
    at::Tensor x = batch.inputs;
    for (int s = 0; s < count; ++s) {
      current = next.get();
      if (s + 1 < count) next = PageIn(s + 1);
      if (recompute_) {
        inputs[s] = x;
        at::NoGradGuard no_grad;
        x = Forward(s, current, x);
        continue;
      }
      Trainable(s, current);
      inputs[s] = s == 0 ? x : x.detach().requires_grad_(true);
      x = outputs[s] = Forward(s, current, inputs[s]);
      // The graph keeps the shard's parameters for its backward pass: their
      // memory goes now and is refilled from host memory before it.
      if (s < count - 1) {
        for (const at::Tensor& param : current.params)
          ReleaseStorage(param);
      }
      kept[s] = std::move(current);
    }
    // The last shard is still on the device; its backward comes first.
    double loss_value = 0.0;
    at::Tensor upstream;
    for (int s = count - 1; s >= 0; --s) {
      if (s < count - 1) {
        current = next.get();
      } else if (!recompute_) {
        current = std::move(kept[s]);
      }
      if (s > 0) next = recompute_ ? PageIn(s - 1) : Refill(s - 1, std::move(kept[s - 1]));
      at::Tensor input = inputs[s], output = outputs[s];
      if (recompute_) {
        Trainable(s, current);
        if (s > 0) input = input.detach().requires_grad_(true);
        output = Forward(s, current, input);
      }
      PhaseScope backward(Phase::kBackward);
      if (s == count - 1) {
        at::Tensor loss =
            ctx_.model.LossSum(output, batch.targets) / static_cast<double>(ctx_.LossItems());
        loss_value = loss.item<double>();
        loss.backward();
      } else {
        // A shard before every trainable parameter (LoRA's frozen
        // embeddings) has nothing to back-propagate into.
        if (output.requires_grad()) torch::autograd::backward({output}, {upstream});
      }
      if (s > 0) upstream = input.grad();
      inputs[s].reset();
      outputs[s].reset();
      UpdateOnHost(s, current, step + 1);
      current = Paged();
    }
    UpdateTiedOnHost(step + 1);
    return loss_value;
  }

  void Save(CheckpointWriter& out) override { host_.Save(out); }
  void Load(const CheckpointReader& in) override { host_.Load(in); }

 private:
  struct Paged {
    std::vector<at::Tensor> params;  // device copies, in the shard's block order
  };

  // Shard s's parameters in host memory, in the shard's block order.
  std::vector<at::Tensor> HostParams(int s) {
    std::vector<at::Tensor> params;
    for (int b = shards_[s].first; b < shards_[s].second; ++b) {
      for (const ParamSlot& slot : host_.At(b).Params())
        params.push_back(*slot.tensor);
    }
    return params;
  }

  // Gives shard s's released device parameters their memory back and copies
  // the host values into it, on another thread.
  std::future<Paged> Refill(int s, Paged paged) {
    std::vector<at::Tensor> sources = HostParams(s);
    return std::async(
        std::launch::async, [sources = std::move(sources), paged = std::move(paged)]() mutable {
          at::NoGradGuard no_grad;
          for (size_t i = 0; i < sources.size(); ++i) {
            const at::Tensor& param = paged.params[i];
            RefillStorage(param, sources[i].nbytes());
            // Written through an alias of the storage: an
            // in-place copy into `param` itself would bump the
            // version autograd checks its saved tensors by.
            at::empty({0}, param.options())
                .set_(param.storage(), param.storage_offset(), param.sizes(), param.strides())
                .copy_(sources[i]);
          }
          return std::move(paged);
        });
  }

  // Copies shard s's parameters to the device on another thread.
  std::future<Paged> PageIn(int s) {
    std::vector<at::Tensor> sources = HostParams(s);
    const Device& device = ctx_.device;
    return std::async(std::launch::async, [sources = std::move(sources), &device] {
      Paged paged;
      for (const at::Tensor& source : sources)
        paged.params.push_back(device.ToDevice(source));
      return paged;
    });
  }

  // Runs shard s with its blocks pointed at the device copies, then points
  // them back at host memory.
  at::Tensor Forward(int s, const Paged& paged, at::Tensor x) {
    std::vector<at::Tensor> host_params;
    size_t next = 0;
    for (int b = shards_[s].first; b < shards_[s].second; ++b) {
      for (const ParamSlot& slot : host_.At(b).Params()) {
        host_params.push_back(*slot.tensor);
        *slot.tensor = paged.params[next++];
      }
    }
    for (int b = shards_[s].first; b < shards_[s].second; ++b)
      x = RunBlock(host_.At(b), x, ctx_);
    next = 0;
    for (int b = shards_[s].first; b < shards_[s].second; ++b) {
      for (const ParamSlot& slot : host_.At(b).Params())
        *slot.tensor = host_params[next++];
    }
    return x;
  }

  // Shard s's trainable device parameters take gradients.
  void Trainable(int s, Paged& paged) {
    size_t next = 0;
    for (int b = shards_[s].first; b < shards_[s].second; ++b) {
      for (const ParamSlot& slot : host_.At(b).Params()) {
        at::Tensor& param = paged.params[next++];
        if (slot.trainable) param.requires_grad_(true);
      }
    }
  }

  // The optimizer on shard s's host parameters with the gradients of its
  // device copies. A tied copy waits for its others (their shards come
  // later in the backward pass): UpdateTiedOnHost.
  void UpdateOnHost(int s, const Paged& paged, int64_t optimizer_step) {
    PhaseScope phase(Phase::kOptimizer);
    HostMemoryScope host;
    size_t next = 0;
    for (int b = shards_[s].first; b < shards_[s].second; ++b) {
      const std::vector<ParamSlot>& params = host_.At(b).Params();
      BlockState& state = host_.StateOf(b);
      for (size_t p = 0; p < params.size(); ++p) {
        const at::Tensor& device_grad = paged.params[next++].grad();
        if (!params[p].trainable || !device_grad.defined()) continue;
        at::Tensor grad = ctx_.device.ToHost(device_grad);
        auto tied = tied_group_.find({b, params[p].name});
        if (tied != tied_group_.end()) {
          tied_grads_[tied->second].push_back({b, static_cast<int>(p), grad});
          continue;
        }
        if (clipping_) {  // the norm needs every gradient first
          held_.push_back({b, static_cast<int>(p), grad});
          continue;
        }
        ctx_.optimizer.ForParam(params[p].name)
            .Update(*params[p].tensor, grad, state[p], optimizer_step);
      }
    }
  }

  // Each tied group's copies, updated with the sum of their gradients; with
  // clipping, first every gradient held back (engine/grad_clip.h: a tied
  // group's sum counts once).
  void UpdateTiedOnHost(int64_t optimizer_step) {
    PhaseScope phase(Phase::kOptimizer);
    HostMemoryScope host;
    std::vector<TiedParam> groups = ctx_.model.TiedParams();
    std::vector<at::Tensor> totals(tied_grads_.size());
    for (size_t g = 0; g < tied_grads_.size(); ++g) {
      if (tied_grads_[g].empty()) continue;
      // In the order of the copies, as every technique adds them.
      std::vector<at::Tensor> grads;
      for (const auto& [block, name] : groups[g].copies) {
        for (const Stashed& st : tied_grads_[g])
          if (st.block == block && NameOf(st) == name) grads.push_back(st.grad);
      }
      totals[g] = SumInOrder(grads);
    }
    if (clipping_) ClipAndUpdateHeld(totals, optimizer_step);
    for (size_t g = 0; g < tied_grads_.size(); ++g) {
      for (const Stashed& st : tied_grads_[g]) {
        if (host_.IsSharedCopy(st.block, static_cast<size_t>(st.param))) continue;  // once
        ctx_.optimizer.Update(*host_.At(st.block).Params()[st.param].tensor, totals[g],
                              host_.StateOf(st.block)[st.param], optimizer_step);
      }
      tied_grads_[g].clear();
    }
  }

  void ClipAndUpdateHeld(std::vector<at::Tensor>& totals, int64_t optimizer_step) {
    GradClip clip(ctx_.optimizer);
    for (const Stashed& st : held_)
      clip.Add(NameOf(st), st.grad);
    for (size_t g = 0; g < totals.size(); ++g)
      if (totals[g].defined()) clip.Add(NameOf(tied_grads_[g].front()), totals[g]);
    for (const Stashed& st : held_)
      clip.Apply(NameOf(st), st.grad);
    for (size_t g = 0; g < totals.size(); ++g)
      if (totals[g].defined()) clip.Apply(NameOf(tied_grads_[g].front()), totals[g]);
    for (const Stashed& st : held_) {
      ctx_.optimizer.ForParam(NameOf(st))
          .Update(*host_.At(st.block).Params()[st.param].tensor, st.grad,
                  host_.StateOf(st.block)[st.param], optimizer_step);
    }
    held_.clear();
  }

  struct Stashed {
    int block, param;
    at::Tensor grad;  // in host memory
  };
  const std::string& NameOf(const Stashed& st) {
    return host_.At(st.block).Params()[st.param].name;
  }

  TrainContext& ctx_;
  BlockSet host_;
  std::vector<std::pair<int, int>> shards_;  // [first block, end block)
  bool recompute_;
  std::map<std::pair<int, std::string>, size_t> tied_group_;  // copy -> its group
  std::vector<std::vector<Stashed>> tied_grads_;              // per group, this step
  // With clipping, every other gradient of this step waits here (host memory).
  std::vector<Stashed> held_;
  const bool clipping_ = GradClip(ctx_.optimizer).Enabled();
};

class Spill final : public Technique {
 public:
  std::string_view Name() const override { return "spill"; }
  bool TakesPacks() const override { return true; }
  std::string_view Description() const override {
    return "Hydra-style spilling: parameters and optimizer state in host memory, "
           "shards of blocks paged onto one device";
  }
  Layout ProcessLayout() const override { return Layout::kOneProcess; }

  std::string Unsupported(const TaskSpec& task, const Model& model, int gpus) const override {
    if (std::string why = model.WhyNotSplittable(); !why.empty()) return why;
    return Technique::Unsupported(task, model, gpus);
  }

  // Keeping every shard's activations saves the recomputation (a third of
  // a step, more with the shard paged in again: 1.45x on the LoRA grid)
  // where activation memory allows; fine shards keep the most parameter
  // memory free for them.
  std::vector<Knobs> SearchSpace(TrainContext& ctx) const override {
    std::vector<Knobs> space;
    for (int k : {1, 2}) {
      if (k < ctx.model.NumBlocks())
        space.push_back({{"blocks_per_shard", k}, {"recompute", false}});
    }
    return space;
  }
  // Recomputation, at every shard size, only where no shard's activations
  // fit kept.
  std::vector<Knobs> MemorySavingSpace(TrainContext& ctx) const override {
    std::vector<Knobs> space;
    int blocks = ctx.model.NumBlocks();
    for (int k = 1; k < blocks; k *= 2)
      space.push_back({{"blocks_per_shard", k}, {"recompute", true}});
    space.push_back({{"blocks_per_shard", blocks}, {"recompute", true}});
    return space;
  }

  std::optional<int64_t> StaticBytesPerDevice(const TrainContext& ctx,
                                              const Knobs& knobs) const override {
    int64_t per_shard = KnobInt(knobs, "blocks_per_shard", 1, 1);
    std::vector<int64_t> counts = ctx.model.BlockParamCounts();
    int64_t largest = 0;
    for (size_t b = 0; b < counts.size(); b += per_shard) {
      int64_t params = 0;
      for (size_t i = b; i < std::min(counts.size(), b + per_shard); ++i)
        params += counts[i];
      largest = std::max(largest, params);
    }
    // The shard computing, its gradients, and the next shard arriving.
    return 3 * largest * static_cast<int64_t>(sizeof(float));
  }

  std::unique_ptr<Trainer> MakeTrainer(TrainContext& ctx, const Knobs& knobs) const override {
    return std::make_unique<SpillTrainer>(
        ctx, static_cast<int>(KnobInt(knobs, "blocks_per_shard", 1, 1)),
        KnobBool(knobs, "recompute", true));
  }
};

}  // namespace

std::unique_ptr<Technique> MakeSpillTechnique() {
  return std::make_unique<Spill>();
}

}  // namespace saturn::engine
