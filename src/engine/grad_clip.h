// Gradient clipping as torch.nn.utils.clip_grad_norm_ (PyTorch 1.13): before
// an update, every trainable gradient of a model is multiplied by
// min(1, max_norm / (norm + 1e-6)), where norm is the L2 norm over all of
// them. A model's gradients may be spread over ranks (fsdp's shards, tp's
// slices, pipeline stages) or held twice (tied copies, replicas): each rank
// adds the parts it holds, weighted so that every element counts once, and
// the sums are added over the ranks that hold different parts. A pack's
// members are models of their own (Optimizer::Models), each with its own
// norm and max_norm.
//
//   GradClip clip(ctx.optimizer);
//   if (clip.Enabled()) {
//     for (each gradient g of parameter `name` this rank updates) clip.Add(name, g);
//     clip.Reduce(&stages);             // ranks holding other parts
//     for (each g) clip.Apply(name, g); // in place
//   }
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "engine/comm.h"
#include "engine/optimizer.h"

namespace saturn::engine {

class GradClip {
 public:
  explicit GradClip(const Optimizer& optimizer);
  // Whether some model clips (its clip_grad_norm > 0).
  bool Enabled() const { return enabled_; }
  // Adds `weight` times the squared L2 norm of `grad` to its model's sum.
  void Add(const std::string& name, const at::Tensor& grad, double weight = 1.0);
  // Adds `weight` times the squared norm of `grad` to model `model`'s sum.
  void AddTo(int model, const at::Tensor& grad, double weight = 1.0);
  // Sums each model's sum over `comm`'s ranks (collective); nullptr: none.
  void Reduce(Communicator* comm);
  // Multiplies `grad` in place by its model's clip coefficient (after
  // every Add and Reduce).
  void Apply(const std::string& name, const at::Tensor& grad) const;
  void ApplyTo(int model, const at::Tensor& grad) const;
  // Model `model`'s gradient norm so far.
  double Norm(int model) const;

 private:
  double Coefficient(int model) const;

  const Optimizer& optimizer_;
  bool enabled_ = false;
  std::vector<double> sums_;  // squared norms, per model
};

}  // namespace saturn::engine
