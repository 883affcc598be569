// The BPE model of tokenizer.json ("model": {"type": "BPE", ...}), as
// Hugging Face's `tokenizers` runs it: a word's characters (or, for
// byte-level tokenizers, its bytes) become symbols, characters missing from
// the vocabulary fall back to `<0xNN>` byte tokens (`byte_fallback`) or the
// unknown token (consecutive ones fused with `fuse_unk`), and the pair with
// the lowest merge rank, leftmost first, merges until none is left.
// `ignore_merges`: a word that is itself in the vocabulary is that token.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace saturn::tokenizer {

// Heterogeneous lookup: a std::string key found by a std::string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>;

// Hugging Face's byte-level alphabet: byte b as the character GPT-2's
// bytes_to_unicode gives it, in UTF-8.
const std::array<std::string, 256>& ByteLevelAlphabet();

class Bpe {
 public:
  // Reads the "model" object; InputError naming `file` and the field path
  // (model.merges[3], ...) for anything malformed or unsupported.
  Bpe(const nlohmann::json& model, std::string_view file);

  // Appends the ids of one pre-tokenized word. `byte_level`: the word is raw
  // bytes that the byte-level alphabet maps to symbols (a ByteLevel
  // pre-tokenizer's last step, done here without building the mapped text).
  void EncodeWord(std::string_view word, bool byte_level, std::vector<uint32_t>* ids) const;

  std::optional<uint32_t> TokenId(std::string_view token) const;
  // Largest id of the vocabulary + 1.
  uint32_t IdBound() const { return id_bound_; }
  const TokenMap& vocab() const { return vocab_; }
  bool ignore_merges() const { return ignore_merges_; }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  struct Merge {
    uint32_t rank, id;
  };
  struct Symbol;
  // The constructor's parts: model.vocab and unk_token; each byte's symbol,
  // fallback and raw-bytes ids; model.merges.
  void ReadVocab(const nlohmann::json& model, std::string_view file);
  void IndexBytes();
  void ReadMerges(const nlohmann::json& model, std::string_view file);
  void AddSymbols(std::string_view word, bool byte_level, std::vector<Symbol>* symbols) const;
  void MergeAll(std::vector<Symbol>* symbols) const;
  const Merge* FindMerge(uint32_t left, uint32_t right) const;

  TokenMap vocab_;
  // Byte-level words: the vocabulary keyed by raw bytes (for ignore_merges)
  // and each byte's symbol id (kNone if the vocabulary lacks it).
  TokenMap raw_vocab_;
  std::array<uint32_t, 256> byte_ids_{};
  std::array<uint32_t, 256> fallback_ids_{};  // <0xNN>, kNone if absent
  bool has_all_fallback_ = false;
  // Merges by (left id << 32 | right id): open addressing, linear probing,
  // a power-of-two table (one cache line per lookup, as a word's merges are
  // looked up many times).
  struct MergeSlot {
    uint64_t key = kEmptyKey;
    Merge merge{};
  };
  static constexpr uint64_t kEmptyKey = UINT64_MAX;
  void PutMerge(uint64_t key, Merge merge);
  std::vector<MergeSlot> merges_;
  int merge_shift_ = 64;
  std::optional<uint32_t> unk_;
  bool byte_fallback_ = false, fuse_unk_ = false, ignore_merges_ = false;
  uint32_t id_bound_ = 0;
};

inline constexpr uint32_t kNone = UINT32_MAX;

}  // namespace saturn::tokenizer
