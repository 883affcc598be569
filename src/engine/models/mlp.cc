// MLP over vectors of `inputs` features (default: width): `layers` hidden
// blocks (linear + ReLU, the first inputs to width, the others width to
// width) and a linear head to `outputs` (default 10) classes, or with
// loss: mse to `outputs` regression targets. layers: 0 is linear (mse) or
// logistic (cross_entropy) regression: the head alone, inputs to outputs.
#include <memory>

#include "common/error.h"
#include "engine/models/layers.h"

namespace saturn::engine {
namespace {

constexpr int64_t kClasses = 10;

struct MlpShape {
  int64_t layers = 1, width = 1, inputs = 1, outputs = kClasses;
  bool mse = false;
};

class Hidden final : public Block {
 public:
  Hidden(ParamFactory& f, int64_t in, int64_t width) : fc_(*this, f, "fc", in, width, -1) {}
  at::Tensor Forward(const at::Tensor& x) override { return at::relu(fc_(x)); }

 private:
  Linear fc_;
};

class Head final : public Block {
 public:
  Head(ParamFactory& f, int64_t in, int64_t outputs) : out_(*this, f, "out", in, outputs, -1) {}
  at::Tensor Forward(const at::Tensor& x) override { return out_(x); }

 private:
  Linear out_;
};

class Mlp final : public Model {
 public:
  Mlp(MlpShape shape, uint64_t seed) : s_(shape), seed_(seed) {}
  int NumBlocks() const override { return static_cast<int>(s_.layers) + 1; }
  uint64_t Seed() const override { return seed_; }
  std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const override {
    if (index == NumBlocks() - 1)
      return std::make_unique<Head>(factory, s_.layers == 0 ? s_.inputs : s_.width, s_.outputs);
    return std::make_unique<Hidden>(factory, index == 0 ? s_.inputs : s_.width, s_.width);
  }
  InputShape Input() const override {
    InputShape input;
    input.kind = InputShape::Kind::kVector;
    input.width = s_.inputs;
    input.classes = s_.outputs;
    return input;
  }
  LossKind Loss() const override { return s_.mse ? LossKind::kMse : LossKind::kCrossEntropy; }
  double ForwardFlopsPerSample() const override {
    double w = static_cast<double>(s_.width), in = static_cast<double>(s_.inputs);
    double out = static_cast<double>(s_.outputs);
    if (s_.layers == 0) return 2.0 * in * out;
    return 2.0 * in * w + 2.0 * static_cast<double>(s_.layers - 1) * w * w + 2.0 * w * out;
  }

  // layers.<k>.weight / .bias (nn.Linear), out.* (saturn_models.MLP).
  std::string ExportName(int block, const std::string& name) const override {
    if (block == NumBlocks() - 1) return name;
    return "layers." + std::to_string(block) + "." + name.substr(name.find('.') + 1);
  }

 private:
  MlpShape s_;
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
    MlpShape shape;
    shape.layers = fields.IntOr("layers", 1, 0);
    shape.width = shape.layers == 0 ? fields.IntOr("width", 1, 1) : fields.Int("width", 1);
    shape.inputs = fields.IntOr("inputs", shape.width, 1);
    shape.outputs = fields.IntOr("outputs", kClasses, 1);
    std::string loss = fields.StringOr("loss", "cross_entropy");
    if (loss != "cross_entropy" && loss != "mse") {
      fields.Fail("loss", "expected cross_entropy or mse, got " + Quote(loss));
    }
    shape.mse = loss == "mse";
    if (!shape.mse && shape.outputs < 2) {
      fields.Fail("outputs", "a classifier (cross_entropy) needs at least 2 outputs");
    }
    return std::make_unique<Mlp>(shape, task.seed);
  }
};

}  // namespace

std::unique_ptr<ModelFamily> MakeMlpFamily() {
  return std::make_unique<MlpFamily>();
}

}  // namespace saturn::engine
