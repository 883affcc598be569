#include "tokenizer/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

#include <stdexcept>

namespace saturn::tokenizer {
namespace {

const icu::Normalizer2* Instance(NormalForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalForm::kNfc:
      n = icu::Normalizer2::getNFCInstance(status);
      break;
    case NormalForm::kNfd:
      n = icu::Normalizer2::getNFDInstance(status);
      break;
    case NormalForm::kNfkc:
      n = icu::Normalizer2::getNFKCInstance(status);
      break;
    case NormalForm::kNfkd:
      n = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status) || n == nullptr) {
    throw std::runtime_error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
  }
  return n;
}

}  // namespace

bool Normalize(NormalForm form, std::string_view text, std::string* out) {
  // ASCII is in every normal form; most text is mostly ASCII.
  size_t i = 0;
  while (i < text.size() && static_cast<unsigned char>(text[i]) < 0x80)
    ++i;
  if (i == text.size()) return false;
  const icu::Normalizer2* n = Instance(form);
  UErrorCode status = U_ZERO_ERROR;
  icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (n->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return false;
  status = U_ZERO_ERROR;
  std::string result;
  icu::StringByteSink<std::string> sink(&result, static_cast<int32_t>(text.size()));
  n->normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) {
    throw std::runtime_error(std::string("ICU normalization failed: ") + u_errorName(status));
  }
  *out = std::move(result);
  return true;
}

bool IsWhiteSpace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0d);
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

bool IsAlphanumeric(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) || IsNumeric(c);
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | c >> 6));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | c >> 12));
    out->push_back(static_cast<char>(0x80 | (c >> 6 & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | c >> 18));
    out->push_back(static_cast<char>(0x80 | (c >> 12 & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c >> 6 & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

}  // namespace saturn::tokenizer
