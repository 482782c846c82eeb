// What: a tiny inline-SVG chart writer: line charts (linear or log2 x axis, horizontal reference
//       lines, a highlighted point, an optional fixed y range with out-of-range points clipped to
//       the plot's edge and marked, muted "other" series under one legend entry) and horizontal
//       bar charts (stacked or grouped, optional reference values), with axes, "nice" ticks, a
//       legend below the plot and a <title> for screen readers.
// Why: the HTML report must be one self-contained file with no scripts, fonts or URLs, so
//      charts are drawn here in C++ as SVG markup; text inherits the page's system font. Each
//      <svg> carries its width in CSS pixels, so text has the same size in every chart (the
//      page only shrinks a chart wider than its column). The plot keeps its height however many
//      legend rows there are (the SVG grows instead), reference lines are drawn under the data,
//      thin and translucent, and a legend entry never runs past the chart's width (its text is
//      cut with an ellipsis, the full text in its <title>), so a 64-GPU report stays readable.
// Classes (for CSS and for tests/integration/html_report_layout.py, which measures them):
//   rect.plot (the plot box), g.entry (one legend entry), .series (a data line), .pt (a data
//   marker; .pt.clipped: a point off the y range, drawn on the edge), rect.bar, line.ref.
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
  bool muted = false;            // grey, thin, under the others, no legend entry of its own (LineChart::muted_label)
};

// A reference value: a horizontal line of a line chart, a vertical one of a bar chart.
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
  // A fixed y range (data units): the axis spans the nice ticks around it; points outside are
  // drawn on the plot's edge as triangles (their value in the marker's <title>), lines are cut
  // at the edge, and one legend entry says so. Unset: the range covers every point.
  std::optional<double> y_lo, y_hi;
  std::vector<ChartSeries> series;
  std::string muted_label;  // the one legend entry of the muted series, e.g. "52 other world sizes"
  std::vector<ChartLine> hlines;
  std::optional<ChartMarker> marker;
  ChartFormatter x_format;  // default "%g"
  ChartFormatter y_format;
};
// height: the SVG's height with one legend row; more rows make the SVG taller, never the plot shorter.
std::string line_chart(const LineChart& c, int width = 600, int height = 330);

struct BarChart {
  std::string title;
  std::string value_label;
  std::vector<std::string> categories;      // one bar (group) per category, top to bottom
  std::vector<std::string> segments;        // legend names
  std::vector<std::string> colors;          // one per segment
  std::vector<std::vector<double>> values;  // [category][segment]
  bool stacked = true;                      // false: grouped bars
  std::vector<ChartLine> lines;             // reference values (ChartLine::y is the value), dashed, over the bars
  ChartFormatter format;
};
std::string bar_chart(const BarChart& c, int width = 600);

// XML text escaping for element content and attribute values.
std::string xml_escape(std::string_view s);

// Okabe-Ito colour-blind-safe palette.
const std::string& chart_color(std::size_t i);
// The grey of muted series (not a palette colour).
inline constexpr const char* kMutedColor = "#b3b3b3";

// Ticks at 1/2/5 x 10^n from the one at or below lo to the one at or above hi.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

}  // namespace gaccum::reports
