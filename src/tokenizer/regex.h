// The regular expressions of tokenizer.json (pre-tokenizers' and
// normalizers' patterns), on Oniguruma.
//
// Why Oniguruma (Debian libonig-dev) rather than PCRE2 (libpcre2-dev): it is
// the engine Hugging Face's `tokenizers` compiles these patterns with (the
// Rust crate's `onig` binding, Oniguruma syntax), so a pattern means here
// exactly what it means there, by construction rather than by translation:
// Unicode properties (\p{L}, \p{N}), `\s` as Unicode's White_Space (U+0085
// included, U+FEFF and U+180E not: PCRE2's \s with UCP adds U+180E), the
// lookahead of `\s+(?!\S)`, and Llama 3's case-insensitive contractions
// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` with Oniguruma's own case folding. Both
// engines support every construct these tokenizers use; PCRE2's JIT is
// faster (about 20 MB/s against Oniguruma's 13 MB/s on Llama 3's pattern over
// mixed text, one core), but 13 MB/s is well above what a tokenizer needs
// from its regex (bench/tokenizer), and exactness matters more here: ids
// that differ from Hugging Face's are a different training set.
//
//   Regex re(R"(\p{L}+|\p{N}+)", "tokenizer.json", "pre_tokenizer.pattern.Regex");
//   std::vector<Span> spans;
//   re.FindAll("abc 123", &spans);   // {0, 3}, {4, 7}
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace saturn::tokenizer {

// Bytes [begin, end) of a text.
struct Span {
  size_t begin = 0, end = 0;
};

class Regex {
 public:
  // Compiles `pattern` (UTF-8, Oniguruma syntax); an InputError naming
  // `file` and `field` with Oniguruma's message if it does not compile.
  Regex(std::string_view pattern, std::string_view file, std::string_view field);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the non-empty matches in `text` (valid UTF-8), left to right,
  // each search starting where the previous match ended (an empty match
  // moves on by one character). Safe to call from many threads at once.
  void FindAll(std::string_view text, std::vector<Span>* out) const;

  // The length of the match starting exactly at `at`, or -1 if none.
  long MatchAt(std::string_view text, size_t at) const;

 private:
  void* regex_ = nullptr;  // regex_t*
};

}  // namespace saturn::tokenizer
