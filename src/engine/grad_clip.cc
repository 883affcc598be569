#include "engine/grad_clip.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>

namespace saturn::engine {

GradClip::GradClip(const Optimizer& optimizer)
    : optimizer_(optimizer), sums_(static_cast<size_t>(optimizer.Models()), 0.0) {
  for (int m = 0; m < optimizer.Models(); ++m)
    enabled_ = enabled_ || optimizer.Model(m).Spec().clip_grad_norm > 0;
}

void GradClip::Add(const std::string& name, const at::Tensor& grad, double weight) {
  AddTo(optimizer_.ModelOf(name), grad, weight);
}

void GradClip::AddTo(int model, const at::Tensor& grad, double weight) {
  if (!enabled_ || weight == 0.0 || !grad.defined() || grad.numel() == 0) return;
  at::NoGradGuard no_grad;
  // In fp32 as PyTorch's per-parameter norms; summed in double.
  double norm = grad.detach().to(at::kFloat).norm().item<double>();
  sums_[static_cast<size_t>(model)] += weight * norm * norm;
}

void GradClip::Reduce(Communicator* comm) {
  if (!enabled_ || comm == nullptr || comm->Size() < 2) return;
  at::Tensor sums = at::tensor(sums_, comm->ScalarOptions().dtype(at::kDouble));
  comm->AllReduceSum(sums);
  sums = sums.cpu();
  for (size_t m = 0; m < sums_.size(); ++m)
    sums_[m] = sums[static_cast<int64_t>(m)].item<double>();
}

double GradClip::Norm(int model) const {
  return std::sqrt(std::max(0.0, sums_[static_cast<size_t>(model)]));
}

double GradClip::Coefficient(int model) const {
  double max_norm = optimizer_.Model(model).Spec().clip_grad_norm;
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (Norm(model) + 1e-6));
}

void GradClip::Apply(const std::string& name, const at::Tensor& grad) const {
  ApplyTo(optimizer_.ModelOf(name), grad);
}

void GradClip::ApplyTo(int model, const at::Tensor& grad) const {
  if (!enabled_ || !grad.defined()) return;
  double c = Coefficient(model);
  if (c >= 1.0) return;  // PyTorch multiplies by 1.0: the same values
  at::NoGradGuard no_grad;
  grad.mul_(c);
}

}  // namespace saturn::engine
