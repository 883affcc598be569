// Layers shared by the model families, built on ATen ops. Each layer
// registers its parameters in the block that owns it, under a name prefix, so
// that the block's parameter list stays the single source of truth.
//
//   struct MyBlock : Block {
//     Linear fc;
//     MyBlock(ParamFactory& f) : fc(*this, f, "fc", 64, 64) {}
//     at::Tensor Forward(const at::Tensor& x) override { return fc(x).relu(); }
//   };
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "engine/model.h"

namespace saturn::engine {

class Linear {
 public:
  // Weights ~ N(0, std) (std <= 0: PyTorch's default uniform bound 1/sqrt(in)).
  Linear(Block& block, ParamFactory& factory, const std::string& name, int64_t in, int64_t out,
         double std = 0.02, bool bias = true);
  at::Tensor operator()(const at::Tensor& x) const;

 private:
  at::Tensor weight_;
  at::Tensor bias_;
};

class LayerNorm {
 public:
  LayerNorm(Block& block, ParamFactory& factory, const std::string& name, int64_t width);
  at::Tensor operator()(const at::Tensor& x) const;

 private:
  int64_t width_;
  at::Tensor weight_;
  at::Tensor bias_;
};

// A pre-norm transformer layer: x + attention(ln(x)), then x + mlp(ln(x)).
class TransformerLayer {
 public:
  TransformerLayer(Block& block, ParamFactory& factory, int64_t width, int64_t heads, bool causal);
  at::Tensor operator()(const at::Tensor& x) const;
  // Forward FLOPs of one sequence of `tokens`.
  static double Flops(int64_t width, int64_t tokens);

 private:
  at::Tensor Attention(const at::Tensor& x) const;
  // The additive causal mask (0 on and below the diagonal, -inf above) for
  // `tokens`, on `like`'s device and dtype; built once and kept.
  const at::Tensor& CausalMask(int64_t tokens, const at::Tensor& like) const;

  int64_t width_;
  int64_t heads_;
  bool causal_;
  LayerNorm ln1_;
  Linear qkv_;
  Linear proj_;
  LayerNorm ln2_;
  Linear fc1_;
  Linear fc2_;
  mutable at::Tensor mask_;
};

}  // namespace saturn::engine
