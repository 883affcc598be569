// Unicode helpers the tokenizer needs beyond its regular expressions, on ICU
// (Debian libicu-dev): normalization forms and the character properties
// Hugging Face's Rust code asks of a `char` (is_whitespace, is_alphanumeric,
// is_numeric), and UTF-8 decoding of text already checked to be UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace saturn::tokenizer {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in normal form `form`; returns false and leaves *out
// alone when it already is (the common case: no copy).
bool Normalize(NormalForm form, std::string_view text, std::string* out);

// Rust's char::is_whitespace: Unicode's White_Space property.
bool IsWhiteSpace(char32_t c);
// Rust's char::is_numeric: general categories Nd, Nl, No.
bool IsNumeric(char32_t c);
// Rust's char::is_alphanumeric: Alphabetic or numeric.
bool IsAlphanumeric(char32_t c);

// The code point at text[*i] (valid UTF-8), moving *i past it.
inline char32_t NextCodePoint(std::string_view text, size_t* i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = b(*i);
  char32_t c;
  if (lead < 0x80) {
    c = lead;
    *i += 1;
  } else if (lead < 0xe0) {
    c = (lead & 0x1fu) << 6 | (b(*i + 1) & 0x3fu);
    *i += 2;
  } else if (lead < 0xf0) {
    c = (lead & 0x0fu) << 12 | (b(*i + 1) & 0x3fu) << 6 | (b(*i + 2) & 0x3fu);
    *i += 3;
  } else {
    c = (lead & 0x07u) << 18 | (b(*i + 1) & 0x3fu) << 12 | (b(*i + 2) & 0x3fu) << 6 |
        (b(*i + 3) & 0x3fu);
    *i += 4;
  }
  return c;
}

// The code point that ends at text[end) (valid UTF-8, end > 0), and where it
// starts in *start.
inline char32_t PreviousCodePoint(std::string_view text, size_t end, size_t* start) {
  size_t s = end - 1;
  while (s > 0 && (static_cast<unsigned char>(text[s]) & 0xc0) == 0x80)
    --s;
  *start = s;
  size_t i = s;
  return NextCodePoint(text, &i);
}

// Bytes of the UTF-8 sequence that starts with `lead`.
inline size_t Utf8SequenceLength(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
}

// Appends code point c as UTF-8.
void AppendUtf8(char32_t c, std::string* out);

}  // namespace saturn::tokenizer
