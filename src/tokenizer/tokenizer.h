// Hugging Face tokenizers in C++, torch-free: reads a model's
// tokenizer.json (+ tokenizer_config.json) and encodes text to the ids
// Hugging Face's `tokenizers` gives (docs/tokenize.md), for the BPE
// tokenizers Llama-family and GPT-2-family models ship:
//   - byte-level BPE (GPT-2, Llama 3, Qwen 2, SmolLM): a ByteLevel
//     pre-tokenizer (with GPT-2's pattern, or after Split patterns),
//     merges as "a b" or ["a", "b"], ignore_merges, an NFC normalizer;
//   - SentencePiece-style BPE with byte_fallback (Llama 2, Mistral,
//     TinyLlama): Metaspace, or the normalizers Prepend("▁") + Replace;
//     characters outside the vocabulary become <0xNN> byte tokens;
//   - added tokens (special or not; single_word, lstrip, rstrip,
//     normalized), found in the text before the model runs, longest first.
// Anything else in the file (a WordPiece or Unigram model, a pre-tokenizer or
// normalizer not listed in pipeline.h) is an InputError naming the file and
// the field, e.g. "tokenizer.json: model.type: ...".
//
//   Tokenizer t = Tokenizer::Load("models/llama-3-8b");   // the folder
//   std::vector<uint32_t> ids = t.Encode("Hello world");   // no BOS/EOS
//   Encoder encoder(t);                                    // one per thread:
//   encoder.Encode(text, &ids);                            // a word cache
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace saturn::tokenizer {

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json and, where present, DIR/tokenizer_config.json
  // (bos_token, eos_token, add_bos_token, add_eos_token) and
  // DIR/special_tokens_map.json (bos and eos where the config has none).
  static Tokenizer Load(const std::string& dir);
  // From the files' text; `tokenizer_file` and `config_file` name them in
  // errors; an empty `config_json` stands for no tokenizer_config.json.
  static Tokenizer Parse(std::string_view tokenizer_json, const std::string& tokenizer_file,
                         std::string_view config_json = {}, const std::string& config_file = {},
                         std::string_view special_tokens_map_json = {},
                         const std::string& special_tokens_map_file = {});

  // The ids of `text` (UTF-8; InputError if it is not), without BOS or EOS:
  // Hugging Face's encode(text, add_special_tokens=False).
  std::vector<uint32_t> Encode(std::string_view text) const;

  // Largest id (vocabulary and added tokens) + 1.
  uint32_t VocabSize() const;
  std::optional<uint32_t> TokenId(std::string_view token) const;
  // Beginning- and end-of-document tokens, from the config files.
  std::optional<uint32_t> bos_id() const;
  std::optional<uint32_t> eos_id() const;
  std::string bos_token() const;
  std::string eos_token() const;
  // Whether a document starts with BOS: tokenizer_config.json's
  // add_bos_token, or, without it, whether tokenizer.json's post-processor
  // template starts with the BOS token (Llama 3).
  bool add_bos() const;
  // "byte-level BPE" or "BPE with byte fallback" and so on, for messages.
  std::string Kind() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
  friend class Encoder;
};

// Encodes with one thread's state: the ids of recent words (a cache that
// makes repeated words cost a lookup). Not shared between threads; many
// Encoders may share one Tokenizer.
class Encoder {
 public:
  // `cache_words`: the word cache's size (rounded up to a power of two; 64
  // bytes each): 65,536 words keep a corpus's frequent words in 4 MB.
  explicit Encoder(const Tokenizer& tokenizer, size_t cache_words = 65536);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  // Appends the ids of `text` (valid UTF-8; InputError if not) to *ids.
  void Encode(std::string_view text, std::vector<uint32_t>* ids);

 private:
  struct State;
  std::shared_ptr<const Tokenizer::Impl> impl_;
  std::unique_ptr<State> state_;
};

}  // namespace saturn::tokenizer
