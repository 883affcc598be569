// Writes a safetensors file (Hugging Face's format, which IndexWeights and
// saturn_models.read_safetensors read back): an 8-byte little-endian length,
// a JSON header naming each tensor's dtype, shape and data_offsets (padded
// with spaces so that the tensors start on an 8-byte boundary), then the
// tensors' bytes back to back in the order declared. The tensors are
// declared up front (the header comes first); their bytes then stream out
// one tensor after another, so thousands of models never need a copy in
// memory. Torch-free.
//
//   SafetensorsWriter out([&](const void* p, size_t n) { file.Write(p, n); },
//                         {{"s1/out.weight", StoredDtype::kF32, {1, 3}}, ...},
//                         {{"format", "pt"}});
//   out.Write(weights.data(), 12);   // each tensor's bytes, in order, whole or in pieces
//   out.Finish();                    // std::logic_error if bytes are missing
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/formats/weight_index.h"

namespace saturn::engine {

struct SafetensorsEntry {
  std::string name;
  StoredDtype dtype = StoredDtype::kF32;
  std::vector<int64_t> shape;
  uint64_t Bytes() const;  // elements x their size
};

// The file's head for `tensors` laid out in order: the 8-byte length and the
// padded JSON header, `metadata` as "__metadata__" (string values, as the
// format wants). std::invalid_argument for an empty or repeated name, the
// name "__metadata__" or a negative dimension. A name or value that is not
// UTF-8 has its bad bytes replaced (U+FFFD), as JsonName does.
std::string SafetensorsHead(const std::vector<SafetensorsEntry>& tensors,
                            const std::map<std::string, std::string>& metadata = {});

// `text` as a JSON string, its bytes that are not UTF-8 replaced (U+FFFD):
// the names SafetensorsHead writes, for an index that names them too.
std::string JsonName(const std::string& text);

class SafetensorsWriter {
 public:
  using Sink = std::function<void(const void*, size_t)>;
  // Writes the head at once.
  SafetensorsWriter(Sink sink, std::vector<SafetensorsEntry> tensors,
                    const std::map<std::string, std::string>& metadata = {});
  // The next bytes of the tensors, in the order declared (a call may end
  // within one tensor or span several). std::logic_error past the last.
  void Write(const void* data, uint64_t bytes);
  // std::logic_error unless every tensor's bytes were written.
  void Finish();
  // Bytes written so far, head included.
  uint64_t Written() const { return written_; }

 private:
  Sink sink_;
  uint64_t data_bytes_ = 0, data_written_ = 0, written_ = 0;
};

}  // namespace saturn::engine
