// Unit tests for reports/: golden CSV and JSON on the closed-form fake model, the row schema,
// CSV quoting, Markdown, terminal, the HTML page's self-containment, and non-clobbering output.
// Golden files: tests/data/tune-golden.csv and tests/data/tune-golden.json. After an intended
// change, regenerate them with
//   GACCUM_UPDATE_GOLDEN=1 build/tests/unit_reports "golden*"
// and review the diff.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "model/cluster.hpp"
#include "model/spec_model.hpp"
#include "reports/csv_printer.hpp"
#include "reports/html_printer.hpp"
#include "reports/json_printer.hpp"
#include "reports/markdown_printer.hpp"
#include "reports/output_dir.hpp"
#include "reports/row.hpp"
#include "reports/summary.hpp"
#include "reports/svg_chart.hpp"
#include "reports/terminal_printer.hpp"
#include "tests/unit/fake_cost_model.hpp"

using namespace gaccum;
using namespace gaccum::reports;
using gaccum::test::FakeCostModel;
using gaccum::test::FakeParams;

namespace {

tuner::TuneResult golden_result() {
  FakeParams p;
  p.tokens_per_sample = 100;
  static FakeCostModel m(p, 300.0);
  tuner::TuneRequest r;
  r.global_batch_min = r.global_batch_max = 64;
  r.world_sizes = {1, 2};
  r.memory_cap = MemoryCap{Bytes(445'000'000), std::nullopt};
  r.margin = 0;
  r.max_accum_steps = 16;
  r.lr_reference = tuner::LrReference{3e-4, 8};
  r.optimizer = Optimizer::adam;
  r.dataset_size = 100000;
  r.cost_per_device_hour = 2.5;
  r.top = 3;
  return tuner::tune(m, r);
}

ReportContext golden_context() {
  ReportContext c;
  c.tool_version = "0.0.0-test";
  c.generated_utc = "2026-01-01T00:00:00Z";
  c.command = "gaccum-tune tune --global-batch 64 (fake model)";
  c.source = {{"kind", "fake"}, {"path", "none"}};
  return c;
}

std::string data_path(const std::string& name) {
  return std::string(GACCUM_TEST_DATA_DIR) + "/" + name;
}

void check_golden(const std::string& name, const std::string& got) {
  const auto path = data_path(name);
  if (const char* u = std::getenv("GACCUM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    write_file_atomic(path, got);
    WARN("updated " << path);
    return;
  }
  const std::string want = read_file(path, "golden");
  if (got != want) {
    // Show the first differing line.
    std::istringstream a(got), b(want);
    std::string la, lb;
    int line = 0;
    while (true) {
      ++line;
      bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
      if (ea || eb || la != lb) {
        INFO(name << " differs at line " << line << "\n got:  " << la << "\n want: " << lb
                  << "\n(regenerate: GACCUM_UPDATE_GOLDEN=1 build/tests/unit_reports \"golden*\")");
        CHECK(got == want);
        return;
      }
    }
  }
  SUCCEED();
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("gaccum-reports-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("golden CSV", "[reports][golden]") {
  auto r = golden_result();
  check_golden("tune-golden.csv", print_csv(make_rows(r)));
}

TEST_CASE("golden JSON", "[reports][golden]") {
  auto r = golden_result();
  check_golden("tune-golden.json", print_json(r, golden_context()));
}

TEST_CASE("one row schema: stable column order with units in the names", "[reports]") {
  std::vector<std::string> names;
  for (const auto& c : columns()) names.push_back(c.name);
  const std::vector<std::string> head = {"micro_batch",
                                         "accum_steps",
                                         "world_size",
                                         "global_batch",
                                         "strategy",
                                         "sharding",
                                         "precision",
                                         "checkpointing",
                                         "step_time_s",
                                         "step_time_lo_s",
                                         "step_time_hi_s",
                                         "compute_s",
                                         "comm_exposed_s",
                                         "comm_total_s",
                                         "optimizer_s",
                                         "throughput_samples_s",
                                         "throughput_tokens_s",
                                         "peak_memory_bytes",
                                         "headroom_bytes",
                                         "collectives_per_step",
                                         "feasible",
                                         "reason",
                                         "rank"};
  REQUIRE(names.size() >= head.size());
  CHECK(std::vector<std::string>(names.begin(), names.begin() + long(head.size())) == head);

  auto r = golden_result();
  auto rows = make_rows(r);
  CHECK(rows.size() == r.search.candidates.size());
  auto csv = print_csv(rows);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == long(rows.size() + 1));
  // The best row: b=32 k=1 p=2 overlap: 0.042 + (0.03 - 0.021) + 0.005 = 0.056 s, 64/0.056 samples/s.
  const auto best = ranked_rows(r, 1).front();
  CHECK(best.rank == 1);
  CHECK(best.micro_batch == 32);
  CHECK(best.world_size == 2);
  CHECK(best.step_time_s == Approx(0.056));
  CHECK(best.throughput_samples_s == Approx(64 / 0.056));
  CHECK(best.throughput_tokens_s == Approx(100 * 64 / 0.056));
  CHECK(best.gpu_s_per_sample == Approx(2 * 0.056 / 64));
  REQUIRE(best.cost_per_sample);
  CHECK(*best.cost_per_sample == Approx(2 * 0.056 / 64 * 2.5 / 3600));
  REQUIRE(best.time_to_target_rel_s);
  CHECK(*best.time_to_target_rel_s == Approx((1 + 300.0 / 64) * 0.056));
  CHECK(best.headroom_bytes == 0);
}

TEST_CASE("CSV quoting follows RFC 4180", "[reports]") {
  Cell c;
  c.kind = Cell::Kind::text;
  c.s = "a, \"b\"";
  CHECK(csv_field(c) == "\"a, \"\"b\"\"\"");
  c.s = "plain";
  CHECK(csv_field(c) == "plain");
  Cell e;
  CHECK(csv_field(e).empty());
  Cell r;
  r.kind = Cell::Kind::real;
  r.d = 1.0 / 3;
  CHECK(csv_field(r) == "0.333333");
}

TEST_CASE("Markdown and terminal printers", "[reports]") {
  auto r = golden_result();
  auto md = print_markdown(r, golden_context());
  CHECK_THAT(md, Catch::StartsWith("# gaccum-tune: fake-workload"));
  CHECK_THAT(md, Catch::Contains("| rank | micro_batch |") && Catch::Contains("| ---: |"));
  auto table = print_markdown_table(ranked_rows(r, 2), {"rank", "strategy"});
  CHECK(table == "| rank | strategy |\n| ---: | --- |\n| 1 | overlap |\n| 2 | overlap |\n");
  CHECK_THROWS_AS(print_markdown_table({}, {"nope"}), InputError);

  auto term = print_terminal(r, golden_context());
  CHECK_THAT(term, Catch::Contains("Recommendation: Use micro_batch 32 with accum_steps 1 on 2 ranks (overlap)"));
  CHECK_THAT(term, Catch::Contains("Why #1:") && Catch::Contains("Learning rate:") &&
                       Catch::Contains("Critical batch:") && Catch::Contains("stands for one GPU"));
  // No line longer than ~110 columns.
  std::istringstream in(term);
  std::string line;
  std::size_t longest = 0;
  while (std::getline(in, line)) longest = std::max(longest, line.size());
  CHECK(longest <= 112);
}

TEST_CASE("HTML report is self-contained and complete", "[reports][html]") {
  auto r = golden_result();
  auto html = print_html(r, golden_context());
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  CHECK_THAT(html, Catch::Contains("Content-Security-Policy") &&
                       Catch::Contains("default-src 'none'; style-src 'unsafe-inline'; img-src data:"));
  CHECK_THAT(html, !Catch::Contains("<script") && !Catch::Contains("http://") && !Catch::Contains("https://") &&
                       !Catch::Contains("@import") && !Catch::Contains("url(") && !Catch::Contains("@font-face"));
  CHECK_THAT(html, Catch::Contains("@media print"));
  for (const char* id : {"recommendation", "why", "charts", "pareto", "guidance", "table", "inputs"})
    CHECK_THAT(html, Catch::Contains(std::string("<section id=\"") + id + "\""));
  for (const char* title : {"Throughput vs accum_steps", "Peak memory per rank vs micro_batch", "Step-time breakdown",
                            "every-step vs overlap", "Pareto front"})
    CHECK_THAT(html, Catch::Contains(title));
  // Balanced SVG elements, and the cap line is drawn.
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = html.find(needle); pos != std::string::npos; pos = html.find(needle, pos + 1)) ++n;
    return n;
  };
  CHECK(count("<svg ") == 5);
  CHECK(count("</svg>") == 5);
  CHECK_THAT(html, Catch::Contains("cap 424 MiB"));
  CHECK(count("<tr class=\"best\">") == 1);
  // Text from data is escaped.
  CHECK(xml_escape("<a & 'b'>") == "&lt;a &amp; &#39;b&#39;&gt;");
}

TEST_CASE("nice ticks", "[reports][svg]") {
  CHECK(nice_ticks(0, 10, 5) == std::vector<double>{0, 2, 4, 6, 8, 10});
  auto f = nice_ticks(0, 0.9, 5);  // step 0.2, covering 0.9 with 1.0
  REQUIRE(f.size() == 6);
  CHECK(f[3] == Approx(0.6));
  CHECK(f.back() == Approx(1.0));
  CHECK(nice_ticks(3, 17, 5) == std::vector<double>{2, 4, 6, 8, 10, 12, 14, 16, 18});
  auto t = nice_ticks(0, 2169.5, 5);
  CHECK(t.front() == 0);
  CHECK(t[1] == 500);
}

TEST_CASE("output directory: atomic writes, no silent clobbering", "[reports][output]") {
  auto dir = fresh_dir("out");
  std::vector<OutputFile> files = {{"result.csv", "a\n"}, {"result.json", "{}\n"}};
  auto written = write_outputs(dir, files, false);
  CHECK(written.size() == 2);
  CHECK(read_file(dir / "result.csv", "t") == "a\n");
  // A second run without --force names the files and the flag.
  files[0].content = "b\n";
  CHECK_THROWS_WITH(write_outputs(dir, files, false),
                    Catch::Contains("--force") && Catch::Contains("result.csv") && Catch::Contains("--out"));
  CHECK(read_file(dir / "result.csv", "t") == "a\n");
  write_outputs(dir, files, true);
  CHECK(read_file(dir / "result.csv", "t") == "b\n");
  // Other files in the directory do not block a run.
  auto other = fresh_dir("other");
  std::filesystem::create_directories(other);
  write_file_atomic(other / "notes.txt", "x");
  CHECK_NOTHROW(write_outputs(other, files, false));
  // A file where the directory should be.
  auto file = fresh_dir("file");
  write_file_atomic(file, "x");
  CHECK_THROWS_WITH(write_outputs(file, files, true), Catch::Contains("not a directory"));
  // No temporary files are left behind.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(other);
  std::filesystem::remove(file);
}

TEST_CASE("SVG: whole-number ticks for counts, markers as drawn in the legend, fixed pixel width", "[reports][svg]") {
  // Tick labels of the x axis: <text class="tick" ... text-anchor="middle">LABEL</text>.
  auto x_ticks = [](const std::string& svg) {
    std::vector<std::string> out;
    const std::string open = "text-anchor=\"middle\">";
    for (auto pos = svg.find("<text class=\"tick\""); pos != std::string::npos;
         pos = svg.find("<text class=\"tick\"", pos + 1)) {
      const auto a = svg.find('>', pos), b = svg.find("</text>", pos);
      if (svg.compare(a - open.size() + 1, open.size(), open) == 0) out.push_back(svg.substr(a + 1, b - a - 1));
    }
    return out;
  };
  LineChart c;
  c.title = "t";
  c.x_label = "world_size (p)";
  c.y_label = "samples/s";
  c.series.push_back({"a", {{1, 10}, {2, 19}}, "#000"});
  const auto fractional = x_ticks(line_chart(c));
  CHECK(std::find(fractional.begin(), fractional.end(), "1.2") != fractional.end());  // why integer_x exists
  c.integer_x = true;
  const auto whole = x_ticks(line_chart(c));
  REQUIRE_FALSE(whole.empty());
  for (const auto& t : whole) CHECK(t.find('.') == std::string::npos);
  CHECK(std::find(whole.begin(), whole.end(), "1") != whole.end());
  CHECK(std::find(whole.begin(), whole.end(), "2") != whole.end());
  // One world size only: still whole numbers around it.
  c.series[0].points = {{4, 10}};
  for (const auto& t : x_ticks(line_chart(c))) CHECK(t.find('.') == std::string::npos);

  // A hollow series shows a hollow marker in its legend swatch; markers_from skips the join point.
  LineChart m;
  m.title = "m";
  ChartSeries measured{"measured", {{1, 1}, {2, 2}}, "#123456"};
  ChartSeries extra{"extrapolated", {{2, 2}, {4, 4}}, "#123456", true, true};
  extra.markers_from = 1;
  m.series = {measured, extra};
  const std::string svg = line_chart(m);
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = svg.find(needle); pos != std::string::npos; pos = svg.find(needle, pos + 1)) ++n;
    return n;
  };
  // Data markers: 2 filled + 1 hollow (x=2 is drawn once, filled); legend: 1 filled + 1 hollow.
  CHECK(count(R"(fill="#ffffff" stroke="#123456")") == 2);
  CHECK(count(R"(fill="#123456" stroke="#123456")") == 3);
  CHECK_THAT(svg, Catch::StartsWith("<svg class=\"chart\" width=\"600\" viewBox=\"0 0 600 330\""));
}

TEST_CASE("HTML: the title names the model, extrapolated points are in the legend, reasons wrap", "[reports][html]") {
  auto r = golden_result();
  r.info.model_name = "resnet18.pt";
  const auto html = print_html(r, golden_context());
  CHECK_THAT(html, Catch::Contains("<title>gaccum-tune: resnet18.pt</title>") &&
                       Catch::Contains("<h1>gaccum-tune: resnet18.pt</h1>"));
  CHECK_THAT(print_markdown(r, golden_context()), Catch::StartsWith("# gaccum-tune: resnet18.pt"));
  CHECK_THAT(headline(r), Catch::StartsWith("resnet18.pt on "));
  // The reason column wraps (td.wrap: white-space normal), so the table needs no horizontal scroll.
  CHECK_THAT(html, Catch::Contains("td.wrap{white-space:normal"));
  CHECK_THAT(html, Catch::Contains("</td><td class=\"wrap\">"));
  // Consistent chart text: each chart keeps its own pixel width (no stretching to the column).
  CHECK_THAT(html, Catch::Contains("svg.chart{max-width:100%;height:auto"));
  CHECK_THAT(html, !Catch::Contains("svg.chart{width:100%"));
  ReportContext ctx = golden_context();
  ctx.deepspeed_config = "out/deepspeed_config.json";
  CHECK_THAT(print_html(r, ctx), Catch::Contains("DeepSpeed config completed with the pick: out/deepspeed_config.json"));
  CHECK_THAT(print_terminal(r, ctx), Catch::Contains("DeepSpeed config completed with the pick: out/deepspeed_config.json"));
}

namespace {

std::size_t count_of(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++n;
  return n;
}

// The <svg>...</svg> whose <title> is `title`.
std::string svg_titled(const std::string& html, const std::string& title) {
  const auto t = html.find("<title>" + title);
  if (t == std::string::npos) return "";
  const auto a = html.rfind("<svg ", t), b = html.find("</svg>", t);
  return html.substr(a, b + 6 - a);
}

// Numbers of the attribute `name` of every element that starts with `open` (e.g. "<polyline").
std::vector<double> attribute_values(const std::string& svg, const std::string& open, const std::string& name) {
  std::vector<double> out;
  for (auto pos = svg.find(open); pos != std::string::npos; pos = svg.find(open, pos + 1)) {
    const auto end = svg.find('>', pos);
    const auto a = svg.find(" " + name + "=\"", pos);
    if (a < end) out.push_back(std::stod(svg.substr(a + name.size() + 3)));
  }
  return out;
}

}  // namespace

TEST_CASE("SVG: a fixed y range clips to the plot's edge and marks the points beyond it", "[reports][svg]") {
  LineChart c;
  c.title = "clip";
  c.log2_x = true;
  c.series.push_back({"a", {{1, 10}, {2, 50}, {4, 200}, {8, 400}}, "#123456"});
  c.hlines.push_back({80, "cap", "#8b0a2e", false});
  c.y_lo = 0;
  c.y_hi = 100;
  const std::string svg = line_chart(c);
  // Plot box: y 14 .. 264 (330 - 14 - 46 - 20 = 250 px high), the axis 0..100.
  CHECK_THAT(svg, Catch::Contains(R"(<rect class="plot" x="78.0" y="14.0" width="506.0" height="250.0"/>)"));
  CHECK(count_of(svg, "<circle class=\"pt\"") == 2);               // 10 and 50 drawn as they are
  CHECK(count_of(svg, "<polygon class=\"pt clipped\"") == 2);      // 200 and 400 on the top edge
  CHECK_THAT(svg, Catch::Contains("a: 4, 200 (above the axis)"));  // the value in the marker's title
  CHECK_THAT(svg, Catch::Contains("above 100: on the top edge"));  // and one legend entry says so
  // The line is cut where it leaves the range: from (1, 10) through (2, 50) to 100 between 2 and 4.
  const auto a = svg.find("<polyline class=\"series\""), b = svg.find("/>", a);
  const std::string line = svg.substr(a, b - a);
  CHECK(count_of(svg, "<polyline class=\"series\"") == 1);
  CHECK_THAT(line, Catch::Contains(R"(points="78.0,239.0 246.7,139.0 302.9,14.0 ")"));
  // The reference line comes before the data, thin and translucent.
  CHECK(svg.find("<line class=\"ref\"") < svg.find("<polyline class=\"series\""));
  CHECK_THAT(svg, Catch::Contains(R"(stroke="#8b0a2e" stroke-width="1.5" stroke-opacity="0.75")"));
  // Without the fixed range every point is on the axis.
  c.y_lo.reset();
  c.y_hi.reset();
  const std::string all = line_chart(c);
  CHECK(count_of(all, "clipped") == 0);
  CHECK(count_of(all, "<circle class=\"pt\"") == 4);
}

TEST_CASE("SVG: muted series share one legend entry, the plot keeps its height, long names are cut", "[reports][svg]") {
  LineChart c;
  c.title = "many";
  for (int i = 0; i < 40; ++i) {
    ChartSeries s{fmt::format("world_size {}", i + 2), {{1, double(i)}, {2, double(i + 1)}}, "#000000"};
    s.muted = i > 0;
    c.series.push_back(s);
  }
  c.muted_label = "39 other world sizes (grey)";
  const std::string svg = line_chart(c);
  CHECK(count_of(svg, "<g class=\"entry\">") == 2);
  CHECK_THAT(svg, Catch::Contains(">39 other world sizes (grey)</text>"));
  CHECK(count_of(svg, std::string("stroke=\"") + kMutedColor + "\" stroke-width=\"1.2\"") == 39);
  // Muted lines under the labelled one.
  CHECK(svg.rfind(std::string("<polyline class=\"series\" fill=\"none\" stroke=\"") + kMutedColor) <
        svg.find("<polyline class=\"series\" fill=\"none\" stroke=\"#000000\""));

  // 40 labelled entries: more legend rows make the SVG taller, the plot stays 250 px high.
  for (auto& s : c.series) s.muted = false;
  const std::string tall = line_chart(c);
  CHECK(count_of(tall, "<g class=\"entry\">") == 40);
  CHECK(attribute_values(tall, "<rect class=\"plot\"", "height") == std::vector<double>{250.0});
  const auto vb = tall.find("viewBox=\"0 0 600 ");
  REQUIRE(vb != std::string::npos);
  CHECK(std::stod(tall.substr(vb + 17)) > 400);

  // A name wider than the plot is cut with an ellipsis and keeps its full text in a <title>.
  LineChart one;
  one.title = "long";
  const std::string name(150, 'x');
  one.series.push_back({name, {{1, 1}, {2, 2}}, "#000000"});
  const std::string cut = line_chart(one);
  CHECK_THAT(cut, Catch::Contains("<g class=\"entry\"><title>" + name + "</title>"));
  CHECK_THAT(cut, Catch::Contains("x\u2026</text>"));
  CHECK_THAT(cut, !Catch::Contains(">" + name + "</text>"));
}

namespace {
// examples/specs/llama2-7b.json on one of examples/clusters/.
std::unique_ptr<model::CostModel> llama2_7b_on(const std::string& cluster_file) {
  const std::string src = GACCUM_SOURCE_DIR;
  return model::make_spec_model(model::load_spec(src + "/examples/specs/llama2-7b.json"),
                                model::load_cluster(src + "/examples/clusters/" + cluster_file), 0.4);
}
}  // namespace

// Partial recompute (tuner/explanation.cpp, model/recompute_mix.hpp): Llama 2 7B with every layer
// recomputed on 8 H100 at micro_batch 8; recomputing none does not fit. The peak of recomputing n
// of the 32 layers is none + n/32 (full - none), so the fewest that fit is
// n = ceil(32 (none - limit) / (none - full)), and the step is none + n/32 (full - none) too.
TEST_CASE("partial recompute: the fewest layers that fit, priced between the two plans, spelled per framework",
          "[reports][tuner][recompute]") {
  const auto m = llama2_7b_on("dgx-h100-1node.json");
  tuner::TuneRequest q;
  q.global_batch_min = q.global_batch_max = 64;
  q.world_sizes = {8};
  q.checkpointing = Checkpointing::full;
  auto r = tuner::tune(*m, q);
  const auto& best = r.best();
  REQUIRE(best.config().checkpointing == Checkpointing::full);
  auto none_cfg = best.config();
  none_cfg.checkpointing = Checkpointing::none;
  const auto none = m->predict(none_cfg);
  const double limit = double(r.search.limits.limit), full_peak = double(best.prediction.memory.peak);
  REQUIRE(double(none.memory.peak) > limit);
  const Count n = Count(std::ceil(32 * (double(none.memory.peak) - limit) / (double(none.memory.peak) - full_peak)));
  REQUIRE(n > 0);
  REQUIRE(n < 32);
  const auto& e = r.picks.front();
  CHECK_THAT(e.recompute_text, Catch::StartsWith(fmt::format("recompute: {} of the 32 layers of each model", n)));
  const double step = none.time.step_time + double(n) / 32 * (best.prediction.time.step_time - none.time.step_time);
  CHECK_THAT(e.recompute_text, Catch::Contains(fmt::format("({} per step instead of {})", format_seconds(step),
                                                           format_seconds(best.prediction.time.step_time))));
  CHECK_THAT(e.recompute_text, Catch::Contains(fmt::format("FSDP/FSDP2: checkpoint_wrapper on {} of the 32 blocks", n)));
  CHECK_THAT(print_terminal(r, golden_context()), Catch::Contains("- recompute: "));
  // Megatron-LM spells it with its block method, and check reads that file back.
  q.framework = Framework::megatron;
  q.sharding = ShardingChoice{Sharding::zero1, 0};
  r = tuner::tune(*m, q);
  if (r.best().config().checkpointing == Checkpointing::full && !r.picks.front().recompute_text.empty())
    CHECK_THAT(r.picks.front().recompute_text, Catch::Contains("--recompute-method block --recompute-num-layers"));
  // Recomputing none fits: nothing to say.
  q.framework.reset();
  q.sharding.reset();
  q.global_batch_min = q.global_batch_max = 8;
  q.checkpointing = Checkpointing::full;
  r = tuner::tune(*m, q);
  none_cfg = r.best().config();
  none_cfg.checkpointing = Checkpointing::none;
  if (m->predict(none_cfg).memory.peak <= r.search.limits.limit) CHECK(r.picks.front().recompute_text.empty());
}

TEST_CASE("HTML at 64 GPUs: capped legends, memory axis around the cap, plan columns, reasons", "[reports][html]") {
  const auto m = llama2_7b_on("h100-8node-ib400.json");
  tuner::TuneRequest q;
  q.global_batch_min = q.global_batch_max = 384;
  q.world_sizes = tuner::world_sizes_up_to(64);
  const auto r = tuner::tune(*m, q);
  REQUIRE(r.best().config().world_size == 64);
  const std::string html = print_html(r, golden_context());

  // Every chart's legend is a few entries: at most 5 labelled series + others + clipped + cap + limit.
  for (auto pos = html.find("<svg "); pos != std::string::npos; pos = html.find("<svg ", pos + 1)) {
    const std::string svg = html.substr(pos, html.find("</svg>", pos) - pos);
    INFO(svg.substr(0, 200));
    CHECK(count_of(svg, "<g class=\"entry\">") <= 9);
  }
  // The memory chart: the pick's world size first, the 59 others grey, the DDP curve of
  // world_size 1 (over 100 GiB) on the top edge of an axis that ends a little above the 79.6 GiB cap.
  const std::string mem = svg_titled(html, "Peak memory per rank vs micro_batch");
  REQUIRE_FALSE(mem.empty());
  CHECK(count_of(mem, "<g class=\"entry\">") <= 9);
  CHECK_THAT(mem, Catch::Contains("other world sizes (grey)</text>"));
  CHECK_THAT(mem, Catch::Contains("<text class=\"legend\" x=\"100.0\" y=\"320.0\">world_size 64</text>"));
  CHECK(count_of(mem, "<polygon class=\"pt clipped\"") > 0);
  double top_tick = 0;
  for (auto pos = mem.find("text-anchor=\"end\">"); pos != std::string::npos;
       pos = mem.find("text-anchor=\"end\">", pos + 1))
    top_tick = std::max(top_tick, std::stod(mem.substr(pos + 18)));
  CHECK(top_tick >= 79.6);
  CHECK(top_tick <= 1.3 * 79.6);
  // The limit lines share no colour with a series and lie under the data.
  CHECK(mem.find("<line class=\"ref\"") < mem.find("<polyline class=\"series\""));
  for (std::size_t i = 0; i < 8; ++i)
    CHECK_THAT(mem, !Catch::Contains("stroke=\"" + chart_color(i) + "\" stroke-width=\"1.5\" stroke-opacity"));

  // Plan columns in both tables; collectives named by kind (a zero3 row all-gathers, a DDP one allreduces).
  for (const char* th : {"<th class=\"t\">strategy</th><th class=\"t\">sharding</th><th class=\"t\">precision</th><th "
                         "class=\"t\">checkpointing</th>",
                         ">collectives per step</th>"})
    CHECK(count_of(html, th) >= (std::string(th).find("collectives") != std::string::npos ? 1u : 2u));
  CHECK_THAT(html, Catch::Contains("<td class=\"t\">overlap</td><td class=\"t\">zero3</td><td class=\"t\">bf16</td><td "
                                   "class=\"t\">none</td>"));
  CHECK_THAT(html, Catch::Contains("calls per step\">reduce-scatter 1<br>all-gather 4</td>"));  // zero3 overlap, k = 2
  CHECK_THAT(html, Catch::Contains("calls per step\">allreduce 1<br>reduce-scatter 1<br>all-gather 6</td>"));  // hsdp
  CHECK_THAT(html, Catch::Contains("<td class=\"t\">zero1</td>"));
  CHECK_THAT(html, Catch::Contains("<td class=\"t\">zero2</td>"));
  // World sizes: no bare "no feasible config"; the 52 that do not divide 384 are one line.
  CHECK_THAT(html, !Catch::Contains(">no feasible config<"));
  CHECK_THAT(html,
             Catch::Contains("52 world sizes not listed: they do not divide global_batch 384 (world_size 5, 7, 9"));
  CHECK_THAT(html,
             Catch::Contains("no feasible config: the closest, b=6 k=64 p=1 overlap bf16 ckpt=full: peak memory"));
}
