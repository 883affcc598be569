// torch.save's formats for IndexWeights (weight_index.h): the zip archive
// (data.pkl and data/<storage> entries) and the legacy stream (pickles, then
// storages), read as pickles (pickle.h) without running them.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/format.h"
#include "engine/formats/index_parts.h"
#include "engine/formats/pickle.h"
#include "engine/formats/zip.h"

namespace saturn::engine::index_parts {

[[noreturn]] void Bad(const std::string& where, const std::string& message) {
  throw InputError(where, 0, "", message);
}

bool Fits(int64_t numel, int64_t dim) {
  return dim == 0 || numel <= std::numeric_limits<int64_t>::max() / dim;
}

void Add(WeightIndex& index, const std::string& name, StoredTensor tensor,
         const std::string& where) {
  if (index.tensors.count(name)) Bad(where, "tensor " + Quote(name) + " appears twice");
  index.names.push_back(name);
  index.tensors.emplace(name, std::move(tensor));
}

namespace {

using Kind = PickleValue::Kind;

// What a state dict entry points at, before storages are placed in the file.
struct TensorView {
  std::string storage_key;
  StoredDtype dtype;
  int64_t storage_offset = 0;  // elements
  std::vector<int64_t> shape, strides;
};

struct Storage {
  StoredDtype dtype;
  int64_t numel = 0;
};

StoredDtype StorageDtype(const std::string& type, const std::string& where) {
  static const std::map<std::string, StoredDtype> kTypes = {
      {"torch.FloatStorage", StoredDtype::kF32},     {"torch.HalfStorage", StoredDtype::kF16},
      {"torch.BFloat16Storage", StoredDtype::kBF16}, {"torch.DoubleStorage", StoredDtype::kF64},
      {"torch.LongStorage", StoredDtype::kI64},      {"torch.IntStorage", StoredDtype::kI32},
      {"torch.ShortStorage", StoredDtype::kI16},     {"torch.CharStorage", StoredDtype::kI8},
      {"torch.ByteStorage", StoredDtype::kU8},       {"torch.BoolStorage", StoredDtype::kBool}};
  auto it = kTypes.find(type);
  if (it == kTypes.end()) Bad(where, "a tensor storage of type " + Quote(type));
  return it->second;
}

std::vector<int64_t> Ints(const PickleRef& value, const std::string& where,
                          const std::string& what) {
  if (!value->Is(Kind::kTuple) && !value->Is(Kind::kList)) Bad(where, what + " is not a tuple");
  if (value->items.size() > kMaxDims) Bad(where, what + " has more than 16 dimensions");
  std::vector<int64_t> out;
  for (const PickleRef& item : value->items) {
    if (!item->Is(Kind::kInt) || item->number < 0) Bad(where, what + " holds a bad number");
    out.push_back(item->number);
  }
  return out;
}

// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...), maybe
// inside _rebuild_parameter(tensor, requires_grad, hooks); nullopt for any
// other value.
std::optional<TensorView> AsTensor(const PickleRef& value, std::map<std::string, Storage>& storages,
                                   const std::string& where, const std::string& name) {
  if (!value->Is(Kind::kCall) || !value->items[0]->Is(Kind::kGlobal)) return std::nullopt;
  const std::string& callable = value->items[0]->text;
  const std::vector<PickleRef>& args = value->items[1]->items;
  if (callable == "torch._utils._rebuild_parameter" ||
      callable == "torch._utils._rebuild_parameter_with_state") {
    if (args.empty()) Bad(where, Quote(name) + ": a parameter without its tensor");
    return AsTensor(args[0], storages, where, name);
  }
  if (callable != "torch._utils._rebuild_tensor_v2" && callable != "torch._utils._rebuild_tensor") {
    return std::nullopt;
  }
  if (args.size() < 4 || !args[0]->Is(Kind::kPersistent) || !args[1]->Is(Kind::kInt)) {
    Bad(where, Quote(name) + ": a tensor this reader cannot rebuild");
  }
  // ('storage', torch.FloatStorage, key, location, numel[, view metadata])
  const PickleRef& id = args[0]->items[0];
  if (!id->Is(Kind::kTuple) || id->items.size() < 5 || !id->items[0]->Is(Kind::kString) ||
      id->items[0]->text != "storage" || !id->items[1]->Is(Kind::kGlobal) ||
      !id->items[2]->Is(Kind::kString) || !id->items[4]->Is(Kind::kInt) ||
      id->items[4]->number < 0) {
    Bad(where, Quote(name) + ": a tensor storage this reader cannot place");
  }
  if (id->items.size() > 5 && !id->items[5]->Is(Kind::kNone)) {
    Bad(where, Quote(name) + ": a view of a storage view (pre-1.0 torch.save)");
  }
  TensorView view;
  view.dtype = StorageDtype(id->items[1]->text, where);
  view.storage_key = id->items[2]->text;
  view.storage_offset = args[1]->number;
  view.shape = Ints(args[2], where, Quote(name) + "'s size");
  view.strides = Ints(args[3], where, Quote(name) + "'s stride");
  if (view.shape.size() != view.strides.size() || view.storage_offset < 0) {
    Bad(where, Quote(name) + ": size and stride do not match");
  }
  Storage& storage = storages[view.storage_key];
  if (storage.numel != 0 &&
      (storage.dtype != view.dtype || storage.numel != id->items[4]->number)) {
    Bad(where, "storage " + Quote(view.storage_key) + " is described two ways");
  }
  storage.dtype = view.dtype;
  storage.numel = id->items[4]->number;
  return view;
}

// The tensors of a state dict pickle, by name; non-tensor values left out.
std::vector<std::pair<std::string, TensorView>> StateDict(const PickleRef& root,
                                                          std::map<std::string, Storage>& storages,
                                                          const std::string& where) {
  if (!root->Is(Kind::kDict)) {
    Bad(where, "expected a state dict (a dict of tensors), got a " + root->KindName());
  }
  std::vector<std::pair<std::string, TensorView>> out;
  for (size_t i = 0; i + 1 < root->items.size(); i += 2) {
    const PickleRef& key = root->items[i];
    if (!key->Is(Kind::kString)) Bad(where, "a state dict key that is not a string");
    std::optional<TensorView> view = AsTensor(root->items[i + 1], storages, where, key->text);
    if (view) out.emplace_back(key->text, std::move(*view));
  }
  if (out.empty()) Bad(where, "a dict without tensors (expected a state dict)");
  return out;
}

// Places each view in the file given where its storage starts.
void Place(WeightIndex& index, const std::vector<std::pair<std::string, TensorView>>& views,
           const std::map<std::string, std::pair<uint64_t, uint64_t>>& storage_bytes,
           const std::string& where) {
  for (const auto& [name, view] : views) {
    auto it = storage_bytes.find(view.storage_key);
    if (it == storage_bytes.end()) {
      Bad(where, Quote(name) + "'s storage " + Quote(view.storage_key) + " is not in the file");
    }
    auto [start, size] = it->second;
    StoredTensor t;
    t.file = where;
    t.dtype = view.dtype;
    t.shape = view.shape;
    t.strides = view.strides;
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (!Fits(numel, d)) Bad(where, Quote(name) + ": a bad size");
      numel *= d;
    }
    uint64_t element = static_cast<uint64_t>(DtypeBytes(t.dtype));
    uint64_t skip = static_cast<uint64_t>(view.storage_offset);
    if (skip > size / element || t.SpanBytes() > size - skip * element) {
      Bad(where, Quote(name) + " reaches past the end of its storage");
    }
    t.offset = start + skip * element;
    Add(index, name, std::move(t), where);
  }
}

}  // namespace

void IndexTorchZip(const ByteSource& source, WeightIndex& index) {
  const std::string& where = source.Name();
  std::vector<ZipEntry> entries = ReadZipDirectory(source);
  const ZipEntry* pickle = nullptr;
  for (const ZipEntry& e : entries) {
    if (e.name.size() >= 9 && e.name.compare(e.name.size() - 9, 9, "/data.pkl") == 0 &&
        e.name.find('/') == e.name.size() - 9) {
      pickle = &e;
    }
  }
  if (pickle == nullptr) Bad(where, "a zip archive without data.pkl (not written by torch.save)");
  if (pickle->size > kMaxHeaderBytes) Bad(where, "a data.pkl of more than 256 MiB");
  std::string prefix = pickle->name.substr(0, pickle->name.size() - 8);  // "archive/"
  std::string bytes = source.Read(pickle->offset, pickle->size);
  PickleReader reader(bytes, where + ": data.pkl");
  std::map<std::string, Storage> storages;
  auto views = StateDict(reader.Read(), storages, where);
  std::map<std::string, std::pair<uint64_t, uint64_t>> placed;
  for (const ZipEntry& e : entries) {
    if (e.name.rfind(prefix + "data/", 0) == 0) {
      placed[e.name.substr(prefix.size() + 5)] = {e.offset, e.size};
    }
  }
  for (const auto& [key, storage] : storages) {
    auto it = placed.find(key);
    uint64_t need = static_cast<uint64_t>(storage.numel) * DtypeBytes(storage.dtype);
    if (it != placed.end() && it->second.second < need) {
      Bad(where, "storage " + Quote(key) + " is shorter than its " + std::to_string(storage.numel) +
                     " elements");
    }
  }
  Place(index, views, placed, where);
}

bool LooksLikeLegacyTorch(const ByteSource& source) {
  // PROTO 2, then LONG1 of 10 bytes: torch.save's magic number.
  return source.Size() >= 4 && source.Read(0, 4) == std::string("\x80\x02\x8a\x0a", 4);
}

void IndexTorchLegacy(const ByteSource& source, WeightIndex& index) {
  const std::string& where = source.Name();
  // The pickles come first and are small; storages follow them. Read a
  // prefix large enough for the pickles, growing it if they go on.
  uint64_t window = std::min<uint64_t>(source.Size(), uint64_t{1} << 20);
  for (;;) {
    std::string head = source.Read(0, window);
    try {
      PickleReader reader(head, where);
      PickleRef magic = reader.Read();
      const std::string kMagic("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10);
      if (!magic->Is(Kind::kBigInt) || magic->text != kMagic) {
        Bad(where, "not a torch.save file (its magic number is missing)");
      }
      PickleRef protocol = reader.Read();
      if (!protocol->Is(Kind::kInt) || protocol->number != 1001) {
        Bad(where, "a torch.save file of an unknown protocol version");
      }
      PickleRef system = reader.Read();
      if (system->Is(Kind::kDict)) {
        for (size_t i = 0; i + 1 < system->items.size(); i += 2) {
          if (system->items[i]->text == "little_endian" && system->items[i + 1]->number == 0) {
            Bad(where, "written on a big-endian machine");
          }
        }
      }
      std::map<std::string, Storage> storages;
      auto views = StateDict(reader.Read(), storages, where);
      PickleRef keys = reader.Read();
      if (!keys->Is(Kind::kList)) Bad(where, "the storage list of a torch.save file is missing");
      // Each storage: its element count (int64), then its bytes.
      std::map<std::string, std::pair<uint64_t, uint64_t>> placed;
      uint64_t at = reader.Position();
      for (const PickleRef& key : keys->items) {
        if (!key->Is(Kind::kString)) Bad(where, "a storage key that is not a string");
        auto it = storages.find(key->text);
        if (it == storages.end()) Bad(where, "storage " + Quote(key->text) + " is not used");
        uint64_t count = LittleEndian(source.Read(at, 8), 0, 8);
        uint64_t element = static_cast<uint64_t>(DtypeBytes(it->second.dtype));
        if (count != static_cast<uint64_t>(it->second.numel)) {
          Bad(where, "storage " + Quote(key->text) + " holds another number of elements than said");
        }
        if (count > (source.Size() - at - 8) / element) {
          Bad(where, "storage " + Quote(key->text) + " runs past the end of the file");
        }
        placed[key->text] = {at + 8, count * element};
        at += 8 + count * element;
      }
      Place(index, views, placed, where);
      return;
    } catch (const InputError&) {
      // A pickle cut by the window: read more, up to the whole file.
      if (window == source.Size() || window >= kMaxHeaderBytes) throw;
      window = std::min<uint64_t>({source.Size(), window * 8, kMaxHeaderBytes});
      index.names.clear();
      index.tensors.clear();
    }
  }
}

}  // namespace saturn::engine::index_parts
