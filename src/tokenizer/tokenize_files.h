// Text files and JSON Lines to one token file: what `saturn tokenize` does
// (docs/tokenize.md), shared with bench/tokenizer.
//
// Each input is plain text (the whole file is one document; a leading UTF-8
// byte-order mark is dropped) or, named *.jsonl, JSON Lines (one document per
// line: an object whose `field` is the text; blank lines are skipped). Each
// document becomes [BOS] ids EOS — BOS where the tokenizer asks for it
// (Tokenizer::add_bos) — in input order, and the ids go to `output` as a
// token file (tokenizer/token_file.h): uint16 without a header for a
// vocabulary of at most 65,536, else uint32 with a header. Documents are
// encoded on `threads` threads, split by documents; the output is the same
// for any thread count. Bad input (a missing file, a line that is not JSON
// or lacks the field, text that is not UTF-8) is an InputError naming the
// file and line, and leaves nothing at `output`.
//
//   TokenizeResult r = TokenizeFiles(tokenizer, {.inputs = {"a.jsonl"}, .output = "a.bin"});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace saturn::tokenizer {

struct TokenizeOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string field = "text";  // the text's field in JSON Lines
  int threads = 0;             // 0: every core
  // The end-of-document token's text, instead of the tokenizer's eos_token.
  std::optional<std::string> eos;
  bool progress = true;  // a progress line on stderr for long inputs
};

struct TokenizeResult {
  uint64_t documents = 0;  // documents written
  uint64_t empty = 0;      // empty documents skipped
  uint64_t tokens = 0;     // ids written, BOS and EOS included
  uint64_t bytes = 0;      // bytes of text read
  double seconds = 0;
  int id_bytes = 2;  // 2: uint16, 4: uint32
  bool header = false;
  uint32_t vocab = 0;
  int threads = 1;
};

TokenizeResult TokenizeFiles(const Tokenizer& tokenizer, const TokenizeOptions& options);

// Whether TokenizeFiles reads `path` as JSON Lines: a name ending in .jsonl
// (any case).
bool IsJsonLines(const std::string& path);

}  // namespace saturn::tokenizer
