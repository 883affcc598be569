#include "common/format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace saturn {

namespace {

std::string TwoDigits(long n) {
  return (n < 10 ? "0" : "") + std::to_string(n);
}

// n tenths as "<n / 10>.<n % 10>".
std::string Tenths(long n) {
  return std::to_string(n / 10) + "." + std::to_string(n % 10);
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  if (seconds < 0) return "-" + FormatDuration(-seconds);
  if (seconds >= 1e15) return FormatFixed(seconds / 86400, 1) + "d";
  // Each unit rounds the same products half up, as the dashboard's
  // formatDuration does with Math.round: the page and the terminal agree to
  // the digit, and a value just under a unit's end reads in the next unit
  // (59.97 s is "1m00s", never "60.0s").
  long hundredths = std::lround(seconds * 100);
  if (hundredths >= 1 && hundredths < 10) {  // a fast solve: "0.04s", not "0.0s"
    return "0.0" + std::to_string(hundredths) + "s";
  }
  if (long tenths = std::lround(seconds * 10); tenths < 600) return Tenths(tenths) + "s";
  if (long s = std::lround(seconds); s < 3600) {
    return std::to_string(s / 60) + "m" + TwoDigits(s % 60) + "s";
  }
  if (long m = std::lround(seconds / 60); m < 72 * 60) {
    return std::to_string(m / 60) + "h" + TwoDigits(m % 60) + "m";
  }
  return Tenths(std::lround(seconds / 8640)) + "d";
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

std::string JoinWithAnd(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " and " : ", ";
    out += items[i];
  }
  return out;
}

namespace {

// Lower case, '-' as '_': "Current-Practice" and "current_practice" match.
std::string Normalised(std::string_view name) {
  std::string out;
  for (char c : name)
    out += c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Edits (insert, delete, substitute, swap two neighbours) from a to b.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string ClosestName(std::string_view name, const std::vector<std::string>& known) {
  constexpr size_t kMaxCompared = 64;  // longer input is no typo of a name
  if (name.empty() || name.size() > kMaxCompared) return "";
  const std::string wanted = Normalised(name);
  for (const std::string& k : known)
    if (Normalised(k) == wanted) return k;
  const std::string* best = nullptr;
  size_t best_distance = wanted.size() / 3 + 1;
  for (const std::string& k : known) {
    if (k.size() > kMaxCompared) continue;
    size_t d = EditDistance(wanted, Normalised(k));
    if (d < best_distance) {
      best = &k;
      best_distance = d;
    }
  }
  if (best) return *best;
  if (wanted.size() < 3) return "";
  for (const std::string& k : known)
    if (Normalised(k).rfind(wanted, 0) == 0) return k;
  return "";
}

std::string DidYouMean(std::string_view name, const std::vector<std::string>& known) {
  std::string closest = ClosestName(name, known);
  return closest.empty() ? "" : "did you mean '" + closest + "'?";
}

}  // namespace saturn
