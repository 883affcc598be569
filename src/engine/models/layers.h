// Layers shared by the model families, built on ATen ops. Each layer
// registers its parameters in the block that owns it, under a name prefix, so
// that the block's parameter list stays the single source of truth.
//
//   struct MyBlock : Block {
//     Linear fc;
//     MyBlock(ParamFactory& f) : fc(*this, f, "fc", 64, 64) {}
//     at::Tensor Forward(const at::Tensor& x) override { return fc(x).relu(); }
//   };
#pragma once

#include <ATen/ATen.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/pack.h"

namespace saturn::engine {

// How a layer's weights train: all of them (the default), or frozen with
// LoRA adapters on this layer's linear maps (rank > 0), or frozen alone.
struct Tuning {
  bool frozen = false;
  int64_t lora_rank = 0;  // > 0: adapters (frozen must be true)
  double lora_scale = 1.0;
  // A pack's adapters on this map (engine/pack.h): one per member that
  // targets it, each acting on that member's rows only.
  struct PackAdapter {
    int member;
    int64_t rank;
    double scale;
    uint64_t seed;
  };
  std::vector<PackAdapter> pack;

  // A task's tuning of the linear maps of one part ("attn", "mlp") and of
  // everything else (lora_rank 0).
  static Tuning Of(const LoraSpec& lora, const std::string& part);
  static Tuning Frozen(bool frozen) {
    Tuning tuning;
    tuning.frozen = frozen;
    return tuning;
  }
};

// How a linear map keeps its weight: [out, in] as nn.Linear (x W^T), or
// [in, out] as GPT-2's Conv1D (x W), so that GPT-2's pretrained weights
// load without a transpose.
enum class WeightLayout { kOutIn, kInOut };

class Linear {
 public:
  // Weights ~ N(0, std) (std <= 0: PyTorch's default uniform bound 1/sqrt(in)).
  // With LoRA adapters, scale * x A B added, named <name>.lora_A and
  // <name>.lora_B: [rank, in] and [out, rank] for kOutIn (peft's layout:
  // x A^T B^T), [in, rank] and [rank, out] for kInOut (x A B).
  Linear(Block& block, ParamFactory& factory, const std::string& name, int64_t in, int64_t out,
         double std = 0.02, bool bias = true, const Tuning& tuning = {},
         WeightLayout layout = WeightLayout::kOutIn);
  at::Tensor operator()(const at::Tensor& x) const;

  // Tensor parallelism (engine/tensor_parallel.h): keep this rank's slice
  // of the outputs (column-parallel; `groups` equal pieces each sliced, as
  // attention's fused q, k, v) or of the inputs (row-parallel: its output
  // is then a partial sum, and the bias, whole on every rank, is left to
  // AddBias after the sum). Adds the split parameters under `name` to
  // `shards`. Not with LoRA adapters.
  void SplitOutputs(const TensorGroup& group, int64_t groups, const std::string& name,
                    std::map<std::string, ParamShard>& shards);
  void SplitInputs(const TensorGroup& group, const std::string& name,
                   std::map<std::string, ParamShard>& shards);
  at::Tensor AddBias(const at::Tensor& y) const;

 private:
  // A pack's adapters: adds each member's low-rank product of its own rows
  // of `x` (engine/pack.h's active rows) to those rows of y, in place.
  void AddPackDeltas(const at::Tensor& x, at::Tensor& y) const;

  struct MemberAdapter {
    int member;
    at::Tensor a, b;
    double scale;
  };
  WeightLayout layout_;
  at::Tensor weight_;
  at::Tensor bias_;
  at::Tensor lora_a_, lora_b_;
  double lora_scale_ = 0.0;
  std::vector<MemberAdapter> pack_;  // reserved up front: slots point into it
  // How the members of a step's segments batch: by rank, the adapters
  // (indices into pack_) of that rank, their segments' positions and
  // scales ([members, 1, 1]); one entry per set of segments, device and
  // type seen (a pack's steps see one or a few).
  struct RankGroup {
    std::vector<size_t> adapters;
    at::Tensor positions, scales;
    bool whole = false;  // every segment, in order
  };
  struct PackGroups {
    std::vector<int> members;
    at::Device device;
    at::ScalarType dtype;
    std::vector<RankGroup> groups;
  };
  const PackGroups& GroupsFor(const std::vector<PackRows::Segment>& segments,
                              const at::TensorOptions& options) const;
  mutable std::deque<PackGroups> groups_;  // references stay valid as it grows
  bool bias_after_sum_ = false;            // row-parallel: AddBias adds it
};

class LayerNorm {
 public:
  LayerNorm(Block& block, ParamFactory& factory, const std::string& name, int64_t width,
            bool frozen = false);
  at::Tensor operator()(const at::Tensor& x) const;

 private:
  int64_t width_;
  at::Tensor weight_;
  at::Tensor bias_;
};

struct TransformerOptions {
  explicit TransformerOptions(bool causal, LoraSpec lora = {}, bool gelu_tanh = false,
                              WeightLayout layout = WeightLayout::kOutIn)
      : causal(causal), gelu_tanh(gelu_tanh), lora(std::move(lora)), layout(layout) {}
  bool causal;
  // GELU with the tanh approximation (GPT-2's "gelu_new"); exact otherwise.
  bool gelu_tanh;
  LoraSpec lora;        // adapters on "attn" and/or "mlp"; frozen weights otherwise
  WeightLayout layout;  // of the four linear maps
};

// The first block of a language model: token and learned position
// embeddings, summed (the gpt and gpt2 families; they name the two tables
// their own way).
class TokenEmbedding final : public Block {
 public:
  struct Names {
    const char* tokens;
    const char* positions;
  };
  TokenEmbedding(ParamFactory& factory, int64_t vocab, int64_t positions, int64_t width,
                 bool frozen, Names names);
  at::Tensor Forward(const at::Tensor& x) override;

 private:
  at::Tensor tokens_, positions_;
};

// The additive causal mask (0 on and below the diagonal, -inf above) for
// `tokens`, on `like`'s device and dtype: built on first use and kept until
// the length, device or dtype changes. Every causal attention holds one.
class CausalMask {
 public:
  const at::Tensor& Of(int64_t tokens, const at::Tensor& like) const;

 private:
  mutable at::Tensor mask_;
};

// A pre-norm transformer layer: x + attention(ln(x)), then x + mlp(ln(x)).
class TransformerLayer {
 public:
  TransformerLayer(Block& block, ParamFactory& factory, int64_t width, int64_t heads, bool causal);
  TransformerLayer(Block& block, ParamFactory& factory, int64_t width, int64_t heads,
                   const TransformerOptions& options);
  at::Tensor operator()(const at::Tensor& x) const;
  // Forward FLOPs of one sequence of `tokens`.
  static double Flops(int64_t width, int64_t tokens);

  int64_t Heads() const { return heads_; }
  // Tensor parallelism: this rank keeps heads / group.size of the heads
  // (their q, k, v columns and output-projection rows) and as large a slice
  // of the MLP's hidden units; layer norms and the output biases stay whole.
  // Returns the split parameters by name.
  std::map<std::string, ParamShard> Split(const TensorGroup& group);

 private:
  at::Tensor Attention(const at::Tensor& x) const;

  int64_t width_;
  int64_t heads_;
  bool causal_;
  bool gelu_tanh_;
  LayerNorm ln1_;
  Linear qkv_;
  Linear proj_;
  LayerNorm ln2_;
  Linear fc1_;
  Linear fc2_;
  TensorGroup group_;  // size 1 unless split
  CausalMask mask_;
};

// A block that is one transformer layer (the gpt, gpt2 and vit families'
// middle blocks), splittable by tensor parallelism.
class TransformerBlock final : public Block {
 public:
  TransformerBlock(ParamFactory& factory, int64_t width, int64_t heads,
                   const TransformerOptions& options)
      : layer_(*this, factory, width, heads, options) {}
  at::Tensor Forward(const at::Tensor& x) override { return layer_(x); }
  int64_t TensorParallelParts() const override { return layer_.Heads(); }
  std::map<std::string, ParamShard> SplitTensorParallel(const TensorGroup& group) override {
    return layer_.Split(group);
  }

 private:
  TransformerLayer layer_;
};

}  // namespace saturn::engine
