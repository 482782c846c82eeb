// What/why: see html_printer.hpp. Each section is one function returning markup; every text
// that comes from data goes through escape.
#include "reports/html_printer.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "model/plan_cost.hpp"
#include "reports/row.hpp"
#include "reports/summary.hpp"
#include "reports/svg_chart.hpp"

namespace gaccum::reports {
namespace {

const char* kCss = R"css(
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:0;color:#1a1a1a;background:#fff}
main{max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}
h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:14.5px;margin:14px 0 4px}
.headline{color:#444;margin:4px 0 12px}
.lead{font-size:15px;background:#f3f7fb;border-left:4px solid #0072B2;padding:10px 14px;margin:10px 0}
.caveat{font-size:15px;background:#fdf3e7;border-left:4px solid #D55E00;padding:10px 14px;margin:10px 0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(165px,1fr));gap:10px;margin:12px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 10px}
.card .v{font-size:18px;font-weight:600}
.card .k{color:#555;font-size:12px}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:18px}
figure{margin:0;border:1px solid #e3e3e3;border-radius:6px;padding:10px;break-inside:avoid}
figcaption{font-weight:600;margin-bottom:2px}
figure p.note{color:#555;font-size:12.5px;margin:2px 0 6px}
svg.chart{max-width:100%;height:auto;display:block}
svg .plot{fill:#fafafa;stroke:#ccc}
svg .grid{stroke:#e6e6e6}
svg text{font:11px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;fill:#333}
svg .axis{font-size:12px;fill:#222}
svg .legend{font-size:11.5px}
svg .mark{font-weight:600;font-size:12px;fill:#000}
svg .cat{font-size:11.5px}
table{border-collapse:collapse;font-size:12.5px;width:100%}
th,td{padding:3px 7px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f4f4f4;position:sticky;top:0}
td.t,th.t{text-align:left}
table.pareto th,table.configs th{white-space:normal}
table.configs th,table.configs td{padding:3px 3px}
table.configs td.wrap{min-width:150px}
td.kinds{text-align:left}
td.wrap{white-space:normal;text-align:left;min-width:220px}
tr.best td{background:#eaf4ea;font-weight:600}
tr.infeasible td{color:#8a8a8a}
.scroll{max-height:640px;overflow:auto;border:1px solid #ddd;border-radius:4px}
ul.why{margin:4px 0 10px 0;padding-left:20px}
ul.why li{margin:3px 0}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:6px 0}
dl.kv dt{color:#555}
dl.kv dd{margin:0}
.pill{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;background:#eee}
.pill.memory{background:#fde2d4}.pill.divisibility{background:#fff0c2}.pill.objective{background:#dff0df}
.pill.measured-range{background:#e5e0f5}.pill.whole-batch{background:#dcebf7}
footer{color:#666;font-size:12px;margin-top:30px}
@media print{
  body{font-size:11px}
  main{max-width:none;padding:0}
  .scroll{max-height:none;overflow:visible;border:0}
  th{position:static}
  h2{break-after:avoid}
  figure,.card,tr,li{break-inside:avoid}
  .grid2{grid-template-columns:1fr 1fr}
  .lead{background:none}
  @page{margin:12mm}
}
)css";

std::string fmt_rate(double v) {
  return fmt::format("{:.1f}", v);
}

// Seconds on an axis: "0" rather than "0 us".
std::string axis_seconds(double v) {
  return v == 0 ? std::string("0") : format_seconds(v);
}

// The cap and limit lines: a colour no data series uses (chart_color's palette, kMutedColor); the
// cap solid, the limit (cap minus the margin) dashed.
constexpr const char* kLimitColor = "#8b0a2e";

// Series a chart colours and labels (more are drawn muted under one "others" legend entry, so a
// 64-GPU report's legend stays a few lines).
constexpr std::size_t kLabelledSeries = 5;

// The world sizes that a per-world-size chart labels: the pick's first, then the others in the
// order of their best ranked config (at global batch B when given), at most n.
std::vector<Count> labelled_world_sizes(const tuner::TuneResult& r, std::size_t n, Count B = 0) {
  std::vector<Count> out;
  for (std::uint32_t i : r.search.ranking) {
    if (out.size() >= n) break;
    const auto& c = r.search.candidates[i].config();
    if (B > 0 && c.global_batch() != B) continue;
    const Count p = c.world_size;
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

// A memory axis fitted to where the decision is made: from the smallest value drawn to a bit
// above the cap (data units); points higher than that are clipped to the top edge and marked.
void fit_memory_axis(LineChart& ch, double cap, double limit) {
  double lo = limit, hi = cap;
  for (const auto& s : ch.series)
    for (const auto& p : s.points) lo = std::min(lo, p.y), hi = std::max(hi, p.y);
  ch.y_lo = std::max(0.0, lo);
  ch.y_hi = std::min(hi, cap * 1.2) * 1.04;
}

// The collectives of one optimizer step by kind, as whole-model passes (each issued in pieces:
// DDP buckets, wrapped units): {"reduce-scatter 1", "all-gather 4"}; {"none"} at world_size 1
// (model/plan_cost.hpp, sync_plan).
std::vector<std::string> collective_passes(const model::Config& c) {
  if (c.world_size < 2) return {"none"};
  std::vector<std::string> out;
  for (const auto op :
       {model::CollectiveOp::allreduce, model::CollectiveOp::reduce_scatter, model::CollectiveOp::all_gather}) {
    Count n = 0;
    for (const auto& u : model::sync_plan(c))
      if (u.op == op) n += u.every_micro_step ? c.accum_steps : 1;
    if (n > 0) out.push_back(fmt::format("{} {}", model::to_string(op), n));
  }
  return out;
}

// The collectives of a step, one kind a line.
std::string collectives_cell(const model::Config& c) {
  std::string out;
  for (const auto& p : collective_passes(c)) out += (out.empty() ? "" : "<br>") + xml_escape(p);
  return out;
}

// The plan columns every table shows: strategy, sharding, precision, checkpointing (th or td cells).
constexpr const char* kPlanHeaders =
    "<th class=\"t\">strategy</th><th class=\"t\">sharding</th><th class=\"t\">precision</th><th "
    "class=\"t\">checkpointing</th>";
std::string plan_cells(const model::Config& c) {
  return fmt::format("<td class=\"t\">{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td>",
                     xml_escape(to_string(c.strategy)),
                     xml_escape((c.layout.data_parallel_only() ? "" : short_string(c.layout) + " ") + to_string(c.sharding)),
                     c.precision ? xml_escape(to_string(*c.precision)) : std::string("-"),
                     c.checkpointing ? xml_escape(to_string(*c.checkpointing)) : std::string("-"));
}

std::string section(const std::string& id, const std::string& title, const std::string& body) {
  return fmt::format("<section id=\"{}\"><h2>{}</h2>{}</section>\n", id, xml_escape(title), body);
}

std::string figure(const std::string& caption, const std::string& note, const std::string& svg_markup) {
  return fmt::format("<figure><figcaption>{}</figcaption>{}{}</figure>\n", xml_escape(caption),
                     note.empty() ? "" : "<p class=\"note\">" + xml_escape(note) + "</p>", svg_markup);
}

std::string card(const std::string& k, const std::string& v) {
  return fmt::format("<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>", xml_escape(k),
                     xml_escape(v));
}

std::string summary_section(const tuner::TuneResult& r, const ReportContext& ctx) {
  const auto& best = r.best();
  const auto& cfg = best.config();
  const auto& e = r.picks.front();
  std::string o = fmt::format("<p class=\"lead\">{}</p>", xml_escape(recommendation(r)));
  if (r.trust.applies) o += fmt::format("<p class=\"caveat\">{}</p>", xml_escape(r.trust.text));
  if (!ctx.deepspeed_config.empty()) o += fmt::format("<p>{}</p>", xml_escape(deepspeed_config_line(r, ctx)));
  o += "<div class=\"cards\">";
  o += card("pick", fmt::format("b={} k={} p={}", cfg.micro_batch, cfg.accum_steps, cfg.world_size));
  o += card("strategy", std::string(to_string(cfg.strategy)));
  o += card("global_batch", fmt::format("{}", cfg.global_batch()));
  o += card("throughput", fmt::format("{} samples/s", fmt_rate(best.prediction.throughput)));
  o += card("step time", format_seconds(best.prediction.time.step_time));
  o += card("peak memory / limit",
            fmt::format("{} / {}", format_bytes(best.prediction.memory.peak), format_bytes(r.search.limits.limit)));
  o += card("binding constraint", e.binding);
  if (r.search.objective != tuner::Objective::throughput)
    o += card(std::string("objective: ") + std::string(to_string(r.search.objective)), objective_value_text(r, best));
  o += "</div>";
  return section("recommendation", "Recommendation", o);
}

std::string why_section(const tuner::TuneResult& r) {
  std::string o;
  const std::size_t n = std::min<std::size_t>(3, r.picks.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& e = r.picks[i];
    const auto& c = r.search.candidates[e.candidate];
    o += fmt::format("<h3>#{} {} <span class=\"pill {}\">{}</span></h3><ul class=\"why\">", e.rank,
                     xml_escape(tuner::short_config(c.config())), xml_escape(e.binding), xml_escape(e.binding));
    for (const auto* line : {&e.binding_text, &e.compute_text, &e.recompute_text, &e.breakdown_text, &e.comm_text, &e.links_text, &e.headroom_text, &e.runner_up_text,
                             &e.world_size_text, &e.every_step.text})
      if (!line->empty()) o += "<li>" + xml_escape(*line) + "</li>";
    o += "</ul>";
  }
  return section("why", "Why these picks", o);
}

// Throughput against accum_steps at the best pick's global batch, one line per world size.
std::string throughput_chart(const tuner::TuneResult& r) {
  const auto& best = r.best();
  const Count B = best.config().global_batch();
  std::map<Count, std::map<Count, double>> by_p;  // p -> k -> best throughput
  for (std::uint32_t i : r.search.ranking) {
    const auto& c = r.search.candidates[i];
    if (c.config().global_batch() != B) continue;
    double& t = by_p[c.config().world_size][c.config().accum_steps];
    t = std::max(t, c.prediction.throughput);
  }
  LineChart ch;
  ch.title = fmt::format("Throughput vs accum_steps at global_batch {}", B);
  ch.x_label = "accum_steps (k)";
  ch.y_label = "samples/s";
  ch.log2_x = true;
  // The labelled world sizes first, in the order they rank (the pick's first), then the rest muted.
  const auto labelled = labelled_world_sizes(r, kLabelledSeries, B);
  std::size_t muted = 0;
  auto add = [&](Count p, const std::map<Count, double>& ks, bool is_muted, std::size_t colour) {
    ChartSeries s;
    s.name = fmt::format("world_size {}", p);
    s.muted = is_muted;
    s.color = is_muted ? kMutedColor : chart_color(colour);
    for (const auto& [k, t] : ks) s.points.push_back({double(k), t});
    ch.series.push_back(s);
  };
  for (std::size_t i = 0; i < labelled.size(); ++i)
    if (auto it = by_p.find(labelled[i]); it != by_p.end()) add(it->first, it->second, false, i);
  for (const auto& [p, ks] : by_p)
    if (std::find(labelled.begin(), labelled.end(), p) == labelled.end()) add(p, ks, true, 0), ++muted;
  if (muted > 0) ch.muted_label = fmt::format("{} other world size{} (grey)", muted, muted == 1 ? "" : "s");
  ch.marker = ChartMarker{{double(best.config().accum_steps), best.prediction.throughput},
                          fmt::format("#1 {}", tuner::short_config(best.config()))};
  ch.y_format = [](double v) { return fmt::format("{:g}", v); };
  return figure(ch.title,
                std::string("Best feasible strategy at each point; a missing point is infeasible (memory, accumulation "
                            "limit or divisibility).") +
                    (muted > 0 ? " In colour: the pick's world size and the next best; the others in grey." : ""),
                line_chart(ch));
}

// GiB when the cap reaches a GiB, else MiB: the unit of every memory axis.
std::pair<double, const char*> memory_axis_unit(const tuner::Limits& l) {
  const bool gib = std::max(l.cap, l.limit) >= GiB;
  return {gib ? double(GiB) : double(MiB), gib ? "GiB" : "MiB"};
}

std::string memory_chart(const tuner::TuneResult& r) {
  const auto& l = r.search.limits;
  const auto [unit, unit_name] = memory_axis_unit(l);
  // Group world sizes whose curves are identical.
  std::map<Count, std::vector<tuner::MemoryCurvePoint>> by_p;
  for (const auto& m : r.memory_curve) by_p[m.world_size].push_back(m);
  std::vector<std::pair<std::vector<Count>, std::vector<tuner::MemoryCurvePoint>>> groups;
  for (const auto& [p, pts] : by_p) {
    bool merged = false;
    for (auto& g : groups) {
      const auto& q = g.second;
      bool same = q.size() == pts.size();
      for (std::size_t i = 0; same && i < q.size(); ++i)
        same = q[i].micro_batch == pts[i].micro_batch && q[i].peak == pts[i].peak;
      if (same) {
        g.first.push_back(p);
        merged = true;
        break;
      }
    }
    if (!merged) groups.push_back({{p}, pts});
  }
  // Colour and a legend entry for the groups of the labelled world sizes (the pick's first); the
  // other groups muted under one entry.
  const auto labelled = labelled_world_sizes(r, kLabelledSeries);
  auto group_order = [&](const std::vector<Count>& ps) {
    std::size_t best = labelled.size();
    for (Count p : ps)
      best =
          std::min<std::size_t>(best, std::size_t(std::find(labelled.begin(), labelled.end(), p) - labelled.begin()));
    return best;  // labelled.size(): not labelled
  };
  std::stable_sort(groups.begin(), groups.end(),
                   [&](const auto& a, const auto& b) { return group_order(a.first) < group_order(b.first); });
  LineChart ch;
  ch.title = "Peak memory per rank vs micro_batch";
  ch.x_label = "micro_batch (b)";
  ch.y_label = fmt::format("peak memory per rank ({})", unit_name);
  ch.log2_x = true;
  // Filled markers on solid lines: within the measured micro_batch range; hollow markers on
  // dashed lines: extrapolated above it (one legend entry each for the two styles).
  std::size_t ci = 0, muted_sizes = 0;
  bool any_measured = false, any_extrapolated = false;
  for (const auto& [ps, pts] : groups) {
    const bool muted = group_order(ps) >= labelled.size() || ci >= kLabelledSeries;
    const std::string col = muted ? std::string(kMutedColor) : chart_color(ci++);
    if (muted) muted_sizes += ps.size();
    ChartSeries measured, extra;
    measured.name = world_sizes_text(ps);
    extra.name = measured.name + " (extrapolated)";
    measured.color = extra.color = col;
    measured.muted = extra.muted = muted;
    extra.dashed = extra.hollow = true;
    extra.legend = false;
    for (const auto& m : pts) {
      ChartPoint pt{double(m.micro_batch), double(m.peak) / unit};
      if (!m.extrapolated) {
        measured.points.push_back(pt);
      } else {
        if (extra.points.empty() && !measured.points.empty()) {
          extra.points.push_back(measured.points.back());  // joins the lines; its marker is the measured one
          extra.markers_from = 1;
        }
        extra.points.push_back(pt);
      }
    }
    any_measured = any_measured || !measured.points.empty();
    any_extrapolated = any_extrapolated || extra.points.size() > extra.markers_from;
    if (!measured.points.empty()) ch.series.push_back(measured);
    if (!extra.points.empty()) ch.series.push_back(extra);
  }
  if (muted_sizes > 0)
    ch.muted_label = fmt::format("{} other world size{} (grey)", muted_sizes, muted_sizes == 1 ? "" : "s");
  if (any_extrapolated) {
    ChartSeries key;  // legend only: the marker style of every extrapolated point
    key.name = r.info.measured_max_micro_batch > 0
                   ? fmt::format("extrapolated (micro_batch above the measured {})", r.info.measured_max_micro_batch)
                   : std::string("extrapolated");
    key.color = "#7f7f7f";
    key.dashed = key.hollow = true;
    if (any_measured) {
      ChartSeries m;
      m.name = "measured range";
      m.color = "#7f7f7f";
      ch.series.push_back(m);
    }
    ch.series.push_back(key);
  }
  ch.hlines.push_back({double(l.cap) / unit, fmt::format("cap {}", format_bytes(l.cap)), kLimitColor, false});
  ch.hlines.push_back(
      {double(l.limit) / unit, fmt::format("limit {} (cap minus margin)", format_bytes(l.limit)), kLimitColor, true});
  fit_memory_axis(ch, double(l.cap) / unit, double(l.limit) / unit);
  ch.y_format = [](double v) { return fmt::format("{:g}", v); };
  return figure(ch.title,
                std::string("Accumulation steps do not change activation memory; world_size > 1 adds gradient "
                            "buckets. The axis ends a little above the cap: higher points sit on the top edge.") +
                    (muted_sizes > 0 ? " In colour: the pick's world size and the next best; the others in grey." : ""),
                line_chart(ch));
}

std::string breakdown_chart(const tuner::TuneResult& r) {
  BarChart ch;
  ch.title = "Step-time breakdown of the top picks";
  ch.value_label = "seconds per optimizer step";
  ch.segments = {"compute (k x forward+backward)", "exposed communication", "optimizer"};
  ch.colors = {"#0072B2", "#D55E00", "#009E73"};
  bool bubble = false;  // a pipeline pick: its idle time is a segment of its own
  for (std::size_t i = 0; i < r.picks.size() && i < 8; ++i)
    bubble = bubble || r.search.candidates[r.picks[i].candidate].prediction.time.bubble > 0;
  if (bubble) {
    ch.segments.push_back("pipeline bubble");
    ch.colors.push_back("#999999");
  }
  for (std::size_t i = 0; i < r.picks.size() && i < 8; ++i) {
    const auto& c = r.search.candidates[r.picks[i].candidate];
    ch.categories.push_back(fmt::format("#{} {}", r.picks[i].rank, tuner::short_config(c.config())));
    const auto& t = c.prediction.time;
    ch.values.push_back({t.compute, t.comm_exposed, t.optimizer});
    if (bubble) ch.values.back().push_back(t.bubble);
  }
  ch.format = axis_seconds;
  return figure(ch.title, "", bar_chart(ch));
}

// A pipeline pick: each stage's peak memory by term, against the cap and the limit.
std::string stage_memory_chart(const tuner::TuneResult& r) {
  const auto& best = r.best().prediction;
  const auto& l = r.search.limits;
  const auto [unit, unit_name] = memory_axis_unit(l);
  BarChart ch;
  ch.title = fmt::format("Peak memory per pipeline stage of the pick ({})", to_string(best.config.layout));
  ch.value_label = unit_name;
  ch.segments = {"weights", "gradients + optimizer state", "activations (microbatches in flight)", "buffers + allocator"};
  ch.colors = {"#0072B2", "#009E73", "#D55E00", "#999999"};
  for (const auto& st : best.parallel.stages) {
    const auto& m = st.memory;
    ch.categories.push_back(fmt::format("stage {}{}: {} in flight", st.rank, st.embedding ? "e" : st.head ? "h" : "",
                                        st.in_flight));
    ch.values.push_back({double(m.weights + m.gathered) / unit, double(m.gradients + m.optimizer_state) / unit,
                         double(m.activations) / unit, double(m.comm_buffers + m.allocator_reserve) / unit});
  }
  ch.lines.push_back({double(l.cap) / unit, fmt::format("cap {}", format_bytes(l.cap)), kLimitColor, false});
  ch.lines.push_back({double(l.limit) / unit, fmt::format("limit {}", format_bytes(l.limit)), kLimitColor, true});
  ch.format = [](double v) { return fmt::format("{:g}", v); };
  return figure(ch.title,
                fmt::format("Stage {} peaks (e: the embedding's stage, h: the head's; {} layers per stage at most). Under "
                            "1F1B stage r holds min(pp - r, m) microbatches' activations, the first the most; the last "
                            "holds the logits.",
                            best.parallel.peak_stage,
                            std::max_element(best.parallel.stages.begin(), best.parallel.stages.end(),
                                             [](const auto& a, const auto& b) { return a.layers < b.layers; })
                                ->layers),
                bar_chart(ch));
}

// A pipeline pick: the bubble at each microbatch count the search priced for the same layout,
// plan and world size (micro_batch x m fixed by the global batch).
std::string bubble_chart(const tuner::TuneResult& r) {
  const auto& best = r.best().config();
  LineChart ch;
  ch.title = fmt::format("Pipeline bubble vs microbatches per step ({})", to_string(best.layout));
  ch.x_label = "microbatches per step m (accum_steps)";
  ch.y_label = "bubble, % of the schedule";
  ch.log2_x = true;
  ChartSeries s;
  s.name = fmt::format("{} at global_batch {}", short_string(best.layout), best.global_batch());
  s.color = "#0072B2";
  std::map<Count, double> by_m;
  for (const auto& c : r.search.candidates) {
    const auto& k = c.config();
    if (k.layout != best.layout || k.world_size != best.world_size || k.strategy != best.strategy ||
        k.sharding.sharding != best.sharding.sharding || k.precision != best.precision ||
        k.checkpointing != best.checkpointing || k.global_batch() != best.global_batch())
      continue;
    by_m[k.accum_steps] = 100 * c.prediction.parallel.bubble_fraction;
  }
  for (const auto& [m, b] : by_m) s.points.push_back({double(m), b});
  ch.series.push_back(s);
  ch.marker = ChartMarker{{double(best.accum_steps), 100 * r.best().prediction.parallel.bubble_fraction},
                          fmt::format("pick: m = {}", best.accum_steps)};
  ch.x_format = [](double v) { return fmt::format("{:g}", v); };
  ch.y_format = [](double v) { return fmt::format("{:g}", v); };
  return figure(ch.title,
                "More microbatches shrink the bubble ((pp - 1) / (m + pp - 1) for balanced 1F1B stages) but each "
                "is a smaller micro_batch: smaller GEMMs. Larger m the search did not price did not fit or was pruned.",
                line_chart(ch));
}

std::string strategy_chart(const tuner::TuneResult& r) {
  if (r.strategy_prices.empty())
    return figure("every-step vs overlap", "",
                  "<p>Every feasible config runs at world_size 1: there is no gradient synchronisation to price.</p>");
  BarChart ch;
  ch.title = "every-step vs overlap vs fused: seconds per optimizer step";
  ch.value_label = "seconds per optimizer step";
  ch.stacked = false;
  ch.segments = {"overlap (no_sync on k-1 micro-steps)", "fused (one allreduce after k)", "every-step (no no_sync)"};
  ch.colors = {"#009E73", "#0072B2", "#D55E00"};
  std::string notes;
  for (const auto& ps : r.strategy_prices) {
    const auto& c = ps.config;
    ch.categories.push_back(fmt::format("b={} k={} p={}{}", c.micro_batch, c.accum_steps, c.world_size,
                                        c.sharding.sharding == Sharding::none ? "" : " " + to_string(c.sharding)));
    ch.values.push_back({ps.price.overlap_step, ps.price.fused_step, ps.price.every_step_step});
  }
  const auto& first = r.strategy_prices.front();
  ch.format = axis_seconds;
  return figure(ch.title,
                fmt::format("For b={} k={} p={}: {}", first.config.micro_batch, first.config.accum_steps,
                            first.config.world_size, first.price.text),
                bar_chart(ch));
}

// Peak memory per rank by term for the top picks and each other plan's best (or smallest) config.
std::string memory_terms_chart(const tuner::TuneResult& r) {
  const auto& l = r.search.limits;
  const auto [unit, unit_name] = memory_axis_unit(l);
  BarChart ch;
  ch.title = "Peak memory per rank by term";
  ch.value_label = fmt::format("{} per rank (limit {})", unit_name, format_bytes(l.limit));
  ch.segments = {"weights", "gradients", "optimizer state + master", "gathered parameters", "comm buffers",
                 "activations"};
  ch.colors = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"};
  auto add = [&](const std::string& label, const model::Prediction& p) {
    const auto& m = p.memory;
    ch.categories.push_back(label);
    ch.values.push_back({double(m.weights) / unit, double(m.gradients) / unit, double(m.optimizer_state) / unit,
                         double(m.gathered) / unit, double(m.comm_buffers) / unit, double(m.activations) / unit});
  };
  for (std::size_t i = 0; i < r.picks.size() && i < 3; ++i) {
    const auto& c = r.search.candidates[r.picks[i].candidate];
    add(fmt::format("#{} {}", r.picks[i].rank, tuner::short_config(c.config())), c.prediction);
  }
  for (const auto& a : r.plan_alternatives) {
    if (a.best) {
      const auto& c = r.search.candidates[*a.best];
      add(fmt::format("{}: b={} k={} p={}", a.value, c.config().micro_batch, c.config().accum_steps, c.config().world_size),
          c.prediction);
    } else {
      for (const auto& c : r.search.candidates)
        if (c.prediction.memory.peak == a.min_peak && c.config().global_batch() == r.best().config().global_batch()) {
          add(fmt::format("{} (no fit): b={} k={} p={}", a.value, c.config().micro_batch, c.config().accum_steps,
                          c.config().world_size),
              c.prediction);
          break;
        }
    }
  }
  ch.lines.push_back(
      {double(l.limit) / unit, fmt::format("limit {} (cap minus margin)", format_bytes(l.limit)), kLimitColor, true});
  ch.format = [](double v) { return fmt::format("{:.3g}", v); };
  return figure(ch.title,
                fmt::format("Each bar sums to the predicted peak; the limit is {} (cap {} minus the margin).",
                            format_bytes(l.limit), format_bytes(l.cap)),
                bar_chart(ch));
}

// The sync choices of the best pick's setting under each sharding: exposed communication per step
// against peak memory (no_sync keeps unsharded gradients; every-step reduces them each micro-step).
std::string sync_choice_chart(const tuner::TuneResult& r) {
  const auto& l = r.search.limits;
  const model::Config& best = r.best().config();
  const auto [unit, unit_name] = memory_axis_unit(l);
  LineChart ch;
  ch.title = "Sync choices: exposed communication vs peak memory";
  ch.x_label = "exposed communication per step (s)";
  ch.y_label = fmt::format("peak memory per rank ({})", unit_name);
  ch.y_from_zero = true;
  std::size_t ci = 0;
  for (const auto& sh : l.shardings) {
    ChartSeries ser;
    ser.name = to_string(sh);
    ser.color = chart_color(ci++);
    std::vector<std::pair<double, double>> pts;
    for (const auto& c : r.search.candidates) {
      const auto& cfg = c.config();
      if (cfg.sharding.sharding != sh.sharding || cfg.micro_batch != best.micro_batch ||
          cfg.accum_steps != best.accum_steps || cfg.world_size != best.world_size || cfg.precision != best.precision ||
          cfg.checkpointing != best.checkpointing)
        continue;
      pts.push_back({c.prediction.time.comm_exposed, double(c.prediction.memory.peak) / unit});
    }
    std::sort(pts.begin(), pts.end());
    for (const auto& [x, y] : pts) ser.points.push_back({x, y});
    if (!ser.points.empty()) ch.series.push_back(ser);
  }
  if (ch.series.empty()) return "";
  ch.hlines.push_back(
      {double(l.limit) / unit, fmt::format("limit {} (cap minus margin)", format_bytes(l.limit)), kLimitColor, true});
  fit_memory_axis(ch, double(l.cap) / unit, double(l.limit) / unit);
  ch.x_format = [](double v) { return fmt::format("{:.3g}", v); };
  ch.y_format = [](double v) { return fmt::format("{:g}", v); };
  return figure(ch.title,
                fmt::format("micro_batch {}, accum_steps {}, world_size {}: each line is a sharding, its points the "
                            "sync choices (overlap / fused keep unsharded gradients across the window; every-step "
                            "reduces them on each micro-step). {}",
                            best.micro_batch, best.accum_steps, best.world_size, r.picks.front().every_step.text),
                line_chart(ch));
}

std::string pareto_chart(const tuner::TuneResult& r) {
  LineChart ch;
  ch.title = "Best throughput vs world_size (Pareto front)";
  ch.x_label = "world_size (p)";
  ch.y_label = "samples/s";
  const auto& ws = r.search.limits.world_sizes;
  ch.log2_x = ws.back() >= 8 * ws.front() && ws.size() > 2;
  ch.integer_x = true;  // world sizes are counts
  ChartSeries front, dominated, ideal;
  front.name = "Pareto front (best at each world_size)";
  front.color = chart_color(0);
  dominated.name = "dominated: no gain over fewer ranks";
  dominated.color = "#7f7f7f";
  dominated.hollow = true;
  ideal.name = "linear scaling from the first point";
  ideal.color = "#999999";
  ideal.dashed = true;
  const tuner::ParetoPoint* base = nullptr;
  for (const auto& pt : r.pareto) {
    if (!pt.best) continue;
    if (!base) base = &pt;
    (pt.on_front ? front : dominated).points.push_back({double(pt.world_size), pt.throughput});
    ideal.points.push_back(
        {double(pt.world_size), base->throughput * double(pt.world_size) / double(base->world_size)});
  }
  ch.series.push_back(ideal);
  ch.series.push_back(front);
  if (!dominated.points.empty()) ch.series.push_back(dominated);
  ch.y_format = [](double v) { return fmt::format("{:g}", v); };
  ch.x_format = [](double v) { return fmt::format("{:g}", v); };
  std::string table = std::string("<table class=\"pareto\"><tr><th>world_size</th><th>b</th><th>k</th>") +
                      kPlanHeaders +
                      "<th>samples/s</th><th>marginal samples/s per added rank</th><th>marginal "
                      "efficiency</th><th class=\"t\">verdict</th></tr>";
  std::vector<Count> undivided;  // world sizes that divide no target global batch: one line, not a row each
  for (const auto& pt : r.pareto) {
    if (pt.evaluated == 0) {
      undivided.push_back(pt.world_size);
      continue;
    }
    const model::Config* c = pt.best ? &r.search.candidates[*pt.best].config() : nullptr;
    table += fmt::format(
        "<tr{}><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>",
        c ? "" : " class=\"infeasible\"", pt.world_size, c ? std::to_string(c->micro_batch) : "-",
        c ? std::to_string(c->accum_steps) : "-",
        c ? plan_cells(*c) : "<td class=\"t\">-</td><td class=\"t\">-</td><td class=\"t\">-</td><td class=\"t\">-</td>",
        c ? fmt_rate(pt.throughput) : "-",
        pt.on_front && pt.previous_world_size ? fmt_rate(pt.marginal_per_device) : "",
        pt.on_front && pt.previous_world_size ? fmt::format("{:.0f}%", pt.marginal_efficiency * 100) : "",
        xml_escape(pt.verdict));
  }
  table += "</table>";
  if (!undivided.empty()) {
    const auto& q = r.request;
    table += fmt::format("<p class=\"undivided\">{} world size{} not listed: {} {} ({}).</p>", undivided.size(),
                         undivided.size() == 1 ? "" : "s",
                         undivided.size() == 1 ? "it does not divide" : "they do not divide",
                         q.global_batch_min == q.global_batch_max
                             ? fmt::format("global_batch {}", q.global_batch_min)
                             : fmt::format("any global_batch in {}-{}", q.global_batch_min, q.global_batch_max),
                         xml_escape(world_sizes_text(undivided)));
  }
  return figure(
             ch.title,
             fmt::format("Marginal efficiency = added samples/s per added rank / samples/s per rank before; >= {:.0f}% "
                         "is called worth it.",
                         tuner::kWorthItEfficiency * 100),
             line_chart(ch)) +
         table;
}

std::string guidance_section(const tuner::TuneResult& r) {
  std::string o = "<dl class=\"kv\">";
  o += fmt::format("<dt>learning rate</dt><dd>{}</dd>", xml_escape(r.lr.text));
  o += fmt::format("<dt>critical batch</dt><dd>{}</dd>", xml_escape(r.critical.text));
  o += "<dt>formulas</dt><dd>linear: lr = lr_ref &#215; B/B_ref (SGD, Goyal et al. 2017); square-root: lr = lr_ref "
       "&#215; &#8730;(B/B_ref) (Adam-type); steps to a target S(B) = S_min (1 + B_noise/B), samples E(B) = E_min (1 + "
       "B/B_noise) (McCandlish et al. 2018)</dd>";
  o += "</dl>";
  return section("guidance", "Learning rate and critical batch", o);
}

std::string table_section(const tuner::TuneResult& r) {
  const auto& cs = r.search.candidates;
  std::vector<std::size_t> order(r.search.ranking.begin(), r.search.ranking.end());
  for (std::size_t i = 0; i < cs.size() && order.size() < kHtmlMaxTableRows; ++i)
    if (cs[i].rank == 0) order.push_back(i);
  if (order.size() > kHtmlMaxTableRows) order.resize(kHtmlMaxTableRows);
  std::string o = fmt::format("<p>{} of {} evaluated configs shown (ranked first); result.csv has all of them.</p>",
                              order.size(), cs.size());
  o += std::string(
           "<div class=\"scroll\"><table class=\"configs\"><thead><tr><th>rank</th><th>b</th><th>k</th>"
           "<th>p</th><th>B</th>") +
       kPlanHeaders +
       "<th>step time</th><th>samples/s</th><th>compute</th><th>comm exposed</th><th>peak memory</th><th>headroom</th>"
       "<th class=\"t\" title=\"whole-model passes of each kind per optimizer step; each pass is issued in pieces (DDP "
       "buckets, wrapped units): the calls are in the cell's tooltip and result.csv\">collectives per step</th><th "
       "class=\"t\">feasible / reason</th></tr></thead>"
       "<tbody>";
  for (std::size_t i : order) {
    const Row row = make_row(r, i);
    const char* cls = row.rank == 1 ? " class=\"best\"" : (!row.feasible ? " class=\"infeasible\"" : "");
    std::string headroom = row.headroom_bytes >= 0 ? format_bytes(Bytes(row.headroom_bytes))
                                                   : "-" + format_bytes(Bytes(-row.headroom_bytes));
    const auto& cfg = cs[i].config();
    o += fmt::format(
        "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td class=\"kinds\" title=\"{} calls per step\">{}</td><td class=\"wrap\">{}</td></tr>",
        cls, row.rank > 0 ? std::to_string(row.rank) : "", row.micro_batch, row.accum_steps, row.world_size,
        row.global_batch, plan_cells(cfg), format_seconds(row.step_time_s), fmt_rate(row.throughput_samples_s),
        format_seconds(row.compute_s), format_seconds(row.comm_exposed_s), format_bytes(row.peak_memory_bytes),
        headroom, row.collectives_per_step, collectives_cell(cfg),
        row.feasible && row.reason.empty() ? "yes" : xml_escape(row.reason));
  }
  o += "</tbody></table></div>";
  return section("table", "All evaluated configs", o);
}

std::string inputs_section(const tuner::TuneResult& r, const ReportContext& ctx) {
  const auto& info = r.info;
  const auto& l = r.search.limits;
  std::string o = "<dl class=\"kv\">";
  auto kv = [&](const std::string& k, const std::string& v) {
    o += fmt::format("<dt>{}</dt><dd>{}</dd>", xml_escape(k), xml_escape(v));
  };
  kv("command", ctx.command);
  kv("model source", info.source);
  if (ctx.source.contains("path")) kv("source file", ctx.source["path"].get<std::string>());
  kv("workload", info.model_name.empty() || info.model_name == info.workload_name
                     ? fmt::format("{} (hash {})", info.workload_name, info.workload_hash)
                     : fmt::format("{} {} (hash {})", info.workload_name, info.model_name, info.workload_hash));
  kv("device", fmt::format("{} {}, {}", info.device_kind, info.device_name, format_bytes(info.device_memory)));
  if (info.device_kind == "cpu")
    kv("CPU ranks", fmt::format("each rank stands for one GPU; {} thread{} per rank", info.threads_per_rank,
                                info.threads_per_rank == 1 ? "" : "s"));
  kv("memory", fmt::format("cap {} ({}), limit {} after the {:g}% margin", format_bytes(l.cap),
                           r.request.memory_cap.to_string(), format_bytes(l.limit), r.request.margin * 100));
  kv("micro_batch range", info.measured_max_micro_batch > 0
                              ? fmt::format("measured up to {}{}", info.measured_max_micro_batch,
                                            r.request.allow_extrapolation ? " (extrapolation allowed)" : "")
                              : std::string("no measured range (analytic model)"));
  kv("world sizes", world_sizes_text(l.world_sizes));
  kv("noise scale B_noise", l.noise_scale ? fmt::format("{:.0f} samples{}", *l.noise_scale,
                                                       l.noise_scale_source.empty() ? "" : " (" + l.noise_scale_source + ")")
                                          : std::string("unknown"));
  for (const auto& n : r.notes) kv("note", n);
  o += "</dl>";
  return section("inputs", "Inputs, model and notes", o);
}

}  // namespace

std::string print_html(const tuner::TuneResult& r, const ReportContext& ctx) {
  std::string o;
  o.reserve(200000);
  o += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  o += fmt::format("<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n", kHtmlCsp);
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  o += fmt::format("<title>gaccum-tune: {}</title>\n<style>{}</style></head>\n<body><main>\n",
                   xml_escape(r.info.title_name()), kCss);
  o += fmt::format("<h1>gaccum-tune: {}</h1><p class=\"headline\">{}</p>\n", xml_escape(r.info.title_name()),
                   xml_escape(headline(r)));
  o += summary_section(r, ctx);
  o += why_section(r);
  std::string charts = "<div class=\"grid2\">";
  charts += throughput_chart(r);
  charts += memory_chart(r);
  charts += breakdown_chart(r);
  if (r.best().config().layout.pp > 1) {
    charts += stage_memory_chart(r);
    charts += bubble_chart(r);
  }
  charts += strategy_chart(r);
  if (plans_searched(r)) {
    charts += memory_terms_chart(r);
    charts += sync_choice_chart(r);
  }
  charts += "</div>";
  o += section("charts", "Charts", charts);
  o += section("pareto", "Is another rank worth it?", pareto_chart(r));
  o += guidance_section(r);
  o += table_section(r);
  o += inputs_section(r, ctx);
  o += fmt::format(
      "<footer>gaccum-tune {} &#183; generated {} &#183; predictions from the cost model; validate a pick "
      "with a real run (gaccum-tune validate).</footer>\n",
      xml_escape(ctx.tool_version), xml_escape(ctx.generated_utc));
  o += "</main></body></html>\n";
  return o;
}

}  // namespace gaccum::reports
