// Minimal SVG writing helpers shared by the charts.
//
//   SvgWriter svg(800, 600);
//   svg.Rect(10, 10, 100, 20, "#4a90d9", "tooltip text");
//   svg.Text(15, 25, "label", 11);
//   std::string doc = svg.Finish();
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace saturn {

std::string XmlEscape(std::string_view text);
// At most `max_chars` characters (UTF-8 code points) of `text`, with "…" if cut.
std::string Ellipsize(const std::string& text, size_t max_chars);
// A stable, well-spread colour for a key (same key, same colour).
std::string ColorFor(std::string_view key);
// The same hue, dark: an outline that shows on a bar of ColorFor(key).
std::string OutlineColorFor(std::string_view key);

// A task's colour in a chart that shows tasks side by side: `fill` for its
// Gantt bars (light, under dark text), `line` for its curves and outlines
// (dark, on white), `dash` for its curves (empty: solid).
struct TaskColor {
  std::string fill;
  std::string line;
  std::string dash;
};
// The `index`-th task's colour: twelve hues that tell apart at a glance, in
// an order where neighbours differ in hue; from the 13th task on the hues
// come round again with a dashed line (then dotted, then dash-dotted), so no
// two of the first 48 tasks look alike in a loss chart.
TaskColor PaletteColor(size_t index);
// Tick spacing for an axis of `span` seconds with about `target` ticks, in
// human steps (1, 2, 5 x 10^k seconds, or minutes/hours).
double NiceTick(double span, int target);
// An axis step of 1, 2, 2.5 or 5 x 10^k giving about `target` ticks over
// `span` (a loss or a count).
double NiceAxisStep(double span, int target);
// A tick's label with as many decimals as its step needs: 0.25, 2.5, 3.
std::string AxisTickLabel(double value, double step);

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
