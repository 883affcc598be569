#include "engine/models/layers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "engine/pack.h"
#include "engine/tensor_parallel.h"
#include "engine/torch_version.h"

namespace saturn::engine {

Tuning Tuning::Of(const LoraSpec& lora, const std::string& part) {
  Tuning tuning;
  tuning.frozen = lora.Enabled();
  for (size_t k = 0; k < lora.pack.size(); ++k) {
    const LoraSpec& member = lora.pack[k];
    if (member.Targets(part)) {
      tuning.pack.push_back({static_cast<int>(k), member.rank, member.Scale(), member.seed});
    }
  }
  if (!lora.pack.empty()) return tuning;
  if (lora.Enabled() && lora.Targets(part)) {
    tuning.lora_rank = lora.rank;
    tuning.lora_scale = lora.Scale();
  }
  return tuning;
}

Linear::Linear(Block& block, ParamFactory& factory, const std::string& name, int64_t in,
               int64_t out, double std, bool bias, const Tuning& tuning, WeightLayout layout)
    : layout_(layout) {
  bool in_out = layout == WeightLayout::kInOut;
  std::vector<int64_t> shape =
      in_out ? std::vector<int64_t>{in, out} : std::vector<int64_t>{out, in};
  weight_ = std > 0 ? factory.Normal(shape, std)
                    : factory.Uniform(shape, 1.0 / std::sqrt(static_cast<double>(in)));
  block.Register(name + ".weight", &weight_, !tuning.frozen);
  if (bias) {
    bias_ = factory.Zeros({out});
    block.Register(name + ".bias", &bias_, !tuning.frozen);
  }
  // As peft initialises adapters: A like a default nn.Linear, B zero, so the
  // adapted map starts as the pretrained one.
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  auto a_shape = [&](int64_t r) {
    return in_out ? std::vector<int64_t>{in, r} : std::vector<int64_t>{r, in};
  };
  auto b_shape = [&](int64_t r) {
    return in_out ? std::vector<int64_t>{r, out} : std::vector<int64_t>{out, r};
  };
  if (tuning.lora_rank > 0) {
    lora_a_ = factory.AdapterUniform(a_shape(tuning.lora_rank), bound);
    lora_b_ = factory.AdapterZeros(b_shape(tuning.lora_rank));
    lora_scale_ = tuning.lora_scale;
    block.Register(name + ".lora_A", &lora_a_, /*trainable=*/true, /*adapter=*/true);
    block.Register(name + ".lora_B", &lora_b_, /*trainable=*/true, /*adapter=*/true);
  }
  pack_.reserve(tuning.pack.size());
  for (const Tuning::PackAdapter& p : tuning.pack) {
    pack_.push_back({p.member, factory.AdapterUniform(a_shape(p.rank), bound, p.seed, p.member),
                     factory.AdapterZeros(b_shape(p.rank)), p.scale});
    std::string member = "@" + std::to_string(p.member);
    block.Register(name + ".lora_A" + member, &pack_.back().a, true, true);
    block.Register(name + ".lora_B" + member, &pack_.back().b, true, true);
  }
}

const Linear::PackGroups& Linear::GroupsFor(const std::vector<PackRows::Segment>& segments,
                                            const at::TensorOptions& options) const {
  std::vector<int> members;
  for (const PackRows::Segment& s : segments)
    members.push_back(s.member);
  for (const PackGroups& g : groups_) {
    if (g.members == members && g.device == options.device() &&
        g.dtype == options.dtype().toScalarType()) {
      return g;
    }
  }
  PackGroups made{members, options.device(), options.dtype().toScalarType(), {}};
  std::map<int64_t, RankGroup> by_rank;
  std::map<int64_t, std::vector<int64_t>> positions;  // of each rank's segments
  for (size_t i = 0; i < segments.size(); ++i) {
    for (size_t a = 0; a < pack_.size(); ++a) {
      if (pack_[a].member != segments[i].member) continue;
      int64_t rank = layout_ == WeightLayout::kInOut ? pack_[a].a.size(1) : pack_[a].a.size(0);
      by_rank[rank].adapters.push_back(a);
      positions[rank].push_back(static_cast<int64_t>(i));
    }
  }
  for (auto& [rank, group] : by_rank) {
    std::vector<double> scales;
    for (size_t a : group.adapters)
      scales.push_back(pack_[a].scale);
    // In the adapters' type (fp32 under bf16 autocast): B is scaled
    // before the product, so the scale is not rounded to bf16.
    group.scales = at::tensor(scales, at::kDouble).view({-1, 1, 1}).to(options);
    group.whole = positions[rank].size() == segments.size();
    group.positions = at::tensor(positions[rank], at::kLong).to(options.device());
    made.groups.push_back(std::move(group));
  }
  groups_.push_back(std::move(made));
  return groups_.back();
}

void Linear::AddPackDeltas(const at::Tensor& x, at::Tensor& y) const {
  const PackRows* rows = ActivePackRows();
  if (!rows) throw std::logic_error("a pack's layer ran outside its pack");
  std::vector<PackRows::Segment> segments = rows->Segments(x.size(0));
  bool equal = std::all_of(segments.begin(), segments.end(), [&](const PackRows::Segment& s) {
    return s.count == segments.front().count;
  });
  bool in_out = layout_ == WeightLayout::kInOut;
  if (!equal || !x.is_contiguous() || !y.is_contiguous()) {
    // A slice that cuts members unevenly (a rank's share, a micro-batch):
    // each member's product on its own rows.
    for (const PackRows::Segment& s : segments) {
      auto adapter = std::find_if(pack_.begin(), pack_.end(),
                                  [&](const MemberAdapter& m) { return m.member == s.member; });
      if (adapter == pack_.end()) continue;
      at::Tensor xs = x.narrow(0, s.begin, s.count);
      at::Tensor low = in_out ? at::mm(at::mm(xs, adapter->a), adapter->b)
                              : at::linear(at::linear(xs, adapter->a), adapter->b);
      // In place on this member's rows: nothing keeps y for backward.
      y.narrow(0, s.begin, s.count).add_(low, adapter->scale);
    }
    return;
  }
  // Members of equal rows (the usual step): one batched product per rank
  // among them (mLoRA's batched LoRA operator), the members' rows as a
  // batch dimension: two bmm's and an add for every member of that rank,
  // where a loop would take two products and an add for each.
  int64_t n = static_cast<int64_t>(segments.size());
  at::Tensor x3 = x.view({n, -1, x.size(-1)});
  const at::TensorOptions adapters = pack_.front().b.options();
  for (const RankGroup& group : GroupsFor(segments, adapters).groups) {
    std::vector<at::Tensor> as, bs;
    for (size_t a : group.adapters) {
      // As [members, in, rank] and [members, rank, out] for bmm.
      as.push_back(in_out ? pack_[a].a : pack_[a].a.t());
      bs.push_back(in_out ? pack_[a].b : pack_[a].b.t());
    }
    at::Tensor xs = group.whole ? x3 : x3.index_select(0, group.positions);
    // Each member's scale on its B ([members, rank, out], small), not on
    // the product.
    at::Tensor delta = at::bmm(at::bmm(xs, at::stack(as)), at::stack(bs) * group.scales);
    // Under autocast the product is in the autocast type, y maybe not.
    if (delta.scalar_type() != y.scalar_type()) delta = delta.to(y.scalar_type());
    if (group.whole) {
      // In place on y itself (not a view of it: no copies in backward);
      // nothing keeps y for backward.
      y.add_(delta.view(y.sizes()));
    } else {
      y = y.view({n, -1, y.size(-1)}).index_add(0, group.positions, delta).view(y.sizes());
    }
  }
}

at::Tensor Linear::operator()(const at::Tensor& x) const {
  const at::Tensor& bias = bias_after_sum_ ? at::Tensor() : bias_;
  if (layout_ == WeightLayout::kOutIn) {
    at::Tensor y = at::linear(x, weight_, bias);
    if (!pack_.empty()) AddPackDeltas(x, y);
    if (!lora_a_.defined()) return y;
    return y + at::linear(at::linear(x, lora_a_), lora_b_) * lora_scale_;
  }
  // [in, out]: one GEMM with the bias folded in, over all leading dimensions.
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = weight_.size(1);
  at::Tensor flat = x.reshape({-1, x.size(-1)});
  at::Tensor y = bias.defined() ? at::addmm(bias, flat, weight_) : at::mm(flat, weight_);
  if (lora_a_.defined()) y = y + at::mm(at::mm(flat, lora_a_), lora_b_) * lora_scale_;
  if (!pack_.empty()) AddPackDeltas(flat, y);
  return y.view(shape);
}

void Linear::SplitOutputs(const TensorGroup& group, int64_t groups, const std::string& name,
                          std::map<std::string, ParamShard>& shards) {
  const ParamShard weight{layout_ == WeightLayout::kOutIn ? 0 : 1, groups};
  weight_ = ShardOf(weight_, weight, group.rank, group.size);
  shards[name + ".weight"] = weight;
  if (bias_.defined()) {
    const ParamShard bias{0, groups};
    bias_ = ShardOf(bias_, bias, group.rank, group.size);
    shards[name + ".bias"] = bias;
  }
}

void Linear::SplitInputs(const TensorGroup& group, const std::string& name,
                         std::map<std::string, ParamShard>& shards) {
  const ParamShard weight{layout_ == WeightLayout::kOutIn ? 1 : 0, 1};
  weight_ = ShardOf(weight_, weight, group.rank, group.size);
  shards[name + ".weight"] = weight;
  bias_after_sum_ = true;
}

at::Tensor Linear::AddBias(const at::Tensor& y) const {
  return bias_after_sum_ && bias_.defined() ? y + bias_ : y;
}

LayerNorm::LayerNorm(Block& block, ParamFactory& factory, const std::string& name, int64_t width,
                     bool frozen)
    : width_(width), weight_(factory.Ones({width})), bias_(factory.Zeros({width})) {
  block.Register(name + ".weight", &weight_, !frozen);
  block.Register(name + ".bias", &bias_, !frozen);
}

at::Tensor LayerNorm::operator()(const at::Tensor& x) const {
  // In the weights' precision (fp32), also when a bf16 tensor comes in.
  return at::layer_norm(x.to(weight_.scalar_type()), {width_}, weight_, bias_, 1e-5);
}

TokenEmbedding::TokenEmbedding(ParamFactory& factory, int64_t vocab, int64_t positions,
                               int64_t width, bool frozen, Names names)
    : tokens_(factory.Normal({vocab, width}, 0.02)),
      positions_(factory.Normal({positions, width}, 0.02)) {
  Register(names.tokens, &tokens_, !frozen);
  Register(names.positions, &positions_, !frozen);
}

at::Tensor TokenEmbedding::Forward(const at::Tensor& x) {
  return at::embedding(tokens_, x) + positions_.narrow(0, 0, x.size(1));
}

TransformerLayer::TransformerLayer(Block& block, ParamFactory& factory, int64_t width,
                                   int64_t heads, bool causal)
    : TransformerLayer(block, factory, width, heads, TransformerOptions(causal)) {}

TransformerLayer::TransformerLayer(Block& block, ParamFactory& factory, int64_t width,
                                   int64_t heads, const TransformerOptions& o)
    : width_(width),
      heads_(heads),
      causal_(o.causal),
      gelu_tanh_(o.gelu_tanh),
      ln1_(block, factory, "ln1", width, o.lora.Enabled()),
      qkv_(block, factory, "attn.qkv", width, 3 * width, 0.02, true, Tuning::Of(o.lora, "attn"),
           o.layout),
      proj_(block, factory, "attn.proj", width, width, 0.02, true, Tuning::Of(o.lora, "attn"),
            o.layout),
      ln2_(block, factory, "ln2", width, o.lora.Enabled()),
      fc1_(block, factory, "mlp.fc1", width, 4 * width, 0.02, true, Tuning::Of(o.lora, "mlp"),
           o.layout),
      fc2_(block, factory, "mlp.fc2", 4 * width, width, 0.02, true, Tuning::Of(o.lora, "mlp"),
           o.layout) {}

// Attention as PyTorch's own training path computes it: one copy to lay q, k
// and v out per head, the scale and the causal mask folded into one batched
// GEMM (baddbmm: mask + scale * q k^T), softmax, and a second GEMM. The mask
// is built once per sequence length, not per step. LibTorch 2.x has a fused
// kernel for the whole of it (flash or memory-efficient on CUDA).
// Split by tensor parallelism, the same on this rank's heads (H / ranks).
at::Tensor TransformerLayer::Attention(const at::Tensor& x) const {
  const int64_t heads = heads_ / group_.size, width = width_ / group_.size;
  int64_t batch = x.size(0), tokens = x.size(1), head_width = width_ / heads_;
  // [B, T, 3, H, hd] -> [3, B, H, T, hd]
  at::Tensor qkv = qkv_(x).view({batch, tokens, 3, heads, head_width}).permute({2, 0, 3, 1, 4});
#if SATURN_TORCH_AT_LEAST(2, 0)
  at::Tensor mixed = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], {}, 0.0, causal_);
#else
  qkv = qkv.contiguous().view({3, batch * heads, tokens, head_width});
  at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
  double scale = 1.0 / std::sqrt(static_cast<double>(head_width));
  at::Tensor scores = causal_ ? at::baddbmm(mask_.Of(tokens, x), q, k.transpose(1, 2), 1.0, scale)
                              : at::bmm(q * scale, k.transpose(1, 2));
  at::Tensor mixed = at::bmm(at::softmax(scores, -1), v).view({batch, heads, tokens, head_width});
#endif
  return proj_(mixed.transpose(1, 2).reshape({batch, tokens, width}));
}

const at::Tensor& CausalMask::Of(int64_t tokens, const at::Tensor& like) const {
  if (!mask_.defined() || mask_.size(0) != tokens || mask_.device() != like.device() ||
      mask_.scalar_type() != like.scalar_type()) {
    mask_ =
        at::full({tokens, tokens}, -std::numeric_limits<float>::infinity(), like.options()).triu(1);
  }
  return mask_;
}

at::Tensor TransformerLayer::operator()(const at::Tensor& x) const {
  const char* gelu = gelu_tanh_ ? "tanh" : "none";
  if (group_.size == 1) {
    at::Tensor h = x + Attention(ln1_(x));
    return h + fc2_(at::gelu(fc1_(ln2_(h)), gelu));
  }
  at::Tensor h = x + proj_.AddBias(LeaveGroup(Attention(EnterGroup(ln1_(x), group_)), group_));
  at::Tensor m = fc2_(at::gelu(fc1_(EnterGroup(ln2_(h), group_)), gelu));
  return h + fc2_.AddBias(LeaveGroup(m, group_));
}

std::map<std::string, ParamShard> TransformerLayer::Split(const TensorGroup& group) {
  std::map<std::string, ParamShard> shards;
  group_ = group;
  qkv_.SplitOutputs(group, 3, "attn.qkv", shards);
  proj_.SplitInputs(group, "attn.proj", shards);
  fc1_.SplitOutputs(group, 1, "mlp.fc1", shards);
  fc2_.SplitInputs(group, "mlp.fc2", shards);
  return shards;
}

double TransformerLayer::Flops(int64_t width, int64_t tokens) {
  double d = static_cast<double>(width), t = static_cast<double>(tokens);
  return 24.0 * t * d * d + 4.0 * t * t * d;
}

}  // namespace saturn::engine
