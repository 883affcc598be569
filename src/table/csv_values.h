// What a grouped table's CSV fields hold (table/grouped_table.h): missing
// values, blanks and numbers, read as the C library reads them, fast for
// the plain decimals tables are made of.
//
//   double d;
//   if (IsMissingValue(v)) ...            // "", "NA", " nan ", "Null"
//   else if (ParseTableNumber(v, &d)) ... // "1.5", " -2e3 ", "0x10"; not "inf", "1a"
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace saturn::table {

// Empty, NA, NaN or null (any case; whitespace anywhere is ignored).
bool IsMissingValue(std::string_view v);

// Whether `v` is whitespace only (or empty).
bool IsBlankValue(std::string_view v);

// The number `v` holds, whole and finite, as strtod reads it (leading and
// trailing whitespace allowed; a NUL ends the text): false otherwise.
// Plain decimals (-12.5, 3e-4) are read without strtod, to the same double.
bool ParseTableNumber(std::string_view v, double* out);

// For unordered maps keyed by strings that are looked up by views.
struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringIndex = std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>>;

}  // namespace saturn::table
