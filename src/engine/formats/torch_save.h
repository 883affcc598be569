// Writes a state dict (a dict of named tensors) the way torch.save writes
// one: a zip archive with data.pkl (pickle protocol 2, tensors rebuilt by
// torch._utils._rebuild_tensor_v2 from typed storages) and one stored entry
// per tensor. Every PyTorch since 1.6 reads it with torch.load, also with
// weights_only=True (PyTorch 2.6's default, which refuses the type tags
// LibTorch's own pickle_save writes), and LibTorch's pickle_load reads it.
// Tensors stream out one by one, so a multi-gigabyte model never needs a
// second copy in memory. Torch-free.
//
//   TorchSaveWriter out([&](const void* p, size_t n) { file.Write(p, n); });
//   out.Add("layers.0.attn.qkv.weight", StoredDtype::kF32, {768, 256}, data, bytes);
//   out.Finish();
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/formats/weight_index.h"
#include "engine/formats/zip.h"

namespace saturn::engine {

class TorchSaveWriter {
 public:
  explicit TorchSaveWriter(ZipWriter::Sink write);
  // One tensor: `bytes` bytes of row-major little-endian elements of `shape`.
  void Add(const std::string& name, StoredDtype dtype, const std::vector<int64_t>& shape,
           const void* data, uint64_t bytes);
  // data.pkl and the archive's directory.
  void Finish();

 private:
  struct Tensor {
    std::string name;
    StoredDtype dtype;
    std::vector<int64_t> shape;
  };
  ZipWriter zip_;
  std::vector<Tensor> tensors_;
};

// The data.pkl of such a file, for `tensors` whose storages are named "0",
// "1", ... in order (exposed for tests).
std::string StateDictPickle(const std::vector<std::string>& names,
                            const std::vector<StoredDtype>& dtypes,
                            const std::vector<std::vector<int64_t>>& shapes);

}  // namespace saturn::engine
