// MLP classifier over vectors of `width` features: `layers` hidden blocks
// (linear + ReLU, width to width) and a linear head to 10 classes.
#include <memory>

#include "common/error.h"
#include "engine/models/layers.h"

namespace saturn::engine {
namespace {

constexpr int64_t kClasses = 10;

class Hidden final : public Block {
 public:
  Hidden(ParamFactory& f, int64_t width) : fc_(*this, f, "fc", width, width, -1) {}
  at::Tensor Forward(const at::Tensor& x) override { return at::relu(fc_(x)); }

 private:
  Linear fc_;
};

class Head final : public Block {
 public:
  Head(ParamFactory& f, int64_t width) : out_(*this, f, "out", width, kClasses, -1) {}
  at::Tensor Forward(const at::Tensor& x) override { return out_(x); }

 private:
  Linear out_;
};

class Mlp final : public Model {
 public:
  Mlp(int64_t layers, int64_t width, uint64_t seed) : layers_(layers), width_(width), seed_(seed) {}
  int NumBlocks() const override { return static_cast<int>(layers_) + 1; }
  uint64_t Seed() const override { return seed_; }
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    if (index == NumBlocks() - 1) return std::make_unique<Head>(factory, width_);
    return std::make_unique<Hidden>(factory, width_);
  }
  InputShape Input() const override {
    InputShape input;
    input.kind = InputShape::Kind::kVector;
    input.width = width_;
    input.classes = kClasses;
    return input;
  }
  double ForwardFlopsPerSample() const override {
    double w = static_cast<double>(width_);
    return 2.0 * static_cast<double>(layers_) * w * w + 2.0 * w * kClasses;
  }

  // layers.<k>.weight / .bias (nn.Linear), out.* (saturn_models.MLP).
  std::string ExportName(int block, const std::string& name) const override {
    if (block == NumBlocks() - 1) return name;
    return "layers." + std::to_string(block) + "." + name.substr(name.find('.') + 1);
  }

 private:
  int64_t layers_, width_;
  uint64_t seed_;
};

class MlpFamily final : public ModelFamily {
 public:
  std::string_view Name() const override { return "mlp"; }
  std::unique_ptr<Model> Build(const TaskSpec& task) const override {
    if (task.lora.Enabled()) {
      throw InputError(task.source, 0, "finetune.lora",
                       "LoRA adapts transformer models (gpt, gpt2, vit), not mlp");
    }
    JsonFields fields(task.model, task.source, "model");
    return std::make_unique<Mlp>(fields.Int("layers", 1), fields.Int("width", 1), task.seed);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeMlpFamily() {
  return std::make_unique<MlpFamily>();
}

}  // namespace saturn::engine
