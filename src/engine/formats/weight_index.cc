#include "engine/formats/weight_index.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "engine/formats/index_parts.h"
#include "engine/formats/zip.h"

namespace saturn::engine {
namespace fs = std::filesystem;
using namespace index_parts;
namespace {

// ---- safetensors -----------------------------------------------------------

bool LooksLikeSafetensors(const ByteSource& source) {
  if (source.Size() < 10) return false;
  std::string head = source.Read(0, 9);
  uint64_t length = LittleEndian(head, 0, 8);
  return length >= 2 && length <= source.Size() - 8 && head[8] == '{';
}

StoredDtype SafetensorsDtype(const std::string& name, const std::string& where,
                             const std::string& tensor) {
  static const std::map<std::string, StoredDtype> kNames = {
      {"F32", StoredDtype::kF32},  {"F16", StoredDtype::kF16}, {"BF16", StoredDtype::kBF16},
      {"F64", StoredDtype::kF64},  {"I64", StoredDtype::kI64}, {"I32", StoredDtype::kI32},
      {"I16", StoredDtype::kI16},  {"I8", StoredDtype::kI8},   {"U8", StoredDtype::kU8},
      {"BOOL", StoredDtype::kBool}};
  auto it = kNames.find(name);
  if (it == kNames.end()) {
    Bad(where, "tensor " + Quote(tensor) + " has dtype " + Quote(name) +
                   "; expected one of F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL");
  }
  return it->second;
}

void IndexSafetensors(const ByteSource& source, WeightIndex& index) {
  const std::string& where = source.Name();
  uint64_t length = LittleEndian(source.Read(0, 8), 0, 8);
  if (length > kMaxHeaderBytes) Bad(where, "a safetensors header of more than 256 MiB");
  nlohmann::json header;
  std::string why;
  if (!ParseJsonText(source.Read(8, length), &header, &why) || !header.is_object()) {
    Bad(where, "its safetensors header is not a JSON object: " + why);
  }
  uint64_t data_start = 8 + length, data_size = source.Size() - data_start;
  for (const auto& item : header.items()) {
    // Named, not bound: lambdas below use them (clang 14 captures no bindings).
    const std::string& name = item.key();
    const nlohmann::json& entry = item.value();
    if (name == "__metadata__") continue;
    auto field = [&](const char* key) -> const nlohmann::json& {
      if (!entry.is_object() || !entry.contains(key)) {
        Bad(where, "tensor " + Quote(name) + " has no " + key + " in the header");
      }
      return entry[key];
    };
    const nlohmann::json& dtype = field("dtype");
    const nlohmann::json& shape = field("shape");
    const nlohmann::json& offsets = field("data_offsets");
    if (!dtype.is_string() || !shape.is_array() || shape.size() > kMaxDims || !offsets.is_array() ||
        offsets.size() != 2) {
      Bad(where, "tensor " + Quote(name) + ": malformed header entry " + Quote(entry.dump()));
    }
    StoredTensor t;
    t.file = where;
    t.dtype = SafetensorsDtype(dtype.get<std::string>(), where, name);
    int64_t numel = 1;
    for (const nlohmann::json& d : shape) {
      std::optional<long> dim = JsonInt(d, 0, std::numeric_limits<long>::max());
      if (!dim || !Fits(numel, *dim)) Bad(where, "tensor " + Quote(name) + ": a bad shape");
      t.shape.push_back(*dim);
      numel *= *dim;
    }
    t.strides = RowMajorStrides(t.shape);
    std::optional<long> begin = JsonInt(offsets[0], 0, std::numeric_limits<long>::max());
    std::optional<long> end = JsonInt(offsets[1], 0, std::numeric_limits<long>::max());
    if (!begin || !end || *end < *begin || static_cast<uint64_t>(*end) > data_size) {
      Bad(where, "tensor " + Quote(name) + ": data_offsets lie outside the file");
    }
    if (!Fits(numel, DtypeBytes(t.dtype)) ||
        static_cast<uint64_t>(*end - *begin) !=
            static_cast<uint64_t>(numel) * static_cast<uint64_t>(DtypeBytes(t.dtype))) {
      Bad(where, "tensor " + Quote(name) + ": data_offsets do not hold " + t.Describe());
    }
    t.offset = data_start + static_cast<uint64_t>(*begin);
    Add(index, name, std::move(t), where);
  }
}

// ---- sharded checkpoints -----------------------------------------------------

// model.safetensors.index.json / pytorch_model.bin.index.json:
// {"weight_map": {"tensor name": "file in the same folder", ...}}.
void IndexSharded(const std::string& path, WeightIndex& index) {
  nlohmann::json json;
  std::string why;
  if (!ParseJsonText(ReadFile(path), &json, &why) || !json.is_object() ||
      !json.contains("weight_map") || !json["weight_map"].is_object()) {
    Bad(path, "expected {\"weight_map\": {tensor: file, ...}}" + (why.empty() ? "" : ": " + why));
  }
  std::set<std::string> files;
  for (const auto& [name, file] : json["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().find('/') != std::string::npos) {
      Bad(path, "weight_map[" + Quote(name) + "]: expected a file name in the same folder");
    }
    files.insert(file.get<std::string>());
  }
  fs::path dir = fs::path(path).parent_path();
  for (const std::string& file : files) {
    FileBytes shard((dir / file).string());
    WeightIndex part = IndexWeightBytes(shard);
    for (const std::string& name : part.names) {
      if (!json["weight_map"].contains(name) || json["weight_map"][name] != file) continue;
      Add(index, name, part.tensors.at(name), path);
    }
  }
  for (const auto& [name, file] : json["weight_map"].items()) {
    if (!index.tensors.count(name)) {
      Bad(path, "tensor " + Quote(name) + " is not in " + file.get<std::string>());
    }
  }
}

}  // namespace

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

int DtypeBytes(StoredDtype dtype) {
  switch (dtype) {
    case StoredDtype::kF64:
    case StoredDtype::kI64:
      return 8;
    case StoredDtype::kF32:
    case StoredDtype::kI32:
      return 4;
    case StoredDtype::kF16:
    case StoredDtype::kBF16:
    case StoredDtype::kI16:
      return 2;
    case StoredDtype::kI8:
    case StoredDtype::kU8:
    case StoredDtype::kBool:
      return 1;
  }
  return 1;
}

std::string DtypeName(StoredDtype dtype) {
  switch (dtype) {
    case StoredDtype::kF32:
      return "F32";
    case StoredDtype::kF16:
      return "F16";
    case StoredDtype::kBF16:
      return "BF16";
    case StoredDtype::kF64:
      return "F64";
    case StoredDtype::kI64:
      return "I64";
    case StoredDtype::kI32:
      return "I32";
    case StoredDtype::kI16:
      return "I16";
    case StoredDtype::kI8:
      return "I8";
    case StoredDtype::kU8:
      return "U8";
    case StoredDtype::kBool:
      return "BOOL";
  }
  return "?";
}

int64_t StoredTensor::Numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

uint64_t StoredTensor::SpanBytes() const {
  if (Numel() == 0) return 0;
  // Saturates instead of wrapping (sizes and strides come from the file).
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    uint64_t step = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(shape[d] - 1),
                               static_cast<uint64_t>(strides[d]), &step) ||
        __builtin_add_overflow(last, step, &last)) {
      return kMax;
    }
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(last + 1, static_cast<uint64_t>(DtypeBytes(dtype)), &bytes))
    return kMax;
  return bytes;
}

bool StoredTensor::Contiguous() const {
  return Numel() <= 1 || strides == RowMajorStrides(shape);
}

std::string StoredTensor::Describe() const {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "] " + DtypeName(dtype);
}

const StoredTensor* WeightIndex::Find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

WeightIndex IndexWeightBytes(const ByteSource& source) {
  WeightIndex index;
  index.path = source.Name();
  if (LooksLikeSafetensors(source)) {
    index.format = "safetensors";
    IndexSafetensors(source, index);
  } else if (LooksLikeZip(source)) {
    index.format = "torch.save (zip)";
    IndexTorchZip(source, index);
  } else if (LooksLikeLegacyTorch(source)) {
    index.format = "torch.save (legacy)";
    IndexTorchLegacy(source, index);
  } else {
    Bad(source.Name(),
        "not a weights file: expected safetensors or a torch.save file (a state dict)");
  }
  if (index.tensors.empty()) Bad(source.Name(), "a " + index.format + " file without tensors");
  return index;
}

WeightIndex IndexWeights(const std::string& path) {
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    file.clear();
    for (const char* name : {"model.safetensors", "model.safetensors.index.json",
                             "pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt"}) {
      if (fs::is_regular_file(fs::path(path) / name, ec)) {
        file = (fs::path(path) / name).string();
        break;
      }
    }
    if (file.empty()) {
      Bad(path,
          "no weights here: expected model.safetensors, pytorch_model.bin (or their "
          ".index.json) or model.pt in this folder");
    }
  }
  WeightIndex index;
  if (file.size() > 11 && file.compare(file.size() - 11, 11, ".index.json") == 0) {
    index.path = path;
    index.format = "sharded ";
    IndexSharded(file, index);
    index.format +=
        index.tensors.empty()
            ? "?"
            : (LooksLikeSafetensors(FileBytes(index.tensors.begin()->second.file)) ? "safetensors"
                                                                                   : "torch.save");
    return index;
  }
  FileBytes bytes(file);
  index = IndexWeightBytes(bytes);
  index.path = path;
  return index;
}

}  // namespace saturn::engine
