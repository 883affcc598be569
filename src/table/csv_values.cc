#include "table/csv_values.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace saturn::table {
namespace {

// 10^0 .. 10^22: each exactly a double.
constexpr double kPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// [+-]digits[.digits][(e|E)[+-]digits], at most 19 digits, read exactly
// when the digits fit in 53 bits and the power of ten is at most 22: then
// digits / 10^k (or x 10^k) is one correctly rounded operation on exact
// doubles, which is what strtod returns (Clinger's fast path). False where
// this cannot tell (strtod reads it then).
bool ParsePlainDecimal(std::string_view v, double* out) {
  size_t i = 0, n = v.size();
  bool negative = false;
  if (i < n && (v[i] == '-' || v[i] == '+')) negative = v[i++] == '-';
  uint64_t digits = 0;
  int count = 0, scale = 0;
  for (; i < n && IsDigit(v[i]); ++i, ++count)
    digits = digits * 10 + static_cast<uint64_t>(v[i] - '0');
  if (i < n && v[i] == '.') {
    for (++i; i < n && IsDigit(v[i]); ++i, ++count, --scale)
      digits = digits * 10 + static_cast<uint64_t>(v[i] - '0');
  }
  if (count == 0 || count > 19) return false;
  if (i < n && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    bool minus = false;
    if (i < n && (v[i] == '-' || v[i] == '+')) minus = v[i++] == '-';
    int exponent = 0, exponent_digits = 0;
    for (; i < n && IsDigit(v[i]) && exponent_digits < 6; ++i, ++exponent_digits)
      exponent = exponent * 10 + (v[i] - '0');
    if (exponent_digits == 0) return false;
    scale += minus ? -exponent : exponent;
  }
  if (i != n) return false;
  double d = 0;
  if (digits != 0) {
    if (digits > (uint64_t{1} << 53) || scale < -22 || scale > 22) return false;
    d = static_cast<double>(digits);
    d = scale < 0 ? d / kPowersOfTen[-scale] : d * kPowersOfTen[scale];
  }
  *out = negative ? -d : d;
  return true;
}

// strtod's reading, as the table reader always did.
bool ParseWithStrtod(const std::string& v, double* out) {
  const char* begin = v.c_str();
  char* end = nullptr;
  double d = std::strtod(begin, &end);
  if (end == begin) return false;
  while (*end != '\0' && std::isspace(static_cast<unsigned char>(*end)))
    ++end;
  if (*end != '\0' || !std::isfinite(d)) return false;
  *out = d;
  return true;
}

}  // namespace

bool IsMissingValue(std::string_view v) {
  std::string lower;
  for (char c : v) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.size() > 4) return false;
  }
  return lower.empty() || lower == "na" || lower == "nan" || lower == "null";
}

bool IsBlankValue(std::string_view v) {
  for (char c : v)
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  return true;
}

bool ParseTableNumber(std::string_view v, double* out) {
  if (ParsePlainDecimal(v, out)) return true;
  return ParseWithStrtod(std::string(v), out);
}

}  // namespace saturn::table
