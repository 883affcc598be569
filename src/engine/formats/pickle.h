// A restricted reader of Python pickles: the subset torch.save writes for a
// state dict (protocols 2-5), as a tree of values, without running anything.
//
// Python's pickle is a small stack machine. Globals (classes, functions) are
// not looked up: a GLOBAL is a value naming "module.name", and REDUCE (a call)
// is a value holding the callable and its arguments, for the caller to
// interpret (torch_files.h does: torch._utils._rebuild_tensor_v2 is a
// tensor, collections.OrderedDict() an empty dict). Persistent ids (how
// torch.save points at tensor storages) are values too. So reading a pickle
// executes no code and allocates only what the file describes, within the
// limits below; anything else is an InputError naming the file and the byte.
//
// Torch-free, so the readers of pretrained weights can be tested and fuzzed
// without LibTorch.
//
//   PickleReader reader(bytes, "pytorch_model.bin: data.pkl");
//   PickleRef root = reader.Read();          // one pickle, up to its STOP
//   if (root->kind == PickleValue::Kind::kDict) ...
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace saturn::engine {

struct PickleValue;
using PickleRef = std::shared_ptr<PickleValue>;

struct PickleValue {
  enum class Kind {
    kNone,
    kBool,
    kInt,     // fits int64
    kBigInt,  // a LONG of more than 8 bytes: `text` holds its bytes (little-endian)
    kFloat,
    kString,     // text
    kBytes,      // text
    kTuple,      // items
    kList,       // items
    kDict,       // items: key, value, key, value, ... in insertion order
    kGlobal,     // text = "module.name"
    kCall,       // items[0] the callable, items[1] the argument tuple (REDUCE, NEWOBJ)
    kPersistent  // items[0] the persistent id (BINPERSID)
  };
  Kind kind = Kind::kNone;
  int64_t number = 0;  // kBool (0/1), kInt
  double real = 0.0;   // kFloat
  std::string text;
  std::vector<PickleRef> items;
  // For kCall values: the state passed to BUILD (e.g. an OrderedDict's
  // _metadata), kept but not interpreted.
  PickleRef state;
  // Kept by the reader: nesting depth once placed in another value (sealed).
  int depth = 1;
  bool sealed = false;

  bool Is(Kind k) const { return kind == k; }
  // "dict", "tuple", ... for messages.
  std::string KindName() const;
};

class PickleReader {
 public:
  // `where` names the data in errors ("model.pt: data.pkl").
  PickleReader(std::string_view data, std::string where);

  // Reads one pickle from the current position up to and including its
  // STOP and returns its value; a file may hold several in a row (the
  // legacy torch.save format). InputError on anything outside the subset.
  PickleRef Read();
  // Bytes consumed so far.
  size_t Position() const { return pos_; }

 private:
  [[noreturn]] void Fail(const std::string& message) const;
  uint8_t Byte();
  std::string_view Take(uint64_t count);
  uint64_t Little(int bytes);
  PickleRef Pop();
  std::vector<PickleRef> PopToMark();
  void Push(PickleRef value);
  // Values placed inside another are sealed (Use): containers are filled
  // while on top of the stack, before anything holds them, so a sealed one
  // that is changed again (a structure made to contain itself) is refused
  // (Insertable), and a sealed value's depth is final.
  void Use(const PickleRef& item);
  void Insertable(const PickleRef& container);
  // The instructions by kind; false for one not of that kind.
  bool StackOp(uint8_t op);
  bool ScalarOp(uint8_t op);
  bool ObjectOp(uint8_t op);
  bool FillOp(uint8_t op);
  PickleRef Top();

  std::string_view data_;
  std::string where_;
  size_t pos_ = 0;
  std::vector<PickleRef> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleRef> memo_;
  size_t op_start_ = 0;
};

}  // namespace saturn::engine
