// ResNet-style image classifier: a 3x3 stem, `blocks` basic residual blocks
// (two 3x3 convolutions) at constant width and resolution, global average
// pooling and a linear head. GroupNorm instead of BatchNorm: batch statistics
// would make the result depend on how a batch is split across devices.
#include <cmath>
#include <memory>

#include "common/error.h"
#include "engine/models/layers.h"

namespace saturn::engine {
namespace {

constexpr int64_t kChannels = 3;
constexpr int64_t kClasses = 10;

struct ResnetConfig {
  int64_t blocks, width, image_size;
  int64_t Groups() const {
    for (int64_t g = 8; g > 1; --g) {
      if (width % g == 0) return g;
    }
    return 1;
  }
};

class Conv {
 public:
  Conv(Block& block, ParamFactory& f, const std::string& name, int64_t in, int64_t out)
      : weight_(f.Normal({out, in, 3, 3}, std::sqrt(2.0 / static_cast<double>(in * 9)))) {
    block.Register(name + ".weight", &weight_);
  }
  at::Tensor operator()(const at::Tensor& x) const {
    return at::conv2d(x, weight_, {}, /*stride=*/1, /*padding=*/1);
  }

 private:
  at::Tensor weight_;
};

class Norm {
 public:
  Norm(Block& block, ParamFactory& f, const std::string& name, const ResnetConfig& c)
      : groups_(c.Groups()), weight_(f.Ones({c.width})), bias_(f.Zeros({c.width})) {
    block.Register(name + ".weight", &weight_);
    block.Register(name + ".bias", &bias_);
  }
  // In the weights' precision (fp32): under bf16 autocast the convolution
  // gives bf16, and normalising in fp32 is what CUDA's autocast does too.
  at::Tensor operator()(const at::Tensor& x) const {
    return at::group_norm(x.to(weight_.scalar_type()), groups_, weight_, bias_, 1e-5);
  }

 private:
  int64_t groups_;
  at::Tensor weight_, bias_;
};

class Stem final : public Block {
 public:
  Stem(ParamFactory& f, const ResnetConfig& c)
      : conv_(*this, f, "conv", kChannels, c.width), norm_(*this, f, "norm", c) {}
  at::Tensor Forward(const at::Tensor& x) override { return at::relu(norm_(conv_(x))); }

 private:
  Conv conv_;
  Norm norm_;
};

class Residual final : public Block {
 public:
  Residual(ParamFactory& f, const ResnetConfig& c)
      : conv1_(*this, f, "conv1", c.width, c.width),
        norm1_(*this, f, "norm1", c),
        conv2_(*this, f, "conv2", c.width, c.width),
        norm2_(*this, f, "norm2", c) {}
  at::Tensor Forward(const at::Tensor& x) override {
    at::Tensor h = at::relu(norm1_(conv1_(x)));
    return at::relu(x + norm2_(conv2_(h)));
  }

 private:
  Conv conv1_;
  Norm norm1_;
  Conv conv2_;
  Norm norm2_;
};

class Head final : public Block {
 public:
  Head(ParamFactory& f, const ResnetConfig& c) : out_(*this, f, "out", c.width, kClasses, -1) {}
  at::Tensor Forward(const at::Tensor& x) override { return out_(x.mean({2, 3})); }

 private:
  Linear out_;
};

class Resnet final : public Model {
 public:
  Resnet(const ResnetConfig& config, uint64_t seed) : config_(config), seed_(seed) {}
  int NumBlocks() const override { return static_cast<int>(config_.blocks) + 2; }
  uint64_t Seed() const override { return seed_; }
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    if (index == 0) return std::make_unique<Stem>(factory, config_);
    if (index == NumBlocks() - 1) return std::make_unique<Head>(factory, config_);
    return std::make_unique<Residual>(factory, config_);
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
    double pixels = static_cast<double>(config_.image_size * config_.image_size);
    double w = static_cast<double>(config_.width);
    return 2.0 * pixels * 9.0 * kChannels * w +
           static_cast<double>(config_.blocks) * 4.0 * pixels * 9.0 * w * w + 2.0 * w * kClasses;
  }

  // stem.*, blocks.<k>.<...>, out.* (saturn_models.ResNet).
  std::string ExportName(int block, const std::string& name) const override {
    if (block == 0) return "stem." + name;
    if (block == NumBlocks() - 1) return name;
    return "blocks." + std::to_string(block - 1) + "." + name;
  }

 private:
  ResnetConfig config_;
  uint64_t seed_;
};

class ResnetFamily final : public ModelFamily {
 public:
  std::string_view Name() const override { return "resnet"; }
  std::unique_ptr<Model> Build(const TaskSpec& task) const override {
    if (task.lora.Enabled()) {
      throw InputError(task.source, 0, "finetune.lora",
                       "LoRA adapts transformer models (gpt, gpt2, vit), not resnet");
    }
    JsonFields fields(task.model, task.source, "model");
    ResnetConfig config{fields.Int("blocks", 1), fields.Int("width", 1),
                        fields.Int("image_size", 1)};
    return std::make_unique<Resnet>(config, task.seed);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeResnetFamily() {
  return std::make_unique<ResnetFamily>();
}

}  // namespace saturn::engine
