// `data: {type: text, path: FILE, tokenizer: DIR}` for the models that take
// token ids (gpt2, llama): the text is tokenized once, with the Hugging Face
// tokenizer.json in DIR, the way `saturn tokenize` does (docs/tokenize.md:
// plain text is one document, *.jsonl one document a line in `field`; each
// document [BOS] ids EOS), into a token file in the token cache, and the
// task trains on that file as `tokens` data.
//
// The cache is keyed by content: the text's bytes and the tokenizer's files
// (tokenizer.json, tokenizer_config.json, special_tokens_map.json: size and
// CRC-32C, common/checksum.h), `field`, `eos` and the tokenizer's version
// (kTextTokensVersion). A second load of the same text, in this process or
// any later one, reads the cache's record and tokenizes nothing; a changed
// text or tokenizer is another key, so nothing stale is ever used. Each
// entry is KEY.tokens (the token file) and KEY.json (its record: the key in
// full, the sources, the counts), written atomically in that order, so a
// failed or interrupted tokenization leaves no entry.
//
//   TextTokens t = ReadTextTokens(d, base_dir, /*model_vocab=*/128256);
//   t.path;   // ~/.cache/saturn/tokens/1c9a0f3e-5242880-77d2a1b0.tokens
#pragma once

#include <cstdint>
#include <string>

#include "contracts/yaml_fields.h"

namespace saturn {

// Bumped when the tokenizer's ids for some text change (a fixed bug): old
// entries are then another key and never read.
inline constexpr int kTextTokensVersion = 1;

struct TextTokens {
  std::string path;        // the token file
  uint32_t vocab = 0;      // the tokenizer's vocabulary: every id is below it
  uint64_t tokens = 0;     // ids in the file, BOS and EOS included
  uint64_t documents = 0;  // documents tokenized
  bool tokenized = false;  // made now (false: found in the cache)
};

// The token cache's folder: $SATURN_TOKEN_CACHE, else
// $XDG_CACHE_HOME/saturn/tokens, else ~/.cache/saturn/tokens.
std::string TokenCacheDir();

// The tokens of `d` (a data map with path, tokenizer and optionally field
// and eos; relative paths against `base_dir`) from the cache, tokenizing
// them there first if they are not in it. Every problem is an InputError:
// a field of `d` (no such file or folder, a tokenizer without tokenizer.json
// or an end-of-document token, a vocabulary larger than `model_vocab`, field
// given for plain text), or the text file and line (a JSON line without the
// field, text that is not UTF-8).
// `path_field` names the text: "path", or "eval_path" for the held-out text.
TextTokens ReadTextTokens(const YamlFields& d, const std::string& base_dir, long model_vocab,
                          const char* path_field = "path");

}  // namespace saturn
