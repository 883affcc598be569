#include "common/format.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace saturn {

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  char buf[64];
  if (seconds < 0) return "-" + FormatDuration(-seconds);
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (seconds < 3600) {
    long s = std::lround(seconds);
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else if (seconds < 86400 * 3) {
    long m = std::lround(seconds / 60);
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", m / 60, m % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fd", seconds / 86400);
  }
  return buf;
}

std::string FormatFixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string FormatMilliseconds(double seconds) {
  // Past 1e15 s milliseconds are below a double's resolution anyway.
  if (!std::isfinite(seconds) || std::fabs(seconds) >= 1e15) return FormatNumber(seconds);
  std::string text = FormatFixed(seconds, 3);
  while (text.back() == '0')
    text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

std::string FormatNumber(double value) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, result.ptr);
}

std::string FormatLoss(double value) {
  if (value == 0 || !std::isfinite(value) || std::fabs(value) >= 0.001)
    return FormatFixed(value, 4);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", value);
  return buf;
}

std::string Plural(long n, const std::string& word) {
  std::string text = std::to_string(n) + " " + word;
  if (n == 1) return text;
  auto ends = [&](const char* tail) {
    std::string t = tail;
    return word.size() >= t.size() && word.compare(word.size() - t.size(), t.size(), t) == 0;
  };
  return text + (ends("s") || ends("x") || ends("ch") || ends("sh") ? "es" : "s");
}

}  // namespace saturn
