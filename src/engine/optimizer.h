// Optimizers as element-wise updates of (parameter, gradient, state slots).
//
// The update of each element depends only on that element, so it can be
// applied to a whole parameter, a flat shard of many (fsdp), or a block paged
// in from host memory (spill) with the same result. The formulas are
// PyTorch's (torch.optim.SGD with momentum, Adam, AdamW), so runs compare
// with PyTorch's. State slots are named, for checkpoints that any technique
// can read.
//
//   std::unique_ptr<Optimizer> opt = MakeOptimizer(task.optimizer);
//   std::vector<at::Tensor> state = opt->NewState(param);   // zeros, one per slot
//   opt->Update(param, grad, state, /*step=*/1);            // steps count from 1
//
// The learning rate follows the spec's schedule (OptimizerSpec::schedule) by
// the step given, so a run resumed at any step is exact.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/task.h"

namespace saturn::engine {

class Optimizer {
 public:
  explicit Optimizer(OptimizerSpec spec) : spec_(std::move(spec)) {}
  virtual ~Optimizer() = default;
  const OptimizerSpec& Spec() const { return spec_; }
  // The learning rate of optimizer step `step` (from 1): the spec's, times
  // its schedule's multiplier for step - 1.
  double LrAt(int64_t step) const;
  // Names of the state slots, e.g. {"exp_avg", "exp_avg_sq"}; may be empty.
  virtual std::vector<std::string> Slots() const = 0;
  // Updates `param` in place (without autograd) for optimizer step `step`.
  virtual void Update(const at::Tensor& param, const at::Tensor& grad,
                      std::vector<at::Tensor>& state, int64_t step) const = 0;
  // Update of several parameters at once (`states[i]`: param i's slots).
  // The same arithmetic as Update on each; Adam takes the ones that are not
  // plain float32 host tensors (a GPU's) in multi-tensor ops: about ten
  // kernels for all of them, not ten for each.
  virtual void UpdateMany(const std::vector<at::Tensor>& params,
                          const std::vector<at::Tensor>& grads,
                          const std::vector<std::vector<at::Tensor>*>& states, int64_t step) const;
  // Update's arithmetic on `n` contiguous float32 elements in host memory
  // (`state`: one pointer per slot, each to n elements): the fused form
  // that Update takes for plain float32 CPU tensors, callable on a slice
  // of a larger tensor without a view (a fused array's member,
  // engine/array.h).
  virtual void UpdateFloats(float* param, const float* grad, float* const* state, int64_t n,
                            int64_t step) const;
  // Zero-initialised state for `param`, allocated like `param`.
  std::vector<at::Tensor> NewState(const at::Tensor& param) const;
  // The optimizer of the parameter named `name` (a block's slot name): this
  // one, but for a pack's (engine/pack.h), whose members each step their
  // own adapters with their own hyper-parameters (same slots).
  virtual const Optimizer& ForParam(const std::string& /*name*/) const { return *this; }
  // Whether ForParam may answer another optimizer than this one.
  virtual bool PerParam() const { return false; }
  // The models this optimizer steps (a pack's members; 1 otherwise), and
  // which one the parameter named `name` belongs to: gradient clipping
  // (engine/grad_clip.h) takes each model's norm on its own.
  virtual int Models() const { return 1; }
  virtual int ModelOf(const std::string& /*name*/) const { return 0; }
  virtual const Optimizer& Model(int /*index*/) const { return *this; }

 private:
  OptimizerSpec spec_;
};

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerSpec& spec);

// One optimizer's parameters gathered for one UpdateMany call (a task's
// one, or each of a pack's members': Optimizer::ForParam).
struct UpdateBatch {
  const Optimizer* opt = nullptr;
  std::vector<at::Tensor> params, grads;
  std::vector<std::vector<at::Tensor>*> states;
  int64_t bytes = 0;  // of the parameters gathered

  void Add(const at::Tensor& param, const at::Tensor& grad, std::vector<at::Tensor>* state);
  void Step(int64_t step) const;  // UpdateMany of what was gathered
  void Clear();
};

// The batch of `opt` among `batches`, added if there is none.
UpdateBatch& BatchOf(std::vector<UpdateBatch>& batches, const Optimizer& opt);

}  // namespace saturn::engine
