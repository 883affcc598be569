#include "tokenizer/pipeline.h"

#include <algorithm>
#include <array>

#include "common/error.h"
#include "common/format.h"
#include "tokenizer/bpe.h"

namespace saturn::tokenizer {
namespace {

// GPT-2's pre-tokenization pattern: what ByteLevel splits with when
// use_regex is true (the Rust crate's, verbatim).
constexpr std::string_view kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

const Regex& ByteLevelRegex() {
  static const Regex regex(kByteLevelPattern, "(built in)", "ByteLevel");
  return regex;
}

std::string TypeOf(const nlohmann::json& config, std::string_view file, const std::string& field) {
  if (!config.is_object()) throw InputError(file, 0, field, "expected an object");
  auto it = config.find("type");
  if (it == config.end() || !it->is_string()) {
    throw InputError(file, 0, field + ".type", "expected the component's type, a string");
  }
  return it->get<std::string>();
}

bool Bool(const nlohmann::json& config, const char* key, bool fallback, std::string_view file,
          const std::string& field) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw InputError(file, 0, field + "." + key, "expected true or false");
  return it->get<bool>();
}

std::string String(const nlohmann::json& config, const char* key, std::string_view file,
                   const std::string& field, const std::string* fallback = nullptr) {
  auto it = config.find(key);
  if ((it == config.end() || it->is_null()) && fallback) return *fallback;
  if (it == config.end() || !it->is_string())
    throw InputError(file, 0, field + "." + key, "expected a string");
  return it->get<std::string>();
}

const nlohmann::json& Array(const nlohmann::json& config, const char* key, std::string_view file,
                            const std::string& field) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_array())
    throw InputError(file, 0, field + "." + key, "expected an array");
  return *it;
}

// A Split's or Replace's "pattern": {"String": s} or {"Regex": r}.
struct Pattern {
  std::string literal;
  std::unique_ptr<Regex> regex;

  Pattern(const nlohmann::json& config, std::string_view file, const std::string& field) {
    auto it = config.find("pattern");
    std::string where = field + ".pattern";
    if (it == config.end() || !it->is_object() || it->size() != 1) {
      throw InputError(file, 0, where, "expected {\"String\": ...} or {\"Regex\": ...}");
    }
    if (auto s = it->find("String"); s != it->end() && s->is_string()) {
      literal = s->get<std::string>();
      if (literal.empty())
        throw InputError(file, 0, where + ".String", "expected a non-empty string");
    } else if (auto r = it->find("Regex"); r != it->end() && r->is_string()) {
      regex = std::make_unique<Regex>(r->get<std::string>(), file, where + ".Regex");
    } else {
      throw InputError(file, 0, where, "expected {\"String\": ...} or {\"Regex\": ...}");
    }
  }

  // The parts of `text`: matches and the text between them.
  void Parts(std::string_view text, std::vector<Part>* parts) const {
    thread_local std::vector<Span> matches;
    matches.clear();
    if (regex) {
      regex->FindAll(text, &matches);
    } else {
      for (size_t at = text.find(literal); at != std::string_view::npos;
           at = text.find(literal, at + literal.size()))
        matches.push_back({at, at + literal.size()});
    }
    parts->clear();
    size_t prev = 0;
    for (const Span& m : matches) {
      if (prev < m.begin) parts->push_back({{prev, m.begin}, false});
      parts->push_back({m, true});
      prev = m.end;
    }
    if (prev < text.size()) parts->push_back({{prev, text.size()}, false});
  }
};

// Characters for which `pred` holds are parts of their own (Hugging Face's
// char patterns: Metaspace's split, Digits).
template <typename Pred>
void CharParts(std::string_view text, Pred pred, std::vector<Part>* parts) {
  parts->clear();
  size_t prev = 0, i = 0;
  while (i < text.size()) {
    size_t start = i;
    char32_t c = NextCodePoint(text, &i);
    if (pred(c)) {
      if (prev < start) parts->push_back({{prev, start}, false});
      parts->push_back({{start, i}, true});
      prev = i;
    }
  }
  if (prev < text.size()) parts->push_back({{prev, text.size()}, false});
}

Behavior ParseBehavior(const nlohmann::json& config, std::string_view file,
                       const std::string& field) {
  std::string name = String(config, "behavior", file, field);
  static const std::pair<const char*, Behavior> kNames[] = {
      {"Removed", Behavior::kRemoved},
      {"Isolated", Behavior::kIsolated},
      {"MergedWithPrevious", Behavior::kMergedWithPrevious},
      {"MergedWithNext", Behavior::kMergedWithNext},
      {"Contiguous", Behavior::kContiguous}};
  std::vector<std::string> known;
  for (const auto& [n, b] : kNames) {
    if (name == n) return b;
    known.push_back(n);
  }
  std::string hint = DidYouMean(name, known);
  throw InputError(file, 0, field + ".behavior",
                   "unknown behavior " + Quote(name) +
                       "; expected one of Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                       "Contiguous" +
                       (hint.empty() ? "" : " (" + hint + ")"));
}

// Replaces every `from` in `text` with `to`; false if there was none.
bool ReplaceAll(std::string_view text, std::string_view from, std::string_view to,
                std::string* out) {
  size_t at = text.find(from);
  if (at == std::string_view::npos) return false;
  std::string result;
  result.reserve(text.size() + text.size() / 4);
  size_t prev = 0;
  for (; at != std::string_view::npos; at = text.find(from, prev)) {
    result.append(text.substr(prev, at - prev));
    result.append(to);
    prev = at + from.size();
  }
  result.append(text.substr(prev));
  *out = std::move(result);
  return true;
}

}  // namespace

std::vector<Span> ApplyBehavior(const std::vector<Part>& parts, Behavior behavior) {
  std::vector<Span> out;
  out.reserve(parts.size());
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kIsolated:
      for (const Part& p : parts)
        out.push_back(p.span);
      break;
    case Behavior::kRemoved:
      for (const Part& p : parts)
        if (!p.match) out.push_back(p.span);
      break;
    case Behavior::kContiguous:
      for (const Part& p : parts) {
        if (p.match == previous_match && !out.empty()) {
          out.back().end = p.span.end;
        } else {
          out.push_back(p.span);
        }
        previous_match = p.match;
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (const Part& p : parts) {
        if (p.match && !previous_match && !out.empty()) {
          out.back().end = p.span.end;
        } else {
          out.push_back(p.span);
        }
        previous_match = p.match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->match && !previous_match && !out.empty()) {
          out.back().begin = it->span.begin;
        } else {
          out.push_back(it->span);
        }
        previous_match = it->match;
      }
      std::reverse(out.begin(), out.end());
      break;
  }
  return out;
}

// ---- Normalizer ----

struct Normalizer::Step {
  enum class Kind { kForm, kPrepend, kReplace } kind;
  NormalForm form = NormalForm::kNfc;
  std::string text;  // Prepend's prefix, Replace's content
  std::unique_ptr<Pattern> pattern;
};

Normalizer::Normalizer(const nlohmann::json& config, std::string_view file,
                       const std::string& field) {
  Add(config, file, field);
}
Normalizer::~Normalizer() = default;

void Normalizer::Add(const nlohmann::json& config, std::string_view file,
                     const std::string& field) {
  std::string type = TypeOf(config, file, field);
  auto step = std::make_unique<Step>();
  if (type == "Sequence") {
    const nlohmann::json& list = Array(config, "normalizers", file, field);
    for (size_t i = 0; i < list.size(); ++i)
      Add(list[i], file, field + ".normalizers[" + std::to_string(i) + "]");
    return;
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    step->kind = Step::Kind::kForm;
    step->form = type == "NFC"    ? NormalForm::kNfc
                 : type == "NFD"  ? NormalForm::kNfd
                 : type == "NFKC" ? NormalForm::kNfkc
                                  : NormalForm::kNfkd;
  } else if (type == "Prepend") {
    step->kind = Step::Kind::kPrepend;
    step->text = String(config, "prepend", file, field);
  } else if (type == "Replace") {
    step->kind = Step::Kind::kReplace;
    step->pattern = std::make_unique<Pattern>(config, file, field);
    step->text = String(config, "content", file, field);
  } else {
    throw InputError(file, 0, field + ".type",
                     "the normalizer " + Quote(type) +
                         " is not supported; supported: NFC, NFD, NFKC, NFKD, Prepend, Replace, "
                         "Sequence (docs/tokenize.md)");
  }
  steps_.push_back(std::move(step));
}

bool Normalizer::Apply(std::string_view text, std::string* out) const {
  std::string current, next;
  bool changed = false;
  for (const auto& step : steps_) {
    std::string_view in = changed ? std::string_view(current) : text;
    bool did = false;
    switch (step->kind) {
      case Step::Kind::kForm:
        did = Normalize(step->form, in, &next);
        break;
      case Step::Kind::kPrepend:
        if (!in.empty()) {
          next = step->text;
          next.append(in);
          did = true;
        }
        break;
      case Step::Kind::kReplace:
        if (step->pattern->regex) {
          thread_local std::vector<Span> matches;
          matches.clear();
          step->pattern->regex->FindAll(in, &matches);
          if (!matches.empty()) {
            next.clear();
            size_t prev = 0;
            for (const Span& m : matches) {
              next.append(in.substr(prev, m.begin - prev));
              next.append(step->text);
              prev = m.end;
            }
            next.append(in.substr(prev));
            did = true;
          }
        } else {
          did = ReplaceAll(in, step->pattern->literal, step->text, &next);
        }
        break;
    }
    if (did) {
      current.swap(next);
      changed = true;
    }
  }
  if (changed) *out = std::move(current);
  return changed;
}

// ---- PreTokenizer ----

struct PreTokenizer::Step {
  enum class Kind { kByteLevel, kSplit, kMetaspace, kDigits } kind;
  // ByteLevel
  bool add_prefix_space = false, use_regex = true, map_bytes = true;
  // Split
  std::unique_ptr<Pattern> pattern;
  Behavior behavior = Behavior::kIsolated;
  bool invert = false;
  // Metaspace
  std::string replacement;
  enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;
  bool split = true;
  // Digits
  bool individual = false;
};

PreTokenizer::PreTokenizer(const nlohmann::json& config, std::string_view file,
                           const std::string& field) {
  Add(config, file, field);
  // A ByteLevel last maps bytes to its alphabet; the model does that from
  // the raw bytes, so the mapped text is never built.
  if (!steps_.empty() && steps_.back()->kind == Step::Kind::kByteLevel) {
    steps_.back()->map_bytes = false;
    byte_level_words_ = true;
  }
}
PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::Add(const nlohmann::json& config, std::string_view file,
                       const std::string& field) {
  std::string type = TypeOf(config, file, field);
  auto step = std::make_unique<Step>();
  if (type == "Sequence") {
    const nlohmann::json& list = Array(config, "pretokenizers", file, field);
    for (size_t i = 0; i < list.size(); ++i)
      Add(list[i], file, field + ".pretokenizers[" + std::to_string(i) + "]");
    return;
  } else if (type == "ByteLevel") {
    step->kind = Step::Kind::kByteLevel;
    step->add_prefix_space = Bool(config, "add_prefix_space", false, file, field);
    step->use_regex = Bool(config, "use_regex", true, file, field);
    Bool(config, "trim_offsets", false, file, field);  // offsets only: no effect on ids
    has_byte_level_ = true;
  } else if (type == "Split") {
    step->kind = Step::Kind::kSplit;
    step->pattern = std::make_unique<Pattern>(config, file, field);
    step->behavior = ParseBehavior(config, file, field);
    step->invert = Bool(config, "invert", false, file, field);
  } else if (type == "Metaspace") {
    step->kind = Step::Kind::kMetaspace;
    static const std::string kMetaspace = "\u2581";
    step->replacement = String(config, "replacement", file, field, &kMetaspace);
    size_t i = 0;
    if (step->replacement.empty() ||
        (NextCodePoint(step->replacement, &i), i != step->replacement.size())) {
      throw InputError(file, 0, field + ".replacement", "expected one character");
    }
    auto scheme = config.find("prepend_scheme");
    if (scheme != config.end() && !scheme->is_null()) {
      std::string s = scheme->is_string() ? scheme->get<std::string>() : "";
      if (s == "always") {
        step->prepend = Step::Prepend::kAlways;
      } else if (s == "first") {
        step->prepend = Step::Prepend::kFirst;
      } else if (s == "never") {
        step->prepend = Step::Prepend::kNever;
      } else {
        throw InputError(file, 0, field + ".prepend_scheme", "expected always, first or never");
      }
    } else {
      // Older files: add_prefix_space (true: always).
      step->prepend = Bool(config, "add_prefix_space", true, file, field) ? Step::Prepend::kAlways
                                                                          : Step::Prepend::kNever;
    }
    step->split = Bool(config, "split", true, file, field);
  } else if (type == "Digits") {
    step->kind = Step::Kind::kDigits;
    step->individual = Bool(config, "individual_digits", false, file, field);
  } else {
    throw InputError(file, 0, field + ".type",
                     "the pre-tokenizer " + Quote(type) +
                         " is not supported; supported: ByteLevel, Split, Metaspace, Digits, "
                         "Sequence (docs/tokenize.md)");
  }
  steps_.push_back(std::move(step));
}

void PreTokenizer::Apply(std::vector<Piece>* pieces, std::deque<std::string>* store) const {
  thread_local std::vector<Piece> next;
  thread_local std::vector<Part> parts;
  thread_local std::vector<Span> matches;
  const std::array<std::string, 256>& alphabet = ByteLevelAlphabet();
  for (const auto& step : steps_) {
    next.clear();
    // Keeps the non-empty spans of `piece` (its first keeps at_start if it
    // begins the piece).
    auto keep = [&](const Piece& piece, const std::vector<Span>& spans) {
      for (const Span& s : spans) {
        if (s.end > s.begin) {
          next.push_back(
              {piece.text.substr(s.begin, s.end - s.begin), piece.at_start && s.begin == 0});
        }
      }
    };
    for (const Piece& piece : *pieces) {
      switch (step->kind) {
        case Step::Kind::kByteLevel: {
          Piece p = piece;
          if (step->add_prefix_space && !p.text.starts_with(' ')) {
            store->push_back(" " + std::string(p.text));
            p.text = store->back();
          }
          size_t first = next.size();
          if (step->use_regex) {
            matches.clear();
            ByteLevelRegex().FindAll(p.text, &matches);
            parts.clear();
            size_t prev = 0;
            for (const Span& m : matches) {
              if (prev < m.begin) parts.push_back({{prev, m.begin}, false});
              parts.push_back({m, true});
              prev = m.end;
            }
            if (prev < p.text.size()) parts.push_back({{prev, p.text.size()}, false});
            for (const Part& part : parts)
              next.push_back({p.text.substr(part.span.begin, part.span.end - part.span.begin),
                              p.at_start && part.span.begin == 0});
          } else {
            next.push_back(p);
          }
          if (step->map_bytes) {
            for (size_t i = first; i < next.size(); ++i) {
              std::string mapped;
              for (char c : next[i].text)
                mapped += alphabet[static_cast<unsigned char>(c)];
              store->push_back(std::move(mapped));
              next[i].text = store->back();
            }
          }
          break;
        }
        case Step::Kind::kSplit: {
          step->pattern->Parts(piece.text, &parts);
          if (step->invert) {
            for (Part& p : parts)
              p.match = !p.match;
          }
          keep(piece, ApplyBehavior(parts, step->behavior));
          break;
        }
        case Step::Kind::kMetaspace: {
          Piece p = piece;
          std::string replaced;
          bool changed = ReplaceAll(p.text, " ", step->replacement, &replaced);
          std::string_view text = changed ? std::string_view(replaced) : p.text;
          bool prepend = !text.starts_with(step->replacement) &&
                         (step->prepend == Step::Prepend::kAlways ||
                          (step->prepend == Step::Prepend::kFirst && p.at_start));
          if (prepend) {
            store->push_back(step->replacement + std::string(text));
            p.text = store->back();
          } else if (changed) {
            store->push_back(std::move(replaced));
            p.text = store->back();
          }
          if (step->split) {
            size_t at = 0;
            char32_t rep = NextCodePoint(step->replacement, &at);
            CharParts(
                p.text, [rep](char32_t c) { return c == rep; }, &parts);
            keep(p, ApplyBehavior(parts, Behavior::kMergedWithNext));
          } else {
            next.push_back(p);
          }
          break;
        }
        case Step::Kind::kDigits:
          CharParts(piece.text, IsNumeric, &parts);
          keep(piece, ApplyBehavior(
                          parts, step->individual ? Behavior::kIsolated : Behavior::kContiguous));
          break;
      }
    }
    pieces->swap(next);
  }
}

}  // namespace saturn::tokenizer
