// JSON read from files and other processes, within bounds: a syntax error, a
// number too large for a double, or nesting deeper than
// limits::kMaxJsonDepth is a message for the caller to report in its own
// style (an InputError naming the file, a protocol breach), never an
// exception of the JSON library's own.
//
//   nlohmann::json j;
//   std::string why;
//   if (!ParseJsonText(text, &j, &why)) throw InputError(path, 0, "", "invalid JSON: " + why);
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace saturn {

// False (and why in `error`) if `text` is not one JSON value within bounds.
bool ParseJsonText(std::string_view text, nlohmann::json* out, std::string* error);

// `v` as an integer in [min, max]; nullopt if it is not an integer (1.0 is
// not) or out of range. Never casts a value that does not fit.
std::optional<long> JsonInt(const nlohmann::json& v, long min, long max);

// Text JSON can carry: well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF). Readers of text that ends up in JSON
// (names, paths, templates) refuse anything else with UnlessUtf8's message;
// writing it would fail.
bool IsUtf8(std::string_view text);
// "" for UTF-8 text, else "expected UTF-8 text, got the byte 0xaf at offset 4".
std::string UnlessUtf8(std::string_view text);

}  // namespace saturn
