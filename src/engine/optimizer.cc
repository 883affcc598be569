#include "engine/optimizer.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

namespace saturn::engine {
namespace {

// Elements per parallel chunk of a fused update: large enough that a thread's
// start-up is paid back, small enough to spread a layer across threads.
constexpr int64_t kGrain = 1 << 15;

// The fused loops below read each element once and write it once, where the
// tensor-op form passes over memory 6-8 times and allocates temporaries. They
// apply to float32 CPU tensors laid out alike; anything else (CUDA, bf16,
// views) takes the tensor-op form, which is the same formula.
bool Fusable(const at::Tensor& param, const at::Tensor& grad,
             const std::vector<at::Tensor>& state) {
  auto plain = [&](const at::Tensor& t) {
    return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() &&
           t.numel() == param.numel();
  };
  if (!plain(param) || !plain(grad)) return false;
  for (const at::Tensor& slot : state) {
    if (!plain(slot)) return false;
  }
  return true;
}

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerSpec& spec) : Optimizer(spec), momentum_(spec.momentum) {}
  std::vector<std::string> Slots() const override {
    if (momentum_ == 0.0) return {};
    return {"momentum_buffer"};
  }
  void Update(const at::Tensor& param, const at::Tensor& grad, std::vector<at::Tensor>& state,
              int64_t step) const override {
    at::NoGradGuard no_grad;
    const double lr = LrAt(step);
    if (momentum_ != 0.0 && Fusable(param, grad, state)) {
      float* buffer = state[0].data_ptr<float>();
      return UpdateFloats(param.data_ptr<float>(), grad.data_ptr<float>(), &buffer, param.numel(),
                          step);
    }
    if (momentum_ == 0.0) {
      param.add_(grad, -lr);
      return;
    }
    at::Tensor& buffer = state[0];
    buffer.mul_(momentum_).add_(grad);
    param.add_(buffer, -lr);
  }

 private:
  // With momentum: buffer = momentum * buffer + grad; param -= lr * buffer.
  // Without: param -= lr * grad.
  void UpdateFloats(float* p, const float* g, float* const* state, int64_t n,
                    int64_t step) const override {
    const float momentum = static_cast<float>(momentum_), lr = static_cast<float>(LrAt(step));
    if (momentum_ == 0.0) {
      at::parallel_for(0, n, kGrain, [=](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          p[i] -= lr * g[i];
      });
      return;
    }
    float* b = state[0];
    at::parallel_for(0, n, kGrain, [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float v = momentum * b[i] + g[i];
        b[i] = v;
        p[i] -= lr * v;
      }
    });
  }

  double momentum_;
};

// Adam, and AdamW when decoupled weight decay is non-zero.
class Adam final : public Optimizer {
 public:
  Adam(const OptimizerSpec& spec, double decoupled_decay)
      : Optimizer(spec),
        beta1_(spec.beta1),
        beta2_(spec.beta2),
        eps_(spec.eps),
        decay_(decoupled_decay) {}
  std::vector<std::string> Slots() const override { return {"exp_avg", "exp_avg_sq"}; }
  void Update(const at::Tensor& param, const at::Tensor& grad, std::vector<at::Tensor>& state,
              int64_t step) const override {
    at::NoGradGuard no_grad;
    if (Fusable(param, grad, state)) {
      float* slots[2] = {state[0].data_ptr<float>(), state[1].data_ptr<float>()};
      return UpdateFloats(param.data_ptr<float>(), grad.data_ptr<float>(), slots, param.numel(),
                          step);
    }
    Step({param}, {grad}, {state[0]}, {state[1]}, step);
  }
  void UpdateMany(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads,
                  const std::vector<std::vector<at::Tensor>*>& states,
                  int64_t step) const override {
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> p, g, m, v;
    for (size_t i = 0; i < params.size(); ++i) {
      if (Fusable(params[i], grads[i], *states[i])) {
        Update(params[i], grads[i], *states[i], step);
        continue;
      }
      p.push_back(params[i]);
      g.push_back(grads[i]);
      m.push_back((*states[i])[0]);
      v.push_back((*states[i])[1]);
    }
    if (!p.empty()) Step(p, g, m, v, step);
  }

 private:
  // PyTorch's formula in multi-tensor ops over lists of parameters,
  // gradients and the two moments: the tensor-op form of Update and of
  // UpdateMany alike (one tensor or many, the same ops element by
  // element, on any device; on CUDA a launch per op and list chunk).
  void Step(const std::vector<at::Tensor>& p, const std::vector<at::Tensor>& g,
            const std::vector<at::Tensor>& m, const std::vector<at::Tensor>& v,
            int64_t step) const {
    double correction1 = 1.0 - std::pow(beta1_, static_cast<double>(step));
    double correction2 = 1.0 - std::pow(beta2_, static_cast<double>(step));
    const double lr = LrAt(step);
    if (decay_ != 0.0) at::_foreach_mul_(p, 1.0 - lr * decay_);
    at::_foreach_mul_(m, beta1_);
    at::_foreach_add_(m, g, 1.0 - beta1_);
    at::_foreach_mul_(v, beta2_);
    at::_foreach_addcmul_(v, g, g, 1.0 - beta2_);
    std::vector<at::Tensor> denom = at::_foreach_sqrt(v);
    at::_foreach_div_(denom, std::sqrt(correction2));
    at::_foreach_add_(denom, eps_);
    at::_foreach_addcdiv_(p, m, denom, -lr / correction1);
  }

  // PyTorch's formula, element by element in one pass.
  void UpdateFloats(float* p, const float* g, float* const* state, int64_t n,
                    int64_t step) const override {
    const double correction1 = 1.0 - std::pow(beta1_, static_cast<double>(step));
    const double correction2 = 1.0 - std::pow(beta2_, static_cast<double>(step));
    const double lr = LrAt(step);
    float* m = state[0];
    float* v = state[1];
    const float keep = static_cast<float>(1.0 - lr * decay_);
    const float b1 = static_cast<float>(beta1_), b2 = static_cast<float>(beta2_);
    const float one_b1 = static_cast<float>(1.0 - beta1_),
                one_b2 = static_cast<float>(1.0 - beta2_);
    const float root_c2 = static_cast<float>(std::sqrt(correction2));
    const float eps = static_cast<float>(eps_);
    const float step_size = static_cast<float>(lr / correction1);
    const bool decay = decay_ != 0.0;
    at::parallel_for(0, n, kGrain, [=](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float gi = g[i];
        float mi = b1 * m[i] + one_b1 * gi;
        float vi = b2 * v[i] + one_b2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float pi = decay ? p[i] * keep : p[i];
        p[i] = pi - step_size * (mi / (std::sqrt(vi) / root_c2 + eps));
      }
    });
  }

  double beta1_, beta2_, eps_, decay_;
};

}  // namespace

double Optimizer::LrAt(int64_t step) const {
  return spec_.lr * spec_.schedule.Multiplier(step - 1);
}

void Optimizer::UpdateFloats(float* param, const float* grad, float* const* state, int64_t n,
                             int64_t step) const {
  auto host = [n](const float* data) {
    return at::from_blob(const_cast<float*>(data), {n}, at::TensorOptions().dtype(at::kFloat));
  };
  std::vector<at::Tensor> slots;
  for (size_t i = 0; i < Slots().size(); ++i)
    slots.push_back(host(state[i]));
  Update(host(param), host(grad), slots, step);
}

void Optimizer::UpdateMany(const std::vector<at::Tensor>& params,
                           const std::vector<at::Tensor>& grads,
                           const std::vector<std::vector<at::Tensor>*>& states,
                           int64_t step) const {
  for (size_t i = 0; i < params.size(); ++i)
    Update(params[i], grads[i], *states[i], step);
}

void UpdateBatch::Add(const at::Tensor& param, const at::Tensor& grad,
                      std::vector<at::Tensor>* state) {
  params.push_back(param);
  grads.push_back(grad);
  states.push_back(state);
  bytes += param.numel() * static_cast<int64_t>(param.element_size());
}

void UpdateBatch::Step(int64_t step) const {
  if (!params.empty()) opt->UpdateMany(params, grads, states, step);
}

void UpdateBatch::Clear() {
  params.clear();
  grads.clear();
  states.clear();
  bytes = 0;
}

UpdateBatch& BatchOf(std::vector<UpdateBatch>& batches, const Optimizer& opt) {
  for (UpdateBatch& batch : batches)
    if (batch.opt == &opt) return batch;
  UpdateBatch& made = batches.emplace_back();
  made.opt = &opt;
  return made;
}

std::vector<at::Tensor> Optimizer::NewState(const at::Tensor& param) const {
  std::vector<at::Tensor> state;
  for (size_t i = 0; i < Slots().size(); ++i)
    state.push_back(at::zeros_like(param, at::MemoryFormat::Contiguous));
  return state;
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerSpec& spec) {
  if (spec.type == "sgd") return std::make_unique<Sgd>(spec);
  if (spec.type == "adamw") return std::make_unique<Adam>(spec, spec.weight_decay);
  return std::make_unique<Adam>(spec, 0.0);
}

}  // namespace saturn::engine
