// The model zoo's shape: every model is a sequence of blocks.
//
// Techniques never see layers, only blocks: single runs them all on one
// device, pipeline partitions them across devices, fsdp shards each block's
// parameters and gathers one block at a time, spill pages blocks in and out.
// A block maps one tensor to one tensor; the first block takes the model's
// input (tokens, images, vectors), the last gives logits (or, for an mse
// loss, predictions), and Model::LossSum turns them and the targets into the
// summed loss.
//
// Initial values are a pure function of (task seed, block index), so any
// rank can build any block, alone, and get the same numbers: that is what
// makes every technique and device count train the same weights.
//
// User models (models/torchscript.cc) are TorchScript files: their initial
// values come from the file, and a module that is not a sequence of blocks is
// one block that only techniques keeping whole models (single, ddp) train
// (WhyNotSplittable).
//
// Adding a model family: write models/<name>.cc with a ModelFamily subclass,
// and register it in RegisterBuiltinModels (models/builtin.cc).
//
//   const ModelFamily& family = BuiltinModels().Get("gpt");
//   std::unique_ptr<Model> model = family.Build(task);     // InputError on bad fields
//   std::unique_ptr<Block> block = model->BuildBlock(0, /*materialize=*/true);
//   at::Tensor h = block->Forward(tokens);
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry.h"
#include "engine/task.h"

namespace saturn::engine {

// A named parameter slot of a block. Techniques may point the slot at other
// storage (a view of a gathered flat buffer, a device copy); Forward always
// reads the slots.
struct ParamSlot {
  std::string name;  // local to the block, e.g. "attn.qkv.weight"
  at::Tensor* tensor;
};

class Block {
 public:
  virtual ~Block() = default;
  virtual at::Tensor Forward(const at::Tensor& input) = 0;
  const std::vector<ParamSlot>& Params() const { return params_; }
  int64_t ParamCount() const;
  // Adds a parameter slot; blocks and their layers call it while constructing.
  void Register(std::string name, at::Tensor* slot) { params_.push_back({std::move(name), slot}); }

 private:
  std::vector<ParamSlot> params_;
};

// Makes a block's parameters: initialised in host memory from a generator
// seeded by (seed, block index), or, when not materialising, shape-only
// tensors on the meta device (no memory; for sizes and estimates).
class ParamFactory {
 public:
  ParamFactory(uint64_t seed, int block_index, bool materialize);
  at::Tensor Normal(at::IntArrayRef shape, double std);
  at::Tensor Uniform(at::IntArrayRef shape, double bound);
  at::Tensor Zeros(at::IntArrayRef shape);
  at::Tensor Ones(at::IntArrayRef shape);

 private:
  at::Tensor Empty(at::IntArrayRef shape) const;
  bool materialize_;
  at::Generator generator_;
};

// What the data must look like for a model.
struct InputShape {
  // kAny: the model takes whatever its data gives (torchscript models; only
  // data with its own shape, tokens or tensors, can feed them).
  enum class Kind { kTokens, kImage, kVector, kAny } kind = Kind::kTokens;
  int64_t seq_len = 0;   // tokens: inputs [B, T] int64, targets [B, T] (next byte)
  int64_t channels = 0;  // image: inputs [B, C, S, S] float, targets [B] int64
  int64_t image_size = 0;
  int64_t width = 0;    // vector: inputs [B, width] float, targets [B] int64
  int64_t classes = 0;  // image and vector
};

// cross_entropy: logits [..., C] against int64 targets [...];
// mse: predictions against float targets of the same shape.
enum class LossKind { kCrossEntropy, kMse };

class Model {
 public:
  virtual ~Model() = default;
  virtual int NumBlocks() const = 0;
  virtual std::unique_ptr<Block> BuildBlock(int index, bool materialize) const = 0;
  virtual InputShape Input() const = 0;
  // Multiply-add FLOPs (x2) of one sample's forward pass, for utilisation.
  virtual double ForwardFlopsPerSample() const = 0;

  virtual LossKind Loss() const { return LossKind::kCrossEntropy; }
  // Why the model cannot be cut into several blocks, or "" when it can be (or
  // is). Techniques that split a model (pipeline, fsdp, spill) are
  // unsupported when this is not empty.
  virtual std::string WhyNotSplittable() const { return ""; }
  // Checks that data samples fit the model (runs one forward on them, for
  // models whose input shape is only known from the data); InputError naming
  // `where` (the data file) otherwise.
  virtual void CheckData(const at::Tensor& inputs, const at::Tensor& targets,
                         const std::string& where) const;

  // The loss (Loss()) of outputs against targets, summed over the samples
  // (dimension 0) with LossItemsPerSample() terms per sample: when a
  // sample's targets have another number of terms (a torchscript model on
  // sequences), each sample's loss is rescaled to that count, so that the
  // sum divided by (samples x LossItemsPerSample()) is always the mean loss.
  // InputError when the shapes do not fit the loss.
  at::Tensor LossSum(const at::Tensor& outputs, const at::Tensor& targets) const;
  // Loss terms per sample: tokens per sequence for the zoo's language model,
  // otherwise 1.
  int64_t LossItemsPerSample() const;
  // Parameter count of every block, from shape-only blocks (cheap).
  std::vector<int64_t> BlockParamCounts() const;

  // The trained model for users (docs/contracts.md, "A run's folder").
  // ExportName: the key of block `block`'s parameter `name` in model.pt,
  // the name its PyTorch definition gives it (python/saturn_models.py:
  // "layers.0.attn.qkv.weight"; a torchscript module's own names); by
  // default "<block>.<name>".
  virtual std::string ExportName(int block, const std::string& name) const;
  // Writes the trained model in the form the user brought it in, with
  // `params` (keyed by ExportName) as its weights, and returns true; false
  // when the family has no such form (the zoo: model.pt is it).
  virtual bool SaveTrained(const std::vector<std::pair<std::string, at::Tensor>>& params,
                           const std::string& path) const;
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  virtual std::string_view Name() const = 0;
  // Reads and checks the family's fields from task.model (InputError naming
  // the field).
  virtual std::unique_ptr<Model> Build(const TaskSpec& task) const = 0;
};

class ModelRegistry : public Registry<ModelFamily> {
 public:
  ModelRegistry() : Registry("model type", "model.type") {}
};

void RegisterBuiltinModels(ModelRegistry& registry);
const ModelRegistry& BuiltinModels();

// The task's model, built by its family (InputError for an unknown type).
std::unique_ptr<Model> BuildModel(const TaskSpec& task);

}  // namespace saturn::engine
