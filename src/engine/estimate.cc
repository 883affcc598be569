#include "engine/estimate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/format.h"
#include "engine/blocks.h"
#include "engine/torch_version.h"

namespace saturn::engine {
namespace {

// The attention keeps its probabilities (heads x seq_len per token) where
// the engine computes it step by step (LibTorch before 2.0: models/llama.cc).
#if SATURN_TORCH_AT_LEAST(2, 0)
constexpr bool kAttentionKeepsProbabilities = false;
#else
constexpr bool kAttentionKeepsProbabilities = true;
#endif

// A checkpoint's bytes are written at about this rate (a local SSD).
constexpr double kCheckpointBytesPerS = 2e9;

std::string Tflops(double flops) {
  return FormatFixed(flops / 1e12, flops >= 1e14 ? 0 : 1) + " TFLOP/s";
}

}  // namespace

Knobs SaverSetting::Apply(Knobs knobs) const {
  if (checkpointing || accumulation > 1) knobs["checkpointing"] = checkpointing;
  if (accumulation > 1) knobs["accumulation"] = accumulation;
  return knobs;
}

std::vector<SaverSetting> SaverSettings(int64_t samples, bool accumulation) {
  std::vector<SaverSetting> out{{false, 1}, {true, 1}};
  for (int64_t chunks = 2; accumulation && chunks <= samples; chunks *= 2) {
    out.push_back({false, chunks});
    out.push_back({true, chunks});
  }
  return out;
}

Estimator::Estimator(const EstimateContext& ctx)
    : ctx_(ctx), shape_(ctx.model.Transformer()), bf16_(ctx.task.precision == "bf16") {
  if (!shape_) {
    unsupported_ = "no analytic model for " + ctx.task.model_type +
                   " models (estimates know decoder-only transformers: llama)";
    return;
  }
  params_ = ctx.model.BlockParamCounts();
  trainable_ = ctx.model.BlockTrainableCounts();
  // Tied copies held together are one tensor (blocks.h): the later copies'
  // blocks hold no memory of their own for them.
  for (const TiedParam& tied : ctx.model.TiedParams()) {
    std::unique_ptr<Block> block = ctx.model.BuildBlock(tied.copies[0].first, false);
    for (const ParamSlot& slot : block->Params()) {
      if (slot.name != tied.copies[0].second) continue;
      for (size_t c = 1; c < tied.copies.size(); ++c) {
        params_[tied.copies[c].first] -= slot.tensor->numel();
        if (slot.trainable) trainable_[tied.copies[c].first] -= slot.tensor->numel();
      }
    }
  }
  // A norm whose weight trains keeps its normalised input for the weight's
  // gradient (a LoRA task's norms are frozen).
  norms_train_ = trainable_[1] > 0 && !ctx.task.lora.Enabled();
}

bool Estimator::IsLayer(int block) const {
  return block >= 1 && block <= shape_->layers;
}

int64_t Estimator::StateBytes(int begin, int end, int shards, int tp, bool grads) const {
  const int64_t per_trainable =
      (grads ? 1 : 0) + static_cast<int64_t>(ctx_.optimizer.Slots().size());
  int64_t elements = 0;
  for (int b = begin; b < end; ++b) {
    int ways = shards * (IsLayer(b) ? tp : 1);
    elements +=
        (params_[b] + ways - 1) / ways + per_trainable * ((trainable_[b] + ways - 1) / ways);
  }
  return 4 * elements;
}

int64_t Estimator::LargestBlockParams() const {
  return *std::max_element(params_.begin(), params_.end());
}
int64_t Estimator::LargestBlockTrainable() const {
  return LargestTrainable(0, Blocks());
}
int64_t Estimator::LargestTrainable(int begin, int end) const {
  return *std::max_element(trainable_.begin() + begin, trainable_.begin() + end);
}
int64_t Estimator::TotalParams() const {
  return std::accumulate(params_.begin(), params_.end(), int64_t{0});
}
int64_t Estimator::TotalTrainable() const {
  return std::accumulate(trainable_.begin(), trainable_.end(), int64_t{0});
}

// What one layer keeps per token (module comment), its width parts split
// `tp` ways.
int64_t Estimator::LayerBytesPerToken(int tp) const {
  const TransformerShape& s = *shape_;
  const int64_t a = ActivationElementBytes();
  // Input, residual, the two norms' outputs (and their normalised inputs
  // where the norms' weights train).
  int64_t fp32 = (norms_train_ ? 6 : 4) * s.d_model;
  int64_t attention_in = s.q_dim + 2 * (s.kv_dim < s.q_dim ? s.q_dim : s.kv_dim);
  int64_t precision = (attention_in + 2 * s.q_dim + (s.gated ? 4 : 2) * s.ffn) / tp;
  if (bf16_) precision += (s.gated ? 5 : 2) * s.d_model;
  if (kAttentionKeepsProbabilities) precision += s.heads / tp * s.seq_len;
  return 4 * fp32 + a * precision;
}

// The head's norm, then the fp32 logits, the loss's log-softmax and the
// gradient backward makes of them (12 bytes a word, at either precision).
int64_t Estimator::HeadBytesPerToken() const {
  const TransformerShape& s = *shape_;
  return 8 * s.d_model + (bf16_ ? 2 * s.d_model : 0) + 12 * s.vocab;
}

// Under bf16 every matrix a layer multiplies with is cast to bf16, and the
// casts stay until backward has used them.
int64_t Estimator::LayerWeightCopyBytes(int tp) const {
  if (!bf16_) return 0;
  return 2 * params_[1] / tp;
}

int64_t Estimator::ActivationBytes(int begin, int end, double samples, bool checkpointing,
                                   int tp) const {
  const double tokens = samples * static_cast<double>(shape_->seq_len);
  const double layer = tokens * static_cast<double>(LayerBytesPerToken(tp)) +
                       static_cast<double>(LayerWeightCopyBytes(tp));
  double bytes = 0.0;
  int layers = 0;
  for (int b = begin; b < end; ++b) {
    if (!IsLayer(b)) continue;
    ++layers;
    // Checkpointing keeps each layer's input; one layer's activations live
    // while it is recomputed.
    bytes += checkpointing ? tokens * BoundaryBytes() / shape_->seq_len : layer;
  }
  if (checkpointing && layers > 0) bytes += layer;
  if (end == Blocks()) {
    bytes += tokens * static_cast<double>(HeadBytesPerToken());
    if (bf16_) bytes += 2.0 * static_cast<double>(shape_->vocab * shape_->d_model);
  }
  return static_cast<int64_t>(bytes);
}

int64_t Estimator::DataBytes(double samples) const {
  return static_cast<int64_t>(samples * static_cast<double>(shape_->seq_len) * 16.0);
}

double Estimator::BoundaryBytes() const {
  return 4.0 * static_cast<double>(shape_->seq_len * shape_->d_model);
}

std::vector<double> Estimator::BlockFlops() const {
  const double total = ctx_.model.ForwardFlopsPerSample();
  const double head = 2.0 * static_cast<double>(shape_->seq_len * shape_->d_model * shape_->vocab);
  std::vector<double> flops(Blocks(), 0.0);
  for (int b = 0; b < Blocks(); ++b) {
    if (IsLayer(b)) flops[b] = (total - head) / static_cast<double>(shape_->layers);
  }
  flops.back() = head;
  return flops;
}

double Estimator::ComputeSeconds(double samples, bool checkpointing, double share) const {
  // Forward, input gradients, weight gradients of the trainable share;
  // forward again under checkpointing.
  double trainable = static_cast<double>(TotalTrainable()) / static_cast<double>(TotalParams());
  double passes = 2.0 + trainable + (checkpointing ? 1.0 : 0.0);
  double flops = ctx_.model.ForwardFlopsPerSample() * samples * passes * share;
  return flops / (ctx_.rate.peak_flops * ctx_.rate.efficiency);
}

double Estimator::AllReduceSeconds(double bytes, int n) const {
  if (n <= 1) return 0.0;
  return 2.0 * (n - 1) / n * bytes / ctx_.rate.link_bytes_s;
}

double Estimator::GatherSeconds(double bytes, int n) const {
  if (n <= 1) return 0.0;
  return static_cast<double>(n - 1) / n * bytes / ctx_.rate.link_bytes_s;
}

double Estimator::SendSeconds(double bytes) const {
  return bytes / ctx_.rate.link_bytes_s;
}

std::string Estimator::Describe() const {
  std::string links =
      ctx_.gpus > 1 ? ", links " + FormatFixed(ctx_.rate.link_bytes_s / 1e9, 0) + " GB/s" : "";
  return "analytic: " + Tflops(ctx_.rate.peak_flops) + " x " +
         FormatFixed(ctx_.rate.efficiency, 2) + links;
}

SearchResult Estimator::NotEstimated() const {
  SearchResult result;
  result.reason = unsupported_;
  return result;
}

SearchResult EstimateWholeBatch(const EstimateContext& ctx, int tp) {
  Estimator est(ctx);
  if (!est.Unsupported().empty()) return est.NotEstimated();
  const TransformerShape& shape = est.Shape();
  const int n = est.Blocks();
  const double batch = static_cast<double>(est.BatchSize());
  // Gradients are released after each update: one block's at the peak.
  const int64_t state = est.StateBytes(0, n, 1, tp, /*grads=*/false);
  const int64_t peak_state = state + 4 * est.LargestTrainable(0, n);
  // Layers split, embedding and head computed whole on every rank.
  std::vector<double> flops = est.BlockFlops();
  double total = std::accumulate(flops.begin(), flops.end(), 0.0);
  double share = (flops.back() + (total - flops.back()) / tp) / total;
  const double activation =
      batch * static_cast<double>(shape.seq_len * shape.d_model) * est.ActivationElementBytes();
  std::vector<EstimateSetting> settings;
  for (const SaverSetting& saver : SaverSettings(est.BatchSize(), /*accumulation=*/true)) {
    EstimateSetting s;
    s.knobs = saver.Apply(Knobs::object());
    int64_t peak = peak_state + est.DataBytes(batch) +
                   est.ActivationBytes(0, n, batch / static_cast<double>(saver.accumulation),
                                       saver.checkpointing, tp);
    s.peak_bytes.assign(static_cast<size_t>(ctx.gpus), peak);
    s.resident_bytes.assign(static_cast<size_t>(ctx.gpus), state);
    s.compute_s = est.ComputeSeconds(batch, saver.checkpointing, share);
    double all_reduces = static_cast<double>(shape.layers) * (saver.checkpointing ? 6 : 4);
    s.comm_s = all_reduces * est.AllReduceSeconds(activation, tp);
    s.step_s = s.compute_s + s.comm_s;
    settings.push_back(std::move(s));
  }
  return est.Pick(settings);
}

SearchResult Estimator::Pick(const std::vector<EstimateSetting>& settings) const {
  SearchResult result;
  result.estimated = Describe();
  const EstimateSetting* best = nullptr;
  const EstimateSetting* closest = nullptr;
  for (const EstimateSetting& s : settings) {
    int64_t peak = *std::max_element(s.peak_bytes.begin(), s.peak_bytes.end());
    bool fits = ctx_.capacity_bytes <= 0 || peak <= ctx_.capacity_bytes;
    nlohmann::json candidate = {{"knobs", s.knobs}, {"peak_memory_bytes", peak}};
    if (fits) {
      candidate["step_s"] = s.step_s;
      if (!best || s.step_s < best->step_s) best = &s;
    } else {
      candidate["reason"] = "out of memory: needs " + FormatBytes(peak) + " per device, has " +
                            FormatBytes(ctx_.capacity_bytes) + " (estimated)";
      int64_t closest_peak =
          closest ? *std::max_element(closest->peak_bytes.begin(), closest->peak_bytes.end()) : 0;
      if (!closest || peak < closest_peak) closest = &s;
    }
    result.candidates.push_back(candidate);
  }
  const EstimateSetting* chosen = best ? best : closest;
  if (!chosen) return result;
  result.feasible = best != nullptr;
  result.knobs = chosen->knobs;
  result.step_s = chosen->step_s;
  result.peak_memory_bytes = chosen->peak_bytes;
  result.resident_bytes = chosen->resident_bytes;
  result.stats = {{"estimate", {{"compute_s", chosen->compute_s}, {"comm_s", chosen->comm_s}}}};
  const int64_t per_trainable = 1 + static_cast<int64_t>(ctx_.optimizer.Slots().size());
  result.checkpoint_s =
      4.0 * static_cast<double>(TotalTrainable() * per_trainable) / kCheckpointBytesPerS;
  if (!best) {
    for (const nlohmann::json& c : result.candidates)
      if (c["knobs"] == chosen->knobs) result.reason = c["reason"].get<std::string>();
  }
  return result;
}

}  // namespace saturn::engine
