#include "engine/eval.h"

#include <ATen/core/grad_mode.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/clock.h"
#include "engine/blocks.h"
#include "engine/device.h"

namespace saturn::engine {
namespace {

// The standard error of the mean of `values` (their sample standard
// deviation over sqrt(n)); -1 with fewer than 2.
double StandardErrorOfMean(const std::vector<double>& values) {
  if (values.size() < 2) return -1.0;
  double mean = 0.0, squares = 0.0, k = static_cast<double>(values.size());
  for (double v : values)
    mean += v / k;
  for (double v : values)
    squares += (v - mean) * (v - mean);
  return std::sqrt(squares / (k - 1.0) / k);
}

}  // namespace

EvalResult Evaluate(const TrainContext& ctx, const Dataset& data, int64_t batches,
                    const BlockParamsFn& params) {
  std::vector<Batch> list;
  for (int64_t j = 0; j < batches; ++j)
    list.push_back(data.Samples(j * ctx.task.batch_size, ctx.task.batch_size));
  return EvaluateBatches(ctx, list, params);
}

EvalResult EvaluateBatches(const TrainContext& ctx, const std::vector<Batch>& batches,
                           const BlockParamsFn& params) {
  double start = MonotonicSeconds();
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> h;
  for (const Batch& b : batches)
    h.push_back(ctx.device.Place(b.inputs));
  for (int i = 0; i < ctx.model.NumBlocks(); ++i) {
    std::unique_ptr<Block> block;
    NamedTensors values;
    {
      HostMemoryScope host;
      block = ctx.model.BuildBlockToFill(i);
      values = params(i);
    }
    std::string where = "block " + std::to_string(i);
    for (const ParamSlot& slot : block->Params())
      *slot.tensor = ctx.device.ToDevice(Lookup(values, slot.name, where));
    values.clear();
    for (at::Tensor& x : h)
      x = RunBlock(*block, x, ctx);
  }
  bool classifier = ctx.model.Loss() == LossKind::kCrossEntropy;
  double loss_sum = 0.0;
  int64_t items = 0, hits = 0, total = 0;
  std::vector<double> batch_losses, batch_accuracies;
  for (size_t k = 0; k < batches.size(); ++k) {
    at::Tensor targets = ctx.device.Place(batches[k].targets);
    double sum = ctx.model.LossSum(h[k], targets).item<double>();
    int64_t n = targets.size(0) * ctx.model.LossItemsPerSample();
    loss_sum += sum;
    items += n;
    if (n > 0) batch_losses.push_back(sum / static_cast<double>(n));
    if (classifier && h[k].dim() == targets.dim() + 1) {
      int64_t batch_hits = h[k].argmax(-1).eq(targets).sum().item<int64_t>();
      hits += batch_hits;
      total += targets.numel();
      if (targets.numel() > 0)
        batch_accuracies.push_back(static_cast<double>(batch_hits) /
                                   static_cast<double>(targets.numel()));
    }
  }
  EvalResult result;
  result.loss = items > 0 ? loss_sum / static_cast<double>(items) : 0.0;
  result.accuracy = total > 0 ? static_cast<double>(hits) / static_cast<double>(total) : -1.0;
  result.loss_se = StandardErrorOfMean(batch_losses);
  result.accuracy_se = StandardErrorOfMean(batch_accuracies);
  ctx.device.Synchronize();
  result.seconds = MonotonicSeconds() - start;
  return result;
}

BlockParamsFn CheckpointParams(const std::string& checkpoint, const Model& model) {
  auto reader = std::make_shared<CheckpointReader>(checkpoint);
  CheckFrozenBase(*reader, model, reader->Meta().seed);
  return [reader, &model](int block) {
    NamedTensors out;
    for (auto& [name, tensor] : ReadWholeBlock(*reader, model, block)) {
      if (name.rfind("param/", 0) == 0) out.emplace_back(name.substr(6), tensor);
    }
    return out;
  };
}

BlockParamsFn InitialParams(const Model& model) {
  return [&model](int index) {
    std::unique_ptr<Block> block = model.BuildBlock(index, /*materialize=*/true);
    NamedTensors out;
    for (const ParamSlot& slot : block->Params())
      out.emplace_back(slot.name, *slot.tensor);
    return out;
  };
}

}  // namespace saturn::engine
