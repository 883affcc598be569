// Where each tensor of a weights file lies, without reading the tensors:
// the index the engine loads pretrained weights from (engine/weights.h), one
// block at a time, straight into the block's parameters.
//
// Formats (found by their first bytes, not by the file name):
//   safetensors        8-byte header length, a JSON header naming each
//                      tensor's dtype, shape and byte range, the bytes
//   torch.save (zip)   what torch.save has written since PyTorch 1.6
//                      (Hugging Face's pytorch_model.bin, torch.save'd state
//                      dicts): data.pkl says which storage each tensor views,
//                      storages are stored zip entries
//   torch.save (legacy) the format before 1.6 (the original GPT-2
//                      pytorch_model.bin) and what LibTorch's pickle_save
//                      writes (Saturn's own model.pt): pickles, then the
//                      storages one after another
// A folder stands for the weights file in it: model.safetensors,
// model.safetensors.index.json (sharded), pytorch_model.bin,
// pytorch_model.bin.index.json or model.pt, the first found.
//
// The tensors of a torch.save file must be a dict of tensors (a state
// dict); values that are not tensors are left out. Torch-free.
//
//   WeightIndex index = IndexWeights("gpt2/");          // InputError naming the file
//   const StoredTensor* t = index.Find("h.0.attn.c_attn.weight");
//   // t->file, t->offset, t->dtype, t->shape
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/formats/bytes.h"

namespace saturn::engine {

enum class StoredDtype { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

int DtypeBytes(StoredDtype dtype);
// The strides, in elements, of a row-major (contiguous) tensor of `shape`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);
std::string DtypeName(StoredDtype dtype);  // safetensors' names: F32, BF16, ...

struct StoredTensor {
  std::string file;     // the file holding its bytes
  uint64_t offset = 0;  // byte offset of its first element in that file
  StoredDtype dtype = StoredDtype::kF32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements; row-major unless a view

  int64_t Numel() const;
  bool Contiguous() const;
  // Bytes from its first element to one past its last (a view may skip some).
  uint64_t SpanBytes() const;
  // "[768, 2304] F32" for messages.
  std::string Describe() const;
};

struct WeightIndex {
  std::string path;    // what was opened (the folder or file named)
  std::string format;  // "safetensors", "torch.save (zip)", "torch.save (legacy)"
  // Tensor names in the order of the file(s).
  std::vector<std::string> names;
  std::map<std::string, StoredTensor> tensors;

  const StoredTensor* Find(const std::string& name) const;
};

// Indexes a weights file or a folder holding one (see above).
WeightIndex IndexWeights(const std::string& path);

// The same on a source already open (tests, fuzzing): a safetensors or
// torch.save file whose tensors live in `source` itself.
WeightIndex IndexWeightBytes(const ByteSource& source);

}  // namespace saturn::engine
