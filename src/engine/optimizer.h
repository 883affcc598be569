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
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/task.h"

namespace saturn::engine {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Names of the state slots, e.g. {"exp_avg", "exp_avg_sq"}; may be empty.
  virtual std::vector<std::string> Slots() const = 0;
  // Updates `param` in place (without autograd) for optimizer step `step`.
  virtual void Update(const at::Tensor& param, const at::Tensor& grad,
                      std::vector<at::Tensor>& state, int64_t step) const = 0;
  // Zero-initialised state for `param`, allocated like `param`.
  std::vector<at::Tensor> NewState(const at::Tensor& param) const;
  // The optimizer of the parameter named `name` (a block's slot name): this
  // one, but for a pack's (engine/pack.h), whose members each step their
  // own adapters with their own hyper-parameters (same slots).
  virtual const Optimizer& ForParam(const std::string& /*name*/) const { return *this; }
  // Whether ForParam may answer another optimizer than this one.
  virtual bool PerParam() const { return false; }
};

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerSpec& spec);

}  // namespace saturn::engine
