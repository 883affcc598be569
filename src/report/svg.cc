#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "common/format.h"

namespace saturn {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Ellipsize(const std::string& text, size_t max_chars) {
  size_t chars = 0, i = 0;
  while (i < text.size()) {
    size_t next = i + 1;
    while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80)
      ++next;
    if (++chars > max_chars - 1 && next < text.size()) return text.substr(0, i) + "…";
    i = next;
  }
  return text;
}

namespace {

// The key's hue and saturation at the given lightness (percent); `light_range`
// spreads the lightness over that many steps.
std::string KeyColor(std::string_view key, int light, int light_range) {
  // FNV-1a, then a golden-ratio hue walk for well-separated colours.
  uint64_t h = 1469598103934665603ull;
  for (char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  double hue = std::fmod(static_cast<double>(h % 1000) * 0.618033988749895 * 360.0, 360.0);
  int sat = 55 + static_cast<int>((h >> 20) % 20);
  light += static_cast<int>((h >> 30) % static_cast<uint64_t>(light_range));
  char buf[48];
  std::snprintf(buf, sizeof buf, "hsl(%d,%d%%,%d%%)", static_cast<int>(hue), sat, light);
  return buf;
}

}  // namespace

std::string ColorFor(std::string_view key) {
  return KeyColor(key, 62, 12);
}

std::string OutlineColorFor(std::string_view key) {
  return KeyColor(key, 30, 1);
}

TaskColor PaletteColor(size_t index) {
  // {fill, line}: the same hue, light and dark.
  static const char* const kHues[][2] = {
      {"#9ecae9", "#1f77b4"},  // blue
      {"#fdae6b", "#d95f0e"},  // orange
      {"#a1d99b", "#2ca02c"},  // green
      {"#f4a3a3", "#c9252b"},  // red
      {"#c9b6ea", "#7b4fb8"},  // purple
      {"#8fd3d4", "#0e8587"},  // teal
      {"#f4a6d7", "#c42a8d"},  // pink
      {"#d9b8a8", "#8c564b"},  // brown
      {"#cde88f", "#6a9c10"},  // lime
      {"#aab3e6", "#2b3a8c"},  // navy
      {"#c6ced3", "#56636b"},  // slate
      {"#f7d56e", "#dc9e00"},  // amber
  };
  static const char* const kDashes[] = {"", "7 3", "2 2", "9 3 2 3"};
  constexpr size_t kCount = sizeof kHues / sizeof kHues[0];
  constexpr size_t kDashCount = sizeof kDashes / sizeof kDashes[0];
  const auto& hue = kHues[index % kCount];
  return {hue[0], hue[1], kDashes[(index / kCount) % kDashCount]};
}

double NiceTick(double span, int target) {
  if (!(span > 0)) return 1.0;
  static const double kSteps[] = {1,     2,     5,     10,    15,     30,     60,
                                  120,   300,   600,   900,   1800,   3600,   7200,
                                  10800, 21600, 43200, 86400, 172800, 432000, 864000};
  double raw = span / std::max(1, target);
  for (double s : kSteps) {
    if (s >= raw) return s;
  }
  return std::pow(10.0, std::ceil(std::log10(raw)));
}

double NiceAxisStep(double span, int target) {
  double raw = span / std::max(1, target);
  double pow10 = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * pow10 >= raw * (1 - 1e-9)) return m * pow10;
  }
  return 10 * pow10;
}

std::string AxisTickLabel(double value, double step) {
  int decimals = 0;
  while (decimals < 6) {
    double scaled = step * std::pow(10.0, decimals);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
    ++decimals;
  }
  std::string text = FormatFixed(value, decimals);
  return text == "-0" ? "0" : text;
}

SvgWriter::SvgWriter(double width, double height) : width_(width), height_(height) {}

void SvgWriter::Rect(double x, double y, double w, double h, std::string_view fill,
                     std::string_view title, std::string_view extra) {
  body_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(w, 0.5)) +
           "\" height=\"" + Num(h) + "\" fill=\"" + std::string(fill) + "\"";
  if (!extra.empty()) body_ += " " + std::string(extra);
  if (title.empty()) {
    body_ += "/>\n";
  } else {
    body_ += "><title>" + XmlEscape(title) + "</title></rect>\n";
  }
}

void SvgWriter::Line(double x1, double y1, double x2, double y2, std::string_view stroke,
                     double width, std::string_view extra) {
  body_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
           Num(y2) + "\" stroke=\"" + std::string(stroke) + "\" stroke-width=\"" + Num(width) +
           "\"";
  if (!extra.empty()) body_ += " " + std::string(extra);
  body_ += "/>\n";
}

void SvgWriter::Text(double x, double y, std::string_view text, double size,
                     std::string_view anchor, std::string_view extra) {
  body_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" font-size=\"" + Num(size) +
           "\" text-anchor=\"" + std::string(anchor) + "\"";
  if (!extra.empty()) body_ += " " + std::string(extra);
  body_ += ">" + XmlEscape(text) + "</text>\n";
}

void SvgWriter::Polyline(const std::string& points, std::string_view stroke, double width) {
  body_ += "<polyline fill=\"none\" stroke=\"" + std::string(stroke) + "\" stroke-width=\"" +
           Num(width) + "\" points=\"" + points + "\"/>\n";
}

std::string SvgWriter::Finish() const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(width_) + "\" height=\"" +
         Num(height_) + "\" viewBox=\"0 0 " + Num(width_) + " " + Num(height_) +
         "\" font-family=\"Helvetica,Arial,sans-serif\">\n<rect width=\"100%\" height=\"100%\" "
         "fill=\"white\"/>\n" +
         body_ + "</svg>\n";
}

}  // namespace saturn
