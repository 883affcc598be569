#include "engine/models/layers.h"

#include <cmath>
#include <limits>

namespace saturn::engine {

Linear::Linear(Block& block, ParamFactory& factory, const std::string& name, int64_t in,
               int64_t out, double std, bool bias) {
  weight_ = std > 0 ? factory.Normal({out, in}, std)
                    : factory.Uniform({out, in}, 1.0 / std::sqrt(static_cast<double>(in)));
  block.Register(name + ".weight", &weight_);
  if (bias) {
    bias_ = factory.Zeros({out});
    block.Register(name + ".bias", &bias_);
  }
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  return at::linear(x, weight_, bias_);
}

LayerNorm::LayerNorm(Block& block, ParamFactory& factory, const std::string& name, int64_t width)
    : width_(width), weight_(factory.Ones({width})), bias_(factory.Zeros({width})) {
  block.Register(name + ".weight", &weight_);
  block.Register(name + ".bias", &bias_);
}

at::Tensor LayerNorm::operator()(const at::Tensor& x) const {
  return at::layer_norm(x, {width_}, weight_, bias_, 1e-5);
}

TransformerLayer::TransformerLayer(Block& block, ParamFactory& factory, int64_t width,
                                   int64_t heads, bool causal)
    : width_(width),
      heads_(heads),
      causal_(causal),
      ln1_(block, factory, "ln1", width),
      qkv_(block, factory, "attn.qkv", width, 3 * width),
      proj_(block, factory, "attn.proj", width, width),
      ln2_(block, factory, "ln2", width),
      fc1_(block, factory, "mlp.fc1", width, 4 * width),
      fc2_(block, factory, "mlp.fc2", 4 * width, width) {}

at::Tensor TransformerLayer::Attention(const at::Tensor& x) const {
  int64_t batch = x.size(0), tokens = x.size(1), head_width = width_ / heads_;
  at::Tensor qkv = qkv_(x).view({batch, tokens, 3, heads_, head_width}).permute({2, 0, 3, 1, 4});
  at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
  at::Tensor scores =
      at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_width)));
  if (causal_) {
    at::Tensor future = at::ones({tokens, tokens}, x.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  at::Tensor mixed = at::matmul(at::softmax(scores, -1), v);
  return proj_(mixed.transpose(1, 2).reshape({batch, tokens, width_}));
}

at::Tensor TransformerLayer::operator()(const at::Tensor& x) const {
  at::Tensor h = x + Attention(ln1_(x));
  return h + fc2_(at::gelu(fc1_(ln2_(h))));
}

double TransformerLayer::Flops(int64_t width, int64_t tokens) {
  double d = static_cast<double>(width), t = static_cast<double>(tokens);
  return 24.0 * t * d * d + 4.0 * t * t * d;
}

}  // namespace saturn::engine
