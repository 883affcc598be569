// Text with a tokenizer, tokenized once into the token cache
// (contracts/text_data.h).
#include "contracts/text_data.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/cache_dir.h"
#include "common/checksum.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "contracts/workload_model.h"
#include "tokenizer/tokenize_files.h"
#include "tokenizer/tokenizer.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// What the tokens are made of: the text, the tokenizer's folder, and how
// documents are read and ended.
struct Sources {
  std::string text, dir;
  std::string field = "text";
  std::optional<std::string> eos;
};

constexpr const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json",
                                           "special_tokens_map.json"};

Sources ReadSources(const YamlFields& d, const std::string& base_dir, const char* path_field) {
  d.AllowOnly({"type", "path", "eval_path", "tokenizer", "field", "eos"});
  Sources s;
  s.text = ExistingFile(d, path_field, base_dir);
  fs::path dir = d.String("tokenizer");
  if (dir.is_relative()) dir = fs::path(base_dir) / dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    d.Fail("tokenizer", "no such folder: " + dir.string() +
                            " (the model's folder holding Hugging Face's tokenizer.json)");
  }
  s.dir = fs::absolute(dir).lexically_normal().string();
  if (!fs::is_regular_file(fs::path(s.dir) / "tokenizer.json", ec)) {
    d.Fail("tokenizer", s.dir + " has no tokenizer.json (a Hugging Face model's folder has one)");
  }
  if (d.Has("field")) {
    if (!tokenizer::IsJsonLines(s.text)) {
      d.Fail("field", "names the text's field in JSON Lines (a *.jsonl path); " + s.text +
                          " is plain text, one document");
    }
    s.field = d.String("field");
  }
  if (d.Has("eos")) s.eos = d.String("eos");
  return s;
}

// The size and modification time of every file the tokens depend on, and
// the rest of the sources: within one process, an equal signature is the
// same content, and the memo answers without reading the text again.
std::string Signature(const Sources& s, const std::string& cache) {
  std::string sig = cache + "\n" + s.field + "\n" + (s.eos ? "eos " + *s.eos : "eos -") + "\n";
  std::vector<std::string> files = {s.text};
  for (const char* name : kTokenizerFiles)
    files.push_back((fs::path(s.dir) / name).string());
  for (const std::string& f : files) {
    std::error_code ec, ec2;
    uintmax_t size = fs::file_size(f, ec);
    auto time = fs::last_write_time(f, ec2);
    sig += f +
           (ec || ec2 ? " absent"
                      : " " + std::to_string(size) + " " +
                            std::to_string(time.time_since_epoch().count())) +
           "\n";
  }
  return sig;
}

// The cache key: the record's `key` in full and the entry's file name
// (the text's CRC-32C and size, and the CRC-32C of the rest of the key).
struct Key {
  std::string full, name;
};

Key ContentKey(const Sources& s) {
  FileDigest text = DigestFile(s.text);
  std::string rest = "saturn text tokens " + std::to_string(kTextTokensVersion) + "\n";
  for (const char* name : kTokenizerFiles) {
    std::string path = (fs::path(s.dir) / name).string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      rest += std::string(name) + " absent\n";
      continue;
    }
    FileDigest d = DigestFile(path);
    rest += std::string(name) + " " + std::to_string(d.size) + " " + Crc32cHex(d.crc32c) + "\n";
  }
  rest += "field " + s.field + "\neos " + (s.eos ? *s.eos : "(the tokenizer's)") + "\n";
  Key key;
  key.full = "text " + std::to_string(text.size) + " " + Crc32cHex(text.crc32c) + "\n" + rest;
  key.name = Crc32cHex(text.crc32c) + "-" + std::to_string(text.size) + "-" +
             Crc32cHex(Crc32c(rest.data(), rest.size()));
  return key;
}

// The entry at `base` (.tokens and .json) if it is whole and of this key;
// nothing otherwise (then it is made again, over whatever is there).
std::optional<TextTokens> FromCache(const std::string& base, const std::string& key) {
  std::error_code ec;
  std::string record = base + ".json", tokens = base + ".tokens";
  if (!fs::is_regular_file(record, ec) || !fs::is_regular_file(tokens, ec)) return std::nullopt;
  json j;
  std::string why;
  if (!ParseJsonText(ReadFile(record), &j, &why) || !j.is_object()) return std::nullopt;
  try {
    if (j.value("key", "") != key || fs::file_size(tokens, ec) != j.at("bytes").get<uint64_t>()) {
      return std::nullopt;
    }
    TextTokens t;
    t.path = tokens;
    t.vocab = j.at("vocab").get<uint32_t>();
    t.tokens = j.at("tokens").get<uint64_t>();
    t.documents = j.at("documents").get<uint64_t>();
    return t;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

void CheckVocab(const YamlFields& d, uint32_t vocab, long model_vocab) {
  if (static_cast<long>(vocab) > model_vocab) {
    d.Fail("tokenizer", "its vocabulary has " + std::to_string(vocab) +
                            " ids, more than the model's vocab " + std::to_string(model_vocab) +
                            ": its ids would not all fit the model (is it the model's own "
                            "tokenizer?)");
  }
}

// Tokenizes the text into the entry at `base`, then writes its record.
TextTokens Tokenize(const YamlFields& d, const Sources& s, const std::string& base,
                    const std::string& key, long model_vocab) {
  tokenizer::Tokenizer t = tokenizer::Tokenizer::Load(s.dir);
  if (s.eos && !t.TokenId(*s.eos)) {
    d.Fail("eos", Quote(*s.eos) + " is not a token of " + s.dir + "/tokenizer.json");
  }
  if (!s.eos && !t.eos_id()) {
    d.Fail("tokenizer",
           "names no end-of-document token (eos_token in tokenizer_config.json or "
           "special_tokens_map.json); name one with eos: TOKEN, e.g. eos: '<|endoftext|>'");
  }
  CheckVocab(d, t.VocabSize(), model_vocab);
  MakeDirectories(fs::path(base).parent_path().string());
  std::fprintf(stderr, "saturn: tokenizing %s with %s (once: cached as %s.tokens)\n",
               s.text.c_str(), s.dir.c_str(), base.c_str());
  tokenizer::TokenizeOptions o;
  o.inputs = {s.text};
  o.output = base + ".tokens";
  o.field = s.field;
  o.eos = s.eos;
  tokenizer::TokenizeResult r = tokenizer::TokenizeFiles(t, o);
  std::error_code ec;
  json record = {{"key", key},
                 {"text", s.text},
                 {"tokenizer", s.dir},
                 {"field", s.field},
                 {"vocab", r.vocab},
                 {"tokens", r.tokens},
                 {"documents", r.documents},
                 {"bytes", fs::file_size(o.output, ec)}};
  WriteFileAtomic(base + ".json", record.dump(2) + "\n");
  TextTokens out;
  out.path = o.output;
  out.vocab = r.vocab;
  out.tokens = r.tokens;
  out.documents = r.documents;
  out.tokenized = true;
  return out;
}

std::mutex& MemoMutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, TextTokens>& Memo() {
  static std::map<std::string, TextTokens> memo;
  return memo;
}

}  // namespace

std::string TokenCacheDir() {
  if (const char* env = std::getenv("SATURN_TOKEN_CACHE"); env && *env) return env;
  return (fs::path(SaturnCacheDir()) / "tokens").string();
}

TextTokens ReadTextTokens(const YamlFields& d, const std::string& base_dir, long model_vocab,
                          const char* path_field) {
  Sources s = ReadSources(d, base_dir, path_field);
  std::string cache = fs::absolute(TokenCacheDir()).lexically_normal().string();
  // One tokenization at a time: two tasks (or sweep variants, or served
  // workloads) of one text wait for the first and then find its entry.
  std::lock_guard<std::mutex> lock(MemoMutex());
  std::string sig = Signature(s, cache);
  auto known = Memo().find(sig);
  std::error_code ec;
  TextTokens t;
  if (known != Memo().end() && fs::is_regular_file(known->second.path, ec)) {
    t = known->second;
    t.tokenized = false;
  } else {
    Key key = ContentKey(s);
    std::string base = (fs::path(cache) / key.name).string();
    std::optional<TextTokens> hit = FromCache(base, key.full);
    t = hit ? *hit : Tokenize(d, s, base, key.full, model_vocab);
    Memo()[sig] = t;
  }
  CheckVocab(d, t.vocab, model_vocab);
  return t;
}

}  // namespace saturn
