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

// Generous average glyph width of the 11-12 px system sans-serif used for labels (DejaVu Sans
// digits are 0.64 em), counted in characters, not UTF-8 bytes.
double approx_text_width(const std::string& s, double px = 7.2) {
  std::size_t chars = 0;
  for (unsigned char ch : s) chars += (ch & 0xC0) != 0x80;
  return double(chars) * px;
}

// s cut to at most `chars` characters with an ellipsis, never inside a UTF-8 sequence.
std::string ellipsize(const std::string& s, std::size_t chars) {
  std::size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (n == chars) break;
      ++n;
    }
  }
  if (i >= s.size()) return s;
  std::size_t cut = i;  // the start of character number `chars`: keep chars - 1 and the ellipsis
  do --cut;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80);
  return s.substr(0, cut) + "\u2026";
}

enum class Swatch { line, line_filled, line_hollow, triangle, box };  // how a legend entry is drawn

struct LegendEntry {
  std::string name, color;
  Swatch swatch = Swatch::box;
  bool dashed = false;
};

struct Legend {
  std::string svg;
  double height = 0;
};

// Rows of legend entries starting at (x0, y0) (the first row's text baseline) within `width`;
// an entry wider than `width` is cut with an ellipsis and keeps its full name in a <title>.
Legend legend(const std::vector<LegendEntry>& entries, double x0, double y0, double width) {
  Legend l;
  double x = x0, y = y0;
  for (const auto& e : entries) {
    std::string name = e.name;
    const double fixed = 22 + 14;  // swatch + gap, and the space before the next entry
    if (fixed + approx_text_width(name) > width)
      name = ellipsize(name, std::size_t(std::max(4.0, (width - fixed) / approx_text_width("0"))));
    const double w = fixed + approx_text_width(name);
    if (x + w > x0 + width && x > x0) {
      x = x0;
      y += 18;
    }
    l.svg += "<g class=\"entry\">";
    if (name != e.name) l.svg += "<title>" + xml_escape(e.name) + "</title>";
    switch (e.swatch) {
      case Swatch::box:
        l.svg += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/>)", num(x), num(y - 10), e.color);
        break;
      case Swatch::triangle:
        l.svg += fmt::format(R"(<polygon points="{},{} {},{} {},{}" fill="{}"/>)", num(x + 8), num(y - 9), num(x + 3.5),
                             num(y - 1), num(x + 12.5), num(y - 1), e.color);
        break;
      case Swatch::line:
      case Swatch::line_filled:
      case Swatch::line_hollow:
        l.svg +=
            fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.5"{}/>)", num(x),
                        num(y - 4), num(x + 16), num(y - 4), e.color, e.dashed ? R"( stroke-dasharray="5 3")" : "");
        if (e.swatch != Swatch::line)
          l.svg += fmt::format(R"(<circle cx="{}" cy="{}" r="3.5" fill="{}" stroke="{}" stroke-width="1.5"/>)",
                               num(x + 8), num(y - 4), e.swatch == Swatch::line_hollow ? "#ffffff" : e.color, e.color);
        break;
    }
    l.svg += fmt::format(R"(<text class="legend" x="{}" y="{}">{}</text></g>)", num(x + 22), num(y), xml_escape(name));
    x += w;
  }
  l.height = entries.empty() ? 0 : (y - y0) + 20;
  return l;
}

using Pixel = std::pair<double, double>;

// The parts of a polyline (pixels) inside the band y0 <= y <= y1, each segment cut at the band's
// edges: the runs to draw when points beyond a fixed y range are clipped.
std::vector<std::vector<Pixel>> clip_runs(const std::vector<Pixel>& pts, double y0, double y1) {
  std::vector<std::vector<Pixel>> runs;
  const double eps = 1e-6;
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
    const auto [ax, ay] = pts[i];
    const auto [bx, by] = pts[i + 1];
    double t0 = 0, t1 = 1;
    if (std::fabs(by - ay) < eps) {
      if (ay < y0 - eps || ay > y1 + eps) continue;
    } else {
      const double ta = (y0 - ay) / (by - ay), tb = (y1 - ay) / (by - ay);
      t0 = std::max(0.0, std::min(ta, tb));
      t1 = std::min(1.0, std::max(ta, tb));
      if (t0 > t1) continue;
    }
    const Pixel p{ax + t0 * (bx - ax), ay + t0 * (by - ay)}, q{ax + t1 * (bx - ax), ay + t1 * (by - ay)};
    if (!runs.empty() && std::fabs(runs.back().back().first - p.first) < eps &&
        std::fabs(runs.back().back().second - p.second) < eps)
      runs.back().push_back(q);
    else
      runs.push_back({p, q});
  }
  return runs;
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
  const bool fixed_y = c.y_lo || c.y_hi;
  if (!fixed_y)
    for (const auto& h : c.hlines) ymin = std::min(ymin, h.y), ymax = std::max(ymax, h.y);
  if (!std::isfinite(xmin)) xmin = c.log2_x ? 1 : 0, xmax = c.log2_x ? 2 : 1;
  if (!std::isfinite(ymin)) ymin = 0, ymax = 1;
  if (c.y_from_zero && !c.y_lo) ymin = std::min(0.0, ymin);
  if (c.y_lo) ymin = *c.y_lo;
  if (c.y_hi) ymax = *c.y_hi;
  if (!(ymax > ymin)) ymax = ymin + (ymin == 0 ? 1 : std::fabs(ymin) * 0.1);

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
  // A fixed range spans exactly its nice ticks (points beyond are clipped); otherwise the ticks
  // cover the data with a little room above.
  const auto yticks = fixed_y ? nice_ticks(ymin, ymax, 5) : nice_ticks(ymin, ymax * 1.04, 5);
  const double ay0 = fixed_y ? yticks.front() : std::min(ymin, yticks.front());
  const double ay1 = fixed_y ? yticks.back() : std::max(ymax, yticks.back());
  const double eps = 1e-9 * std::max(1.0, std::fabs(ay1 - ay0));
  bool clipped_above = false, clipped_below = false;
  for (const auto& s : c.series)
    for (const auto& p : s.points) {
      if (c.log2_x && !(p.x > 0)) continue;
      clipped_above = clipped_above || p.y > ay1 + eps;
      clipped_below = clipped_below || p.y < ay0 - eps;
    }
  std::vector<const ChartLine*> hlines;  // the reference lines on the axis
  for (const auto& h : c.hlines)
    if (h.y >= ay0 - eps && h.y <= ay1 + eps) hlines.push_back(&h);

  const double left = 78, right = 16, top = 14;
  std::vector<LegendEntry> entries;
  bool any_muted = false;
  for (const auto& s : c.series) {
    any_muted = any_muted || s.muted;
    if (!s.legend || s.muted) continue;
    entries.push_back({s.name, s.color, s.hollow ? Swatch::line_hollow : Swatch::line_filled, s.dashed});
  }
  if (any_muted && !c.muted_label.empty()) entries.push_back({c.muted_label, kMutedColor, Swatch::line_filled, false});
  if (clipped_above)
    entries.push_back(
        {fmt::format("above {}: on the top edge (value in its tooltip)", yf(ay1)), "#555555", Swatch::triangle, false});
  if (clipped_below)
    entries.push_back({fmt::format("below {}: on the bottom edge (value in its tooltip)", yf(ay0)), "#555555",
                       Swatch::triangle, false});
  for (const auto* h : hlines) entries.push_back({h->label, h->color, Swatch::line, h->dashed});
  const double plot_w = width - left - right;
  const Legend leg = legend(entries, left, 0, plot_w);  // measure
  // The plot keeps the height it has with one legend row; more rows make the SVG taller.
  const double axis_h = 46, row_h = 20;
  const double plot_h = height - top - axis_h - row_h;
  const double total_h = top + plot_h + axis_h + std::max(row_h, leg.height);
  auto X = [&](double x) { return left + (fx(x) - ax0) / (ax1 - ax0) * plot_w; };
  auto Y = [&](double y) { return top + plot_h - (y - ay0) / (ay1 - ay0) * plot_h; };

  std::string o =
      fmt::format(R"(<svg class="chart" width="{}" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>)",
                  width, width, int(std::ceil(total_h)), xml_escape(c.title), xml_escape(c.title));
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
                     num(top + plot_h + 18), xml_escape(xf(t)));
  }
  o += fmt::format(R"(<text class="axis" x="{}" y="{}" text-anchor="middle">{}</text>)", num(left + plot_w / 2),
                   num(top + plot_h + 35), xml_escape(c.x_label));
  o +=
      fmt::format(R"svg(<text class="axis" transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>)svg",
                  num(top + plot_h / 2), xml_escape(c.y_label));

  // Reference lines first, thin and translucent: the data are drawn over them.
  for (const auto* h : hlines)
    o += fmt::format(
        R"(<line class="ref" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.5" stroke-opacity="0.75"{}/>)",
        num(left), num(Y(h->y)), num(left + plot_w), num(Y(h->y)), h->color,
        h->dashed ? R"( stroke-dasharray="6 4")" : "");
  const double y_top = top, y_bottom = top + plot_h;
  auto draw = [&](const ChartSeries& s) {
    const std::string col = s.muted ? std::string(kMutedColor) : s.color;
    const double r = s.muted ? 2.5 : 3.5;
    std::vector<Pixel> px;
    for (const auto& p : s.points)
      if (!c.log2_x || p.x > 0) px.push_back({X(p.x), Y(p.y)});
    for (const auto& run : clip_runs(px, y_top, y_bottom)) {
      std::string pts;
      for (const auto& [x, y] : run) pts += fmt::format("{},{} ", num(x), num(y));
      o += fmt::format(R"(<polyline class="series" fill="none" stroke="{}" stroke-width="{}"{} points="{}"/>)", col,
                       s.muted ? "1.2" : "2", s.dashed ? R"( stroke-dasharray="5 3")" : "", pts);
    }
    for (std::size_t i = s.markers_from; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      if (c.log2_x && !(p.x > 0)) continue;
      const double x = X(p.x), y = Y(p.y);
      const std::string fill = s.hollow ? "#ffffff" : col;
      if (p.y > ay1 + eps || p.y < ay0 - eps) {
        const bool above = p.y > ay1;
        const double tip = above ? y_top + 1 : y_bottom - 1, base = above ? y_top + 9 : y_bottom - 9;
        o += fmt::format(
            R"(<polygon class="pt clipped" points="{},{} {},{} {},{}" fill="{}" stroke="{}" stroke-width="1.2"><title>{}: {}, {} ({} the axis)</title></polygon>)",
            num(x), num(tip), num(x - 4.5), num(base), num(x + 4.5), num(base), fill, col, xml_escape(s.name),
            xml_escape(xf(p.x)), xml_escape(yf(p.y)), above ? "above" : "below");
        continue;
      }
      o += fmt::format(
          R"(<circle class="pt" cx="{}" cy="{}" r="{}" fill="{}" stroke="{}" stroke-width="1.5"><title>{}: {}, {}</title></circle>)",
          num(x), num(y), r, fill, col, xml_escape(s.name), xml_escape(xf(p.x)), xml_escape(yf(p.y)));
    }
  };
  for (const auto& s : c.series)
    if (s.muted) draw(s);
  for (const auto& s : c.series)
    if (!s.muted) draw(s);
  if (c.marker && c.marker->at.y >= ay0 - eps && c.marker->at.y <= ay1 + eps) {
    const auto& m = *c.marker;
    o += fmt::format(R"(<circle class="pick" cx="{}" cy="{}" r="8" fill="none" stroke="#000" stroke-width="2"/>)",
                     num(X(m.at.x)), num(Y(m.at.y)));
    const bool right_side = X(m.at.x) > left + plot_w * 0.6;
    const bool below = Y(m.at.y) < top + 24;  // near the top edge: label under the point
    o += fmt::format(R"(<text class="mark" x="{}" y="{}" text-anchor="{}">{}</text>)",
                     num(X(m.at.x) + (right_side ? -12 : 12)), num(Y(m.at.y) + (below ? 22 : -10)),
                     right_side ? "end" : "start", xml_escape(m.label));
  }
  o += legend(entries, left, top + plot_h + 56, plot_w).svg;
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
  for (const auto& l : c.lines) vmax = std::max(vmax, l.y);
  if (!(vmax > 0)) vmax = 1;
  double label_w = 0;
  for (const auto& cat : c.categories) label_w = std::max(label_w, approx_text_width(cat));
  const double left = std::min(280.0, label_w + 16), right = 70, top = 10;
  const double plot_w = width - left - right;
  const double bar_h = c.stacked ? 20 : 13, gap = c.stacked ? 10 : 12;
  const double group_h = c.stacked ? bar_h : bar_h * double(std::max<std::size_t>(1, nseg));
  const double plot_h = double(c.categories.size()) * (group_h + gap) + gap;
  auto ticks = nice_ticks(0, vmax, 5);
  const double vtop = std::max(vmax, ticks.back());
  auto X = [&](double v) { return left + v / vtop * plot_w; };

  std::vector<LegendEntry> entries;
  for (std::size_t s = 0; s < nseg; ++s) entries.push_back({c.segments[s], c.colors[s], Swatch::box, false});
  for (const auto& l : c.lines) entries.push_back({l.label, l.color, Swatch::line, l.dashed});
  // The legend may start left of the plot (under the category labels): long segment names fit.
  const double legend_x = std::min(left, 78.0), legend_w = width - legend_x - 16;
  Legend leg = legend(entries, legend_x, 0, legend_w);
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
      o += fmt::format(
          R"(<rect class="bar" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {} {}</title></rect>)",
          num(x0), num(y), num(X(v) - X(0)), num(bar_h - (c.stacked ? 0 : 1)), c.colors[s], xml_escape(c.categories[i]),
          xml_escape(c.segments[s]), xml_escape(vf(v)));
      if (!c.stacked)
        o += fmt::format(R"(<text class="val" x="{}" y="{}">{}</text>)", num(X(v) + 4), num(y + bar_h - 3),
                         xml_escape(vf(v)));
      acc += v;
    }
    if (c.stacked)
      o += fmt::format(R"(<text class="val" x="{}" y="{}">{}</text>)", num(X(acc) + 4), num(y0 + bar_h - 5),
                       xml_escape(vf(acc)));
  }
  // Reference values over the bars, dashed and translucent: the bars show through.
  for (const auto& l : c.lines)
    o += fmt::format(
        R"(<line class="ref" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.5" stroke-opacity="0.75" stroke-dasharray="{}"/>)",
        num(X(l.y)), num(top), num(X(l.y)), num(top + plot_h), l.color, l.dashed ? "6 4" : "2 3");
  o += legend(entries, legend_x, top + plot_h + 56, legend_w).svg;
  o += "</svg>";
  return o;
}

}  // namespace gaccum::reports
