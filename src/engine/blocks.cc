#include "engine/blocks.h"

#include <ATen/autocast_mode.h>

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>

#include "common/error.h"
#include "engine/grad_clip.h"
#include "engine/phases.h"
#include "engine/tensor_parallel.h"
#include "engine/torch_version.h"

namespace saturn::engine {

int64_t ModelStateBytes(const TrainContext& ctx) {
  int64_t params = 0, trainable = 0;
  for (int64_t count : ctx.model.BlockParamCounts())
    params += count;
  for (int64_t count : ctx.model.BlockTrainableCounts())
    trainable += count;
  // Tied copies held together are one tensor (BlockSet shares them).
  for (const TiedParam& tied : ctx.model.TiedParams()) {
    std::unique_ptr<Block> block = ctx.model.BuildBlock(tied.copies[0].first, false);
    for (const ParamSlot& slot : block->Params()) {
      if (slot.name != tied.copies[0].second) continue;
      int64_t extra = slot.tensor->numel() * static_cast<int64_t>(tied.copies.size() - 1);
      params -= extra;
      if (slot.trainable) trainable -= extra;
    }
  }
  return static_cast<int64_t>(sizeof(float)) *
         (params + trainable * (1 + static_cast<int64_t>(ctx.optimizer.Slots().size())));
}

void BlockToDevice(Block& block, const Device& device) {
  for (const ParamSlot& slot : block.Params()) {
    *slot.tensor = device.ToDevice(*slot.tensor).requires_grad_(slot.trainable);
  }
}

at::Tensor SumInOrder(const std::vector<at::Tensor>& grads) {
  at::NoGradGuard no_grad;
  at::Tensor total = grads.at(0).clone();
  for (size_t i = 1; i < grads.size(); ++i)
    total.add_(grads[i]);
  return total;
}

BlockSet::BlockSet(const TrainContext& ctx, int begin, int end, Placement placement,
                   const TensorGroup& tensor_parallel)
    : ctx_(ctx), begin_(begin), end_(end), group_(tensor_parallel) {
  for (int i = begin; i < end; ++i) {
    std::unique_ptr<Block> block = ctx.model.BuildBlock(i, /*materialize=*/true);
    shards_.push_back(group_.size > 1 ? block->SplitTensorParallel(group_)
                                      : std::map<std::string, ParamShard>{});
    BlockState state;
    if (placement == Placement::kDevice) {
      BlockToDevice(*block, ctx.device);
      for (const ParamSlot& slot : block->Params()) {
        state.push_back(slot.trainable ? ctx.optimizer.NewState(*slot.tensor)
                                       : std::vector<at::Tensor>{});
      }
    } else {
      HostMemoryScope host;
      for (const ParamSlot& slot : block->Params()) {
        state.push_back(slot.trainable ? ctx.optimizer.NewState(*slot.tensor)
                                       : std::vector<at::Tensor>{});
      }
    }
    blocks_.push_back(std::move(block));
    state_.push_back(std::move(state));
  }
  ShareTiedCopies();
}

void BlockSet::ShareTiedCopies() {
  for (const TiedParam& tied : ctx_.model.TiedParams()) {
    std::pair<int, size_t> first{-1, 0};
    // The set holding the first copy counts the group in a gradient norm.
    const bool first_elsewhere = !tied.copies.empty() && (tied.copies.front().first < begin_ ||
                                                          tied.copies.front().first >= end_);
    for (const auto& [index, name] : tied.copies) {
      if (index < begin_ || index >= end_) continue;
      const std::vector<ParamSlot>& params = At(index).Params();
      for (size_t p = 0; p < params.size(); ++p) {
        if (params[p].name != name) continue;
        if (first_elsewhere) counted_elsewhere_.push_back({index, p});
        if (first.first < 0) {
          first = {index, p};
          continue;
        }
        *params[p].tensor = *At(first.first).Params()[first.second].tensor;
        StateOf(index)[p] = StateOf(first.first)[first.second];
        shared_.push_back({index, p});
      }
    }
  }
}

bool BlockSet::IsSharedCopy(int index, size_t p) const {
  return std::find(shared_.begin(), shared_.end(), std::make_pair(index, p)) != shared_.end();
}

namespace {

// bf16 autocast on the device's kind for one scope, as torch.autocast does:
// the previous state comes back afterwards, and leaving the outermost scope
// drops the cast weights it cached (the optimizer changes them in place).
// LibTorch 2.4 replaced the per-backend calls (is_cpu_enabled,
// set_autocast_gpu_dtype, ...) with calls taking the device type; the old
// ones still exist there but print a deprecation warning on every call.
class AutocastScope {
 public:
  AutocastScope(bool enable, bool cuda) : enable_(enable), cuda_(cuda) {
    if (!enable_) return;
    was_enabled_ = IsEnabled();
    was_dtype_ = Dtype();
    SetDtype(at::kBFloat16);
    SetEnabled(true);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!enable_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    SetEnabled(was_enabled_);
    SetDtype(was_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
#if SATURN_TORCH_AT_LEAST(2, 4)
  at::DeviceType Type() const {
    return cuda_ ? at::kCUDA : at::kCPU;
  }
  bool IsEnabled() const {
    return at::autocast::is_autocast_enabled(Type());
  }
  at::ScalarType Dtype() const {
    return at::autocast::get_autocast_dtype(Type());
  }
  void SetEnabled(bool on) const {
    at::autocast::set_autocast_enabled(Type(), on);
  }
  void SetDtype(at::ScalarType dtype) const {
    at::autocast::set_autocast_dtype(Type(), dtype);
  }
#else
  bool IsEnabled() const {
    return cuda_ ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
  }
  at::ScalarType Dtype() const {
    return cuda_ ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
  }
  void SetEnabled(bool on) const {
    cuda_ ? at::autocast::set_enabled(on) : at::autocast::set_cpu_enabled(on);
  }
  void SetDtype(at::ScalarType dtype) const {
    cuda_ ? at::autocast::set_autocast_gpu_dtype(dtype)
          : at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif

  bool enable_, cuda_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace

at::Tensor RunBlock(Block& block, const at::Tensor& x, const TrainContext& ctx) {
  PhaseScope phase(Phase::kForward);
  if (ctx.task.precision != "bf16") return block.Forward(x);
  at::Tensor y;
  {
    AutocastScope autocast(true, ctx.device.IsCuda());
    y = block.Forward(x);
  }
  if (y.scalar_type() == at::kBFloat16 || y.scalar_type() == at::kHalf) y = y.to(at::kFloat);
  return y;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Generator GeneratorOf(const TrainContext& ctx) {
  return at::globalContext().defaultGenerator(ctx.device.TorchDevice());
}

// Forward without a graph; backward runs the block again with one and
// back-propagates through it, which also gives the parameters (leaves)
// their gradients. `anchor` (requires grad) makes the output require
// gradients when the input does not (token ids into the first block).
struct Recompute : torch::autograd::Function<Recompute> {
  static at::Tensor forward(AutogradContext* actx, const at::Tensor& x, const at::Tensor& anchor,
                            int64_t block, int64_t ctx) {
    const TrainContext& train = *reinterpret_cast<const TrainContext*>(ctx);
    actx->saved_data["block"] = block;
    actx->saved_data["ctx"] = ctx;
    // The random state the block sees, so that its second run draws the
    // same numbers (dropout in a TorchScript model).
    actx->saved_data["rng"] = GeneratorOf(train).get_state();
    actx->save_for_backward({x});
    (void)anchor;
    return RunBlock(*reinterpret_cast<Block*>(block), x, train);
  }
  static variable_list backward(AutogradContext* actx, variable_list grads) {
    at::Tensor x = actx->get_saved_variables()[0];
    bool needs = x.is_floating_point() && actx->needs_input_grad(0);
    at::Tensor input = x.detach().requires_grad_(needs);
    const TrainContext& train =
        *reinterpret_cast<const TrainContext*>(actx->saved_data["ctx"].toInt());
    at::Generator generator = GeneratorOf(train);
    at::Tensor now = generator.get_state();
    generator.set_state(actx->saved_data["rng"].toTensor());
    at::Tensor y;
    {
      at::AutoGradMode grad(true);
      y = RunBlock(*reinterpret_cast<Block*>(actx->saved_data["block"].toInt()), input, train);
    }
    generator.set_state(now);
    if (y.requires_grad()) torch::autograd::backward({y}, {grads[0]});
    return {needs ? input.grad() : at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor RunRecomputed(Block& block, const at::Tensor& x, const TrainContext& ctx) {
  // Never destroyed: a static tensor could outlive LibTorch's allocator.
  static const at::Tensor* anchor = new at::Tensor(at::zeros({}, at::kFloat).requires_grad_(true));
  return Recompute::apply(x, *anchor, reinterpret_cast<int64_t>(&block),
                          reinterpret_cast<int64_t>(&ctx));
}

double WholeBatchStep(const TrainContext& ctx, BlockSet& blocks, int64_t step,
                      int64_t accumulation) {
  double loss_sum = 0.0;
  // A pack whose members left may have fewer rows than chunks.
  const int64_t chunks = std::min(accumulation, ctx.BatchSize());
  for (int64_t k = 0; k < chunks; ++k) {
    auto [begin, end] = SliceOf(ctx.BatchSize(), static_cast<int>(k), static_cast<int>(chunks));
    Batch batch = ctx.StepSamples(step, begin, end - begin);
    at::Tensor loss = ctx.model.LossSum(blocks.Forward(batch.inputs), batch.targets) /
                      static_cast<double>(ctx.LossItems());
    {
      PhaseScope phase(Phase::kBackward);
      loss.backward();
    }
    loss_sum += loss.item<double>();
  }
  blocks.SumTiedGrads();
  blocks.Update(step + 1);
  return loss_sum;
}

MemorySavers MemorySavers::FromKnobs(const Knobs& knobs, int64_t samples) {
  MemorySavers savers;
  savers.checkpointing = KnobBool(knobs, "checkpointing", false);
  savers.accumulation = KnobInt(knobs, "accumulation", 1, 1);
  if (savers.accumulation > samples) {
    throw InputError("", 0, "--knobs",
                     "accumulation: at most the samples each device trains per step (" +
                         std::to_string(samples) + ")");
  }
  return savers;
}

std::vector<Knobs> WithMemorySavers(const std::vector<Knobs>& base, int64_t samples,
                                    bool accumulation) {
  std::vector<Knobs> space;
  for (int64_t chunks = 1; chunks == 1 || (accumulation && chunks <= samples); chunks *= 2) {
    for (bool checkpointing : {false, true}) {
      if (chunks == 1 && !checkpointing) continue;
      for (Knobs knobs : base) {
        knobs["checkpointing"] = checkpointing;
        if (chunks > 1) knobs["accumulation"] = chunks;
        space.push_back(std::move(knobs));
      }
    }
  }
  return space;
}

at::Tensor BlockSet::Forward(at::Tensor x) {
  for (auto& block : blocks_)
    x = checkpointing_ ? RunRecomputed(*block, x, ctx_) : RunBlock(*block, x, ctx_);
  return x;
}

void BlockSet::SumTiedGrads() {
  at::NoGradGuard no_grad;
  for (const TiedParam& tied : ctx_.model.TiedParams()) {
    std::vector<at::Tensor> grads;
    for (const auto& [index, name] : tied.copies) {
      if (index < begin_ || index >= end_) continue;
      const std::vector<ParamSlot>& params = At(index).Params();
      for (size_t p = 0; p < params.size(); ++p) {
        if (params[p].name == name && params[p].tensor->grad().defined() &&
            !IsSharedCopy(index, p)) {
          grads.push_back(params[p].tensor->grad());
        }
      }
    }
    if (grads.size() < 2) continue;
    at::Tensor total = SumInOrder(grads);
    for (at::Tensor& grad : grads)
      grad.copy_(total);
  }
}

void BlockSet::Save(CheckpointWriter& out) const {
  std::vector<std::string> slots = ctx_.optimizer.Slots();
  for (int i = begin_; i < end_; ++i) {
    NamedTensors tensors = BlockTensors(*blocks_[i - begin_], state_[i - begin_], slots);
    for (auto& [name, tensor] : tensors) {
      const ParamShard* shard = ShardOf(i, name);
      if (!shard) continue;
      // Whole tensors go to host memory one at a time: a block's gathered
      // parameters and optimizer state together would not fit a device
      // that only tensor parallelism can train on.
      at::Tensor whole = Gathered(tensor, *shard);
      HostMemoryScope host;
      tensor = whole.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
    }
    if (group_.rank == 0) out.WriteBlock(i, tensors);
  }
}

void BlockSet::Load(const CheckpointReader& in) {
  std::vector<std::string> slots = ctx_.optimizer.Slots();
  for (int i = begin_; i < end_; ++i) {
    NamedTensors tensors = in.ReadBlock(i);
    for (auto& [name, tensor] : tensors) {
      if (const ParamShard* shard = ShardOf(i, name))
        tensor = engine::ShardOf(tensor, *shard, group_.rank, group_.size);
    }
    AssignBlockTensors(*blocks_[i - begin_], state_[i - begin_], slots, tensors,
                       "block " + std::to_string(i));
  }
}

const ParamShard* BlockSet::ShardOf(int index, const std::string& name) const {
  const std::map<std::string, ParamShard>& shards = shards_[index - begin_];
  auto it = shards.find(name.substr(name.find('/') + 1));
  return it == shards.end() ? nullptr : &it->second;
}

at::Tensor BlockSet::Gathered(const at::Tensor& slice, const ParamShard& shard) const {
  at::Tensor mine = slice.contiguous();
  at::Tensor all = at::empty({group_.size * mine.numel()}, mine.options());
  group_.comm->AllGather(mine.view({-1}), all).Wait();
  std::vector<at::Tensor> slices;
  for (at::Tensor part : all.chunk(group_.size))
    slices.push_back(part.view(mine.sizes()));
  return Unshard(slices, shard);
}

NamedTensors BlockTensors(const Block& block, const BlockState& state,
                          const std::vector<std::string>& slots) {
  NamedTensors tensors;
  const std::vector<ParamSlot>& params = block.Params();
  for (size_t p = 0; p < params.size(); ++p) {
    if (!params[p].trainable) continue;  // the frozen base's: meta.json names it
    tensors.emplace_back("param/" + params[p].name, *params[p].tensor);
    for (size_t s = 0; s < slots.size(); ++s) {
      tensors.emplace_back(slots[s] + "/" + params[p].name, state[p][s]);
    }
  }
  return tensors;
}

void AssignBlockTensors(Block& block, BlockState& state, const std::vector<std::string>& slots,
                        const NamedTensors& tensors, const std::string& where) {
  at::NoGradGuard no_grad;
  const std::vector<ParamSlot>& params = block.Params();
  for (size_t p = 0; p < params.size(); ++p) {
    // A frozen parameter keeps the base's value it was built with, unless
    // the checkpoint holds it (one written with its base, by older Saturn).
    if (!params[p].trainable && !Holds(tensors, "param/" + params[p].name)) continue;
    at::Tensor value = Lookup(tensors, "param/" + params[p].name, where);
    if (value.sizes() != params[p].tensor->sizes()) {
      throw InputError(where, 0, params[p].name, "checkpoint shape does not match the model");
    }
    params[p].tensor->copy_(value);
    if (!params[p].trainable) continue;
    for (size_t s = 0; s < slots.size(); ++s) {
      state[p][s].copy_(Lookup(tensors, slots[s] + "/" + params[p].name, where));
    }
  }
}

void ReleaseStorage(const at::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, tensor.device()));
  storage->set_nbytes(0);
}

void RefillStorage(const at::Tensor& tensor, size_t bytes) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  c10::Allocator* allocator = storage->allocator() != nullptr
                                  ? storage->allocator()
                                  : c10::GetAllocator(tensor.device().type());
  storage->set_data_ptr_noswap(allocator->allocate(bytes));
  storage->set_nbytes(bytes);
}

int64_t KnobInt(const Knobs& knobs, const std::string& name, int64_t fallback, int64_t min) {
  if (!knobs.contains(name)) return fallback;
  const Knobs& value = knobs[name];
  if (!value.is_number_integer() || value.get<int64_t>() < min) {
    throw InputError(
        "", 0, "--knobs",
        name + ": expected an integer >= " + std::to_string(min) + ", got " + Quote(value.dump()));
  }
  return value.get<int64_t>();
}

double KnobNumber(const Knobs& knobs, const std::string& name, double fallback) {
  if (!knobs.contains(name)) return fallback;
  const Knobs& value = knobs[name];
  if (!value.is_number() || !(value.get<double>() > 0)) {
    throw InputError("", 0, "--knobs",
                     name + ": expected a number > 0, got " + Quote(value.dump()));
  }
  return value.get<double>();
}

bool KnobBool(const Knobs& knobs, const std::string& name, bool fallback) {
  if (!knobs.contains(name)) return fallback;
  const Knobs& value = knobs[name];
  if (!value.is_boolean()) {
    throw InputError("", 0, "--knobs",
                     name + ": expected true or false, got " + Quote(value.dump()));
  }
  return value.get<bool>();
}

std::pair<int64_t, int64_t> SliceOf(int64_t total, int part, int parts) {
  return {total * part / parts, total * (part + 1) / parts};
}

}  // namespace saturn::engine
