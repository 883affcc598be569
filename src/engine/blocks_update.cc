// BlockSet's step after the backward pass (engine/blocks.h): gradients
// clipped per model, then each optimizer's parameters stepped and their
// gradients released or zeroed.
#include <ATen/ATen.h>

#include <algorithm>

#include "engine/blocks.h"
#include "engine/grad_clip.h"
#include "engine/phases.h"

namespace saturn::engine {
namespace {

// The most parameter bytes one UpdateMany call steps (engine/optimizer.h):
// a GPU's multi-tensor Adam holds a temporary the size of the chunk (its
// denominators); a LoRA member's adapters take one or two such calls.
constexpr int64_t kUpdateChunkBytes = int64_t{16} << 20;

}  // namespace

void BlockSet::ClipGrads(Communicator* other_parts) {
  GradClip clip(ctx_.optimizer);
  if (!clip.Enabled()) return;
  // Each element once: a split parameter's slices add up over the tensor
  // group, a whole one is the same on each of its ranks; a tied copy is
  // counted by the set that holds its first copy.
  const double whole = 1.0 / static_cast<double>(std::max(1, group_.size));
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const int index = begin_ + static_cast<int>(b);
    const std::vector<ParamSlot>& params = blocks_[b]->Params();
    for (size_t p = 0; p < params.size(); ++p) {
      const at::Tensor& grad = params[p].tensor->grad();
      if (!grad.defined() || IsSharedCopy(index, p)) continue;
      if (std::find(counted_elsewhere_.begin(), counted_elsewhere_.end(),
                    std::make_pair(index, p)) != counted_elsewhere_.end()) {
        continue;
      }
      clip.Add(params[p].name, grad, shards_[b].count(params[p].name) ? 1.0 : whole);
    }
  }
  clip.Reduce(group_.size > 1 ? group_.comm : nullptr);
  clip.Reduce(other_parts);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const std::vector<ParamSlot>& params = blocks_[b]->Params();
    for (size_t p = 0; p < params.size(); ++p) {
      if (!IsSharedCopy(begin_ + static_cast<int>(b), p)) {
        clip.Apply(params[p].name, params[p].tensor->grad());
      }
    }
  }
}

void BlockSet::Update(int64_t optimizer_step, Grads grads, Communicator* other_parts) {
  PhaseScope phase(Phase::kOptimizer);
  ClipGrads(other_parts);
  // Each optimizer (a pack's member's, or the one) steps its parameters
  // in one call (multi-tensor on a GPU: Optimizer::UpdateMany) a chunk of
  // up to kUpdateChunkBytes at a time, bounding the step's temporaries.
  auto step = [&](UpdateBatch& batch) {
    batch.Step(optimizer_step);
    // A released gradient lets the next backward hand its buffer over
    // instead of adding into a zeroed one (one pass less, no memset).
    if (grads == Grads::kRelease) {
      for (at::Tensor& param : batch.params)
        param.mutable_grad() = at::Tensor();
    } else {
      at::_foreach_zero_(batch.grads);
    }
    batch.Clear();
  };
  std::vector<UpdateBatch> batches;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const std::vector<ParamSlot>& params = blocks_[b]->Params();
    for (size_t p = 0; p < params.size(); ++p) {
      at::Tensor& param = *params[p].tensor;
      if (!param.grad().defined() || IsSharedCopy(begin_ + static_cast<int>(b), p)) continue;
      UpdateBatch& batch = BatchOf(batches, ctx_.optimizer.ForParam(params[p].name));
      batch.Add(param, param.grad(), &state_[b][p]);
      if (batch.bytes >= kUpdateChunkBytes) step(batch);
    }
  }
  for (UpdateBatch& batch : batches)
    step(batch);
}

}  // namespace saturn::engine
