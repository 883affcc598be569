#include "engine/formats/torch_save.h"

#include <limits>
#include <stdexcept>

namespace saturn::engine {
namespace {

constexpr const char* kArchive = "archive/";

const char* StorageType(StoredDtype dtype) {
  switch (dtype) {
    case StoredDtype::kF32:
      return "FloatStorage";
    case StoredDtype::kF16:
      return "HalfStorage";
    case StoredDtype::kBF16:
      return "BFloat16Storage";
    case StoredDtype::kF64:
      return "DoubleStorage";
    case StoredDtype::kI64:
      return "LongStorage";
    case StoredDtype::kI32:
      return "IntStorage";
    case StoredDtype::kI16:
      return "ShortStorage";
    case StoredDtype::kI8:
      return "CharStorage";
    case StoredDtype::kU8:
      return "ByteStorage";
    case StoredDtype::kBool:
      return "BoolStorage";
  }
  return "FloatStorage";
}

// Pickle protocol 2 pieces.
class Pickler {
 public:
  void Op(char op) { out_.push_back(op); }
  void String(const std::string& text) {
    Op('X');
    Raw(text.size(), 4);
    out_ += text;
  }
  void Global(const std::string& module, const std::string& name) {
    Op('c');
    out_ += module + "\n" + name + "\n";
  }
  void Int(int64_t value) {
    if (value >= 0 && value < 256) {
      Op('K');
      Raw(static_cast<uint64_t>(value), 1);
    } else if (value >= std::numeric_limits<int32_t>::min() &&
               value <= std::numeric_limits<int32_t>::max()) {
      Op('J');
      Raw(static_cast<uint32_t>(static_cast<int32_t>(value)), 4);
    } else {
      Op('\x8a');  // LONG1, 8 bytes two's complement
      Raw(8, 1);
      Raw(static_cast<uint64_t>(value), 8);
    }
  }
  void Ints(const std::vector<int64_t>& values) {
    Op('(');
    for (int64_t v : values)
      Int(v);
    Op('t');
  }
  std::string Take() { return std::move(out_); }

 private:
  void Raw(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
  std::string out_;
};

}  // namespace

std::string StateDictPickle(const std::vector<std::string>& names,
                            const std::vector<StoredDtype>& dtypes,
                            const std::vector<std::vector<int64_t>>& shapes) {
  Pickler p;
  p.Op('\x80');
  p.Op('\x02');
  p.Op('}');  // a plain dict (LibTorch's reader takes an OrderedDict for None)
  p.Op('(');
  for (size_t i = 0; i < names.size(); ++i) {
    int64_t numel = 1;
    for (int64_t d : shapes[i])
      numel *= d;
    p.String(names[i]);
    p.Global("torch._utils", "_rebuild_tensor_v2");
    p.Op('(');
    // Persistent id: ('storage', torch.FloatStorage, key, location, numel).
    p.Op('(');
    p.String("storage");
    p.Global("torch", StorageType(dtypes[i]));
    p.String(std::to_string(i));
    p.String("cpu");
    p.Int(numel);
    p.Op('t');
    p.Op('Q');
    p.Int(0);  // storage offset
    p.Ints(shapes[i]);
    p.Ints(RowMajorStrides(shapes[i]));
    p.Op('\x89');                            // requires_grad False
    p.Global("collections", "OrderedDict");  // backward hooks: none
    p.Op(')');
    p.Op('R');
    p.Op('t');
    p.Op('R');
  }
  p.Op('u');
  p.Op('.');
  return p.Take();
}

TorchSaveWriter::TorchSaveWriter(ZipWriter::Sink write) : zip_(std::move(write)) {}

void TorchSaveWriter::Add(const std::string& name, StoredDtype dtype,
                          const std::vector<int64_t>& shape, const void* data, uint64_t bytes) {
  uint64_t numel = 1;
  for (int64_t d : shape)
    numel *= static_cast<uint64_t>(d);
  if (numel * static_cast<uint64_t>(DtypeBytes(dtype)) != bytes) {
    throw std::logic_error("TorchSaveWriter: " + name + " has the wrong number of bytes");
  }
  zip_.Begin(std::string(kArchive) + "data/" + std::to_string(tensors_.size()), bytes);
  zip_.Data(data, bytes);
  zip_.End();
  tensors_.push_back({name, dtype, shape});
}

void TorchSaveWriter::Finish() {
  std::vector<std::string> names;
  std::vector<StoredDtype> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor& t : tensors_) {
    names.push_back(t.name);
    dtypes.push_back(t.dtype);
    shapes.push_back(t.shape);
  }
  // Storages come first so that they can stream; readers find every entry
  // through the directory.
  zip_.Entry(std::string(kArchive) + "data.pkl", StateDictPickle(names, dtypes, shapes));
  zip_.Entry(std::string(kArchive) + "byteorder", "little");
  zip_.Entry(std::string(kArchive) + "version", "3\n");
  zip_.Entry(std::string(kArchive) + ".data/version", "3\n");
  zip_.Finish();
}

}  // namespace saturn::engine
