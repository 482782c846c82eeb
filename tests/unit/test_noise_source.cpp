// Unit tests for tuner/noise_source.hpp: validate's measured gradient noise scale, its record
// file (written by validate, read by tune and check), and the choice against the profile's.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "model/noise_scale.hpp"
#include "tuner/noise_source.hpp"

using namespace gaccum;
using namespace gaccum::tuner;
using nlohmann::json;

namespace {

// A validate run record (runner/rank_run.cpp "measured", runner/checks.cpp NoiseScale::to_json):
// E|G_b|^2 = |G|^2 + tr(Sigma)/b with |G|^2 = 2, tr(Sigma) = 400 -> B_simple = 200 samples.
json run(Count b, Count k, Count p, bool checks_pass = true, bool valid = true) {
  const double bs = double(b), bb = double(b * k * p);
  json ns{{"b_small", bs},      {"b_big", bb},           {"mean_sq_norm_small", 2 + 400 / bs},
          {"mean_sq_norm_big", 2 + 400 / bb}, {"n_small", 20},  {"n_big", 20},
          {"valid", valid},     {"b_simple", valid ? json(200.0) : json(nullptr)}};
  return json{{"config", {{"micro_batch", b}, {"accum_steps", k}, {"world_size", p}}},
              {"checks", json::array({{{"name", "gradient_equivalence"}, {"status", checks_pass ? "pass" : "fail"}}})},
              {"measured", {{"noise_scale", ns}}}};
}

}  // namespace

TEST_CASE("a validate run's noise scale is read with the model's two-size estimator", "[tuner][noise]") {
  const auto m = measurement_from_validation_run(run(4, 8, 2));
  REQUIRE(m);
  CHECK(m->b_small == 4);
  CHECK(m->b_big == 64);
  CHECK(m->n_small + m->n_big == 40);
  CHECK(m->origin == "validate -b 4 -k 8 -p 2");
  CHECK(m->b_simple() == Approx(200));
  CHECK(m->b_simple() == Approx(model::noise_scale_two_sizes(4, 2 + 100, 64, 2 + 400.0 / 64).b_simple));
  // Failed accumulation checks or an invalid estimate are not recorded.
  CHECK_FALSE(measurement_from_validation_run(run(4, 8, 2, /*checks_pass=*/false)));
  CHECK_FALSE(measurement_from_validation_run(run(4, 8, 2, true, /*valid=*/false)));
  CHECK_FALSE(measurement_from_validation_run(json{{"ok", false}, {"failure", "rank 1 died"}}));
}

TEST_CASE("the noise scale record round-trips and rejects another workload or a bad field", "[tuner][noise]") {
  auto ms = merge_measurement({}, *measurement_from_validation_run(run(4, 8, 2)));
  ms = merge_measurement(ms, *measurement_from_validation_run(run(2, 2, 2)));
  ms = merge_measurement(ms, *measurement_from_validation_run(run(4, 8, 2)));  // same sizes: replaced
  REQUIRE(ms.size() == 2);
  CHECK(ms.front().b_big == 64);  // strongest first (spread 16 over 4)
  const json doc = noise_record_json("abc123", ms);
  CHECK(doc.at("schema") == "gaccum-tune/noise-scale");
  const auto back = read_noise_record(doc, "noise-abc123.json", "abc123");
  REQUIRE(back.size() == 2);
  CHECK(back[0].b_simple() == Approx(200));
  CHECK(back[1].origin == "validate -b 2 -k 2 -p 2");
  CHECK_THROWS_WITH(read_noise_record(doc, "noise-abc123.json", "other"), Catch::Contains("workload_hash abc123"));
  json bad = doc;
  bad["measurements"][0]["b_small"] = -1;
  CHECK_THROWS_WITH(read_noise_record(bad, "n.json", "abc123"), Catch::Contains("n.json.measurements[0]"));
  bad = doc;
  bad["schema_version"] = 9;
  CHECK_THROWS_AS(read_noise_record(bad, "n.json", "abc123"), InputError);
}

TEST_CASE("a recorded measurement replaces the profile's estimate only when stronger", "[tuner][noise]") {
  const std::vector<MeasuredNoiseScale> rec = {*measurement_from_validation_run(run(4, 8, 2))};  // spread 16
  // No profile estimate: the record is used, and its source names the command and the file.
  auto c = choose_recorded_noise_scale(rec, std::nullopt, "/cache/noise-x.json");
  REQUIRE(c);
  CHECK(c->noise_scale == Approx(200));
  CHECK_THAT(c->source, Catch::Contains("gaccum-tune validate -b 4 -k 8 -p 2") && Catch::Contains("/cache/noise-x.json"));
  // A profile sweep over micro_batch 1..8 (spread 8) is weaker; one over 1..64 (spread 64) is stronger.
  std::vector<GradNormPoint> narrow = {{1, {402, 402, 402}}, {8, {52, 52, 52}}};
  std::vector<GradNormPoint> wide = {{1, {402, 402, 402}}, {64, {8.25, 8.25, 8.25}}};
  const auto sn = profile_noise_strength(narrow), sw = profile_noise_strength(wide);
  REQUIRE(sn);
  REQUIRE(sw);
  CHECK(sn->spread == Approx(8));
  CHECK(sn->samples == 6);
  CHECK(choose_recorded_noise_scale(rec, sn, "f"));
  CHECK_FALSE(choose_recorded_noise_scale(rec, sw, "f"));
  // Equal spread: more samples wins.
  CHECK(stronger({16, 41}, {16, 40}));
  CHECK_FALSE(stronger({16, 40}, {16, 40}));
  // A profile without two sizes gives no estimate; nothing recorded gives no choice.
  CHECK_FALSE(profile_noise_strength({{4, {1.0, 2.0}}}));
  CHECK_FALSE(choose_recorded_noise_scale({}, std::nullopt, "f"));
}
