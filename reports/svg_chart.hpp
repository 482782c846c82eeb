// What: a tiny inline-SVG chart writer: line charts (linear or log2 x axis, horizontal reference
//       lines, a highlighted point) and horizontal bar charts (stacked or grouped), with axes,
//       "nice" ticks, a legend and a <title> for screen readers.
// Why: the HTML report must be one self-contained file with no scripts, fonts or URLs, so
//      charts are drawn here in C++ as SVG markup; text inherits the page's system font. Each
//      <svg> carries its width in CSS pixels, so text has the same size in every chart (the
//      page only shrinks a chart wider than its column).
// Units: coordinates are data units; width/height are CSS pixels of the viewBox.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gaccum::reports {

struct ChartPoint {
  double x = 0, y = 0;
};

struct ChartSeries {
  std::string name;
  std::vector<ChartPoint> points;  // drawn in order
  std::string color;
  bool dashed = false;
  bool hollow = false;  // hollow markers (e.g. extrapolated)
  bool legend = true;   // an entry in the legend, its swatch the line and the marker as drawn
  std::size_t markers_from = 0;  // points before this index get no marker (e.g. a joining point
                                 // that belongs to another series, drawn there with its own marker)
};

struct ChartLine {
  double y = 0;
  std::string label;
  std::string color;
  bool dashed = false;
};

struct ChartMarker {
  ChartPoint at;
  std::string label;
};

using ChartFormatter = std::function<std::string(double)>;

struct LineChart {
  std::string title;
  std::string x_label, y_label;
  bool log2_x = false;
  bool integer_x = false;  // ticks on whole numbers only (counts such as world_size)
  bool y_from_zero = true;
  std::vector<ChartSeries> series;
  std::vector<ChartLine> hlines;
  std::optional<ChartMarker> marker;
  ChartFormatter x_format;  // default "%g"
  ChartFormatter y_format;
};
std::string line_chart(const LineChart& c, int width = 600, int height = 330);

struct BarChart {
  std::string title;
  std::string value_label;
  std::vector<std::string> categories;      // one bar (group) per category, top to bottom
  std::vector<std::string> segments;        // legend names
  std::vector<std::string> colors;          // one per segment
  std::vector<std::vector<double>> values;  // [category][segment]
  bool stacked = true;                      // false: grouped bars
  ChartFormatter format;
};
std::string bar_chart(const BarChart& c, int width = 600);

// XML text escaping for element content and attribute values.
std::string xml_escape(std::string_view s);

// Okabe-Ito colour-blind-safe palette.
const std::string& chart_color(std::size_t i);

// Ticks at 1/2/5 x 10^n from the one at or below lo to the one at or above hi.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

}  // namespace gaccum::reports
