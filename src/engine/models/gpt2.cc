// GPT-2 exactly (Radford et al. 2019; Hugging Face's GPT2LMHeadModel): token
// and learned position embeddings, pre-LN blocks with biases (LayerNorm
// epsilon 1e-5), causal attention, an MLP of 4x width with GELU's tanh
// approximation, a final LayerNorm, and a head tied to the token embedding.
// Dropout is left out (every technique computes the same step; Hugging
// Face's 0.1 applies only to its own training).
//
// Fields (defaults: GPT-2 small): layers 12, d_model 768, heads 12, vocab
// 50257, positions 1024 (the position table: n_positions), seq_len =
// positions (training windows; at most positions), and preset small | medium
// | large | xl for the published sizes (other fields override it). init:
// pretrained weights (engine/weights.h): Hugging Face's key layout, with or
// without "transformer.", lm_head.weight
// and the attention-mask buffers (attn.bias, attn.masked_bias) left unread;
// or a finished gpt2 task's model.pt.
//
// Blocks: 0 the embeddings, 1..layers the transformer layers, then the
// final LayerNorm with the head, which holds a copy of the token embedding
// (TiedParams): the copies' gradients are summed, so they stay equal. The
// layers' linear maps keep Conv1D's layout, [in, out] (WeightLayout::kInOut):
// a Hugging Face checkpoint loads straight into them, and model.pt holds
// them so (saturn_models.GPT2 computes x W + b as Conv1D does).
#include <memory>

#include "common/error.h"
#include "common/model_presets.h"
#include "engine/formats/weight_index.h"
#include "engine/models/layers.h"
#include "engine/pack.h"

namespace saturn::engine {
namespace {

struct Gpt2Config {
  int64_t layers, width, heads, vocab, positions, seq_len;
  LoraSpec lora;
};

class Head final : public Block {
 public:
  // `embedding` makes block 0's token embedding again (same generator, same
  // first draw) for the head's copy.
  Head(ParamFactory& f, ParamFactory& embedding, const Gpt2Config& c)
      : norm_(*this, f, "ln", c.width, c.lora.Enabled()),
        tokens_(embedding.Normal({c.vocab, c.width}, 0.02)) {
    Register("tokens.weight", &tokens_, !c.lora.Enabled());
  }
  at::Tensor Forward(const at::Tensor& x) override { return at::linear(norm_(x), tokens_); }

 private:
  LayerNorm norm_;
  at::Tensor tokens_;
};

// Hugging Face's names of our layer's parameters.
const std::pair<const char*, const char*> kHfNames[] = {{"ln1.", "ln_1."},
                                                        {"ln2.", "ln_2."},
                                                        {"attn.qkv.", "attn.c_attn."},
                                                        {"attn.proj.", "attn.c_proj."},
                                                        {"mlp.fc1.", "mlp.c_fc."},
                                                        {"mlp.fc2.", "mlp.c_proj."}};

class Gpt2 final : public Model {
 public:
  Gpt2(const Gpt2Config& config, uint64_t seed) : config_(config), seed_(seed) {}
  int NumBlocks() const override { return static_cast<int>(config_.layers) + 2; }
  InputShape Input() const override {
    InputShape input;
    input.kind = InputShape::Kind::kTokens;
    input.seq_len = config_.seq_len;
    input.classes = config_.vocab;
    return input;
  }
  double ForwardFlopsPerSample() const override {
    double layers = static_cast<double>(config_.layers);
    return layers * TransformerLayer::Flops(config_.width, config_.seq_len) +
           2.0 * static_cast<double>(config_.seq_len * config_.width * config_.vocab);
  }
  std::vector<TiedParam> TiedParams() const override {
    return {TiedParam{{{0, "tokens.weight"}, {NumBlocks() - 1, "tokens.weight"}}}};
  }

  // saturn_models.GPT2: tokens.weight, positions.weight, layers.<k>.<...>,
  // ln.*; the head's copy of the embedding is not exported (tied).
  std::string ExportName(int block, const std::string& name) const override {
    if (block == 0) return name;
    if (block == NumBlocks() - 1) return name == "tokens.weight" ? "" : name;
    return "layers." + std::to_string(block - 1) + "." + name;
  }

  std::optional<std::string> InitKeyOf(int block, const std::string& name,
                                       const WeightIndex& index) const override {
    std::optional<std::string> prefix = HfPrefix(index);
    if (!prefix) return Model::InitKeyOf(block, name, index);  // a model.pt of ours
    const std::string& p = *prefix;
    if (name == "tokens.weight") return p + "wte.weight";
    if (block == 0) return p + "wpe.weight";
    if (block == NumBlocks() - 1) return p + "ln_f." + name.substr(3);  // "ln.weight"
    for (const auto& [ours, theirs] : kHfNames) {
      std::string from(ours);
      if (name.rfind(from, 0) != 0) continue;
      std::string rest = name.substr(from.size());  // weight, bias, lora_A, lora_B
      if (rest == "lora_A" || rest == "lora_B" || PackMemberOf(rest) >= 0) return std::nullopt;
      // The linear maps keep Conv1D's [in, out] layout: read as stored.
      return p + "h." + std::to_string(block - 1) + "." + theirs + rest;
    }
    return std::nullopt;
  }

  bool IgnorableInitKey(const std::string& key) const override {
    auto ends = [&](const std::string& tail) {
      return key.size() >= tail.size() &&
             key.compare(key.size() - tail.size(), tail.size(), tail) == 0;
    };
    return key == "lm_head.weight" || ends(".attn.bias") || ends(".attn.masked_bias");
  }

 protected:
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    if (index == 0) {
      return std::make_unique<TokenEmbedding>(
          factory, config_.vocab, config_.positions, config_.width, config_.lora.Enabled(),
          TokenEmbedding::Names{"tokens.weight", "positions.weight"});
    }
    if (index == NumBlocks() - 1) {
      ParamFactory embedding(seed_, 0, factory.mode());
      return std::make_unique<Head>(factory, embedding, config_);
    }
    return std::make_unique<TransformerBlock>(
        factory, config_.width, config_.heads,
        TransformerOptions(/*causal=*/true, config_.lora, /*gelu_tanh=*/true,
                           WeightLayout::kInOut));
  }
  uint64_t Seed() const override { return seed_; }

 private:
  // "transformer." or "" for a Hugging Face checkpoint, nullopt otherwise.
  static std::optional<std::string> HfPrefix(const WeightIndex& index) {
    if (index.Find("transformer.wte.weight")) return std::string("transformer.");
    if (index.Find("wte.weight")) return std::string();
    return std::nullopt;
  }

  Gpt2Config config_;
  uint64_t seed_;
};

class Gpt2Family final : public ModelFamily {
 public:
  std::string_view Name() const override { return "gpt2"; }
  std::unique_ptr<Model> Build(const TaskSpec& task) const override {
    JsonFields fields(task.model, task.source, "model");
    const Gpt2Preset* preset = FindGpt2Preset(fields.StringOr("preset", "small"));
    if (preset == nullptr) {
      fields.Fail("preset",
                  "expected small, medium, large or xl, got " + Quote(fields.String("preset")));
    }
    Gpt2Config c;
    c.layers = fields.IntOr("layers", preset->layers, 1);
    c.width = fields.IntOr("d_model", preset->d_model, 1);
    c.heads = fields.IntOr("heads", preset->heads, 1);
    c.vocab = fields.IntOr("vocab", kGpt2Vocab, 2);
    c.positions = fields.IntOr("positions", kGpt2Positions, 1);
    c.seq_len = fields.IntOr("seq_len", c.positions, 1);
    c.lora = task.lora;
    if (c.width % c.heads != 0) {
      fields.Fail("d_model", "must be a multiple of heads (" + std::to_string(c.heads) + ")");
    }
    if (c.seq_len > c.positions) {
      fields.Fail("seq_len", "at most positions (" + std::to_string(c.positions) + ")");
    }
    return std::make_unique<Gpt2>(c, task.seed);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeGpt2Family() {
  return std::make_unique<Gpt2Family>();
}

}  // namespace saturn::engine
