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
// makes every technique and device count train the same weights. A model
// that starts from pretrained weights (model.init, engine/weights.h) reads
// each block's values from that file as the block is built, so any rank
// still builds any block alone, and holds only the blocks it builds.
//
// Tied parameters (GPT-2's token embedding, which its head reuses) are
// copies held by several blocks (TiedParams): they start equal, and every
// technique sums their gradients before the optimizer (blocks.h,
// SumTiedGrads), so they stay equal.
//
// Frozen parameters (a LoRA task's base weights) take no gradient and no
// optimizer state; adapters (LoRA's A and B) train (ParamSlot).
//
// User models (models/torchscript.cc) are TorchScript files: their initial
// values come from the file, and a module that is not a sequence of blocks is
// one block that only techniques keeping whole models (single, ddp) train
// (WhyNotSplittable).
//
// Adding a model family: write models/<name>.cc with a ModelFamily subclass
// and a Model whose MakeBlock builds its blocks, and register it in
// RegisterBuiltinModels (models/builtin.cc).
//
//   const ModelFamily& family = BuiltinModels().Get("gpt");
//   std::unique_ptr<Model> model = family.Build(task);     // InputError on bad fields
//   std::unique_ptr<Block> block = model->BuildBlock(0, /*materialize=*/true);
//   at::Tensor h = block->Forward(tokens);
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/registry.h"
#include "engine/task.h"

namespace saturn::engine {
class Communicator;
class PretrainedWeights;
struct WeightIndex;
}  // namespace saturn::engine

namespace saturn::engine {

// A named parameter slot of a block. Techniques may point the slot at other
// storage (a view of a gathered flat buffer, a device copy); Forward always
// reads the slots.
struct ParamSlot {
  std::string name;  // local to the block, e.g. "attn.qkv.weight"
  at::Tensor* tensor;
  bool trainable = true;  // false: frozen, no gradient, no optimizer state
  bool adapter = false;   // a LoRA adapter (trainable; never in pretrained weights)
};

// Tensor parallelism (techniques/tp.cc): the ranks that split a block's
// work, and how one parameter is split among them. A split parameter is
// `groups` equal pieces along `dim` (3 for attention's fused q, k, v; else
// 1), each cut into `size` contiguous slices; rank r keeps slice r of every
// piece.
struct TensorGroup {
  Communicator* comm = nullptr;
  int rank = 0;
  int size = 1;
};
struct ParamShard {
  int64_t dim = 0;
  int64_t groups = 1;
};

class Block {
 public:
  virtual ~Block() = default;
  virtual at::Tensor Forward(const at::Tensor& input) = 0;
  // Tensor parallelism. The number of equal parts (attention heads) the
  // block's work splits into, so it splits across any group size dividing
  // it; 0: it does not split (it then runs whole on every rank).
  virtual int64_t TensorParallelParts() const { return 0; }
  // Splits the block across `group` in place: its parameters become this
  // rank's slices and Forward computes its share, joining the others' with
  // the group's collectives. Returns the split parameters by name; the rest
  // stay whole (identical on every rank).
  virtual std::map<std::string, ParamShard> SplitTensorParallel(const TensorGroup& group);
  const std::vector<ParamSlot>& Params() const { return params_; }
  int64_t ParamCount() const;
  // Parameters that take gradients.
  int64_t TrainableCount() const;
  // Adds a parameter slot; blocks and their layers call it while constructing.
  void Register(std::string name, at::Tensor* slot, bool trainable = true, bool adapter = false) {
    params_.push_back({std::move(name), slot, trainable, adapter});
  }

 private:
  std::vector<ParamSlot> params_;
};

// Makes a block's parameters: initialised in host memory from a generator
// seeded by (seed, block index), or, when not materialising, shape-only
// tensors on the meta device (no memory; for sizes and estimates), or
// allocated but left unset for pretrained weights to fill (kEmpty).
// Adapters (LoRA) draw from a generator of their own, so that adding them
// leaves the other parameters' initial values as they were, and are always
// initialised: pretrained weights do not hold them.
class ParamFactory {
 public:
  enum class Mode { kShapes, kRandom, kEmpty };
  ParamFactory(uint64_t seed, int block_index, Mode mode);
  ParamFactory(uint64_t seed, int block_index, bool materialize)
      : ParamFactory(seed, block_index, materialize ? Mode::kRandom : Mode::kShapes) {}
  at::Tensor Normal(at::IntArrayRef shape, double std);
  at::Tensor Uniform(at::IntArrayRef shape, double bound);
  at::Tensor Zeros(at::IntArrayRef shape);
  at::Tensor Ones(at::IntArrayRef shape);
  at::Tensor AdapterUniform(at::IntArrayRef shape, double bound);
  // ... from pack member `member`'s own generator of its seed's adapters:
  // the same values as that seed's task alone draws, in the same order.
  // One generator per member, not per seed: members without model.init
  // share one seed, and each must draw as if it were alone.
  at::Tensor AdapterUniform(at::IntArrayRef shape, double bound, uint64_t seed, int member);
  at::Tensor AdapterZeros(at::IntArrayRef shape);
  // Whether tensors are real (kRandom, kEmpty) rather than shapes only.
  bool Materializes() const { return mode_ != Mode::kShapes; }
  Mode mode() const { return mode_; }

 private:
  at::Tensor Empty(at::IntArrayRef shape) const;
  bool Fills() const { return mode_ == Mode::kRandom; }
  Mode mode_;
  uint64_t seed_;
  int block_index_;
  at::Generator generator_;
  at::Generator adapter_generator_;                 // made on first use
  std::map<int, at::Generator> member_generators_;  // a pack's, by member
};

// A parameter held by several blocks: (block, slot name) of each copy. The
// first copy is the one model.pt exports.
struct TiedParam {
  std::vector<std::pair<int, std::string>> copies;
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

// The shape of a decoder-only transformer (an embedding block, `layers`
// equal layer blocks, a head block), as a family that is one says of itself
// for analytic estimates (engine/estimate.h).
struct TransformerShape {
  int64_t layers = 0, d_model = 0, heads = 0, ffn = 0, vocab = 0, seq_len = 0;
  int64_t q_dim = 0;   // heads x head_dim
  int64_t kv_dim = 0;  // key/value heads x head_dim (q_dim without grouped-query attention)
  bool gated = false;  // SwiGLU MLP (gate, up, down) rather than two maps
};

// cross_entropy: logits [..., C] against int64 targets [...];
// mse: predictions against float targets of the same shape.
enum class LossKind { kCrossEntropy, kMse };

class Model {
 public:
  virtual ~Model();
  virtual int NumBlocks() const = 0;
  // Block `index` with its initial values (materialize: in host memory;
  // otherwise shape-only): MakeBlock's, or, for a model with pretrained
  // weights, the file's.
  std::unique_ptr<Block> BuildBlock(int index, bool materialize) const;
  // A block whose values the caller sets at once (evaluation, from a
  // checkpoint): allocated, neither initialised nor read from pretrained
  // weights.
  std::unique_ptr<Block> BuildBlockToFill(int index) const;
  virtual InputShape Input() const = 0;
  // Multiply-add FLOPs (x2) of one sample's forward pass, for utilisation.
  virtual double ForwardFlopsPerSample() const = 0;
  // The model as a decoder-only transformer (block 0 the embedding, blocks
  // 1..layers the layers, the last the head), for analytic estimates;
  // nullopt when it is not one (the default).
  virtual std::optional<TransformerShape> Transformer() const { return std::nullopt; }

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
  // ... of the trainable parameters only (all of them unless frozen).
  std::vector<int64_t> BlockTrainableCounts() const;

  // Copies of one parameter in several blocks (see above); none by default.
  virtual std::vector<TiedParam> TiedParams() const { return {}; }

  // Pretrained weights (model.init): attached by BuildModel once checked
  // against the whole model (PretrainedWeights: every parameter the model
  // reads is there with its shape, nothing is left over).
  void SetInit(std::shared_ptr<const PretrainedWeights> init) { init_ = std::move(init); }
  const PretrainedWeights* Init() const { return init_.get(); }
  // The key under which `index` keeps block `block`'s parameter `name`
  // (stored as the model holds it); nullopt when the parameter keeps its
  // initial values. By default `index` is Saturn's
  // model.pt (ExportName's keys; a tied copy reads the first copy's). An
  // adapter the file lacks keeps its initial values.
  virtual std::optional<std::string> InitKeyOf(int block, const std::string& name,
                                               const WeightIndex& index) const;
  // Keys of a weights file the model may leave unread (GPT-2's causal-mask
  // buffers and its tied lm_head.weight); the rest must all be read.
  virtual bool IgnorableInitKey(const std::string&) const { return false; }

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
  // Whether SaveTrained writes anything (so that exports of the zoo's models
  // never hold all of their parameters at once).
  virtual bool HasTrainedForm() const { return false; }

 protected:
  // The family's blocks, from `factory` (which knows whether to initialise,
  // only allocate or only shape them).
  virtual std::unique_ptr<Block> MakeBlock(int index, ParamFactory& factory) const = 0;
  // The seed of initial values (the task's).
  virtual uint64_t Seed() const = 0;

 private:
  std::shared_ptr<const PretrainedWeights> init_;
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
