#include "engine/model.h"

#include <algorithm>

#include "common/error.h"
#include "engine/device.h"

namespace saturn::engine {

int64_t Block::ParamCount() const {
  int64_t count = 0;
  for (const ParamSlot& slot : params_)
    count += slot.tensor->numel();
  return count;
}

namespace {

// SplitMix64: decorrelates nearby seeds (seed, block) into generator seeds.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

ParamFactory::ParamFactory(uint64_t seed, int block_index, bool materialize)
    : materialize_(materialize),
      generator_(at::make_generator<at::CPUGeneratorImpl>(
          Mix(Mix(seed) ^ static_cast<uint64_t>(block_index)))) {}

at::Tensor ParamFactory::Empty(at::IntArrayRef shape) const {
  if (!materialize_)
    return at::empty(shape, at::TensorOptions().dtype(at::kFloat).device(at::kMeta));
  HostMemoryScope host;
  return at::empty(shape, at::kFloat);
}

at::Tensor ParamFactory::Normal(at::IntArrayRef shape, double std) {
  at::Tensor t = Empty(shape);
  if (materialize_) t.normal_(0.0, std, generator_);
  return t;
}

at::Tensor ParamFactory::Uniform(at::IntArrayRef shape, double bound) {
  at::Tensor t = Empty(shape);
  if (materialize_) t.uniform_(-bound, bound, generator_);
  return t;
}

at::Tensor ParamFactory::Zeros(at::IntArrayRef shape) {
  at::Tensor t = Empty(shape);
  if (materialize_) t.zero_();
  return t;
}

at::Tensor ParamFactory::Ones(at::IntArrayRef shape) {
  at::Tensor t = Empty(shape);
  if (materialize_) t.fill_(1.0);
  return t;
}

at::Tensor Model::LossSum(const at::Tensor& logits, const at::Tensor& targets) const {
  at::Tensor flat_logits = logits.reshape({-1, logits.size(-1)});
  return at::cross_entropy_loss(flat_logits, targets.reshape({-1}), {}, at::Reduction::Sum);
}

int64_t Model::LossItemsPerSample() const {
  InputShape input = Input();
  return input.kind == InputShape::Kind::kTokens ? input.seq_len : 1;
}

std::vector<int64_t> Model::BlockParamCounts() const {
  std::vector<int64_t> counts;
  for (int i = 0; i < NumBlocks(); ++i)
    counts.push_back(BuildBlock(i, false)->ParamCount());
  return counts;
}

void ModelRegistry::Register(std::unique_ptr<ModelFamily> family) {
  families_.push_back(std::move(family));
}

const ModelFamily* ModelRegistry::Find(std::string_view name) const {
  for (const auto& family : families_) {
    if (family->Name() == name) return family.get();
  }
  return nullptr;
}

const ModelFamily& ModelRegistry::Get(std::string_view name) const {
  if (const ModelFamily* family = Find(name)) return *family;
  throw InputError("", 0, "model.type", UnknownTypeMessage(name));
}

std::string ModelRegistry::UnknownTypeMessage(std::string_view name) const {
  std::string known;
  for (const std::string& n : Names())
    known += (known.empty() ? "" : ", ") + n;
  return "unknown model type " + Quote(name) + " (known: " + known + ")";
}

std::vector<std::string> ModelRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& family : families_)
    names.emplace_back(family->Name());
  return names;
}

const ModelRegistry& BuiltinModels() {
  static const ModelRegistry* registry = [] {
    auto* r = new ModelRegistry;
    RegisterBuiltinModels(*r);
    return r;
  }();
  return *registry;
}

std::unique_ptr<Model> BuildModel(const TaskSpec& task) {
  const ModelFamily* family = BuiltinModels().Find(task.model_type);
  if (family == nullptr) {
    throw InputError(task.source, 0, "model.type",
                     BuiltinModels().UnknownTypeMessage(task.model_type));
  }
  return family->Build(task);
}

}  // namespace saturn::engine
