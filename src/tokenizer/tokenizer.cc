#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <deque>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/unicode.h"

namespace saturn::tokenizer {
namespace {

struct AddedToken {
  std::string content;
  uint32_t id = 0;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

// Text between added tokens, or one added token.
struct Section {
  size_t begin, end;
  int token;  // index into the added tokens; -1 for text
};

bool EndsWithWord(std::string_view text) {
  if (text.empty()) return false;
  size_t start;
  char32_t c = PreviousCodePoint(text, text.size(), &start);
  return IsAlphanumeric(c) || c == '_';
}

bool StartsWithWord(std::string_view text) {
  if (text.empty()) return false;
  size_t i = 0;
  char32_t c = NextCodePoint(text, &i);
  return IsAlphanumeric(c) || c == '_';
}

// Bytes of whitespace at the end (lstrip) or start (rstrip) of `text`.
size_t TrailingSpace(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start;
    if (!IsWhiteSpace(PreviousCodePoint(text, end, &start))) break;
    end = start;
  }
  return text.size() - end;
}
size_t LeadingSpace(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t next = i;
    if (!IsWhiteSpace(NextCodePoint(text, &next))) break;
    i = next;
  }
  return i;
}

// Finds added tokens in text, leftmost first, the longest of those that
// start there (Hugging Face: Aho-Corasick, LeftmostLongest).
class AddedMatcher {
 public:
  void Add(std::string pattern, int token) {
    if (pattern.empty()) return;
    unsigned char first = static_cast<unsigned char>(pattern[0]);
    patterns_.push_back({std::move(pattern), token});
    by_first_[first].push_back(static_cast<int>(patterns_.size()) - 1);
    any_ = true;
  }
  void Finish() {
    for (auto& list : by_first_) {
      std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
        return patterns_[a].text.size() > patterns_[b].text.size();
      });
    }
  }
  bool empty() const { return !any_; }

  // Hugging Face's AddedVocabulary::find_matches: matches of single_word
  // tokens inside a word are skipped (the search goes on after them);
  // lstrip and rstrip take the whitespace beside a token into it.
  void Split(std::string_view text, const std::vector<AddedToken>& tokens,
             std::vector<Section>* out) const {
    out->clear();
    size_t start_offset = 0, at = 0;
    while (true) {
      size_t begin, end;
      int token;
      if (!Next(text, at, &begin, &end, &token)) break;
      at = end;
      const AddedToken& t = tokens[token];
      if (t.single_word) {
        bool start_space = begin == 0 || !EndsWithWord(text.substr(0, begin));
        bool stop_space = end == text.size() || !StartsWithWord(text.substr(end));
        if (!start_space || !stop_space) continue;
      }
      if (begin < start_offset) continue;  // inside a previous token's stripped space
      if (t.lstrip) begin = std::max(begin - TrailingSpace(text.substr(0, begin)), start_offset);
      if (t.rstrip) end += LeadingSpace(text.substr(end));
      if (start_offset < begin) out->push_back({start_offset, begin, -1});
      out->push_back({begin, end, token});
      start_offset = end;
    }
    if (start_offset < text.size()) out->push_back({start_offset, text.size(), -1});
  }

 private:
  struct Pattern {
    std::string text;
    int token;
  };
  bool Next(std::string_view text, size_t from, size_t* begin, size_t* end, int* token) const {
    for (size_t i = from; i < text.size(); ++i) {
      const std::vector<int>& list = by_first_[static_cast<unsigned char>(text[i])];
      for (int p : list) {
        const std::string& s = patterns_[p].text;
        if (text.size() - i >= s.size() && text.compare(i, s.size(), s) == 0) {
          *begin = i;
          *end = i + s.size();
          *token = patterns_[p].token;
          return true;
        }
      }
    }
    return false;
  }

  std::vector<Pattern> patterns_;
  std::array<std::vector<int>, 256> by_first_;
  bool any_ = false;
};

nlohmann::json ParseFile(std::string_view text, const std::string& file) {
  nlohmann::json j;
  std::string why;
  if (!ParseJsonText(text, &j, &why)) throw InputError(file, 0, "", "invalid JSON: " + why);
  if (!j.is_object()) throw InputError(file, 0, "", "expected a JSON object");
  return j;
}

// A config's bos_token/eos_token: a string, {"content": ...} or null.
std::optional<std::string> TokenText(const nlohmann::json& config, const char* key,
                                     const std::string& file) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  throw InputError(file, 0, key, "expected a token: a string, {\"content\": ...} or null");
}

// The special token a post-processor's template starts a single sequence
// with (Llama 3's <|begin_of_text|>), if any.
std::optional<std::string> TemplateFirstToken(const nlohmann::json& post) {
  if (!post.is_object()) return std::nullopt;
  std::string type = post.value("type", "");
  if (type == "Sequence") {
    auto list = post.find("processors");
    if (list == post.end() || !list->is_array()) return std::nullopt;
    for (const nlohmann::json& p : *list) {
      if (auto t = TemplateFirstToken(p)) return t;
    }
    return std::nullopt;
  }
  if (type != "TemplateProcessing") return std::nullopt;
  auto single = post.find("single");
  if (single == post.end() || !single->is_array() || single->empty()) return std::nullopt;
  const nlohmann::json& first = (*single)[0];
  if (!first.is_object()) return std::nullopt;
  auto special = first.find("SpecialToken");
  if (special == first.end() || !special->is_object()) return std::nullopt;
  auto id = special->find("id");
  if (id == special->end() || !id->is_string()) return std::nullopt;
  return id->get<std::string>();
}

// One entry of added_tokens, `field` naming it in errors.
AddedToken ReadAddedToken(const nlohmann::json& a, const std::string& file,
                          const std::string& field) {
  if (!a.is_object()) throw InputError(file, 0, field, "expected an object");
  AddedToken t;
  auto content = a.find("content");
  if (content == a.end() || !content->is_string() || content->get<std::string>().empty()) {
    throw InputError(file, 0, field + ".content", "expected a non-empty string");
  }
  t.content = content->get<std::string>();
  if (!IsUtf8(t.content)) throw InputError(file, 0, field + ".content", UnlessUtf8(t.content));
  std::optional<long> id = a.contains("id") ? JsonInt(a["id"], 0, INT32_MAX - 1) : std::nullopt;
  if (!id) throw InputError(file, 0, field + ".id", "expected an integer from 0 to 2147483646");
  t.id = static_cast<uint32_t>(*id);
  auto flag = [&](const char* key, bool fallback) {
    auto it = a.find(key);
    if (it == a.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw InputError(file, 0, field + "." + key, "expected true or false");
    return it->get<bool>();
  };
  t.special = flag("special", false);
  t.single_word = flag("single_word", false);
  t.lstrip = flag("lstrip", false);
  t.rstrip = flag("rstrip", false);
  t.normalized = flag("normalized", !t.special);
  return t;
}

}  // namespace

struct Tokenizer::Impl {
  std::string file;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Bpe> bpe;
  std::vector<AddedToken> added;
  TokenMap added_ids;
  AddedMatcher raw_matcher, normalized_matcher;
  std::optional<uint32_t> bos, eos;
  std::string bos_token, eos_token;
  bool add_bos = false;
  uint32_t vocab_size = 0;

  std::optional<uint32_t> Id(std::string_view token) const {
    auto it = added_ids.find(token);
    if (it != added_ids.end()) return it->second;
    return bpe->TokenId(token);
  }
};

Tokenizer Tokenizer::Load(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(dir, 0, "",
                     "is not a folder; --tokenizer takes a model's folder holding tokenizer.json "
                     "(and tokenizer_config.json)");
  }
  std::string tokenizer_file = (fs::path(dir) / "tokenizer.json").string();
  if (!fs::exists(tokenizer_file, ec)) {
    throw InputError(tokenizer_file, 0, "",
                     "not found: the folder needs a Hugging Face tokenizer.json (a model's "
                     "folder on the Hub has one)");
  }
  std::string config_file = (fs::path(dir) / "tokenizer_config.json").string();
  std::string map_file = (fs::path(dir) / "special_tokens_map.json").string();
  std::string config = fs::exists(config_file, ec) ? ReadFile(config_file) : "";
  std::string map = fs::exists(map_file, ec) ? ReadFile(map_file) : "";
  return Parse(ReadFile(tokenizer_file), tokenizer_file, config, config_file, map, map_file);
}

Tokenizer Tokenizer::Parse(std::string_view tokenizer_json, const std::string& file,
                           std::string_view config_json, const std::string& config_file,
                           std::string_view map_json, const std::string& map_file) {
  auto impl = std::make_shared<Impl>();
  impl->file = file;
  nlohmann::json j = ParseFile(tokenizer_json, file);

  auto model = j.find("model");
  if (model == j.end() || !model->is_object()) {
    throw InputError(file, 0, "model", "expected the tokenizer's model, an object");
  }
  std::string type = model->contains("type") && (*model)["type"].is_string()
                         ? (*model)["type"].get<std::string>()
                         : (model->contains("merges") ? "BPE" : "");
  if (type != "BPE") {
    throw InputError(
        file, 0, "model.type",
        "the model " + Quote(type.empty() ? "(none)" : type) +
            " is not supported; Saturn reads BPE tokenizers (GPT-2, Llama, Qwen, "
            "Mistral, SmolLM), not WordPiece, Unigram or WordLevel (docs/tokenize.md)");
  }
  impl->bpe = std::make_unique<Bpe>(*model, file);
  impl->vocab_size = impl->bpe->IdBound();

  if (auto n = j.find("normalizer"); n != j.end() && !n->is_null())
    impl->normalizer = std::make_unique<Normalizer>(*n, file, "normalizer");
  if (auto p = j.find("pre_tokenizer"); p != j.end() && !p->is_null())
    impl->pre_tokenizer = std::make_unique<PreTokenizer>(*p, file, "pre_tokenizer");

  if (auto list = j.find("added_tokens"); list != j.end() && !list->is_null()) {
    if (!list->is_array()) throw InputError(file, 0, "added_tokens", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) {
      const nlohmann::json& a = (*list)[i];
      std::string field = "added_tokens[" + std::to_string(i) + "]";
      AddedToken t = ReadAddedToken(a, file, field);
      impl->added_ids[t.content] = t.id;
      impl->vocab_size = std::max(impl->vocab_size, t.id + 1);
      impl->added.push_back(std::move(t));
    }
  }
  for (size_t i = 0; i < impl->added.size(); ++i) {
    const AddedToken& t = impl->added[i];
    if (!t.normalized) {
      impl->raw_matcher.Add(t.content, static_cast<int>(i));
    } else {
      std::string normalized;
      bool changed = impl->normalizer && impl->normalizer->Apply(t.content, &normalized);
      impl->normalized_matcher.Add(changed ? normalized : t.content, static_cast<int>(i));
    }
  }
  impl->raw_matcher.Finish();
  impl->normalized_matcher.Finish();

  // BOS and EOS: tokenizer_config.json, else special_tokens_map.json.
  nlohmann::json config =
      config_json.empty() ? nlohmann::json::object() : ParseFile(config_json, config_file);
  nlohmann::json map = map_json.empty() ? nlohmann::json::object() : ParseFile(map_json, map_file);
  auto special = [&](const char* key, std::string* text, std::optional<uint32_t>* id) {
    std::optional<std::string> token = TokenText(config, key, config_file);
    std::string from = config_file;
    if (!token) {
      token = TokenText(map, key, map_file);
      from = map_file;
    }
    if (!token) return;
    *id = impl->Id(*token);
    if (!*id) {
      throw InputError(
          from, 0, key,
          Quote(*token) + " is not a token of " + file + " (its vocabulary or added_tokens)");
    }
    *text = *token;
  };
  special("bos_token", &impl->bos_token, &impl->bos);
  special("eos_token", &impl->eos_token, &impl->eos);
  if (auto it = config.find("add_bos_token"); it != config.end() && !it->is_null()) {
    if (!it->is_boolean())
      throw InputError(config_file, 0, "add_bos_token", "expected true or false");
    impl->add_bos = it->get<bool>();
  } else if (auto post = j.find("post_processor"); post != j.end()) {
    // No add_bos_token (Llama 3): the post-processor's template says.
    if (std::optional<std::string> first = TemplateFirstToken(*post)) {
      std::optional<uint32_t> id = impl->Id(*first);
      if (id && (!impl->bos || *impl->bos == *id)) {
        impl->bos = id;
        impl->bos_token = *first;
        impl->add_bos = true;
      }
    }
  }
  if (impl->add_bos && !impl->bos) {
    throw InputError(config_file, 0, "add_bos_token", "is true but the config names no bos_token");
  }
  return Tokenizer(std::move(impl));
}

std::vector<uint32_t> Tokenizer::Encode(std::string_view text) const {
  std::vector<uint32_t> ids;
  Encoder(*this, 256).Encode(text, &ids);
  return ids;
}

uint32_t Tokenizer::VocabSize() const {
  return impl_->vocab_size;
}
std::optional<uint32_t> Tokenizer::TokenId(std::string_view token) const {
  return impl_->Id(token);
}
std::optional<uint32_t> Tokenizer::bos_id() const {
  return impl_->bos;
}
std::optional<uint32_t> Tokenizer::eos_id() const {
  return impl_->eos;
}
std::string Tokenizer::bos_token() const {
  return impl_->bos_token;
}
std::string Tokenizer::eos_token() const {
  return impl_->eos_token;
}
bool Tokenizer::add_bos() const {
  return impl_->add_bos;
}

std::string Tokenizer::Kind() const {
  if (impl_->pre_tokenizer && impl_->pre_tokenizer->has_byte_level()) return "byte-level BPE";
  if (impl_->bpe->byte_fallback()) return "BPE with byte fallback";
  return "BPE";
}

// ---- Encoder ----

// Ids of recently seen words: a direct-mapped table of short words with
// their ids inline (a word's slot is its hash's; a new word evicts the old
// one), so a frequent word costs one hash and one cache line, and nothing is
// allocated.
class WordCache {
 public:
  static constexpr size_t kMaxWord = 26;  // bytes
  static constexpr size_t kMaxIds = 8;

  // `slots`: a power of two.
  explicit WordCache(size_t slots) : slots_(slots), mask_(slots - 1) {}

  // Appends the word's ids and returns true if it is cached.
  bool Find(std::string_view word, uint64_t hash, std::vector<uint32_t>* ids) const {
    const Slot& s = slots_[hash & mask_];
    if (s.check != static_cast<uint32_t>(hash >> 32) || s.length != word.size() ||
        std::memcmp(s.key, word.data(), word.size()) != 0) {
      return false;
    }
    ids->insert(ids->end(), s.ids, s.ids + s.count);
    return true;
  }
  void Put(std::string_view word, uint64_t hash, const uint32_t* ids, size_t count) {
    if (word.size() > kMaxWord || count > kMaxIds) return;
    Slot& s = slots_[hash & mask_];
    s.check = static_cast<uint32_t>(hash >> 32);
    s.length = static_cast<uint8_t>(word.size());
    s.count = static_cast<uint8_t>(count);
    std::memcpy(s.key, word.data(), word.size());
    std::memcpy(s.ids, ids, count * sizeof(uint32_t));
  }

 private:
  struct Slot {
    uint32_t check = 0;
    uint8_t length = 0xff, count = 0;  // length 0xff: empty
    char key[kMaxWord];
    uint32_t ids[kMaxIds];
  };
  static_assert(sizeof(Slot) == 64);
  std::vector<Slot> slots_;
  size_t mask_;
};

struct Encoder::State {
  explicit State(size_t cache_words) : cache(cache_words) {}
  WordCache cache;
  std::vector<Section> sections, subsections;
  std::vector<Piece> pieces;
  std::deque<std::string> store;
  std::string normalized;
};

Encoder::Encoder(const Tokenizer& tokenizer, size_t cache_words)
    : impl_(tokenizer.impl_),
      state_(std::make_unique<State>(std::bit_ceil(std::max<size_t>(cache_words, 1)))) {}
Encoder::~Encoder() = default;

void Encoder::Encode(std::string_view text, std::vector<uint32_t>* ids) {
  if (!IsUtf8(text)) throw InputError("the text to tokenize: " + UnlessUtf8(text));
  const Tokenizer::Impl& t = *impl_;
  State& s = *state_;
  bool byte_level = t.pre_tokenizer && t.pre_tokenizer->byte_level_words();

  auto words = [&](std::string_view piece, bool at_start) {
    s.pieces.clear();
    s.store.clear();
    s.pieces.push_back({piece, at_start});
    if (t.pre_tokenizer) t.pre_tokenizer->Apply(&s.pieces, &s.store);
    for (const Piece& p : s.pieces) {
      if (p.text.size() > WordCache::kMaxWord) {
        t.bpe->EncodeWord(p.text, byte_level, ids);
        continue;
      }
      uint64_t hash = std::hash<std::string_view>{}(p.text);
      if (s.cache.Find(p.text, hash, ids)) continue;
      size_t before = ids->size();
      t.bpe->EncodeWord(p.text, byte_level, ids);
      s.cache.Put(p.text, hash, ids->data() + before, ids->size() - before);
    }
  };

  auto section = [&](std::string_view piece, bool at_start) {
    std::string_view normalized = piece;
    if (t.normalizer && t.normalizer->Apply(piece, &s.normalized)) normalized = s.normalized;
    if (normalized.empty()) return;
    if (t.normalized_matcher.empty()) {
      words(normalized, at_start);
      return;
    }
    t.normalized_matcher.Split(normalized, t.added, &s.subsections);
    for (const Section& sub : s.subsections) {
      if (sub.token >= 0) {
        ids->push_back(t.added[sub.token].id);
      } else {
        words(normalized.substr(sub.begin, sub.end - sub.begin), at_start && sub.begin == 0);
      }
    }
  };

  if (t.raw_matcher.empty()) {
    if (!text.empty()) section(text, true);
    return;
  }
  t.raw_matcher.Split(text, t.added, &s.sections);
  for (const Section& sec : s.sections) {
    if (sec.token >= 0) {
      ids->push_back(t.added[sec.token].id);
    } else {
      section(text.substr(sec.begin, sec.end - sec.begin), sec.begin == 0);
    }
  }
}

}  // namespace saturn::tokenizer
