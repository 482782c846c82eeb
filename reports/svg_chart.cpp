// What/why: the SVG writer of svg_chart.hpp. Every element carries a class so the page's CSS
// styles it; colours are attributes so the charts also print in colour.
#include "reports/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace gaccum::reports {
namespace {

std::string num(double v) {
  return fmt::format("{:.1f}", v);
}

std::string default_format(double v) {
  return fmt::format("{:g}", v);
}

// Generous average glyph width of the 11-12 px system sans-serif used for labels.
double approx_text_width(const std::string& s, double px = 7.0) {
  return double(s.size()) * px;
}

struct Legend {
  std::string svg;
  double height = 0;
};

enum class Swatch { none, filled, hollow };  // the marker drawn on a line swatch

// A wrapping row of legend entries starting at (x0, y0) within `width`.
Legend legend(const std::vector<std::pair<std::string, std::string>>& entries, double x0, double y0, double width,
              bool line_swatch, const std::vector<bool>& dashed = {}, const std::vector<Swatch>& markers = {}) {
  Legend l;
  double x = x0, y = y0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [name, col] = entries[i];
    double w = 22 + approx_text_width(name) + 14;
    if (x + w > x0 + width && x > x0) {
      x = x0;
      y += 18;
    }
    if (line_swatch) {
      bool d = i < dashed.size() && dashed[i];
      l.svg += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.5"{}/>)", num(x),
                           num(y - 4), num(x + 16), num(y - 4), col, d ? R"( stroke-dasharray="5 3")" : "");
      const Swatch m = i < markers.size() ? markers[i] : Swatch::none;
      if (m != Swatch::none)
        l.svg += fmt::format(R"(<circle cx="{}" cy="{}" r="3.5" fill="{}" stroke="{}" stroke-width="1.5"/>)", num(x + 8),
                             num(y - 4), m == Swatch::hollow ? "#ffffff" : col, col);
    } else {
      l.svg += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/>)", num(x), num(y - 10), col);
    }
    l.svg += fmt::format(R"(<text class="legend" x="{}" y="{}">{}</text>)", num(x + 22), num(y), xml_escape(name));
    x += w;
  }
  l.height = entries.empty() ? 0 : (y - y0) + 20;
  return l;
}

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
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
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const std::string& chart_color(std::size_t i) {
  static const std::vector<std::string> palette = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                                   "#CC79A7", "#56B4E9", "#7f7f7f", "#000000"};
  return palette[i % palette.size()];
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + (lo == 0 ? 1 : std::fabs(lo));
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / mag;
  const double step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
  // From the tick at or below lo to the tick at or above hi, so the data never touch the frame.
  std::vector<double> t;
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  for (double i = first; i <= last; i += 1) t.push_back(std::fabs(i) < 1e-9 ? 0.0 : i * step);
  return t;
}

std::string line_chart(const LineChart& c, int width, int height) {
  const auto xf = c.x_format ? c.x_format : ChartFormatter(default_format);
  const auto yf = c.y_format ? c.y_format : ChartFormatter(default_format);
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  for (const auto& s : c.series)
    for (const auto& p : s.points) {
      if (c.log2_x && !(p.x > 0)) continue;
      xmin = std::min(xmin, p.x), xmax = std::max(xmax, p.x);
      ymin = std::min(ymin, p.y), ymax = std::max(ymax, p.y);
    }
  for (const auto& h : c.hlines) ymin = std::min(ymin, h.y), ymax = std::max(ymax, h.y);
  if (!std::isfinite(xmin)) xmin = c.log2_x ? 1 : 0, xmax = c.log2_x ? 2 : 1;
  if (!std::isfinite(ymin)) ymin = 0, ymax = 1;
  if (c.y_from_zero) ymin = std::min(0.0, ymin);

  // Axes.
  auto fx = [&](double x) { return c.log2_x ? std::log2(x) : x; };
  double ax0 = fx(xmin), ax1 = fx(xmax);
  std::vector<double> xticks;
  if (c.log2_x) {
    double e0 = std::floor(ax0), e1 = std::ceil(ax1);
    if (e1 <= e0) e1 = e0 + 1;
    int every = int(std::ceil((e1 - e0 + 1) / 10.0));
    for (double e = e0; e <= e1; e += every) xticks.push_back(std::pow(2.0, e));
    ax0 = e0, ax1 = e1;
  } else {
    if (!(ax1 > ax0)) ax0 -= 0.5, ax1 += 0.5;
    if (c.integer_x && ax1 - ax0 < 2) ax0 -= 0.5, ax1 += 0.5;  // room beside the outer counts
    xticks = nice_ticks(ax0, ax1, 6);
    if (c.integer_x && xticks.size() > 1 && xticks[1] - xticks[0] < 1) {
      // A step below 1 would label fractions of a count: one tick per whole number instead.
      xticks.clear();
      for (double t = std::ceil(ax0); t <= std::floor(ax1) + 1e-9; t += 1) xticks.push_back(t);
    }
    ax0 = std::min(ax0, xticks.front()), ax1 = std::max(ax1, xticks.back());
  }
  auto yticks = nice_ticks(ymin, ymax * 1.04 + (ymax == ymin ? 1 : 0), 5);
  const double ay0 = std::min(ymin, yticks.front()), ay1 = std::max(ymax, yticks.back());

  const double left = 78, right = 16, top = 14;
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<bool> dashes;
  std::vector<Swatch> swatches;
  for (const auto& s : c.series) {
    if (!s.legend) continue;
    entries.emplace_back(s.name, s.color);
    dashes.push_back(s.dashed);
    swatches.push_back(s.hollow ? Swatch::hollow : Swatch::filled);
  }
  for (const auto& h : c.hlines) {
    entries.emplace_back(h.label, h.color);
    dashes.push_back(h.dashed);
    swatches.push_back(Swatch::none);
  }
  const double plot_w = width - left - right;
  Legend leg = legend(entries, left, 0, plot_w, true, dashes, swatches);  // measure
  const double bottom = 46 + leg.height;
  const double plot_h = height - top - bottom;
  auto X = [&](double x) { return left + (fx(x) - ax0) / (ax1 - ax0) * plot_w; };
  auto Y = [&](double y) { return top + plot_h - (y - ay0) / (ay1 - ay0) * plot_h; };

  std::string o = fmt::format(
      R"(<svg class="chart" width="{}" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>)", width, width,
      height, xml_escape(c.title), xml_escape(c.title));
  o += fmt::format(R"(<rect class="plot" x="{}" y="{}" width="{}" height="{}"/>)", num(left), num(top), num(plot_w),
                   num(plot_h));
  for (double t : yticks) {
    o += fmt::format(R"(<line class="grid" x1="{}" y1="{}" x2="{}" y2="{}"/>)", num(left), num(Y(t)),
                     num(left + plot_w), num(Y(t)));
    o += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="end">{}</text>)", num(left - 6), num(Y(t) + 4),
                     xml_escape(yf(t)));
  }
  for (double t : xticks) {
    o += fmt::format(R"(<line class="grid" x1="{}" y1="{}" x2="{}" y2="{}"/>)", num(X(t)), num(top), num(X(t)),
                     num(top + plot_h));
    o += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>)", num(X(t)),
                     num(top + plot_h + 16), xml_escape(xf(t)));
  }
  o += fmt::format(R"(<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>)", num(left + plot_w / 2),
                   num(top + plot_h + 34), xml_escape(c.x_label));
  o +=
      fmt::format(R"svg(<text class="axis" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>)svg",
                  num(top + plot_h / 2), xml_escape(c.y_label));

  for (const auto& h : c.hlines)
    o +=
        fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"{}/>)", num(left), num(Y(h.y)),
                    num(left + plot_w), num(Y(h.y)), h.color, h.dashed ? R"( stroke-dasharray="6 4")" : "");
  for (const auto& s : c.series) {
    std::string pts;
    for (const auto& p : s.points)
      if (!c.log2_x || p.x > 0) pts += fmt::format("{},{} ", num(X(p.x)), num(Y(p.y)));
    if (s.points.size() > 1)
      o += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2"{} points="{}"/>)", s.color,
                       s.dashed ? R"( stroke-dasharray="5 3")" : "", pts);
    for (std::size_t i = s.markers_from; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      if (c.log2_x && !(p.x > 0)) continue;
      o += fmt::format(
          R"(<circle cx="{}" cy="{}" r="3.5" fill="{}" stroke="{}" stroke-width="1.5"><title>{}: {}, {}</title></circle>)",
          num(X(p.x)), num(Y(p.y)), s.hollow ? "#ffffff" : s.color, s.color, xml_escape(s.name), xml_escape(xf(p.x)),
          xml_escape(yf(p.y)));
    }
  }
  if (c.marker) {
    const auto& m = *c.marker;
    o += fmt::format(R"(<circle cx="{}" cy="{}" r="8" fill="none" stroke="#000" stroke-width="2"/>)", num(X(m.at.x)),
                     num(Y(m.at.y)));
    const bool right_side = X(m.at.x) > left + plot_w * 0.6;
    const bool below = Y(m.at.y) < top + 24;  // near the top edge: label under the point
    o += fmt::format(R"(<text class="mark" x="{}" y="{}" text-anchor="{}">{}</text>)",
                     num(X(m.at.x) + (right_side ? -12 : 12)), num(Y(m.at.y) + (below ? 22 : -10)),
                     right_side ? "end" : "start", xml_escape(m.label));
  }
  o += legend(entries, left, top + plot_h + 56, plot_w, true, dashes, swatches).svg;
  o += "</svg>";
  return o;
}

std::string bar_chart(const BarChart& c, int width) {
  const auto vf = c.format ? c.format : ChartFormatter(default_format);
  const std::size_t nseg = c.segments.size();
  double vmax = 0;
  for (const auto& row : c.values) {
    double sum = 0, mx = 0;
    for (double v : row) sum += std::max(0.0, v), mx = std::max(mx, v);
    vmax = std::max(vmax, c.stacked ? sum : mx);
  }
  if (!(vmax > 0)) vmax = 1;
  double label_w = 0;
  for (const auto& cat : c.categories) label_w = std::max(label_w, approx_text_width(cat, 7.2));
  const double left = std::min(280.0, label_w + 16), right = 70, top = 10;
  const double plot_w = width - left - right;
  const double bar_h = c.stacked ? 20 : 13, gap = c.stacked ? 10 : 12;
  const double group_h = c.stacked ? bar_h : bar_h * double(std::max<std::size_t>(1, nseg));
  const double plot_h = double(c.categories.size()) * (group_h + gap) + gap;
  auto ticks = nice_ticks(0, vmax, 5);
  const double vtop = std::max(vmax, ticks.back());
  auto X = [&](double v) { return left + v / vtop * plot_w; };

  std::vector<std::pair<std::string, std::string>> entries;
  for (std::size_t s = 0; s < nseg; ++s) entries.emplace_back(c.segments[s], c.colors[s]);
  Legend leg = legend(entries, left, 0, plot_w, false);
  const double height = top + plot_h + 40 + leg.height + 8;

  std::string o = fmt::format(
      R"(<svg class="chart" width="{}" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>)", width, width,
      num(height), xml_escape(c.title), xml_escape(c.title));
  o += fmt::format(R"(<rect class="plot" x="{}" y="{}" width="{}" height="{}"/>)", num(left), num(top), num(plot_w),
                   num(plot_h));
  for (double t : ticks) {
    o += fmt::format(R"(<line class="grid" x1="{}" y1="{}" x2="{}" y2="{}"/>)", num(X(t)), num(top), num(X(t)),
                     num(top + plot_h));
    o += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>)", num(X(t)),
                     num(top + plot_h + 16), xml_escape(vf(t)));
  }
  o += fmt::format(R"(<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>)", num(left + plot_w / 2),
                   num(top + plot_h + 34), xml_escape(c.value_label));
  for (std::size_t i = 0; i < c.categories.size(); ++i) {
    const double y0 = top + gap + double(i) * (group_h + gap);
    o += fmt::format(R"(<text class="cat" x="{}" y="{}" text-anchor="end">{}</text>)", num(left - 8),
                     num(y0 + group_h / 2 + 4), xml_escape(c.categories[i]));
    double acc = 0;
    for (std::size_t s = 0; s < nseg && s < c.values[i].size(); ++s) {
      const double v = std::max(0.0, c.values[i][s]);
      const double x0 = c.stacked ? X(acc) : X(0);
      const double y = c.stacked ? y0 : y0 + double(s) * bar_h;
      o += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {}</title></rect>)",
                       num(x0), num(y), num(X(v) - X(0)), num(bar_h - (c.stacked ? 0 : 1)), c.colors[s],
                       xml_escape(c.categories[i]), xml_escape(c.segments[s]), xml_escape(vf(v)));
      if (!c.stacked)
        o += fmt::format(R"(<text class="val" x="{}" y="{}">{}</text>)", num(X(v) + 4), num(y + bar_h - 3),
                         xml_escape(vf(v)));
      acc += v;
    }
    if (c.stacked)
      o += fmt::format(R"(<text class="val" x="{}" y="{}">{}</text>)", num(X(acc) + 4), num(y0 + bar_h - 5),
                       xml_escape(vf(acc)));
  }
  o += legend(entries, left, top + plot_h + 56, plot_w, false).svg;
  o += "</svg>";
  return o;
}

}  // namespace gaccum::reports
