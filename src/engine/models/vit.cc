// ViT-style image classifier: patches embedded by one linear map, a class
// token, `layers` bidirectional transformer layers, a linear head on the
// class token.
#include <memory>

#include "engine/models/layers.h"

namespace saturn::engine {
namespace {

constexpr int64_t kChannels = 3;
constexpr int64_t kClasses = 10;

struct VitConfig {
  int64_t layers, width, heads, image_size, patch;
  LoraSpec lora;  // the embeddings and layers frozen but for the adapters; the head trains
  int64_t Patches() const { return (image_size / patch) * (image_size / patch); }
};

class PatchEmbedding final : public Block {
 public:
  PatchEmbedding(ParamFactory& f, const VitConfig& c)
      : config_(c),
        project_(*this, f, "patch", kChannels * c.patch * c.patch, c.width, 0.02, true,
                 Tuning::Frozen(c.lora.Enabled())),
        cls_(f.Normal({1, 1, c.width}, 0.02)),
        positions_(f.Normal({c.Patches() + 1, c.width}, 0.02)) {
    Register("cls", &cls_, !c.lora.Enabled());
    Register("positions", &positions_, !c.lora.Enabled());
  }
  at::Tensor Forward(const at::Tensor& images) override {
    int64_t batch = images.size(0), grid = config_.image_size / config_.patch, p = config_.patch;
    at::Tensor patches = images.reshape({batch, kChannels, grid, p, grid, p})
                             .permute({0, 2, 4, 1, 3, 5})
                             .reshape({batch, grid * grid, kChannels * p * p});
    at::Tensor tokens = at::cat({cls_.expand({batch, 1, config_.width}), project_(patches)}, 1);
    return tokens + positions_;
  }

 private:
  VitConfig config_;
  Linear project_;
  at::Tensor cls_, positions_;
};

class Head final : public Block {
 public:
  Head(ParamFactory& f, const VitConfig& c)
      : norm_(*this, f, "ln", c.width), out_(*this, f, "out", c.width, kClasses) {}
  at::Tensor Forward(const at::Tensor& x) override { return out_(norm_(x.select(1, 0))); }

 private:
  LayerNorm norm_;
  Linear out_;
};

class Vit final : public Model {
 public:
  Vit(const VitConfig& config, uint64_t seed) : config_(config), seed_(seed) {}
  int NumBlocks() const override { return static_cast<int>(config_.layers) + 2; }
  uint64_t Seed() const override { return seed_; }
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    if (index == 0) return std::make_unique<PatchEmbedding>(factory, config_);
    if (index == NumBlocks() - 1) return std::make_unique<Head>(factory, config_);
    return std::make_unique<TransformerBlock>(factory, config_.width, config_.heads,
                                              TransformerOptions(/*causal=*/false, config_.lora));
  }
  InputShape Input() const override {
    InputShape input;
    input.kind = InputShape::Kind::kImage;
    input.channels = kChannels;
    input.image_size = config_.image_size;
    input.classes = kClasses;
    return input;
  }
  double ForwardFlopsPerSample() const override {
    int64_t tokens = config_.Patches() + 1;
    double embed = 2.0 * static_cast<double>(config_.Patches() * kChannels * config_.patch *
                                             config_.patch * config_.width);
    return embed +
           static_cast<double>(config_.layers) * TransformerLayer::Flops(config_.width, tokens) +
           2.0 * static_cast<double>(config_.width * kClasses);
  }

  // patch.*, cls, positions, layers.<k>.<...>, ln.*, out.* (saturn_models.ViT).
  std::string ExportName(int block, const std::string& name) const override {
    if (block == 0 || block == NumBlocks() - 1) return name;
    return "layers." + std::to_string(block - 1) + "." + name;
  }

 private:
  VitConfig config_;
  uint64_t seed_;
};

class VitFamily final : public ModelFamily {
 public:
  std::string_view Name() const override { return "vit"; }
  std::unique_ptr<Model> Build(const TaskSpec& task) const override {
    JsonFields fields(task.model, task.source, "model");
    VitConfig config{fields.Int("layers", 1),     fields.Int("d_model", 1), fields.Int("heads", 1),
                     fields.Int("image_size", 1), fields.Int("patch", 1),   task.lora};
    if (config.width % config.heads != 0) {
      fields.Fail("d_model", "must be a multiple of heads (" + std::to_string(config.heads) + ")");
    }
    if (config.image_size % config.patch != 0) {
      fields.Fail("patch", "must divide image_size (" + std::to_string(config.image_size) + ")");
    }
    return std::make_unique<Vit>(config, task.seed);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeVitFamily() {
  return std::make_unique<VitFamily>();
}

}  // namespace saturn::engine
