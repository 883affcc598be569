// What techniques share for holding whole blocks: a BlockSet is a run of
// model blocks [begin, end) with their optimizer state, on the device or in
// host memory, that can run forward, apply the optimizer and read or write
// its part of a checkpoint. Single and ddp hold every block, a pipeline stage
// holds its slice, spill holds all of them in host memory.
//
//   BlockSet blocks(ctx, 0, ctx.model.NumBlocks(), Placement::kDevice);
//   at::Tensor logits = blocks.Forward(batch.inputs);
//   (ctx.model.LossSum(logits, batch.targets) / ctx.LossItems()).backward();
//   blocks.Update(step + 1);   // optimizer, then gradients are zeroed
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/technique.h"

namespace saturn::engine {

enum class Placement { kDevice, kHost };

// Per parameter of a block, its optimizer state slots.
using BlockState = std::vector<std::vector<at::Tensor>>;

class BlockSet {
 public:
  // With a `tensor_parallel` group of 2 or more ranks, every block that
  // splits (Block::TensorParallelParts) is split across it as built, before
  // it is placed and its optimizer state made: this rank holds its slice of
  // those blocks (techniques/tp.cc). Save gathers the slices (collective
  // over the group; the group's rank 0 writes) and Load slices whole
  // tensors, so checkpoints stay whole blocks.
  BlockSet(const TrainContext& ctx, int begin, int end, Placement placement,
           const TensorGroup& tensor_parallel = {});

  int Begin() const { return begin_; }
  int End() const { return end_; }
  Block& At(int index) { return *blocks_[index - begin_]; }
  BlockState& StateOf(int index) { return state_[index - begin_]; }

  at::Tensor Forward(at::Tensor x);
  // Activation checkpointing: from now on Forward keeps only each block's
  // input and recomputes the block's forward pass in backward (RunRecomputed).
  void SetCheckpointing(bool on) { checkpointing_ = on; }
  // Tied copies (Model::TiedParams) that this set holds more than once are
  // one tensor: the later copies' slots point at the first's parameter and
  // optimizer state, so autograd sums their gradients by itself and the
  // model takes its memory once. Copies held elsewhere (another pipeline
  // stage) are the technique's to add: SumTiedGrads makes each copy's
  // gradient the sum of those this set holds (a no-op for shared ones).
  void SumTiedGrads();
  // Whether block `index`'s parameter `p` is a later copy sharing an earlier
  // one's tensor (update it once, reduce it once).
  bool IsSharedCopy(int index, size_t p) const;
  // Applies the optimizer to every parameter that has a gradient, then
  // releases the gradients (kRelease) or zeroes them in place (kZero: for
  // gradients that are views of buffers the technique owns). Clips the
  // gradients first when the optimizer says so (engine/grad_clip.h): their
  // norm adds up over the tensor group and over `other_parts` (a pipeline's
  // stages: ranks holding the model's other blocks; nullptr when this set
  // holds them all, replicas included).
  enum class Grads { kRelease, kZero };
  void Update(int64_t optimizer_step, Grads grads = Grads::kRelease,
              Communicator* other_parts = nullptr);
  void Save(CheckpointWriter& out) const;
  void Load(const CheckpointReader& in);

 private:
  void ShareTiedCopies();
  void ClipGrads(Communicator* other_parts);
  // How checkpoint tensor `name` ("param/<p>" or "<slot>/<p>") of block
  // `index` is split; nullptr when whole.
  const ParamShard* ShardOf(int index, const std::string& name) const;
  at::Tensor Gathered(const at::Tensor& slice, const ParamShard& shard) const;

  const TrainContext& ctx_;
  int begin_, end_;
  bool checkpointing_ = false;
  TensorGroup group_;
  std::vector<std::map<std::string, ParamShard>> shards_;  // per block, by parameter
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<BlockState> state_;
  std::vector<std::pair<int, size_t>> shared_;  // (block, parameter) of later copies
  // (block, parameter) of tied copies whose first copy another set holds
  // (a pipeline stage): that set counts them in a gradient norm.
  std::vector<std::pair<int, size_t>> counted_elsewhere_;
};

// Knobs that trade speed for memory, for techniques that have no such knob
// of their own (Technique::MemorySavingSpace):
//   checkpointing  each block keeps only its input through the forward pass
//                  and runs forward again in backward (about a third more
//                  compute; activations of one block at a time);
//   accumulation   a rank's share of the batch runs as that many chunks, one
//                  after another, whose gradients add up before one update
//                  (activations of one chunk at a time).
struct MemorySavers {
  bool checkpointing = false;
  int64_t accumulation = 1;
  // Reads the knobs; `samples`: the fewest samples a rank trains per step
  // (accumulation may not exceed it: InputError).
  static MemorySavers FromKnobs(const Knobs& knobs, int64_t samples);
};
// `base`'s settings with checkpointing, then with accumulation 2, 4, ... (up
// to `samples`, the fewest samples a rank trains per step; none when
// `accumulation` is false), each with and without checkpointing: in order
// of how much memory they save.
std::vector<Knobs> WithMemorySavers(const std::vector<Knobs>& base, int64_t samples,
                                    bool accumulation);

// One training step on the whole batch, every rank the same (single's; tp's,
// whose blocks split their work inside): forward, loss, backward (in
// `accumulation` chunks), tied copies' gradients summed, optimizer. Returns
// the step's mean loss.
double WholeBatchStep(const TrainContext& ctx, BlockSet& blocks, int64_t step,
                      int64_t accumulation = 1);

// One block's forward pass at the task's precision: for bf16, under autocast
// (matrix multiplies and convolutions in bf16, reductions in fp32) with the
// output returned in fp32, so that block boundaries (pipeline sends, sharded
// and spilled backward passes, checkpointed recomputation) always see fp32.
at::Tensor RunBlock(Block& block, const at::Tensor& x, const TrainContext& ctx);
// RunBlock without keeping the block's activations: backward runs it again
// (with gradients) and back-propagates through that (activation
// checkpointing). The block's parameters get their gradients all the same,
// and the second run replays the device's random state of the first (the
// same dropout masks); running statistics (BatchNorm) update twice, as
// under PyTorch's checkpointing.
at::Tensor RunRecomputed(Block& block, const at::Tensor& x, const TrainContext& ctx);

// Frees a tensor's memory while keeping its storage object, which autograd's
// saved tensors still point at; RefillStorage gives it fresh memory of
// `bytes` (to be written before use). fsdp and spill keep graphs this way
// while parameters are off the device.
void ReleaseStorage(const at::Tensor& tensor);
void RefillStorage(const at::Tensor& tensor, size_t bytes);

// Bytes of parameters, gradients and optimizer state of the whole model
// (gradients and state of its trainable parameters only).
int64_t ModelStateBytes(const TrainContext& ctx);

// Moves a block's parameters to the device as leaves, trainable ones
// requiring gradients.
void BlockToDevice(Block& block, const Device& device);

// The sum of tied copies' gradients, in the order of their copies, so that
// every process adding the same gradients gets the same bits.
at::Tensor SumInOrder(const std::vector<at::Tensor>& grads);

// The checkpoint tensors of one block: "param/<name>" and "<slot>/<name>"
// of its trainable parameters. Frozen ones (a LoRA task's base) are left
// out: the checkpoint names their base instead (checkpoint.h).
NamedTensors BlockTensors(const Block& block, const BlockState& state,
                          const std::vector<std::string>& slots);
// Copies checkpoint tensors into a block's parameters and state, in place;
// a frozen parameter the tensors leave out keeps its value (the base's, as
// the block was built).
void AssignBlockTensors(Block& block, BlockState& state, const std::vector<std::string>& slots,
                        const NamedTensors& tensors, const std::string& where);

// Knob readers: the fallback when absent, InputError naming the knob when
// malformed.
int64_t KnobInt(const Knobs& knobs, const std::string& name, int64_t fallback, int64_t min);
double KnobNumber(const Knobs& knobs, const std::string& name, double fallback);
bool KnobBool(const Knobs& knobs, const std::string& name, bool fallback);

// [begin, end) of part `part` when `total` items split into `parts` nearly
// equal contiguous parts (sizes differ by at most one).
std::pair<int64_t, int64_t> SliceOf(int64_t total, int part, int parts);

}  // namespace saturn::engine
