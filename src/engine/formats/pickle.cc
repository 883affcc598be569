#include "engine/formats/pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/error.h"

namespace saturn::engine {
namespace {

using Kind = PickleValue::Kind;

// A state dict is shallow; deeper structures are refused rather than
// followed (and never built: destroying them would recurse as deep).
constexpr int kMaxDepth = 64;
constexpr size_t kMaxStack = 1 << 20;
constexpr size_t kMaxMemo = 1 << 24;

PickleRef Make(Kind kind) {
  auto value = std::make_shared<PickleValue>();
  value->kind = kind;
  return value;
}

PickleRef Text(Kind kind, std::string_view text) {
  PickleRef value = Make(kind);
  value->text = std::string(text);
  return value;
}

PickleRef Int(int64_t n) {
  PickleRef value = Make(Kind::kInt);
  value->number = n;
  return value;
}

}  // namespace

std::string PickleValue::KindName() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
    case Kind::kBigInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kTuple:
      return "tuple";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kGlobal:
      return "global " + text;
    case Kind::kCall:
      return "call of " + (items.empty() ? std::string("?") : items[0]->KindName());
    case Kind::kPersistent:
      return "persistent id";
  }
  return "?";
}

PickleReader::PickleReader(std::string_view data, std::string where)
    : data_(data), where_(std::move(where)) {}

void PickleReader::Fail(const std::string& message) const {
  throw InputError(
      where_, 0, "",
      "not a pickle this reader takes (byte " + std::to_string(op_start_) + "): " + message);
}

uint8_t PickleReader::Byte() {
  if (pos_ >= data_.size()) Fail("ends in the middle of an instruction");
  return static_cast<uint8_t>(data_[pos_++]);
}

std::string_view PickleReader::Take(uint64_t count) {
  if (count > data_.size() - pos_) Fail("a value runs past the end of the data");
  std::string_view part = data_.substr(pos_, count);
  pos_ += count;
  return part;
}

uint64_t PickleReader::Little(int bytes) {
  std::string_view raw = Take(static_cast<uint64_t>(bytes));
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i)
    value = (value << 8) | static_cast<uint8_t>(raw[i]);
  return value;
}

void PickleReader::Push(PickleRef value) {
  if (stack_.size() >= kMaxStack) Fail("more than 2^20 values on the stack");
  stack_.push_back(std::move(value));
}

PickleRef PickleReader::Pop() {
  size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) Fail("an instruction takes a value from an empty stack");
  PickleRef value = std::move(stack_.back());
  stack_.pop_back();
  return value;
}

PickleRef PickleReader::Top() {
  size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) Fail("an instruction works on an empty stack");
  return stack_.back();
}

std::vector<PickleRef> PickleReader::PopToMark() {
  if (marks_.empty()) Fail("no mark to collect values up to");
  size_t mark = marks_.back();
  marks_.pop_back();
  std::vector<PickleRef> items(std::make_move_iterator(stack_.begin() + mark),
                               std::make_move_iterator(stack_.end()));
  stack_.resize(mark);
  return items;
}

void PickleReader::Insertable(const PickleRef& container) {
  if (container->sealed) Fail("a structure that contains itself or is changed after use");
}

void PickleReader::Use(const PickleRef& item) {
  if (item->sealed) return;
  int depth = 1;
  for (const PickleRef& child : item->items)
    depth = std::max(depth, child->depth + 1);
  if (item->state) depth = std::max(depth, item->state->depth + 1);
  if (depth > kMaxDepth) Fail("values nested more than 64 deep");
  item->depth = depth;
  item->sealed = true;
}

// Marks, the stack, and containers built from it (tuples, lists, dicts).
bool PickleReader::StackOp(uint8_t op) {
  switch (op) {
    case 0x80:  // PROTO
      Byte();
      break;
    case 0x95:  // FRAME
      Little(8);
      break;
    case '(':  // MARK
      if (marks_.size() >= kMaxStack) Fail("too many marks");
      marks_.push_back(stack_.size());
      break;
    case '1':  // POP_MARK
      PopToMark();
      break;
    case '0':  // POP
      Pop();
      break;
    case '2':  // DUP
      Push(Top());
      break;
    case '}':  // EMPTY_DICT
      Push(Make(Kind::kDict));
      break;
    case ']':  // EMPTY_LIST
      Push(Make(Kind::kList));
      break;
    case ')':  // EMPTY_TUPLE
      Push(Make(Kind::kTuple));
      break;
    case 't':    // TUPLE
    case 'l':    // LIST
    case 'd': {  // DICT
      std::vector<PickleRef> items = PopToMark();
      if (op == 'd' && items.size() % 2 != 0) Fail("a dict of an odd number of values");
      PickleRef value = Make(op == 't' ? Kind::kTuple : op == 'l' ? Kind::kList : Kind::kDict);
      for (const PickleRef& item : items)
        Use(item);
      value->items = std::move(items);
      Push(value);
      break;
    }
    case 0x85:    // TUPLE1
    case 0x86:    // TUPLE2
    case 0x87: {  // TUPLE3
      size_t n = op - 0x84u;
      PickleRef value = Make(Kind::kTuple);
      value->items.resize(n);
      for (size_t i = n; i-- > 0;)
        value->items[i] = Pop();
      for (const PickleRef& item : value->items)
        Use(item);
      Push(value);
      break;
    }
    default:
      return false;
  }
  return true;
}

// Constants: None, booleans, integers, floats, strings, bytes.
bool PickleReader::ScalarOp(uint8_t op) {
  switch (op) {
    case 'N':
      Push(Make(Kind::kNone));
      break;
    case 0x88:    // NEWTRUE
    case 0x89: {  // NEWFALSE
      PickleRef value = Make(Kind::kBool);
      value->number = op == 0x88 ? 1 : 0;
      Push(value);
      break;
    }
    case 'J':  // BININT
      Push(Int(static_cast<int32_t>(Little(4))));
      break;
    case 'K':  // BININT1
      Push(Int(Byte()));
      break;
    case 'M':  // BININT2
      Push(Int(static_cast<int64_t>(Little(2))));
      break;
    case 0x8a:    // LONG1
    case 0x8b: {  // LONG4
      uint64_t n = op == 0x8a ? Byte() : Little(4);
      std::string_view raw = Take(n);
      if (n > 8) {
        Push(Text(Kind::kBigInt, raw));
        break;
      }
      uint64_t bits = 0;
      for (size_t i = n; i-- > 0;)
        bits = (bits << 8) | static_cast<uint8_t>(raw[i]);
      if (n > 0 && n < 8 && (static_cast<uint8_t>(raw[n - 1]) & 0x80)) bits |= ~0ULL << (8 * n);
      Push(Int(static_cast<int64_t>(bits)));
      break;
    }
    case 'G': {  // BINFLOAT, big-endian
      std::string_view raw = Take(8);
      uint64_t bits = 0;
      for (char c : raw)
        bits = (bits << 8) | static_cast<uint8_t>(c);
      PickleRef value = Make(Kind::kFloat);
      std::memcpy(&value->real, &bits, sizeof bits);
      Push(value);
      break;
    }
    case 'X':  // BINUNICODE
    case 'T':  // BINSTRING
      Push(Text(Kind::kString, Take(Little(4))));
      break;
    case 0x8c:  // SHORT_BINUNICODE
    case 'U':   // SHORT_BINSTRING
      Push(Text(Kind::kString, Take(Byte())));
      break;
    case 0x8d:  // BINUNICODE8
      Push(Text(Kind::kString, Take(Little(8))));
      break;
    case 'B':  // BINBYTES
      Push(Text(Kind::kBytes, Take(Little(4))));
      break;
    case 'C':  // SHORT_BINBYTES
      Push(Text(Kind::kBytes, Take(Byte())));
      break;
    case 0x8e:  // BINBYTES8
      Push(Text(Kind::kBytes, Take(Little(8))));
      break;
    default:
      return false;
  }
  return true;
}

// Globals, the memo, persistent ids, calls and BUILD (kept, not run).
bool PickleReader::ObjectOp(uint8_t op) {
  switch (op) {
    case 'c': {  // GLOBAL: module\nname\n
      auto line = [&] {
        size_t end = data_.find('\n', pos_);
        if (end == std::string_view::npos) Fail("a global without its newline");
        std::string_view text = data_.substr(pos_, end - pos_);
        pos_ = end + 1;
        return text;
      };
      std::string module(line());
      std::string name(line());
      Push(Text(Kind::kGlobal, module + "." + name));
      break;
    }
    case 0x93: {  // STACK_GLOBAL
      PickleRef name = Pop(), module = Pop();
      if (!name->Is(Kind::kString) || !module->Is(Kind::kString))
        Fail("a global named by something other than two strings");
      Push(Text(Kind::kGlobal, module->text + "." + name->text));
      break;
    }
    case 'q':     // BINPUT
    case 'r':     // LONG_BINPUT
    case 0x94: {  // MEMOIZE
      uint64_t index = op == 'q' ? Byte() : op == 'r' ? Little(4) : memo_.size();
      if (index >= kMaxMemo) Fail("a memo index past 2^24");
      // A map, as Python's unpickler keeps it: an index far past the entries
      // (a damaged file) costs one entry, not a table that long.
      if (memo_.size() >= kMaxMemo && !memo_.count(index)) Fail("more than 2^24 memo entries");
      memo_[index] = Top();
      break;
    }
    case 'h':    // BINGET
    case 'j': {  // LONG_BINGET
      uint64_t index = op == 'h' ? Byte() : Little(4);
      auto entry = memo_.find(index);
      if (entry == memo_.end()) Fail("a memo entry that was never stored");
      Push(entry->second);
      break;
    }
    case 'Q': {  // BINPERSID
      PickleRef id = Pop();
      Use(id);
      PickleRef value = Make(Kind::kPersistent);
      value->items.push_back(id);
      Push(value);
      break;
    }
    case 'R':     // REDUCE
    case 0x81: {  // NEWOBJ
      PickleRef args = Pop(), callable = Pop();
      if (!args->Is(Kind::kTuple)) Fail("a call whose arguments are not a tuple");
      // OrderedDict() is a dict that SETITEMS fills next.
      if (callable->Is(Kind::kGlobal) && callable->text == "collections.OrderedDict" &&
          args->items.empty()) {
        Push(Make(Kind::kDict));
        break;
      }
      Use(callable);
      Use(args);
      PickleRef value = Make(Kind::kCall);
      value->items = {callable, args};
      Push(value);
      break;
    }
    case 'b': {  // BUILD
      PickleRef state = Pop();
      PickleRef target = Top();
      if (target->Is(Kind::kCall) || target->Is(Kind::kDict)) {
        Use(state);
        Insertable(target);
        target->state = state;  // kept, not interpreted
      } else {
        Fail("BUILD on a " + target->KindName());
      }
      break;
    }
    default:
      return false;
  }
  return true;
}

// Items put into the dict or list on top of the stack.
bool PickleReader::FillOp(uint8_t op) {
  switch (op) {
    case 's': {  // SETITEM
      PickleRef value = Pop(), key = Pop();
      PickleRef dict = Top();
      if (!dict->Is(Kind::kDict)) Fail("SETITEM on a " + dict->KindName());
      Use(key);
      Use(value);
      Insertable(dict);
      dict->items.push_back(key);
      dict->items.push_back(value);
      break;
    }
    case 'u': {  // SETITEMS
      std::vector<PickleRef> items = PopToMark();
      if (items.size() % 2 != 0) Fail("SETITEMS with an odd number of values");
      PickleRef dict = Top();
      if (!dict->Is(Kind::kDict)) Fail("SETITEMS on a " + dict->KindName());
      for (const PickleRef& item : items)
        Use(item);
      Insertable(dict);
      for (PickleRef& item : items)
        dict->items.push_back(std::move(item));
      break;
    }
    case 'a': {  // APPEND
      PickleRef value = Pop();
      PickleRef list = Top();
      if (!list->Is(Kind::kList)) Fail("APPEND on a " + list->KindName());
      Use(value);
      Insertable(list);
      list->items.push_back(value);
      break;
    }
    case 'e': {  // APPENDS
      std::vector<PickleRef> items = PopToMark();
      PickleRef list = Top();
      if (!list->Is(Kind::kList)) Fail("APPENDS on a " + list->KindName());
      for (const PickleRef& item : items)
        Use(item);
      Insertable(list);
      for (PickleRef& item : items)
        list->items.push_back(std::move(item));
      break;
    }

    default:
      return false;
  }
  return true;
}

PickleRef PickleReader::Read() {
  stack_.clear();
  marks_.clear();
  for (;;) {
    op_start_ = pos_;
    uint8_t op = Byte();
    if (op == '.') {  // STOP
      PickleRef result = Pop();
      if (!stack_.empty() || !marks_.empty()) Fail("values left on the stack at STOP");
      Use(result);
      return result;
    }
    if (StackOp(op) || ScalarOp(op) || ObjectOp(op) || FillOp(op)) continue;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op);
    Fail(std::string("instruction ") + hex + " is outside the subset torch.save writes");
  }
}

}  // namespace saturn::engine
