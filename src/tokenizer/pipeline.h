// The text-to-words stages of tokenizer.json: the normalizer and the
// pre-tokenizer, each read into a flat list of steps (a "Sequence" is its
// steps in order). Hugging Face's semantics throughout (the Rust crate's):
// a pre-tokenizer step maps every current piece to the pieces it splits it
// into, and empty pieces are dropped.
//
// Supported (anything else is an InputError naming the field):
//   normalizer:    NFC, NFD, NFKC, NFKD, Prepend, Replace, Sequence
//   pre_tokenizer: ByteLevel, Split, Metaspace, Digits, Sequence
#pragma once

#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace saturn::tokenizer {

// How a split keeps its delimiters (Hugging Face's SplitDelimiterBehavior).
enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Text cut into (span, is_delimiter) parts that cover it, in order.
struct Part {
  Span span;
  bool match;
};
// The spans `behavior` keeps of `parts` (empty ones included).
std::vector<Span> ApplyBehavior(const std::vector<Part>& parts, Behavior behavior);

class Normalizer {
 public:
  // `config` is tokenizer.json's "normalizer" (not null); `field` its path.
  Normalizer(const nlohmann::json& config, std::string_view file, const std::string& field);
  ~Normalizer();
  // Normalizes `text`; returns false (and leaves *out alone) when nothing
  // changed.
  bool Apply(std::string_view text, std::string* out) const;

 private:
  struct Step;
  void Add(const nlohmann::json& config, std::string_view file, const std::string& field);
  std::vector<std::unique_ptr<Step>> steps_;
};

// A piece of pre-tokenized text; `at_start`: it begins at the start of the
// input (Metaspace's prepend_scheme "first").
struct Piece {
  std::string_view text;
  bool at_start;
};

class PreTokenizer {
 public:
  // `config` is tokenizer.json's "pre_tokenizer" (not null); `field` its path.
  PreTokenizer(const nlohmann::json& config, std::string_view file, const std::string& field);
  ~PreTokenizer();

  // Splits `pieces` in place; new text lives in `store` (cleared by the
  // caller between inputs).
  void Apply(std::vector<Piece>* pieces, std::deque<std::string>* store) const;

  // Whether the last step is a ByteLevel mapping left to the model (the
  // words come out as raw bytes; Bpe::EncodeWord maps them).
  bool byte_level_words() const { return byte_level_words_; }
  bool has_byte_level() const { return has_byte_level_; }

 private:
  struct Step;
  void Add(const nlohmann::json& config, std::string_view file, const std::string& field);
  std::vector<std::unique_ptr<Step>> steps_;
  bool byte_level_words_ = false, has_byte_level_ = false;
};

}  // namespace saturn::tokenizer
