// The Llama family: the decoder shared by Hugging Face's LlamaForCausalLM,
// MistralForCausalLM and Qwen2ForCausalLM (Llama 3.x, TinyLlama, SmolLM,
// Mistral 7B, Qwen 2.5), written from the architecture's definition:
//
//   h = embed_tokens(tokens)
//   per layer:  h = h + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n)))
//               with n = input_layernorm(h)
//               h = h + down_proj(silu(gate_proj(m)) * up_proj(m)),
//               with m = post_attention_layernorm(h)
//   logits = lm_head(norm(h))
//
// RMSNorm is computed in fp32 (x / sqrt(mean(x^2) + norm_eps), then the
// weight); rotary position embeddings are Hugging Face's rotate-half form
// (the first and second halves of each head's width are the pairs) with
// rope_theta and rope_scaling llama3 or linear; attention is causal and
// grouped-query (kv_heads key/value heads, each shared by heads / kv_heads
// query heads); with attention_bias q, k and v have biases, and o_proj too
// unless the flavor is qwen2 (as Hugging Face's classes do); the head
// is tied to the token embedding when tie_embeddings.
//
// Fields (task.json, written out in full by the workload reader; a missing
// one falls back to `preset:`): layers, d_model, heads, kv_heads, head_dim,
// ffn, vocab, positions, seq_len, rope_theta, rope_scaling, norm_eps,
// tie_embeddings, attention_bias, flavor (llama | mistral | qwen2), init
// (Hugging Face's key layout: model.embed_tokens, model.layers.N.self_attn.
// {q,k,v,o}_proj, mlp.{gate,up,down}_proj, input_layernorm,
// post_attention_layernorm, model.norm, lm_head; or a finished llama
// task's model.pt, which keeps the same names).
//
// Blocks: 0 the embedding, 1..layers the decoder layers, then the final
// norm with the head (a copy of the embedding when tied: TiedParams).
// Linear maps keep nn.Linear's [out, in] layout, as the checkpoints do.
//
// Tensor parallelism: a layer splits into gcd(heads, ffn) parts. Each rank
// keeps heads / size query heads and ffn / size hidden units; key and value
// heads are split the same way when size divides kv_heads, and otherwise
// replicated: every rank computes all of them (their gradients summed over
// the group, so the replicas stay equal) and uses those its query heads read.
#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "common/error.h"
#include "common/model_presets.h"
#include "engine/models/layers.h"
#include "engine/pack.h"
#include "engine/tensor_parallel.h"
#include "engine/torch_version.h"

namespace saturn::engine {
namespace {

struct RopeScaling {
  std::string type;  // "" (none), llama3, linear
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_positions = 8192.0;
};

struct LlamaConfig {
  int64_t layers = 0, width = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0,
          positions = 0, seq_len = 0;
  double rope_theta = 10000.0, norm_eps = 1e-6;
  RopeScaling scaling;
  bool tied = false, qkv_bias = false;
  bool o_bias = false;  // attention_bias on llama and mistral (Qwen2's o_proj has none)
  LoraSpec lora;
};

// LoRA's tuning of one projection: targeted by its peft name or by the
// shorthand of its part (attn, mlp).
Tuning ProjectionTuning(const LoraSpec& lora, const char* part, const char* name) {
  Tuning tuning = Tuning::Of(lora, name);
  return tuning.lora_rank > 0 || !lora.pack.empty() ? tuning : Tuning::Of(lora, part);
}

class RmsNorm {
 public:
  RmsNorm(Block& block, ParamFactory& f, const std::string& name, int64_t width, double eps,
          bool frozen)
      : eps_(eps), weight_(f.Ones({width})) {
    block.Register(name + ".weight", &weight_, !frozen);
  }
  at::Tensor operator()(const at::Tensor& x) const {
    at::Tensor x32 = x.to(at::kFloat);
    at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean({-1}, /*keepdim=*/true) + eps_);
    return weight_ * normed.to(x.scalar_type());
  }

 private:
  double eps_;
  at::Tensor weight_;
};

// The inverse frequencies of the rotary embedding, with the checkpoint's
// scaling, in fp32 as Hugging Face computes them.
at::Tensor InverseFrequencies(const LlamaConfig& c) {
  at::Tensor exponents =
      at::arange(0, c.head_dim, 2, at::kLong).to(at::kFloat) / static_cast<double>(c.head_dim);
  at::Tensor inv = 1.0 / at::pow(at::scalar_tensor(c.rope_theta, at::kFloat), exponents);
  const RopeScaling& s = c.scaling;
  if (s.type == "linear") return inv / s.factor;
  if (s.type != "llama3") return inv;
  // Llama 3.1: long wavelengths slowed by `factor`, short ones kept, the
  // band between interpolated.
  double low_wavelen = s.original_positions / s.low_freq_factor;
  double high_wavelen = s.original_positions / s.high_freq_factor;
  at::Tensor wavelen = 2.0 * M_PI / inv;
  at::Tensor scaled = at::where(wavelen > low_wavelen, inv / s.factor, inv);
  at::Tensor smooth = (s.original_positions / wavelen - s.low_freq_factor) /
                      (s.high_freq_factor - s.low_freq_factor);
  at::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
  at::Tensor medium = wavelen.ge(high_wavelen).logical_and(wavelen.le(low_wavelen));
  return at::where(medium, smoothed, scaled);
}

class Rotary {
 public:
  explicit Rotary(const LlamaConfig& c) : inv_freq_(InverseFrequencies(c)) {}
  // x [B, heads, T, head_dim] rotated by its positions 0..T-1.
  at::Tensor operator()(const at::Tensor& x) const {
    Tables(x.size(2), x);
    int64_t half = x.size(-1) / 2;
    at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
    return x * cos_ + rotated * sin_;
  }

 private:
  // cos and sin of every (position, frequency) [T, head_dim], in fp32 and
  // then in x's dtype; kept per length, device and dtype.
  void Tables(int64_t tokens, const at::Tensor& like) const {
    if (cos_.defined() && cos_.size(0) == tokens && cos_.device() == like.device() &&
        cos_.scalar_type() == like.scalar_type()) {
      return;
    }
    at::Tensor positions = at::arange(tokens, at::kLong).to(at::kFloat);
    at::Tensor freqs = at::outer(positions, inv_freq_);
    at::Tensor angles = at::cat({freqs, freqs}, -1);
    cos_ = angles.cos().to(like.options());
    sin_ = angles.sin().to(like.options());
  }

  at::Tensor inv_freq_;
  mutable at::Tensor cos_, sin_;
};

class DecoderLayer final : public Block {
 public:
  DecoderLayer(ParamFactory& f, const LlamaConfig& c)
      : c_(c),
        frozen_(c.lora.Enabled()),
        input_norm_(*this, f, "input_layernorm", c.width, c.norm_eps, frozen_),
        q_(*this, f, "self_attn.q_proj", c.width, c.heads * c.head_dim, 0.02, c.qkv_bias,
           ProjectionTuning(c.lora, "attn", "q_proj")),
        k_(*this, f, "self_attn.k_proj", c.width, c.kv_heads * c.head_dim, 0.02, c.qkv_bias,
           ProjectionTuning(c.lora, "attn", "k_proj")),
        v_(*this, f, "self_attn.v_proj", c.width, c.kv_heads * c.head_dim, 0.02, c.qkv_bias,
           ProjectionTuning(c.lora, "attn", "v_proj")),
        o_(*this, f, "self_attn.o_proj", c.heads * c.head_dim, c.width, 0.02, c.o_bias,
           ProjectionTuning(c.lora, "attn", "o_proj")),
        post_norm_(*this, f, "post_attention_layernorm", c.width, c.norm_eps, frozen_),
        gate_(*this, f, "mlp.gate_proj", c.width, c.ffn, 0.02, false,
              ProjectionTuning(c.lora, "mlp", "gate_proj")),
        up_(*this, f, "mlp.up_proj", c.width, c.ffn, 0.02, false,
            ProjectionTuning(c.lora, "mlp", "up_proj")),
        down_(*this, f, "mlp.down_proj", c.ffn, c.width, 0.02, false,
              ProjectionTuning(c.lora, "mlp", "down_proj")),
        rotary_(c) {}

  at::Tensor Forward(const at::Tensor& x) override {
    if (group_.size == 1) {
      at::Tensor n = input_norm_(x);
      at::Tensor h = x + o_(Attention(q_(n), k_(n), v_(n)));
      at::Tensor m = post_norm_(h);
      return h + down_(at::silu(gate_(m)) * up_(m));
    }
    at::Tensor n = input_norm_(x);
    at::Tensor entered = EnterGroup(n, group_);
    at::Tensor k = kv_split_ ? k_(entered) : EnterGroup(k_(n), group_);
    at::Tensor v = kv_split_ ? v_(entered) : EnterGroup(v_(n), group_);
    at::Tensor h = x + o_.AddBias(LeaveGroup(o_(Attention(q_(entered), k, v)), group_));
    at::Tensor m = EnterGroup(post_norm_(h), group_);
    return h + LeaveGroup(down_(at::silu(gate_(m)) * up_(m)), group_);
  }

  int64_t TensorParallelParts() const override { return std::gcd(c_.heads, c_.ffn); }

  std::map<std::string, ParamShard> SplitTensorParallel(const TensorGroup& group) override {
    std::map<std::string, ParamShard> shards;
    group_ = group;
    q_.SplitOutputs(group, 1, "self_attn.q_proj", shards);
    kv_split_ = c_.kv_heads % group.size == 0;
    if (kv_split_) {
      k_.SplitOutputs(group, 1, "self_attn.k_proj", shards);
      v_.SplitOutputs(group, 1, "self_attn.v_proj", shards);
    } else {
      // Replicated: the key/value head each of this rank's query heads reads.
      int64_t local = c_.heads / group.size, per_kv = c_.heads / c_.kv_heads;
      kv_of_head_ = (at::arange(local, at::kLong) + group.rank * local).div(per_kv, "floor");
    }
    o_.SplitInputs(group, "self_attn.o_proj", shards);
    gate_.SplitOutputs(group, 1, "mlp.gate_proj", shards);
    up_.SplitOutputs(group, 1, "mlp.up_proj", shards);
    down_.SplitInputs(group, "mlp.down_proj", shards);
    return shards;
  }

 private:
  // Causal grouped-query attention of this rank's query heads; q, k, v
  // [B, T, heads x head_dim] as projected. Returns [B, T, heads x head_dim].
  at::Tensor Attention(const at::Tensor& q_flat, const at::Tensor& k_flat,
                       const at::Tensor& v_flat) const {
    const int64_t batch = q_flat.size(0), tokens = q_flat.size(1), hd = c_.head_dim;
    const int64_t heads = q_flat.size(2) / hd, kv_heads = k_flat.size(2) / hd;
    auto split = [&](const at::Tensor& t, int64_t n) {
      return t.view({batch, tokens, n, hd}).transpose(1, 2);  // [B, n, T, hd]
    };
    at::Tensor q = rotary_(split(q_flat, heads));
    at::Tensor k = rotary_(split(k_flat, kv_heads));
    at::Tensor v = split(v_flat, kv_heads);
    if (kv_of_head_.defined()) {
      at::Tensor index = kv_of_head_.to(k.device());
      k = k.index_select(1, index);
      v = v.index_select(1, index);
    } else if (kv_heads != heads) {
      // Each key/value head serves heads / kv_heads consecutive query heads.
      auto repeat = [&](const at::Tensor& t) {
        return t.unsqueeze(2)
            .expand({batch, kv_heads, heads / kv_heads, tokens, hd})
            .reshape({batch, heads, tokens, hd});
      };
      k = repeat(k);
      v = repeat(v);
    }
#if SATURN_TORCH_AT_LEAST(2, 0)
    at::Tensor mixed = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
    double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    at::Tensor q3 = q.reshape({batch * heads, tokens, hd});
    at::Tensor k3 = k.reshape({batch * heads, tokens, hd});
    at::Tensor v3 = v.reshape({batch * heads, tokens, hd});
    at::Tensor scores = at::baddbmm(mask_.Of(tokens, q3), q3, k3.transpose(1, 2), 1.0, scale);
    at::Tensor mixed = at::bmm(at::softmax(scores, -1), v3).view({batch, heads, tokens, hd});
#endif
    return mixed.transpose(1, 2).reshape({batch, tokens, heads * hd});
  }

  LlamaConfig c_;
  bool frozen_;
  RmsNorm input_norm_;
  Linear q_, k_, v_, o_;
  RmsNorm post_norm_;
  Linear gate_, up_, down_;
  Rotary rotary_;
  TensorGroup group_;
  bool kv_split_ = true;
  at::Tensor kv_of_head_;  // replicated key/value heads: which one each query head reads
  CausalMask mask_;
};

class Embedding final : public Block {
 public:
  Embedding(ParamFactory& f, const LlamaConfig& c) : tokens_(f.Normal({c.vocab, c.width}, 0.02)) {
    Register("embed_tokens.weight", &tokens_, !c.lora.Enabled());
  }
  at::Tensor Forward(const at::Tensor& x) override { return at::embedding(tokens_, x); }

 private:
  at::Tensor tokens_;
};

class Head final : public Block {
 public:
  // `embedding` makes block 0's token embedding again, for a tied head.
  Head(ParamFactory& f, ParamFactory& embedding, const LlamaConfig& c)
      : norm_(*this, f, "norm", c.width, c.norm_eps, c.lora.Enabled()),
        weight_(c.tied ? embedding.Normal({c.vocab, c.width}, 0.02)
                       : f.Normal({c.vocab, c.width}, 0.02)) {
    Register("lm_head.weight", &weight_, !c.lora.Enabled());
  }
  at::Tensor Forward(const at::Tensor& x) override { return at::linear(norm_(x), weight_); }

 private:
  RmsNorm norm_;
  at::Tensor weight_;
};

class Llama final : public Model {
 public:
  Llama(const LlamaConfig& config, uint64_t seed) : c_(config), seed_(seed) {}
  int NumBlocks() const override { return static_cast<int>(c_.layers) + 2; }
  InputShape Input() const override {
    InputShape input;
    input.kind = InputShape::Kind::kTokens;
    input.seq_len = c_.seq_len;
    input.classes = c_.vocab;
    return input;
  }
  double ForwardFlopsPerSample() const override {
    double t = static_cast<double>(c_.seq_len), d = static_cast<double>(c_.width);
    double q = static_cast<double>(c_.heads * c_.head_dim);
    double kv = static_cast<double>(c_.kv_heads * c_.head_dim);
    double ffn = static_cast<double>(c_.ffn);
    double layer = 2.0 * t * (d * q + 2.0 * d * kv + q * d + 3.0 * d * ffn) + 4.0 * t * t * q;
    return static_cast<double>(c_.layers) * layer + 2.0 * t * d * static_cast<double>(c_.vocab);
  }
  std::optional<TransformerShape> Transformer() const override {
    TransformerShape s;
    s.layers = c_.layers;
    s.d_model = c_.width;
    s.heads = c_.heads;
    s.ffn = c_.ffn;
    s.vocab = c_.vocab;
    s.seq_len = c_.seq_len;
    s.q_dim = c_.heads * c_.head_dim;
    s.kv_dim = c_.kv_heads * c_.head_dim;
    s.gated = true;
    return s;
  }
  std::vector<TiedParam> TiedParams() const override {
    if (!c_.tied) return {};
    return {TiedParam{{{0, "embed_tokens.weight"}, {NumBlocks() - 1, "lm_head.weight"}}}};
  }
  // Hugging Face's names, which model.pt keeps too; a tied head is not
  // exported (the embedding is it).
  std::string ExportName(int block, const std::string& name) const override {
    if (block == 0) return "model." + name;
    if (block == NumBlocks() - 1) {
      if (name == "lm_head.weight") return c_.tied ? "" : name;
      return "model." + name;
    }
    return "model.layers." + std::to_string(block - 1) + "." + name;
  }
  std::optional<std::string> InitKeyOf(int block, const std::string& name,
                                       const WeightIndex& index) const override {
    if (EndsWith(name, ".lora_A") || EndsWith(name, ".lora_B") || PackMemberOf(name) >= 0)
      return std::nullopt;
    return Model::InitKeyOf(block, name, index);
  }
  bool IgnorableInitKey(const std::string& key) const override {
    return (c_.tied && key == "lm_head.weight") || EndsWith(key, ".rotary_emb.inv_freq");
  }

 protected:
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    if (index == 0) return std::make_unique<Embedding>(factory, c_);
    if (index == NumBlocks() - 1) {
      ParamFactory embedding(seed_, 0, factory.mode());
      return std::make_unique<Head>(factory, embedding, c_);
    }
    return std::make_unique<DecoderLayer>(factory, c_);
  }
  uint64_t Seed() const override { return seed_; }

 private:
  static bool EndsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  }

  LlamaConfig c_;
  uint64_t seed_;
};

class LlamaFamily final : public ModelFamily {
 public:
  std::string_view Name() const override { return "llama"; }
  std::unique_ptr<Model> Build(const TaskSpec& task) const override {
    return std::make_unique<Llama>(ReadConfig(task), task.seed);
  }

 private:
  static bool Bool(const TaskSpec& task, const JsonFields& fields, const char* key, bool fallback) {
    if (!fields.Has(key)) return fallback;
    const nlohmann::json& value = task.model.at(key);
    if (!value.is_boolean()) fields.Fail(key, "expected true or false, got " + value.dump());
    return value.get<bool>();
  }

  static RopeScaling ReadScaling(const TaskSpec& task, const LlamaPreset* preset) {
    RopeScaling s;
    if (!task.model.contains("rope_scaling") || task.model["rope_scaling"].is_null()) {
      if (preset != nullptr && *preset->rope_scaling.type != '\0') {
        const LlamaRopeScaling& p = preset->rope_scaling;
        s.type = p.type;
        s.factor = p.factor;
        s.low_freq_factor = p.low_freq_factor;
        s.high_freq_factor = p.high_freq_factor;
        s.original_positions = static_cast<double>(p.original_max_position_embeddings);
      }
      return s;
    }
    JsonFields r(task.model.at("rope_scaling"), task.source, "model.rope_scaling");
    s.type = r.String("type");
    if (s.type != "llama3" && s.type != "linear") {
      r.Fail("type", "expected llama3 or linear, got " + Quote(s.type));
    }
    s.factor = r.Number("factor", true);
    if (s.type == "llama3") {
      s.low_freq_factor = r.Number("low_freq_factor", true);
      s.high_freq_factor = r.Number("high_freq_factor", true);
      s.original_positions = r.Number("original_max_position_embeddings", true);
      if (s.high_freq_factor <= s.low_freq_factor) {
        r.Fail("high_freq_factor", "must be above low_freq_factor");
      }
    }
    return s;
  }

  static LlamaConfig ReadConfig(const TaskSpec& task) {
    JsonFields fields(task.model, task.source, "model");
    const LlamaPreset* preset = nullptr;
    if (fields.Has("preset")) {
      preset = FindLlamaPreset(fields.String("preset"));
      if (preset == nullptr) {
        fields.Fail("preset", "unknown; expected one of " + LlamaPresetNames());
      }
    }
    auto size = [&](const char* key, int64_t from_preset, int64_t min) {
      if (preset == nullptr || fields.Has(key)) return fields.Int(key, min);
      return from_preset;
    };
    LlamaConfig c;
    c.layers = size("layers", preset ? preset->layers : 0, 1);
    c.width = size("d_model", preset ? preset->d_model : 0, 1);
    c.heads = size("heads", preset ? preset->heads : 0, 1);
    c.kv_heads = fields.IntOr("kv_heads", preset ? preset->kv_heads : c.heads, 1);
    c.head_dim = fields.IntOr("head_dim", preset ? preset->head_dim : c.width / c.heads, 2);
    c.ffn = size("ffn", preset ? preset->ffn : 0, 1);
    c.vocab = size("vocab", preset ? preset->vocab : 0, 2);
    c.positions = size("positions", preset ? preset->positions : 0, 1);
    c.seq_len = fields.IntOr("seq_len", std::min<int64_t>(c.positions, 2048), 1);
    c.rope_theta = fields.NumberOr("rope_theta", preset ? preset->rope_theta : 10000.0, true);
    c.norm_eps = fields.NumberOr("norm_eps", preset ? preset->norm_eps : 1e-6, true);
    c.tied = Bool(task, fields, "tie_embeddings", preset ? preset->tie_embeddings : false);
    c.qkv_bias = Bool(task, fields, "attention_bias", preset ? preset->attention_bias : false);
    // Hugging Face's Llama and Mistral put attention_bias on all four
    // projections; Qwen2 has q/k/v biases and none on o_proj.
    c.o_bias =
        c.qkv_bias && fields.StringOr("flavor", preset ? preset->flavor : "llama") != "qwen2";
    c.scaling = ReadScaling(task, preset);
    c.lora = task.lora;
    if (c.heads % c.kv_heads != 0) {
      fields.Fail("kv_heads", "must divide heads (" + std::to_string(c.heads) + ")");
    }
    if (c.head_dim % 2 != 0) fields.Fail("head_dim", "must be even (rotary pairs)");
    if (c.seq_len > c.positions) {
      fields.Fail("seq_len", "at most positions (" + std::to_string(c.positions) + ")");
    }
    return c;
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeLlamaFamily() {
  return std::make_unique<LlamaFamily>();
}

}  // namespace saturn::engine
