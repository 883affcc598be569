#include "engine/weights.h"

#include <ATen/core/grad_mode.h>

#include <set>

#include "common/error.h"
#include "engine/device.h"

namespace saturn::engine {
namespace {

std::string ShapeText(at::IntArrayRef shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

at::ScalarType TorchType(StoredDtype dtype) {
  switch (dtype) {
    case StoredDtype::kF32: return at::kFloat;
    case StoredDtype::kF16: return at::kHalf;
    case StoredDtype::kBF16: return at::kBFloat16;
    case StoredDtype::kF64: return at::kDouble;
    case StoredDtype::kI64: return at::kLong;
    case StoredDtype::kI32: return at::kInt;
    case StoredDtype::kI16: return at::kShort;
    case StoredDtype::kI8: return at::kChar;
    case StoredDtype::kU8: return at::kByte;
    case StoredDtype::kBool: return at::kBool;
  }
  return at::kFloat;
}

bool IsFloat(StoredDtype dtype) {
  return dtype == StoredDtype::kF32 || dtype == StoredDtype::kF16 || dtype == StoredDtype::kBF16 ||
         dtype == StoredDtype::kF64;
}

// "a, b, c and 4 more"
std::string Listed(const std::vector<std::string>& names) {
  std::string text;
  size_t shown = std::min<size_t>(names.size(), 6);
  for (size_t i = 0; i < shown; ++i)
    text += (i ? ", " : "") + Quote(names[i]);
  if (names.size() > shown) text += " and " + std::to_string(names.size() - shown) + " more";
  return text;
}

}  // namespace

PretrainedWeights::PretrainedWeights(const std::string& path, const Model& model)
    : path_(path), index_(IndexWeights(path)) {
  for (const auto& [name, tensor] : index_.tensors) {
    if (!files_.count(tensor.file)) files_[tensor.file] = std::make_unique<FileBytes>(tensor.file);
  }
  std::set<std::string> used;
  std::vector<std::string> missing;
  for (int b = 0; b < model.NumBlocks(); ++b) {
    std::unique_ptr<Block> block = model.BuildBlock(b, /*materialize=*/false);
    for (const ParamSlot& slot : block->Params()) {
      std::optional<InitKey> key = model.InitKeyOf(b, slot.name, index_);
      if (!key) continue;
      const StoredTensor* stored = index_.Find(key->key);
      if (stored == nullptr) {
        if (!slot.adapter) missing.push_back(key->key);
        continue;
      }
      at::IntArrayRef want = slot.tensor->sizes();
      std::vector<int64_t> as_stored = want.vec();
      if (key->transposed && as_stored.size() == 2) std::swap(as_stored[0], as_stored[1]);
      if (stored->shape != as_stored || !IsFloat(stored->dtype)) {
        std::string expected = key->transposed ? ShapeText(as_stored) + " (stored transposed, [in, out])"
                                               : ShapeText(as_stored);
        throw InputError(stored->file, 0, key->key,
                         "is " + stored->Describe() + ", but the model (" + slot.name +
                             " of block " + std::to_string(b) + ") needs " + expected +
                             " floats: is init a checkpoint of this model's sizes?");
      }
      sources_[{b, slot.name}] = Source{key->key, key->transposed};
      used.insert(key->key);
    }
  }
  if (!missing.empty()) {
    throw InputError(index_.path, 0, "",
                     "lacks " + std::to_string(missing.size()) + " tensor(s) the model needs (" +
                         Listed(missing) + ") in its " + index_.format +
                         " weights: is init a checkpoint of this model (its type, layers)?");
  }
  std::vector<std::string> unused;
  for (const std::string& name : index_.names) {
    if (!used.count(name) && !model.IgnorableInitKey(name)) unused.push_back(name);
  }
  if (!unused.empty()) {
    throw InputError(index_.path, 0, "",
                     "holds " + std::to_string(unused.size()) +
                         " tensor(s) the model does not have (" + Listed(unused) +
                         "): is init a checkpoint of this model (its layers, its type)?");
  }
}

PretrainedWeights::~PretrainedWeights() = default;

const FileBytes& PretrainedWeights::File(const std::string& path) const {
  return *files_.at(path);
}

at::Tensor PretrainedWeights::Read(const std::string& key, bool transposed, at::IntArrayRef shape,
                                   at::Tensor out) const {
  const StoredTensor* stored = index_.Find(key);
  if (stored == nullptr) throw InputError(index_.path, 0, key, "no such tensor");
  HostMemoryScope host;
  at::NoGradGuard no_grad;
  if (!out.defined()) out = at::empty(shape, at::kFloat);
  const FileBytes& file = File(stored->file);
  if (stored->dtype == StoredDtype::kF32 && stored->Contiguous() && !transposed &&
      out.is_contiguous() && out.scalar_type() == at::kFloat) {
    // The common case: the bytes go straight into the parameter.
    file.ReadInto(stored->offset, static_cast<uint64_t>(out.numel()) * sizeof(float),
                  out.data_ptr());
    return out;
  }
  // Another dtype, a view or a transposed weight: the stored bytes, then
  // one conversion into the parameter.
  uint64_t span = stored->SpanBytes();
  at::Tensor raw = at::empty({static_cast<int64_t>(span)}, at::kByte);
  file.ReadInto(stored->offset, span, raw.data_ptr());
  at::Tensor view = at::from_blob(raw.data_ptr(), stored->shape, stored->strides,
                                  at::TensorOptions().dtype(TorchType(stored->dtype)));
  out.copy_(transposed ? view.t() : view);
  return out;
}

void PretrainedWeights::Load(int index, Block& block) const {
  at::NoGradGuard no_grad;
  for (const ParamSlot& slot : block.Params()) {
    auto it = sources_.find({index, slot.name});
    if (it == sources_.end()) continue;  // keeps its initial values (an adapter)
    Read(it->second.key, it->second.transposed, slot.tensor->sizes(), *slot.tensor);
  }
}

}  // namespace saturn::engine
