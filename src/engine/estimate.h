// Analytic estimates of a technique's training step (Technique::Estimate):
// what Search would measure — each device's peak memory and the step
// time — computed from the model's shape instead of run, for trials that
// cannot run where Saturn profiles (an 8B model on a small machine) or that
// the user asks to estimate (`saturn profile --estimate`).
//
// Memory, per device, as the engine keeps it (docs/estimates.md):
//   parameters fp32 (frozen LoRA base included), the optimizer's state
//   slots fp32 (AdamW: 2) for the trainable ones, and their fp32 gradients
//   (ddp and fsdp keep them; single, tp and pipeline release them after
//   each update, so one block's is counted at the peak);
//   activations a transformer layer keeps from forward to backward, per
//   token: in fp32 its input, the residual and the two norms' outputs (and
//   the norms' normalised inputs where their weights train); at the task's
//   precision (2 bytes bf16, 4 fp32) the rotated q, the (grouped-query
//   heads repeated) k and v, the attention's output and the copy o_proj
//   reads, the MLP's 4 x ffn (gate, up, silu, product), under bf16 the 5
//   bf16 copies of the norms' outputs the projections read and a bf16 copy
//   of the layer's weights; with LibTorch before 2.0 the attention
//   probabilities (heads x seq_len per token; 2.0's fused attention keeps
//   none); the head's norm and its fp32 logits, log-softmax and their
//   gradient (12 bytes x vocab per token). Activation checkpointing keeps
//   each layer's input and one layer's activations.
// Time: forward FLOPs (Model::ForwardFlopsPerSample) x samples x passes
// (1 forward + 1 for input gradients + the trainable share for weight
// gradients, + 1 forward again with checkpointing) over the device's peak
// x efficiency (DeviceRate), plus communication at the link's bandwidth:
// ring all-reduce 2 (n-1)/n x bytes, all-gather and reduce-scatter
// (n-1)/n x bytes, pipeline sends; pipeline steps stretch by GPipe's
// bubble, (m + p - 1) / m.
//
//   Estimator est(ctx);                       // ctx: EstimateContext
//   if (!est.Unsupported().empty()) ...;      // not a transformer
//   EstimateSetting s;
//   s.peak_bytes = {est.StateBytes(0, est.Blocks()) + est.ActivationBytes(0, est.Blocks(), 8,
//   false)}; s.step_s = est.ComputeSeconds(8, false); SearchResult r = est.Pick({s});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/technique.h"

namespace saturn::engine {

// One knob setting as estimated.
struct EstimateSetting {
  Knobs knobs = Knobs::object();
  std::vector<int64_t> peak_bytes;      // per device
  std::vector<int64_t> resident_bytes;  // per device: parameters, gradients, state
  double compute_s = 0.0;
  double comm_s = 0.0;
  double step_s = 0.0;  // compute_s + comm_s unless the technique says otherwise
};

class Estimator {
 public:
  explicit Estimator(const EstimateContext& ctx);

  // Why this task cannot be estimated ("no analytic model for vit models:
  // ..."), or "" when it can.
  const std::string& Unsupported() const { return unsupported_; }
  const EstimateContext& Context() const { return ctx_; }
  const TransformerShape& Shape() const { return *shape_; }
  // Infeasible, with Unsupported() as the reason.
  SearchResult NotEstimated() const;
  int Blocks() const { return static_cast<int>(params_.size()); }
  bool IsLayer(int block) const;
  int64_t BatchSize() const { return ctx_.task.batch_size; }

  // Bytes of parameters, gradients and optimizer state of blocks [begin,
  // end), each block's cut into `shards` (fsdp) and each layer's into
  // `tp` (tensor parallelism: embedding and head stay whole).
  // `grads` false: without gradients (techniques that release them after
  // each update; their peak has one block's, LargestTrainable).
  int64_t StateBytes(int begin, int end, int shards = 1, int tp = 1, bool grads = true) const;
  // Parameters (all, trainable) of the largest block.
  int64_t LargestBlockParams() const;
  int64_t LargestBlockTrainable() const;
  int64_t LargestTrainable(int begin, int end) const;
  int64_t TotalParams() const;
  int64_t TotalTrainable() const;
  // Bytes blocks [begin, end) keep from forward to backward for `samples`
  // samples (the head's transient logits and gradients included when the
  // range holds it), layers split `tp` ways.
  int64_t ActivationBytes(int begin, int end, double samples, bool checkpointing, int tp = 1) const;
  // A batch's inputs and targets (int64 tokens).
  int64_t DataBytes(double samples) const;
  // Forward FLOPs of one sample in each block.
  std::vector<double> BlockFlops() const;
  // Seconds of compute for `samples` samples, `share` of the model's FLOPs
  // on this device.
  double ComputeSeconds(double samples, bool checkpointing, double share = 1.0) const;
  // Communication seconds of `bytes` per device among `n` devices.
  double AllReduceSeconds(double bytes, int n) const;
  double GatherSeconds(double bytes, int n) const;  // all-gather or reduce-scatter
  double SendSeconds(double bytes) const;
  // A block boundary's bytes per sample (fp32 hidden states).
  double BoundaryBytes() const;
  // Bytes of one activation element at the task's precision.
  int ActivationElementBytes() const { return bf16_ ? 2 : 4; }

  // The result Search would give among `settings` (in Search's order):
  // the fastest that fits every device, else infeasible with the reason of
  // the one closest to fitting. Every setting is a candidate.
  SearchResult Pick(const std::vector<EstimateSetting>& settings) const;

 private:
  int64_t LayerBytesPerToken(int tp) const;
  int64_t HeadBytesPerToken() const;
  int64_t LayerWeightCopyBytes(int tp) const;
  std::string Describe() const;

  const EstimateContext& ctx_;
  std::string unsupported_;
  std::optional<TransformerShape> shape_;
  std::vector<int64_t> params_, trainable_;  // per block, tied copies once
  bool bf16_ = false;
  bool norms_train_ = false;
};

// Settings with checkpointing and accumulation (blocks.h's MemorySavers) of
// a technique whose step runs `samples` samples per rank, in Search's
// order: plain, then checkpointing, then accumulation 2, 4, ... each
// without and with checkpointing.
struct SaverSetting {
  bool checkpointing = false;
  int64_t accumulation = 1;
  Knobs Apply(Knobs knobs) const;
};
std::vector<SaverSetting> SaverSettings(int64_t samples, bool accumulation);

// single's estimate, and tp's with its layers split `tp` ways (every rank
// the whole batch; two all-reduces of the activations per layer forward,
// two backward).
SearchResult EstimateWholeBatch(const EstimateContext& ctx, int tp);

}  // namespace saturn::engine
