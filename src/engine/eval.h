// Evaluation on held-out data: the model's mean loss (and, for
// cross-entropy models, accuracy) on batches no training step uses
// (data.h: the held-out split).
//
// Evaluation does not depend on how a technique holds the model: it reads
// whole blocks (from a checkpoint, technique-independent) and runs them
// forward, without gradients, one block at a time on the device: the device
// holds one block's parameters and the evaluation batches' activations at a
// time, beside whatever the trainer keeps. So every technique, plug-ins
// included, evaluates the same way and gets the same numbers (up to
// floating-point order). Technique::Execute calls it at the steps
// ExecuteOptions::eval_every asks for; the worker also times one
// evaluation during a search, so that planning counts its cost.
//
//   std::unique_ptr<Dataset> held_out = MakeEvalDataset(task, model);
//   EvalResult r = Evaluate(ctx, *held_out, task.eval.batches, CheckpointParams(path, model));
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/checkpoint.h"
#include "engine/technique.h"

namespace saturn::engine {

// A block's parameters by slot name ("attn.qkv.weight"), anywhere in memory.
using BlockParamsFn = std::function<NamedTensors(int block)>;

// The first `batches` batches of batch_size samples of `data`, evaluated.
EvalResult Evaluate(const TrainContext& ctx, const Dataset& data, int64_t batches,
                    const BlockParamsFn& params);
// The same on given batches (on the CPU).
EvalResult EvaluateBatches(const TrainContext& ctx, const std::vector<Batch>& batches,
                           const BlockParamsFn& params);

// The parameters of a checkpoint's blocks (checkpoint.h), a LoRA
// checkpoint's frozen base read again from `model`'s (ReadWholeBlock;
// `model` must outlive the function).
BlockParamsFn CheckpointParams(const std::string& checkpoint, const Model& model);
// The model's initial parameters (what a search times evaluation with).
BlockParamsFn InitialParams(const Model& model);

}  // namespace saturn::engine
