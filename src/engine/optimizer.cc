#include "engine/optimizer.h"

#include <ATen/core/grad_mode.h>

#include <cmath>

namespace saturn::engine {
namespace {

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerSpec& spec) : lr_(spec.lr), momentum_(spec.momentum) {}
  std::vector<std::string> Slots() const override {
    if (momentum_ == 0.0) return {};
    return {"momentum_buffer"};
  }
  void Update(const at::Tensor& param, const at::Tensor& grad, std::vector<at::Tensor>& state,
              int64_t) const override {
    at::NoGradGuard no_grad;
    if (momentum_ == 0.0) {
      param.add_(grad, -lr_);
      return;
    }
    at::Tensor& buffer = state[0];
    buffer.mul_(momentum_).add_(grad);
    param.add_(buffer, -lr_);
  }

 private:
  double lr_, momentum_;
};

// Adam, and AdamW when decoupled weight decay is non-zero.
class Adam final : public Optimizer {
 public:
  Adam(const OptimizerSpec& spec, double decoupled_decay)
      : lr_(spec.lr),
        beta1_(spec.beta1),
        beta2_(spec.beta2),
        eps_(spec.eps),
        decay_(decoupled_decay) {}
  std::vector<std::string> Slots() const override { return {"exp_avg", "exp_avg_sq"}; }
  void Update(const at::Tensor& param, const at::Tensor& grad, std::vector<at::Tensor>& state,
              int64_t step) const override {
    at::NoGradGuard no_grad;
    if (decay_ != 0.0) param.mul_(1.0 - lr_ * decay_);
    at::Tensor& exp_avg = state[0];
    at::Tensor& exp_avg_sq = state[1];
    exp_avg.mul_(beta1_).add_(grad, 1.0 - beta1_);
    exp_avg_sq.mul_(beta2_).addcmul_(grad, grad, 1.0 - beta2_);
    double correction1 = 1.0 - std::pow(beta1_, static_cast<double>(step));
    double correction2 = 1.0 - std::pow(beta2_, static_cast<double>(step));
    at::Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(correction2)).add_(eps_);
    param.addcdiv_(exp_avg, denom, -lr_ / correction1);
  }

 private:
  double lr_, beta1_, beta2_, eps_, decay_;
};

}  // namespace

std::vector<at::Tensor> Optimizer::NewState(const at::Tensor& param) const {
  std::vector<at::Tensor> state;
  for (size_t i = 0; i < Slots().size(); ++i)
    state.push_back(at::zeros_like(param));
  return state;
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerSpec& spec) {
  if (spec.type == "sgd") return std::make_unique<Sgd>(spec);
  if (spec.type == "adamw") return std::make_unique<Adam>(spec, spec.weight_decay);
  return std::make_unique<Adam>(spec, 0.0);
}

}  // namespace saturn::engine
