// Minimal SVG writing helpers shared by the charts.
//
//   SvgWriter svg(800, 600);
//   svg.Rect(10, 10, 100, 20, "#4a90d9", "tooltip text");
//   svg.Text(15, 25, "label", 11);
//   std::string doc = svg.Finish();
#pragma once

#include <string>
#include <string_view>

namespace saturn {

std::string XmlEscape(std::string_view text);
// A stable, well-spread colour for a key (same key, same colour).
std::string ColorFor(std::string_view key);
// The same hue, dark: an outline that shows on a bar of ColorFor(key).
std::string OutlineColorFor(std::string_view key);
// Tick spacing for an axis of `span` seconds with about `target` ticks, in
// human steps (1, 2, 5 x 10^k seconds, or minutes/hours).
double NiceTick(double span, int target);

class SvgWriter {
 public:
  SvgWriter(double width, double height);
  void Rect(double x, double y, double w, double h, std::string_view fill,
            std::string_view title = "", std::string_view extra = "");
  void Line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1.0,
            std::string_view extra = "");
  void Text(double x, double y, std::string_view text, double size = 11,
            std::string_view anchor = "start", std::string_view extra = "");
  void Polyline(const std::string& points, std::string_view stroke, double width = 1.5);
  void Raw(std::string_view markup) { body_ += markup; }
  std::string Finish() const;

 private:
  double width_, height_;
  std::string body_;
};

}  // namespace saturn
