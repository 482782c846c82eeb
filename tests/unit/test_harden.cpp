// What: unit tests for the hardening of the readers and searches against hostile input: the
//       JSON nesting limit and the strict reader without a deep copy (core/json_fields), checked
//       count arithmetic and flag limits (core/checked), plausibility of profile.json
//       (core/profile), and the bounded searches behind the tuner's suggested changes
//       (tuner/infeasibility) compared with a plain loop on small inputs and timed on huge ones.
// Why: each of these used to crash (stack overflow), hang (a loop up to the global batch) or
//      answer wrongly (a product wrapped around int64) with exit 0.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <fstream>
#include <limits>
#include <string>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/profile.hpp"
#include "tests/unit/fake_cost_model.hpp"
#include "tuner/infeasibility.hpp"
#include "tuner/tuner.hpp"

using namespace gaccum;
using nlohmann::json;

namespace {

const std::string kSource = GACCUM_SOURCE_DIR;

// The message of the InputError `f` throws (one line), or "" when it throws none.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    return m;
  }
  return "";
}

}  // namespace

TEST_CASE("JSON nested deeper than the limit is one InputError naming the file", "[json][harden]") {
  CHECK(json_nesting_depth("[]", 10) == 1);
  CHECK(json_nesting_depth(R"({"a": [[1], {"b": 2}]})", 10) == 3);
  // Brackets inside strings (and escaped quotes) do not count.
  CHECK(json_nesting_depth(R"(["[[[[", "\"[[[", {"k": "{{{{"}])", 10) == 2);
  CHECK(json_nesting_depth(std::string(100, '['), 10) == 11);  // stops counting past the limit

  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto msg = input_error([&] { (void)parse_json_text(deep, "deep.json"); });
  CHECK_THAT(msg, Catch::Contains("deep.json") && Catch::Contains("nested deeper than 512"));
  // Unbalanced (truncated) is refused before the parser sees it, with the same message.
  CHECK_THAT(input_error([&] { (void)parse_json_text(std::string(200000, '['), "t.json"); }),
             Catch::Contains("nested deeper than 512"));
  // 512 levels are fine.
  const std::string ok = std::string(512, '[') + std::string(512, ']');
  CHECK(parse_json_text(ok, "ok.json").is_array());
  CHECK_THAT(input_error([&] { (void)parse_json_text("[" + ok + "]", "x.json"); }), Catch::Contains("512"));
}

TEST_CASE("JsonFields refers to the document; a temporary is kept alive without a copy", "[json][harden]") {
  json doc = {{"a", 3}, {"inner", {{"b", 4}}}};
  JsonFields f(doc, "doc.json");
  CHECK(&f.raw() == &doc);  // no copy
  CHECK(&f.object("inner") == &doc.at("inner"));
  // From a temporary (e.g. parse_json_text's result): the reader owns it, and copies of the
  // reader share it.
  JsonFields g(parse_json_text(R"({"x": 7, "y": "s"})", "t.json"), "t.json");
  JsonFields h = g;
  CHECK(g.positive("x") == 7);
  CHECK(h.str("y") == "s");
  CHECK(&g.raw() == &h.raw());
  CHECK_THROWS_WITH(JsonFields(json::array(), "arr.json"), Catch::Contains("arr.json: expected a JSON object"));
}

TEST_CASE("checked arithmetic and the count limit name the flag", "[checked][harden]") {
  const Count max = std::numeric_limits<Count>::max();
  CHECK(checked_mul(Count(3), Count(4)) == Count(12));
  CHECK_FALSE(checked_mul(Count(4), Count(4611686018427387904)));  // 2^2 x 2^62 = 2^64
  CHECK_FALSE(checked_add(max, Count(1)));
  CHECK(checked_add(max - 1, Count(1)) == max);
  CHECK(checked_mul(Bytes(1) << 32, Bytes(1) << 31) == (Bytes(1) << 63));
  CHECK_FALSE(checked_mul(Bytes(1) << 32, Bytes(1) << 32));
  CHECK_FALSE(checked_add(~Bytes(0), Bytes(1)));

  CHECK(parse_count_at_most("1099511627776", "--micro-batch") == kMaxCount);
  CHECK_THAT(input_error([] { (void)parse_count_at_most("1099511627777", "--micro-batch"); }),
             Catch::Contains("--micro-batch: 1099511627777 is above the largest accepted value 2^40"));
  CHECK_THAT(input_error([] { (void)parse_count_at_most("99999999999", "--threads-per-rank", 1024, "1024"); }),
             Catch::Contains("--threads-per-rank") && Catch::Contains("1024"));
  CHECK_THAT(input_error([] { (void)parse_count_at_most("-1", "--seed"); }), Catch::Contains("--seed"));

  CHECK(checked_global_batch(4, 8, 2, "b x k x p") == 64);
  CHECK(checked_global_batch(1 << 20, 1 << 10, 1 << 10, "b x k x p") == kMaxCount);
  // 4 x 2^62 x 4 wraps to 0 in int64; 2^20 x 2^20 x 2 is 2^41 > 2^40.
  CHECK_THAT(input_error([] { (void)checked_global_batch(4, Count(1) << 62, 4, "--micro-batch x --accum-steps"); }),
             Catch::Contains("--micro-batch x --accum-steps: global batch 4 x 4611686018427387904 x 4 is above"));
  CHECK_FALSE(input_error([] { (void)checked_global_batch(1 << 20, 1 << 20, 2, "f"); }).empty());
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// tests/data/small-profile.json with one field replaced: `edit` changes the parsed document.
template <class Edit>
std::string profile_error(Edit&& edit) {
  json j = json::parse(slurp(kSource + "/tests/data/small-profile.json"));
  edit(j);
  return input_error([&] { (void)profile_from_json(j, "p.json"); });
}

}  // namespace

TEST_CASE("implausible profiles are refused with the field's JSON path", "[profile][harden]") {
  // The unedited profile loads.
  CHECK(profile_error([](json&) {}).empty());
  CHECK_THAT(profile_error([](json& j) { j["grad_norms"][0]["sq_norms"][1] = -4.4; }),
             Catch::Contains("p.json.grad_norms[0].sq_norms[1]") && Catch::Contains("non-negative"));
  CHECK_THAT(profile_error([](json& j) { j["overlap"][0]["comm_alone"] = -0.0035; }),
             Catch::Contains("p.json.overlap[0].comm_alone: must be non-negative"));
  CHECK_THAT(profile_error([](json& j) { j["overlap"][0]["overlapped"] = -1; }),
             Catch::Contains("p.json.overlap[0].overlapped"));
  CHECK_THAT(profile_error([](json& j) { j["memory"][0]["peak"] = 18000000000000000000ull; }),
             Catch::Contains("p.json.memory[0].peak") && Catch::Contains("2^60"));
  CHECK_THAT(profile_error([](json& j) { j["memory"][2]["activations"] = Bytes(1) << 60; }),
             Catch::Contains("p.json.memory[2].activations"));
  CHECK(profile_error([](json& j) { j["memory"][2]["activations"] = (Bytes(1) << 60) - 1; }).find("2^60") ==
        std::string::npos);
  CHECK_THAT(profile_error([](json& j) { j["hardware"]["device_memory"] = 18446744073709551615ull; }),
             Catch::Contains("p.json.hardware.device_memory"));
  // All-zero timings: a micro-step of zero seconds.
  CHECK_THAT(profile_error([](json& j) {
               for (auto& c : j["compute"]) {
                 auto& ms = c["micro_step"];
                 for (auto& s : ms["samples"]) s = 0.0;
               }
             }),
             Catch::Contains("p.json.compute[0].micro_step: median time is 0"));
  CHECK_THAT(profile_error([](json& j) {
               j["compute"][1]["micro_step"] = {{"median", -0.5}, {"samples", json::array()}};
             }),
             Catch::Contains("p.json.compute[1].micro_step.median: must be non-negative"));
  CHECK_THAT(profile_error([](json& j) { j["compute"][0]["micro_step"]["samples"][2] = -0.001; }),
             Catch::Contains("p.json.compute[0].micro_step.samples[2]"));
  CHECK_THAT(profile_error([](json& j) { j["allreduce"][0]["busbw"] = -5; }),
             Catch::Contains("p.json.allreduce[0].busbw"));
  // NaN/Inf cannot be written in JSON text; a number beyond double is a parse error.
  CHECK_THAT(input_error([] { (void)parse_json_text(R"({"median": 1e999})", "p.json"); }),
             Catch::Contains("p.json: not valid JSON"));
  CHECK_THAT(input_error([] { (void)parse_json_text(R"({"median": NaN})", "p.json"); }),
             Catch::Contains("p.json: not valid JSON"));
}

namespace {

// Reference loops (the definitions, stepping through every k or b) for small inputs.
Count ref_min_accum(Count p, Count f, Count lo, Count hi) {
  for (Count k = 1; p * k <= hi; ++k) {
    Count b_lo = std::max<Count>(1, (lo + p * k - 1) / (p * k));
    if (b_lo <= std::min(f, hi / (p * k))) return k;
  }
  return 0;
}
Count ref_below(Count p, Count f, Count K, Count target) {
  Count best = 0;
  for (Count b = 1; b <= f && p * b <= target; ++b) best = std::max(best, p * b * std::min(K, target / (p * b)));
  return best;
}
Count ref_above(Count p, Count f, Count K, Count target) {
  Count best = 0;
  for (Count b = 1; b <= f; ++b)
    for (Count k = 1; k <= K; ++k)
      if (p * b * k >= target && (best == 0 || p * b * k < best)) best = p * b * k;
  return best;
}
bool ref_reachable(Count p, Count f, Count K, Count lo, Count hi) {
  for (Count b = 1; b <= f; ++b)
    for (Count k = 1; k <= K; ++k)
      if (p * b * k >= lo && p * b * k <= hi) return true;
  return false;
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("bounded searches agree with the plain loops on small inputs", "[tuner][infeasible][harden]") {
  using namespace gaccum::tuner;
  using namespace gaccum::tuner::detail;
  for (Count p : {1, 2, 3, 8})
    for (Count f : {1, 2, 5, 13})
      for (Count K : {1, 3, 16})
        for (Count lo = 1; lo <= 120; lo += 7)
          for (Count w : {0, 3, 40}) {
            const Count hi = lo + w;
            INFO("p " << p << " f " << f << " K " << K << " lo " << lo << " hi " << hi);
            CHECK(min_accum_needed(p, f, lo, hi) == ref_min_accum(p, f, lo, hi));
            CHECK(reachable_below(p, f, K, lo) == ref_below(p, f, K, lo));
            CHECK(reachable_above(p, f, K, lo) == ref_above(p, f, K, lo));
            CHECK(batch_reachable(p, f, K, lo, hi) == ref_reachable(p, f, K, lo, hi));
          }
  // Hand-computed: 509 is prime; at p = 1 with b <= 40 the smallest k is 509 (b = 1); below 509
  // with k <= 64: 507 = 13 x 39; above: 510 = 15 x 34.
  CHECK(min_accum_needed(1, 40, 509, 509) == 509);
  CHECK(reachable_below(1, 40, 64, 508) == 507);
  CHECK(reachable_above(1, 40, 64, 510) == 510);
  CHECK(reachable_above(1, 40, 64, 2561) == 0);  // 40 x 64 = 2560 is the largest
}

TEST_CASE("bounded searches end fast on huge batches", "[tuner][infeasible][harden]") {
  using namespace gaccum::tuner;
  using namespace gaccum::tuner::detail;
  const Count B = 99999999999999;  // 10^14 - 1 = 3^2 x 11 x 239 x 4649 x 909091
  Count k = 0, below = 0, above = 0;
  const double t = seconds_of([&] {
    k = min_accum_needed(2, 64, B, B);                       // odd: no multiple of 2
    below = reachable_below(1, 64, 1024, B);                // 64 x 1024 = 65536
    above = reachable_above(1, 64, 1024, B);                 // beyond 65536: none
    (void)batch_reachable(1, Count(1) << 40, Count(1) << 40, B, B);
  });
  CHECK(k == 0);
  CHECK(below == 65536);
  CHECK(above == 0);
  // b k = B with b <= 2^40: k >= B / 2^40 = 90.9, and the smallest divisor of B from 91 up is
  // 99 = 9 x 11 (b = 1010101010101).
  CHECK(min_accum_needed(1, Count(1) << 40, B, B) == 99);
  // A range of width 1000 at 2^60 with f = 2^30: k = ceil(2^60 / 2^30) = 2^30 works directly.
  const Count big = Count(1) << 60;
  CHECK(min_accum_needed(1, Count(1) << 30, big, big + 1000) == (Count(1) << 30));
  CHECK(reachable_above(1, Count(1) << 40, Count(1) << 40, big + 1) == big + 1);
  const Count q62 = Count(1) << 62;
  const Count near = reachable_below(1, Count(1) << 40, Count(1) << 40, q62 + 5);
  CHECK(near >= q62);  // 2^22 x 2^40
  CHECK(near <= q62 + 5);
  CHECK(t < 0.5);
  // The worst case walks kMaxBlocks blocks and stops: (2^63 - 1) / 3 = 2 x 715827883 x 2147483647
  // has its divisor pair deep inside, so the answer is a reachable batch, maybe not the largest.
  Count worst = 0;
  const double tw = seconds_of([&] {
    worst = reachable_below(3, Count(1) << 40, Count(1) << 40, std::numeric_limits<Count>::max());
  });
  CHECK(worst % 3 == 0);
  CHECK(worst >= 3 * (((std::numeric_limits<Count>::max() / 3) >> 40) << 40));  // b = t / 2^40, k = 2^40
  CHECK(tw < 2.0);
}

TEST_CASE("no feasible config at exabyte peaks ends fast, without a cap beyond 64 bits", "[tuner][infeasible][harden]") {
  using namespace gaccum::tuner;
  test::FakeParams fp;
  fp.weight_bytes = Bytes(4500000000000000000ull);  // 4 x 4.5e18 = 1.8e19 B static
  fp.device_memory = ~Bytes(0);
  test::FakeCostModel m(fp);
  TuneRequest r;
  r.global_batch_min = r.global_batch_max = 256;
  r.world_sizes = {1};
  r.memory_cap.absolute = Bytes(1) << 40;
  r.memory_cap.fraction.reset();
  r.margin = 0.1;
  r.max_accum_steps = 64;
  std::string msg;
  const double t = seconds_of([&] {
    try {
      (void)tune(m, r);
    } catch (const InfeasibleError& e) {
      msg = e.what();
    }
  });
  // 1.8e19 / 0.9 = 2e19 > 2^64: no --memory-cap can hold it, so none is suggested.
  CHECK_THAT(msg, Catch::Contains("memory cap binds"));
  CHECK_THAT(msg, !Catch::Contains("raise --memory-cap"));
  CHECK(t < 0.5);
  // Within 64 bits the cap is exact: 1.5e19 / 0.9 = 16666666666666666667 B, 15522042910.26 GiB.
  fp.weight_bytes = Bytes(3750000000000000000ull) - 2500000;  // + 10 MB of activations at b = 1
  test::FakeCostModel m2(fp);
  try {
    (void)tune(m2, r);
  } catch (const InfeasibleError& e) {
    msg = e.what();
  }
  CHECK_THAT(msg, Catch::Contains("raise --memory-cap to 15522042911GiB"));
}
