// The weight-file readers (engine/formats): safetensors headers, torch.save's
// zip and legacy layouts and the pickles inside them. An accepted file's
// tensors all lie inside it, and the dtypes and shapes it reports rewrite
// (TorchSaveWriter) into a file that indexes back the same.
#include <string>

#include "common/error.h"
#include "engine/formats/torch_save.h"
#include "engine/formats/weight_index.h"
#include "fuzz/targets.h"

namespace saturn::fuzz {
namespace {

void Require(bool ok, const char* what) {
  if (!ok) throw Finding(what);
}

}  // namespace

bool FuzzWeights(std::string_view input) {
  using namespace saturn::engine;
  WeightIndex index;
  try {
    index = IndexWeightBytes(StringBytes(input, "weights"));
  } catch (const InputError&) {
    return false;
  }
  std::string written;
  TorchSaveWriter out(
      [&](const void* p, size_t n) { written.append(static_cast<const char*>(p), n); });
  for (const std::string& name : index.names) {
    const StoredTensor& t = index.tensors.at(name);
    Require(t.offset <= input.size() && t.SpanBytes() <= input.size() - t.offset,
            "a tensor outside the file");
    Require(t.shape.size() == t.strides.size(), "shape and strides of different ranks");
    // Rewritten contiguous (bounded: the span lies inside the input).
    uint64_t bytes = static_cast<uint64_t>(t.Numel()) * DtypeBytes(t.dtype);
    if (bytes > (uint64_t{1} << 24)) return true;
    std::string data(bytes, '\0');
    out.Add(name, t.dtype, t.shape, data.data(), data.size());
  }
  out.Finish();
  WeightIndex back = IndexWeightBytes(StringBytes(written, "again"));
  Require(back.names == index.names, "names changed through TorchSaveWriter");
  for (const std::string& name : index.names) {
    Require(back.tensors.at(name).shape == index.tensors.at(name).shape &&
                back.tensors.at(name).dtype == index.tensors.at(name).dtype,
            "a tensor changed through TorchSaveWriter");
  }
  return true;
}

}  // namespace saturn::fuzz
