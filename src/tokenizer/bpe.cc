#include "tokenizer/bpe.h"

#include <algorithm>

#include "common/error.h"
#include "common/json_text.h"
#include "tokenizer/unicode.h"

namespace saturn::tokenizer {
namespace {

std::string Field(std::string_view parent, std::string_view name) {
  return std::string(parent) + "." + std::string(name);
}

bool OptionalBool(const nlohmann::json& j, const char* key, std::string_view file) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw InputError(file, 0, Field("model", key), "expected true or false");
  return it->get<bool>();
}

// The byte-level alphabet's code point for each byte (GPT-2's
// bytes_to_unicode): printable Latin-1 bytes stand for themselves, the rest
// are numbered from U+0100 on.
std::array<char32_t, 256> ByteCodePoints() {
  std::array<char32_t, 256> cps{};
  std::array<bool, 256> printable{};
  for (int b = '!'; b <= '~'; ++b)
    printable[b] = true;
  for (int b = 0xa1; b <= 0xac; ++b)
    printable[b] = true;
  for (int b = 0xae; b <= 0xff; ++b)
    printable[b] = true;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b)
    cps[b] = printable[b] ? static_cast<char32_t>(b) : next++;
  return cps;
}

}  // namespace

const std::array<std::string, 256>& ByteLevelAlphabet() {
  static const std::array<std::string, 256> alphabet = [] {
    std::array<std::string, 256> a;
    std::array<char32_t, 256> cps = ByteCodePoints();
    for (int b = 0; b < 256; ++b)
      AppendUtf8(cps[b], &a[b]);
    return a;
  }();
  return alphabet;
}

// A merge's two tokens, written "a b" or ["a", "b"].
static std::pair<std::string, std::string> MergePair(const nlohmann::json& m, std::string_view file,
                                                     const std::string& field) {
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      throw InputError(file, 0, field,
                       "expected two tokens separated by one space, got " + Quote(s));
    }
    return {s.substr(0, space), s.substr(space + 1)};
  }
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    return {m[0].get<std::string>(), m[1].get<std::string>()};
  }
  throw InputError(file, 0, field, "expected \"a b\" or [\"a\", \"b\"]");
}

struct Bpe::Symbol {
  uint32_t id;
  int32_t prev, next;
  uint32_t len;  // bytes of the word it covers; 0 once merged into its left neighbour
};

Bpe::Bpe(const nlohmann::json& model, std::string_view file) {
  if (!model.is_object()) throw InputError(file, 0, "model", "expected an object");
  auto dropout = model.find("dropout");
  if (dropout != model.end() && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    throw InputError(file, 0, "model.dropout",
                     "BPE dropout is not supported (it makes encoding random); expected null");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() &&
        !(it->is_string() && it->get<std::string>().empty())) {
      throw InputError(file, 0, Field("model", key),
                       "is not supported (Llama-family and GPT-2 tokenizers have none); "
                       "expected null");
    }
  }
  byte_fallback_ = OptionalBool(model, "byte_fallback", file);
  fuse_unk_ = OptionalBool(model, "fuse_unk", file);
  ignore_merges_ = OptionalBool(model, "ignore_merges", file);
  ReadVocab(model, file);
  IndexBytes();
  ReadMerges(model, file);
}

void Bpe::ReadVocab(const nlohmann::json& model, std::string_view file) {
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) {
    throw InputError(file, 0, "model.vocab", "expected an object of token: id");
  }
  vocab_.reserve(vocab->size());
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    std::optional<long> id = JsonInt(it.value(), 0, INT32_MAX - 1);
    if (!id) {
      throw InputError(file, 0, "model.vocab[" + Quote(it.key()) + "]",
                       "expected an id, an integer from 0 to 2147483646");
    }
    vocab_[it.key()] = static_cast<uint32_t>(*id);
    id_bound_ = std::max(id_bound_, static_cast<uint32_t>(*id) + 1);
  }

  auto unk = model.find("unk_token");
  if (unk != model.end() && !unk->is_null()) {
    if (!unk->is_string())
      throw InputError(file, 0, "model.unk_token", "expected a string or null");
    auto found = vocab_.find(unk->get<std::string>());
    if (found == vocab_.end()) {
      throw InputError(file, 0, "model.unk_token",
                       Quote(unk->get<std::string>()) + " is not in model.vocab");
    }
    unk_ = found->second;
  }
}

// Byte-level symbols and byte-fallback tokens.
void Bpe::IndexBytes() {
  const std::array<std::string, 256>& alphabet = ByteLevelAlphabet();
  has_all_fallback_ = true;
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(alphabet[b]);
    byte_ids_[b] = it == vocab_.end() ? kNone : it->second;
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto fb = vocab_.find(std::string_view(name));
    fallback_ids_[b] = fb == vocab_.end() ? kNone : fb->second;
    if (fb == vocab_.end()) has_all_fallback_ = false;
  }
  if (ignore_merges_) {
    // Words arrive as raw bytes: look them up by the bytes a token stands for.
    std::unordered_map<std::string, int> byte_of;
    for (int b = 0; b < 256; ++b)
      byte_of[alphabet[b]] = b;
    for (const auto& [token, id] : vocab_) {
      std::string raw;
      size_t i = 0;
      bool ok = true;
      while (i < token.size()) {
        size_t n = Utf8SequenceLength(static_cast<unsigned char>(token[i]));
        auto it = byte_of.find(token.substr(i, n));
        if (it == byte_of.end()) {
          ok = false;
          break;
        }
        raw.push_back(static_cast<char>(it->second));
        i += n;
      }
      if (ok) raw_vocab_.emplace(std::move(raw), id);
    }
  }
}

void Bpe::ReadMerges(const nlohmann::json& model, std::string_view file) {
  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) {
    throw InputError(file, 0, "model.merges", "expected an array of merges");
  }
  // A table at most half full.
  size_t slots = 16;
  merge_shift_ = 60;
  while (slots < 2 * merges->size()) {
    slots *= 2;
    --merge_shift_;
  }
  merges_.assign(slots, MergeSlot{});
  uint32_t rank = 0;
  for (const nlohmann::json& m : *merges) {
    std::string field = "model.merges[" + std::to_string(rank) + "]";
    auto [left, right] = MergePair(m, file, field);
    auto a = vocab_.find(left), b = vocab_.find(right), ab = vocab_.find(left + right);
    for (auto [it, what] : {std::pair{a, &left}, std::pair{b, &right}}) {
      if (it == vocab_.end())
        throw InputError(file, 0, field, Quote(*what) + " is not in model.vocab");
    }
    if (ab == vocab_.end()) {
      throw InputError(file, 0, field,
                       "the merged token " + Quote(left + right) + " is not in model.vocab");
    }
    // A pair listed twice keeps its last rank, as in Hugging Face's reader.
    PutMerge(uint64_t{a->second} << 32 | b->second, Merge{rank, ab->second});
    ++rank;
  }
}

std::optional<uint32_t> Bpe::TokenId(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

namespace {
size_t MergeIndex(uint64_t key, int shift) {
  return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> shift);
}
}  // namespace

void Bpe::PutMerge(uint64_t key, Merge merge) {
  size_t mask = merges_.size() - 1;
  for (size_t i = MergeIndex(key, merge_shift_);; i = (i + 1) & mask) {
    if (merges_[i].key == kEmptyKey || merges_[i].key == key) {
      merges_[i] = {key, merge};
      return;
    }
  }
}

const Bpe::Merge* Bpe::FindMerge(uint32_t left, uint32_t right) const {
  uint64_t key = uint64_t{left} << 32 | right;
  size_t mask = merges_.size() - 1;
  for (size_t i = MergeIndex(key, merge_shift_);; i = (i + 1) & mask) {
    const MergeSlot& slot = merges_[i];
    if (slot.key == key) return &slot.merge;
    if (slot.key == kEmptyKey) return nullptr;
  }
}

void Bpe::AddSymbols(std::string_view word, bool byte_level, std::vector<Symbol>* symbols) const {
  auto add = [&](uint32_t id, uint32_t len) {
    int32_t n = static_cast<int32_t>(symbols->size());
    symbols->push_back({id, n - 1, n + 1, len});
  };
  // A pending unknown token (Hugging Face adds it when the next known
  // character comes, or at the end; byte-fallback tokens do not flush it).
  uint32_t unk_len = 0;
  bool unk_pending = false;
  auto character = [&](std::string_view c, uint32_t len) {
    auto it = vocab_.find(c);
    if (it != vocab_.end()) {
      if (unk_pending) add(*unk_, unk_len), unk_pending = false;
      add(it->second, len);
      return;
    }
    if (byte_fallback_) {
      bool all = has_all_fallback_;
      if (!all) {
        all = true;
        for (char ch : c)
          all = all && fallback_ids_[static_cast<unsigned char>(ch)] != kNone;
      }
      if (all) {
        for (char ch : c)
          add(fallback_ids_[static_cast<unsigned char>(ch)], 1);
        return;
      }
    }
    if (unk_) {
      if (unk_pending && fuse_unk_) {
        unk_len += len;
      } else {
        if (unk_pending) add(*unk_, unk_len);
        unk_pending = true;
        unk_len = len;
      }
    }
  };
  if (byte_level) {
    const std::array<std::string, 256>& alphabet = ByteLevelAlphabet();
    for (char ch : word) {
      auto b = static_cast<unsigned char>(ch);
      if (byte_ids_[b] != kNone && !unk_pending) {
        add(byte_ids_[b], 1);
      } else {
        character(alphabet[b], 1);
      }
    }
  } else {
    size_t i = 0;
    while (i < word.size()) {
      size_t n = Utf8SequenceLength(static_cast<unsigned char>(word[i]));
      n = std::min(n, word.size() - i);
      character(word.substr(i, n), static_cast<uint32_t>(n));
      i += n;
    }
  }
  if (unk_pending) add(*unk_, unk_len);
  if (!symbols->empty()) symbols->back().next = -1;
}

void Bpe::MergeAll(std::vector<Symbol>* symbols) const {
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    uint32_t id;
    // The queue's top is the lowest rank, then the leftmost position.
    bool operator<(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::vector<Symbol>& s = *symbols;
  // A heap on a vector kept between calls (no allocation per word).
  thread_local std::vector<Candidate> queue;
  queue.clear();
  auto push = [](const Candidate& c) {
    queue.push_back(c);
    std::push_heap(queue.begin(), queue.end());
  };
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (const Merge* m = FindMerge(s[i].id, s[i + 1].id))
      push({m->rank, static_cast<int32_t>(i), m->id});
  }
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    Candidate top = queue.back();
    queue.pop_back();
    Symbol& left = s[top.pos];
    if (left.len == 0 || left.next == -1) continue;
    int32_t next_pos = left.next;
    const Symbol right = s[next_pos];
    const Merge* m = FindMerge(left.id, right.id);
    if (m == nullptr || m->id != top.id) continue;  // an expired candidate
    left.id = top.id;
    left.len += right.len;
    left.next = right.next;
    s[next_pos].len = 0;
    if (right.next != -1) s[right.next].prev = top.pos;
    if (left.prev != -1) {
      if (const Merge* pm = FindMerge(s[left.prev].id, left.id))
        push({pm->rank, left.prev, pm->id});
    }
    if (left.next != -1) {
      if (const Merge* nm = FindMerge(left.id, s[left.next].id)) push({nm->rank, top.pos, nm->id});
    }
  }
}

void Bpe::EncodeWord(std::string_view word, bool byte_level, std::vector<uint32_t>* ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const TokenMap& map = byte_level ? raw_vocab_ : vocab_;
    auto it = map.find(word);
    if (it != map.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  AddSymbols(word, byte_level, &symbols);
  MergeAll(&symbols);
  for (const Symbol& sym : symbols) {
    if (sym.len != 0) ids->push_back(sym.id);
  }
}

}  // namespace saturn::tokenizer
