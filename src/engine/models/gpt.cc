// GPT-style decoder over bytes: embedding, `layers` causal transformer
// layers, and a head predicting the next byte (vocabulary 256).
#include <memory>

#include "engine/models/layers.h"

namespace saturn::engine {
namespace {

constexpr int64_t kVocab = 256;

struct GptConfig {
  int64_t layers, width, heads, seq_len;
  LoraSpec lora;  // frozen but for the adapters of the layers
};

class Head final : public Block {
 public:
  Head(ParamFactory& f, const GptConfig& c)
      : norm_(*this, f, "ln", c.width, c.lora.Enabled()),
        out_(*this, f, "out", c.width, kVocab, 0.02, true, Tuning::Frozen(c.lora.Enabled())) {}
  at::Tensor Forward(const at::Tensor& x) override { return out_(norm_(x)); }

 private:
  LayerNorm norm_;
  Linear out_;
};

class Gpt final : public Model {
 public:
  Gpt(const GptConfig& config, uint64_t seed) : config_(config), seed_(seed) {}
  int NumBlocks() const override { return static_cast<int>(config_.layers) + 2; }
  uint64_t Seed() const override { return seed_; }
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    if (index == 0) {
      return std::make_unique<TokenEmbedding>(factory, kVocab, config_.seq_len, config_.width,
                                              config_.lora.Enabled(),
                                              TokenEmbedding::Names{"tokens", "positions"});
    }
    if (index == NumBlocks() - 1) return std::make_unique<Head>(factory, config_);
    return std::make_unique<TransformerBlock>(factory, config_.width, config_.heads,
                                              TransformerOptions(/*causal=*/true, config_.lora));
  }
  InputShape Input() const override {
    InputShape input;
    input.kind = InputShape::Kind::kTokens;
    input.seq_len = config_.seq_len;
    input.classes = kVocab;
    return input;
  }
  double ForwardFlopsPerSample() const override {
    double layers = static_cast<double>(config_.layers);
    return layers * TransformerLayer::Flops(config_.width, config_.seq_len) +
           2.0 * static_cast<double>(config_.seq_len * config_.width * kVocab);
  }

  // tokens.weight, positions, layers.<k>.<...>, ln.*, out.* (saturn_models.GPT).
  std::string ExportName(int block, const std::string& name) const override {
    if (block == 0) return name == "tokens" ? "tokens.weight" : name;
    if (block == NumBlocks() - 1) return name;
    return "layers." + std::to_string(block - 1) + "." + name;
  }

 private:
  GptConfig config_;
  uint64_t seed_;
};

class GptFamily final : public ModelFamily {
 public:
  std::string_view Name() const override { return "gpt"; }
  std::unique_ptr<Model> Build(const TaskSpec& task) const override {
    JsonFields fields(task.model, task.source, "model");
    GptConfig config{fields.Int("layers", 1), fields.Int("d_model", 1), fields.Int("heads", 1),
                     fields.Int("seq_len", 1), task.lora};
    if (config.width % config.heads != 0) {
      fields.Fail("d_model", "must be a multiple of heads (" + std::to_string(config.heads) + ")");
    }
    return std::make_unique<Gpt>(config, task.seed);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeGptFamily() {
  return std::make_unique<GptFamily>();
}

}  // namespace saturn::engine
