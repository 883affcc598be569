// Trainers that more than one technique builds on. A hybrid technique runs
// ranks as a grid (MakeGridTrainer): `tp` consecutive ranks split every
// transformer layer between them (tensor parallelism, techniques/tp.cc),
// and the ranks at one position of every such group run an outer trainer
// across the groups, data parallelism (tp-ddp) or pipeline stages
// (pipeline-tp), over a subgroup of their own (Communicator::Subgroup).
//
//   // tp-ddp on 8 devices, 4-way tensor parallel, 2 replicas:
//   return MakeGridTrainer(ctx, 4, [&](TrainContext& across, const TensorGroup& tp) {
//     return MakeDdpTrainer(across, knobs, tp);
//   });
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/blocks.h"
#include "engine/technique.h"

namespace saturn::engine {

// single's trainer (techniques/single.cc): every rank trains the whole
// batch through its blocks (WholeBatchStep), split across `tensor_parallel`
// when it has 2 or more ranks (tp's trainer).
std::unique_ptr<Trainer> MakeWholeBatchTrainer(TrainContext& ctx, const MemorySavers& savers,
                                               const TensorGroup& tensor_parallel = {});
// ddp's trainer (techniques/ddp.cc) on ctx.comm's ranks; blocks split across
// `tensor_parallel` when it has 2 or more ranks. Knob: bucket_mb.
std::unique_ptr<Trainer> MakeDdpTrainer(TrainContext& ctx, const Knobs& knobs,
                                        const TensorGroup& tensor_parallel = {});
// pipeline's trainer (techniques/pipeline.cc): one stage per rank of
// ctx.comm. Knobs: micro_batches, partition (measured when absent).
std::unique_ptr<Trainer> MakePipelineTrainer(TrainContext& ctx, const Knobs& knobs,
                                             const TensorGroup& tensor_parallel = {});

// Pipeline partitioning (pipeline.cc): the forward plus backward seconds of
// each block on a micro-batch of `micro_batch` samples (measured on every
// rank of ctx.comm and averaged, so all agree), and the contiguous split of
// such times into `parts` stages that minimises the slowest.
std::vector<double> MeasureBlockTimes(TrainContext& ctx, int64_t micro_batch);
std::vector<int64_t> BalancedPartition(const std::vector<double>& times, int parts);

// The outer trainer of a grid, built on the ranks `across` (their comm is
// the subgroup of this rank's position) with blocks split across `tp`.
using OuterTrainer =
    std::function<std::unique_ptr<Trainer>(TrainContext& across, const TensorGroup& tp)>;
// Ranks r = g * tp + t: group g splits layers `tp` ways; the outer trainer
// runs across the ctx.gpus / tp groups. Collective; tp divides ctx.gpus.
std::unique_ptr<Trainer> MakeGridTrainer(TrainContext& ctx, int tp, const OuterTrainer& outer);

// Why tensor parallelism cannot split `model`'s layers `degree` ways ("the
// model's 6 attention heads do not split evenly across 4 devices"), or "".
std::string TensorParallelUnsupported(const TaskSpec& task, const Model& model, int degree);
// The tensor-parallel degrees of a grid on `gpus` devices with at least
// `min_groups` groups: every degree >= 2 dividing gpus that splits the model.
std::vector<int> GridDegrees(const TaskSpec& task, const Model& model, int gpus, int min_groups);
// The "tp" knob of a grid technique: one of GridDegrees (InputError if not).
int GridDegreeKnob(const TrainContext& ctx, const Knobs& knobs, int min_groups);

}  // namespace saturn::engine
