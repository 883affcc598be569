// The parts of IndexWeights (weight_index.h) shared by its readers: the
// torch.save formats (torch_index.cc) beside safetensors and sharded
// checkpoints (weight_index.cc). Internal to formats/.
#pragma once

#include <cstdint>
#include <string>

#include "engine/formats/bytes.h"
#include "engine/formats/weight_index.h"

namespace saturn::engine::index_parts {

// A header or a data.pkl this large is not a state dict's.
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{256} << 20;
inline constexpr size_t kMaxDims = 16;

// InputError naming `where`.
[[noreturn]] void Bad(const std::string& where, const std::string& message);
// Whether numel * dim stays within int64.
bool Fits(int64_t numel, int64_t dim);
// Adds a tensor; a name twice is an InputError.
void Add(WeightIndex& index, const std::string& name, StoredTensor tensor,
         const std::string& where);

// torch.save's zip (since PyTorch 1.6) and legacy formats.
void IndexTorchZip(const ByteSource& source, WeightIndex& index);
bool LooksLikeLegacyTorch(const ByteSource& source);
void IndexTorchLegacy(const ByteSource& source, WeightIndex& index);

}  // namespace saturn::engine::index_parts
