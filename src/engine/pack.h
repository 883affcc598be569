// Packs: several LoRA tasks over one frozen base, trained as one task.
//
// A pack's members share a base model (the same model object, pretrained
// `init` or, without one, the same seed, and the same precision) and each
// brings its own adapters, data, batch size, learning rate and other
// hyper-parameters of its optimizer type, seed and steps. One step sends
// every member's samples of that step through the base in one pass, the
// members' rows one after another (member 0's batch first); each adapted
// linear map adds each member's low-rank product to that member's rows only
// (Linear in models/layers.h: batched per rank where the members' rows are
// equal, a loop over their segments otherwise), so the base is held and run
// once for all.
//
// The pack is an ordinary task to the techniques (its batch is the members'
// batches together; its model has every member's adapters, named
// "<map>.lora_A@<k>" for member k), which is why the techniques that only
// ever see a step's samples through TrainContext::StepSamples train packs
// unchanged (single, ddp, fsdp, spill; pipeline activates each
// micro-batch's rows on every stage: Technique::TakesPacks). What makes a
// member train exactly as it would alone:
//   - its loss is its own mean: Model::LossSum weights each member's rows by
//     (pack batch / member batch), so the pack's mean loss is the sum of the
//     members' mean losses and each member's adapters get the gradient of
//     its own mean (the base is frozen, and rows do not mix in a
//     transformer), and PackRows records each member's summed loss;
//   - its adapters start as its task alone would start them (drawn from its
//     own seed's generator, in the same order), and its optimizer steps them
//     with its own hyper-parameters (PackOptimizer, Optimizer::ForParam);
//   - its samples of pack step s are the samples of its step s alone
//     (PackDataset).
//
//   TaskSpec pack = PackTasks({a, b, c}, "pack.json");   // task.h; InputError if they cannot share
//   std::unique_ptr<Model> model = BuildModel(pack);     // every member's adapters
//   std::unique_ptr<Dataset> data = MakeDataset(pack, *model);  // activates PackRows
//   std::unique_ptr<Optimizer> opt = MakeTaskOptimizer(pack);
//   ... technique.Execute(...) ...; ActivePackRows()->TakeMemberLosses() each step.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/optimizer.h"
#include "engine/task.h"

namespace saturn::engine {

class Dataset;
class Device;
class Model;

// Which member each sample of a pack's step belongs to, for the layers and
// the loss. The samples of one step are the members' batches one after
// another; a technique works on a slice [offset, offset + count) of them at
// a time (a rank's share, an accumulation chunk), which fetching it
// activates (PackDataset).
class PackRows {
 public:
  explicit PackRows(std::vector<int64_t> batch_sizes);

  int64_t Members() const { return static_cast<int64_t>(sizes_.size()); }
  // The rows of a step now: the batch sizes of the members still in.
  int64_t BatchSize() const { return total_; }
  // The rows of a step when every member was in: how far apart two steps'
  // samples are numbered (TrainContext::StepSamples).
  int64_t Stride() const { return stride_; }
  int64_t SizeOf(int member) const { return sizes_[static_cast<size_t>(member)]; }  // its batch
  int64_t StartOf(int member) const { return starts_[static_cast<size_t>(member)]; }
  // Member `member` has trained its last step: from the next step on the
  // step's rows are the others' (one after another, as before), so the
  // rest step faster, and its optimizer no longer steps its adapters
  // (MakeTaskOptimizer's). Its samples, adapters and state stay as they were.
  void Leave(int member);
  bool HasLeft(int member) const { return left_[static_cast<size_t>(member)]; }
  // The samples [offset, offset + count) of a step go through the model next.
  void Activate(int64_t offset, int64_t count);
  struct Segment {
    int member;
    int64_t begin, count;  // rows of the activated tensor
  };
  // The active samples' members as segments of a tensor of `rows` rows (the
  // samples, or samples x tokens when flattened).
  std::vector<Segment> Segments(int64_t rows) const;
  // The loss summed over the active samples with each member's samples
  // weighted by (pack batch / member batch), from each sample's summed loss
  // [samples]; adds each member's (unweighted) sum to its running total.
  at::Tensor WeightedLossSum(const at::Tensor& per_sample);
  // Each member's summed loss since the last call, then zeroed.
  std::vector<double> TakeMemberLosses();

 private:
  void Layout();
  std::vector<int64_t> sizes_, starts_;
  std::vector<bool> left_;
  int64_t total_ = 0, stride_ = 0;
  int64_t offset_ = 0, count_ = 0;
  std::vector<double> sums_;
};

// The pack being trained in this process (one at most), or nullptr.
PackRows* ActivePackRows();
void SetActivePackRows(PackRows* rows);

// A pack's data: each member's samples of each step, one member after
// another, from its own dataset. Activates its PackRows while it lives.
std::unique_ptr<Dataset> MakePackDataset(const TaskSpec& pack, const Model& model);

// The task's optimizer: MakeOptimizer's, or for a pack one that steps each
// member's adapters with that member's optimizer.
std::unique_ptr<Optimizer> MakeTaskOptimizer(const TaskSpec& task);

// The member (k) of a pack's parameter slot named "...@k"; -1 otherwise.
int PackMemberOf(const std::string& slot_name);

// Member `m`'s checkpoint, exactly as its task alone would have written it
// at the same step (its adapters and their optimizer state under their own
// names, its data cursor, batch size, seed, finetune and base), from the
// pack's checkpoint `pack`, written into `dir` (checkpoint-<step>/); returns
// its path. `member_model` is BuildModel(pack.pack[m]); `loss` the member's
// last loss. What makes a member leave a pack, or a pack split, at any
// checkpoint with nothing lost: the member resumes from it alone (or in
// another pack) as from its own.
std::string WriteMemberCheckpoint(const std::string& pack_checkpoint, const TaskSpec& pack, int m,
                                  const Model& member_model, double loss, const std::string& dir,
                                  const Device& device);

// The inverse: the pack's checkpoint at `step` made from its members' own,
// `member_checkpoints[m]` (as WriteMemberCheckpoint, or member m's task
// alone, wrote it at that step), written into `dir` (checkpoint-<step>/);
// returns its path. What lets members that trained apart at the same step
// (a pack split, stopped or killed after members left) go on as one pack
// with nothing lost. `pack_model` is BuildModel(pack). InputError naming a
// member's checkpoint that is of another step, task or base.
std::string WritePackCheckpoint(const std::vector<std::string>& member_checkpoints,
                                const TaskSpec& pack, const Model& pack_model, int64_t step,
                                const std::string& dir, const Device& device);

}  // namespace saturn::engine
