#include "common/json_text.h"

#include <cstdio>
#include <limits>

#include "common/limits.h"

namespace saturn {
namespace {

using nlohmann::json;

struct TooDeep {};

}  // namespace

bool ParseJsonText(std::string_view text, json* out, std::string* error) {
  // The parser itself keeps its own stack, but copying, comparing and
  // writing a value back recurse once per level.
  auto bounded = [](int depth, json::parse_event_t event, json&) {
    bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= limits::kMaxJsonDepth) throw TooDeep{};
    return true;
  };
  try {
    *out = json::parse(text, bounded);
    return true;
  } catch (const TooDeep&) {
    *error = "nested deeper than " + std::to_string(limits::kMaxJsonDepth) + " levels";
  } catch (const json::exception& e) {
    *error = e.what();  // parse_error, or out_of_range for a number such as 1e400
  }
  return false;
}

namespace {

// The length of the well-formed UTF-8 sequence at text[i], or 0.
size_t Utf8Sequence(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0; };
  unsigned char c = byte(i);
  auto continuation = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return byte(k) >= lo && byte(k) <= hi;
  };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return continuation(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
    unsigned char hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
    return continuation(i + 1, lo, hi) && continuation(i + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
    return continuation(i + 1, lo, hi) && continuation(i + 2) && continuation(i + 3) ? 4 : 0;
  }
  return 0;
}

// Offset of the first byte that does not start a well-formed sequence, or npos.
size_t FirstNonUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t n = Utf8Sequence(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<long> JsonInt(const json& v, long min, long max) {
  // Integers >= 0 are stored unsigned, the others signed.
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<long>::max())) return std::nullopt;
    long n = static_cast<long>(u);
    return n >= min && n <= max ? std::optional<long>(n) : std::nullopt;
  }
  if (!v.is_number_integer()) return std::nullopt;
  long n = v.get<int64_t>();
  return n >= min && n <= max ? std::optional<long>(n) : std::nullopt;
}

bool IsUtf8(std::string_view text) {
  return FirstNonUtf8(text) == std::string_view::npos;
}

std::string UnlessUtf8(std::string_view text) {
  size_t at = FirstNonUtf8(text);
  if (at == std::string_view::npos) return "";
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[at]));
  return std::string("expected UTF-8 text, got the byte ") + byte + " at offset " +
         std::to_string(at);
}

}  // namespace saturn
