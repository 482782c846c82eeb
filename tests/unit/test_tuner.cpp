// Unit tests for tuner/: the search on a closed-form fake model (fake_cost_model.hpp) against
// optima computed by hand, constraint edge cases (memory boundary, prime batch, no feasible
// config with the smallest change), objectives, LR rules, critical batch and Pareto front.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "tests/unit/fake_cost_model.hpp"
#include "tuner/tuner.hpp"

using namespace gaccum;
using namespace gaccum::tuner;
using gaccum::test::FakeCostModel;
using gaccum::test::FakeParams;

namespace {

// B = 256 on world_size {1, 2, 4}; cap 445 MB with no margin: at p = 4 micro_batch 32 peaks at
// exactly 100 + 25 + 320 = 445 MB (the boundary).
TuneRequest base_request(Bytes cap = 445'000'000, double margin = 0) {
  TuneRequest r;
  r.global_batch_min = r.global_batch_max = 256;
  r.world_sizes = {1, 2, 4};
  r.memory_cap.absolute = cap;
  r.memory_cap.fraction.reset();
  r.margin = margin;
  r.max_accum_steps = 64;
  r.top = 5;
  return r;
}

const Candidate* find(const SearchResult& s, Count b, Count k, Count p, Strategy st) {
  for (const auto& c : s.candidates)
    if (c.config().micro_batch == b && c.config().accum_steps == k && c.config().world_size == p &&
        c.config().strategy == st)
      return &c;
  return nullptr;
}

std::string infeasible_message(const model::CostModel& m, const TuneRequest& r) {
  try {
    tune(m, r);
  } catch (const InfeasibleError& e) {
    return e.what();
  }
  FAIL("expected InfeasibleError");
  return "";
}

}  // namespace

TEST_CASE("divisors and the margin arithmetic", "[tuner]") {
  CHECK(divisors(1) == std::vector<Count>{1});
  CHECK(divisors(12) == std::vector<Count>{1, 2, 3, 4, 6, 12});
  CHECK(divisors(49) == std::vector<Count>{1, 7, 49});
  CHECK(divisors(509) == std::vector<Count>{1, 509});
  CHECK(apply_margin(1000, 0.10) == 900);
  CHECK(apply_margin(500'000'000, 0.11) == 445'000'000);
  CHECK(apply_margin(1000, 0) == 1000);
  CHECK(apply_margin(999, 0.5) == 499);  // floor(499.5)
  CHECK(apply_margin(~Bytes(0), 0.1) == (~Bytes(0) / 1000000) * 900000 + (~Bytes(0) % 1000000) * 900000 / 1000000);
}

TEST_CASE("ranking keys: rounding noise ties, a real difference does not", "[tuner]") {
  // 0.1 + 0.2 = 0.30000000000000004 in doubles: the same score to 12 significant digits.
  CHECK(0.1 + 0.2 != 0.3);
  CHECK(ranking_key(0.1 + 0.2) == ranking_key(0.3));
  CHECK(ranking_key(-5278.39 * (1 + 1e-15)) == ranking_key(-5278.39));
  CHECK(ranking_key(-5278.39) < ranking_key(-5278.38));  // 1e-6 relative: not a tie
  CHECK(ranking_key(0) == 0);
  CHECK(ranking_key(1e-300) == Approx(1e-300));  // no overflow at the ends of the range
  CHECK(ranking_key(-1e300) == Approx(-1e300));
}

TEST_CASE("the search finds the hand-computed optimum and explains it", "[tuner]") {
  FakeCostModel m;
  auto res = tune(m, base_request());
  const auto& best = res.best();
  // Hand: b=32 k=2 p=4 overlap: compute 2 x 0.042, exposed 0.05 - 0.021 = 0.029, opt 0.005.
  CHECK(best.config().micro_batch == 32);
  CHECK(best.config().accum_steps == 2);
  CHECK(best.config().world_size == 4);
  CHECK(best.config().strategy == Strategy::overlap);
  CHECK(best.prediction.time.step_time == Approx(0.118));
  CHECK(best.prediction.throughput == Approx(256 / 0.118));
  CHECK(best.rank == 1);

  const auto& e = res.picks.front();
  CHECK(e.binding == "memory");
  // Next divisor of 64 is 64: 100 + 25 + 640 = 765 MB, 320 MB over the 445 MB limit.
  CHECK_THAT(e.binding_text, Catch::Contains("micro_batch 64") && Catch::Contains(format_bytes(320'000'000)));
  CHECK(e.headroom == 0);  // exactly at the limit
  CHECK(e.comm_exposed_share == Approx(0.029 / 0.118));
  CHECK_FALSE(e.comm_bound);  // 24.6% < 25%

  // Runner-up: the same setting fused: exposed 0.05 -> step 0.139.
  REQUIRE(e.runner_up);
  const auto& ru = res.search.candidates[*e.runner_up];
  CHECK(ru.config().strategy == Strategy::fused);
  CHECK(ru.config().micro_batch == 32);
  CHECK(e.runner_up_delta == Approx(0.118 / 0.139 - 1));
  CHECK_THAT(e.runner_up_text, Catch::Contains("strategy overlap->fused") && Catch::Contains("exposed communication"));

  // every-step at (32, 2, 4): exposed 2 x 0.029 -> step 0.147.
  CHECK(e.every_step.applicable);
  CHECK(e.every_step.extra_s == Approx(0.029));
  CHECK(e.every_step.throughput_lost == Approx(1 - 0.118 / 0.147));
  CHECK(e.every_step.every_step_collectives == 4);
  CHECK(e.every_step.overlap_collectives == 2);

  // Third: b=16 k=4 p=4 overlap: 4 x 0.026 + (0.05 - 0.013) + 0.005 = 0.146.
  REQUIRE(res.picks.size() >= 3);
  const auto& third = res.search.candidates[res.picks[2].candidate];
  CHECK(third.config().micro_batch == 16);
  CHECK(third.prediction.time.step_time == Approx(0.146));

  // every-step is evaluated but not ranked under --strategy auto; world_size 1 has one strategy.
  const auto* ev = find(res.search, 32, 2, 4, Strategy::every_step);
  REQUIRE(ev);
  CHECK(ev->feasible());
  CHECK(ev->rank == 0);
  CHECK_THAT(reason_text(*ev, res.search.limits), Catch::Contains("priced, not ranked"));
  CHECK(find(res.search, 32, 8, 1, Strategy::overlap) != nullptr);
  CHECK(find(res.search, 32, 8, 1, Strategy::fused) == nullptr);
  // Every divisor pair is kept: B/p = 256, 128, 64 have 9, 8, 7 divisors; 3 strategies at p > 1.
  CHECK(res.search.candidates.size() == 9 + 3 * 8 + 3 * 7);
}

TEST_CASE("memory cap exactly at the boundary is feasible, one byte less is not", "[tuner]") {
  FakeCostModel m;
  {
    auto res = tune(m, base_request(445'000'000, 0));
    const auto* c = find(res.search, 32, 2, 4, Strategy::overlap);
    REQUIRE(c);
    CHECK(c->prediction.memory.peak == 445'000'000);
    CHECK(c->feasible());
  }
  {
    // 500 MB minus an 11% margin is the same 445 MB limit.
    auto res = tune(m, base_request(500'000'000, 0.11));
    CHECK(res.search.limits.limit == 445'000'000);
    CHECK(find(res.search, 32, 2, 4, Strategy::overlap)->feasible());
  }
  {
    auto res = tune(m, base_request(445'000'000 - 1, 0));
    const auto* c = find(res.search, 32, 2, 4, Strategy::overlap);
    REQUIRE(c);
    CHECK(c->violations == kMemory);
    CHECK_THAT(reason_text(*c, res.search.limits), Catch::Contains("peak memory"));
    // Best is now b=16 k=4 p=4: step 0.146.
    CHECK(res.best().config().micro_batch == 16);
    CHECK(res.best().prediction.time.step_time == Approx(0.146));
  }
}

TEST_CASE("a larger micro_batch that fits but does not divide is a divisibility binding", "[tuner]") {
  FakeCostModel m;
  auto res = tune(m, base_request(500'000'000, 0));  // p = 4 fits b <= 37; 64 has no divisor in 33..37
  CHECK(res.best().config().micro_batch == 32);
  CHECK(res.picks.front().binding == "divisibility");
  CHECK_THAT(res.picks.front().binding_text, Catch::Contains("up to 37") && Catch::Contains("between 33 and 37"));
}

TEST_CASE("objectives: cost prefers fewer ranks, time-to-target uses (1 + B_noise/B) x step_time", "[tuner]") {
  FakeCostModel m;
  auto r = base_request();
  r.objective = Objective::cost;
  auto res = tune(m, r);
  // GPU-s per sample: p=1 0.341/256, p=2 2 x 0.182/256, p=4 4 x 0.118/256.
  CHECK(res.best().config().world_size == 1);
  CHECK(res.best().config().micro_batch == 32);
  CHECK(objective_value(Objective::cost, res.best().prediction, std::nullopt) == Approx(0.341 / 256));

  auto t = base_request();
  t.objective = Objective::time_to_target;
  CHECK_THROWS_WITH(tune(m, t), Catch::Contains("--noise-scale"));

  t.noise_scale = 100;
  t.global_batch_min = 128;
  t.global_batch_max = 256;
  t.world_sizes = {4};
  auto tt = tune(m, t);
  // B = 128 at p = 4: b = 32, k = 1: step 0.042 + 0.029 + 0.005 = 0.076; (1 + 100/128) x 0.076.
  CHECK(tt.best().config().global_batch() == 128);
  CHECK(objective_value(Objective::time_to_target, tt.best().prediction, 100.0) == Approx((1 + 100.0 / 128) * 0.076));
  for (auto i : tt.search.ranking)
    CHECK(objective_value(Objective::time_to_target, tt.search.candidates[i].prediction, 100.0) >=
          objective_value(Objective::time_to_target, tt.best().prediction, 100.0));
  // Throughput over the same range prefers B = 256 (2169 vs 1684 samples/s).
  t.objective = Objective::throughput;
  CHECK(tune(m, t).best().config().global_batch() == 256);
}

TEST_CASE("the measured micro_batch range binds unless extrapolation is allowed", "[tuner]") {
  FakeParams p;
  p.measured_max = 16;
  FakeCostModel m(p);
  auto r = base_request(1'000'000'000, 0);
  r.world_sizes = {1};
  auto res = tune(m, r);
  CHECK(res.best().config().micro_batch == 16);
  CHECK(res.picks.front().binding == "measured-range");
  const auto* c = find(res.search, 32, 8, 1, Strategy::overlap);
  REQUIRE(c);
  CHECK(c->violations == kMicroBatchRange);
  r.allow_extrapolation = true;
  auto ext = tune(m, r);  // memory fits b <= 90: largest divisor of 256 is 64
  CHECK(ext.best().config().micro_batch == 64);
  CHECK(ext.best().prediction.extrapolated);
}

TEST_CASE("explicit every-step is ranked; cluster size drops larger world sizes", "[tuner]") {
  FakeParams p;
  p.max_world_size = 2;
  FakeCostModel m(p);
  auto r = base_request();
  r.strategy = Strategy::every_step;
  auto res = tune(m, r);
  CHECK(res.search.limits.world_sizes == std::vector<Count>{1, 2});
  CHECK(res.best().config().strategy == Strategy::every_step);
  bool noted = false;
  for (const auto& n : res.notes) noted = noted || n.find("world sizes 4 skipped") != std::string::npos;
  CHECK(noted);
  r.world_sizes = {4, 8};
  CHECK_THROWS_AS(tune(m, r), InputError);
}

TEST_CASE("no feasible config: memory names the need and the cap that fixes it", "[tuner][infeasible]") {
  FakeCostModel m;
  auto r = base_request(50'000'000, 0.10);
  auto msg = infeasible_message(m, r);
  // Even b = 1 at p = 1 needs 100 + 10 = 110 MB; cap >= 110e6 / 0.9 = 122222223 B -> 117MiB.
  CHECK_THAT(msg, Catch::Contains("memory cap binds") && Catch::Contains("even micro_batch 1 needs") &&
                      Catch::Contains(format_bytes(110'000'000)) && Catch::Contains("raise --memory-cap to 117MiB"));
  CHECK(msg.find('\n') == std::string::npos);
  // With a cap above the need, lowering the margin is offered too: 110/115 -> 4.3%.
  auto r2 = base_request(115'000'000, 0.10);
  CHECK_THAT(infeasible_message(m, r2), Catch::Contains("lower --margin to 4.3%"));
  // A cap the device cannot hold is no fix: with a 100 MB device the 117 MiB cap is not offered,
  // a device with more than 110 MB is.
  FakeParams small;
  small.device_memory = 100'000'000;
  FakeCostModel m3(small);
  auto r3 = base_request(50'000'000, 0.10);
  const auto msg3 = infeasible_message(m3, r3);
  CHECK_THAT(msg3, !Catch::Contains("raise --memory-cap") &&
                       Catch::Contains("a device with more than " + format_bytes(110'000'000)));
}

TEST_CASE("no feasible config: accumulation limit with every smallest change", "[tuner][infeasible]") {
  FakeCostModel m;
  auto r = base_request(500'000'000, 0);
  r.global_batch_min = r.global_batch_max = 1024;
  r.world_sizes = {1};
  r.max_accum_steps = 16;
  auto msg = infeasible_message(m, r);
  // p = 1 fits b <= 40; 1024 / 32 = 32 steps. Below: 40 x 16 = 640. p = 2: b = 32, k = 16.
  CHECK_THAT(msg, Catch::Contains("accum_steps binds") && Catch::Contains("at most 40") &&
                      Catch::Contains("no divisor between 33 and 40") &&
                      Catch::Contains("raise --max-accum-steps to 32") &&
                      Catch::Contains("lower --global-batch to 640") && Catch::Contains("allow world_size 2"));
  CHECK_THAT(msg, !Catch::Contains("raise --global-batch"));
}

TEST_CASE("prime global batch: only world_size 1 divides it", "[tuner][infeasible]") {
  FakeCostModel m;
  auto r = base_request(500'000'000, 0);
  r.global_batch_min = r.global_batch_max = 509;
  r.world_sizes = {1, 2, 4, 8};
  auto msg = infeasible_message(m, r);
  // 509 = 1 x 509; b = 1 needs k = 509 > 64. Nearest: 507 = 39 x 13, 510 = 10 x 51.
  CHECK_THAT(msg, Catch::Contains("raise --max-accum-steps to 509") && Catch::Contains("lower --global-batch to 507") &&
                      Catch::Contains("raise --global-batch to 510") && Catch::Contains("no divisor between 2 and 40"));
  // Allowing the accumulation makes it feasible: b = 1, k = 509 on one rank.
  r.max_accum_steps = 512;
  auto res = tune(m, r);
  CHECK(res.best().config().micro_batch == 1);
  CHECK(res.best().config().accum_steps == 509);
  CHECK(res.best().config().world_size == 1);
  CHECK(res.picks.front().binding == "divisibility");
  CHECK(res.search.indivisible_pairs == 3);
}

TEST_CASE("no feasible config: divisibility when no allowed world size divides", "[tuner][infeasible]") {
  FakeCostModel m;
  auto r = base_request(500'000'000, 0);
  r.global_batch_min = r.global_batch_max = 9;
  r.world_sizes = {2, 4};
  auto msg = infeasible_message(m, r);
  CHECK_THAT(msg, Catch::Contains("divisibility binds") && Catch::Contains("lower --global-batch to 8") &&
                      Catch::Contains("raise --global-batch to 10") && Catch::Contains("allow world_size 1"));
}

TEST_CASE("request validation names the flag", "[tuner]") {
  FakeCostModel m;
  CHECK_THROWS_WITH(parse_optimizer("adagrad", "--optimizer"), Catch::Contains("--optimizer"));  // at the flag
  auto r = base_request();
  r.margin = 1.0;
  CHECK_THROWS_WITH(tune(m, r), Catch::Contains("--margin"));
  r = base_request();
  r.world_sizes = {};
  CHECK_THROWS_WITH(tune(m, r), Catch::Contains("--world-sizes"));
  FakeParams p;
  p.device_memory = 0;
  FakeCostModel no_mem(p);
  r = base_request();
  r.memory_cap = MemoryCap{std::nullopt, 0.9};
  CHECK_THROWS_WITH(tune(no_mem, r), Catch::Contains("--memory-cap"));
  CHECK_THROWS_AS(parse_objective("fastest"), InputError);
  CHECK(parse_objective("time-to-target") == Objective::time_to_target);
}

TEST_CASE("learning-rate rules: linear for SGD, square-root for Adam-type, warm-up above 8x", "[tuner][lr]") {
  auto ref = parse_lr_reference("0.1@256");
  CHECK(ref.lr == Approx(0.1));
  CHECK(ref.global_batch == 256);
  CHECK_THROWS_WITH(parse_lr_reference("3e-4"), Catch::Contains("--lr-ref"));
  CHECK_THROWS_AS(parse_lr_reference("abc@256"), InputError);
  CHECK_THROWS_AS(parse_lr_reference("3e-4@0"), InputError);
  CHECK_THROWS_AS(parse_lr_reference("-1@256"), InputError);

  auto sgd = recommend_lr(ref, Optimizer::sgd, 1024, std::nullopt);
  CHECK(sgd.rule == "linear");
  CHECK(sgd.lr == Approx(0.4));
  CHECK_FALSE(sgd.warmup);
  CHECK_THAT(sgd.text, Catch::Contains("linear") && Catch::Contains("Goyal"));

  auto adam = recommend_lr(LrReference{3e-4, 256}, Optimizer::adam, 1024, std::nullopt);
  CHECK(adam.rule == "square-root");
  CHECK(adam.lr == Approx(6e-4));
  auto lamb = recommend_lr(LrReference{3e-4, 256}, Optimizer::lamb, 4096, 1281167);
  CHECK(lamb.lr == Approx(1.2e-3));
  CHECK(lamb.warmup);
  REQUIRE(lamb.warmup_steps);
  CHECK(*lamb.warmup_steps == 1564);  // ceil(5 x 1281167 / 4096) = ceil(1563.9)
  CHECK(recommend_lr(LrReference{3e-4, 256}, Optimizer::adamw, 2048, std::nullopt).warmup == false);  // exactly 8x
  CHECK(recommend_lr(LrReference{3e-4, 256}, Optimizer::adamw, 64, std::nullopt).lr == Approx(1.5e-4));
  CHECK_FALSE(recommend_lr(std::nullopt, Optimizer::adam, 512, std::nullopt).available);
}

TEST_CASE("critical batch: factors from the noise scale", "[tuner][critical]") {
  auto over = critical_batch_advice(1000.0, 4000);
  CHECK(over.exceeds);
  CHECK(over.steps_factor == Approx(1.25));
  CHECK(over.samples_factor == Approx(5));
  CHECK(over.extra_samples == Approx(4));
  CHECK_THAT(over.text, Catch::Contains("exceeds") && Catch::Contains("McCandlish"));
  auto under = critical_batch_advice(1000.0, 500);
  CHECK_FALSE(under.exceeds);
  CHECK(under.steps_factor == Approx(3));
  CHECK(under.samples_factor == Approx(1.5));
  CHECK_FALSE(critical_batch_advice(std::nullopt, 500).available);
}

TEST_CASE("Pareto front: dominated world sizes and marginal efficiency", "[tuner][pareto]") {
  SearchResult s;
  s.limits.world_sizes = {1, 2, 4, 8};
  const double thr[] = {100, 180, 200, 190};
  for (int i = 0; i < 4; ++i) {
    Candidate c;
    c.prediction.config = model::Config{8, 1, Count(1) << i, Strategy::overlap};
    c.prediction.throughput = thr[i];
    s.candidates.push_back(c);
    s.ranking.push_back(std::uint32_t(i));
  }
  auto pts = pareto_front(s);
  REQUIRE(pts.size() == 4);
  CHECK(pts[0].on_front);
  CHECK(pts[1].on_front);
  CHECK(pts[1].marginal_per_device == Approx(80));
  CHECK(pts[1].marginal_efficiency == Approx(0.8));
  CHECK_THAT(pts[1].verdict, Catch::StartsWith("worth it"));
  CHECK(pts[2].marginal_per_device == Approx(10));  // (200 - 180) / 2
  CHECK(pts[2].marginal_efficiency == Approx(10.0 / 90));
  CHECK_THAT(pts[2].verdict, Catch::StartsWith("poor return"));
  CHECK_FALSE(pts[3].on_front);
  CHECK_THAT(pts[3].verdict, Catch::StartsWith("not worth it"));

  // On the fake model: p = 2 adds 0.341/0.182 - 1 = 87.4% of a rank, p = 4 adds 0.182/0.118 - 1.
  FakeCostModel m;
  auto res = tune(m, base_request());
  REQUIRE(res.pareto.size() == 3);
  CHECK(res.pareto[1].marginal_efficiency == Approx(0.341 / 0.182 - 1));
  CHECK(res.pareto[2].marginal_efficiency == Approx(0.182 / 0.118 - 1));
  CHECK(res.pareto[2].on_front);
}

TEST_CASE("Pareto front: a world size without a ranked config says what is wrong", "[tuner][pareto]") {
  SearchResult s;
  s.limits.world_sizes = {1, 2, 3, 4};
  s.limits.limit = 1000;
  s.limits.max_accum_steps = 2;
  auto add = [&](Count b, Count k, Count p, Bytes peak, std::uint8_t violations) {
    Candidate c;
    c.prediction.config = model::Config{b, k, p, Strategy::overlap};
    c.prediction.memory.peak = peak;
    c.prediction.throughput = 10.0 * double(p);
    c.violations = violations;
    s.candidates.push_back(c);
  };
  add(12, 1, 1, 1500, kMemory);  // p = 1: over the limit (fewer violations than the next)
  add(1, 12, 1, 900, kAccumSteps | kMemory);
  add(6, 1, 2, 800, kNoViolation);  // p = 2: ranked
  s.ranking.push_back(2);
  add(1, 3, 4, 900, kAccumSteps);  // p = 4: accum_steps only (closest), then memory only but larger
  add(3, 1, 4, 1200, kMemory);
  // p = 3: no candidate at all (3 does not divide 12).
  auto pts = pareto_front(s, 12, 12);
  REQUIRE(pts.size() == 4);
  CHECK(pts[0].evaluated == 2);
  CHECK(pts[0].verdict == "no feasible config: the closest, b=12 k=1 p=1 overlap: peak memory " + format_bytes(1500) +
                              " > limit " + format_bytes(1000));
  CHECK(pts[1].verdict == "baseline");
  CHECK(pts[2].evaluated == 0);
  CHECK(pts[2].verdict == "no config: world_size 3 does not divide global_batch 12");
  CHECK(pareto_front(s, 10, 11)[2].verdict == "no config: world_size 3 divides no global_batch in 10-11");
  CHECK(pts[3].evaluated == 2);
  CHECK(pts[3].verdict == "no feasible config: the closest, b=1 k=3 p=4 overlap: accum_steps 3 > --max-accum-steps 2");
}

TEST_CASE("pinned micro_batch and accum_steps restrict the search to them", "[tuner][pins]") {
  FakeCostModel m;
  auto r = base_request();
  r.micro_batch = 16;
  r.notes = {"micro_batch pinned by a test"};
  auto res = tune(m, r);
  CHECK(std::find(res.notes.begin(), res.notes.end(), "micro_batch pinned by a test") != res.notes.end());
  for (const auto& c : res.search.candidates) CHECK(c.config().micro_batch == 16);
  CHECK(res.best().config().micro_batch == 16);
  // b=16 at B=256: k = 16, 8, 4 at p = 1, 2, 4; the best is p = 4 (the third pick of the free search).
  CHECK(res.best().config().world_size == 4);
  CHECK(res.best().config().accum_steps == 4);

  r = base_request();
  r.accum_steps = 2;
  res = tune(m, r);
  for (const auto& c : res.search.candidates) CHECK(c.config().accum_steps == 2);
  CHECK(res.best().config().micro_batch == 32);  // the free optimum has k = 2 already
  CHECK(res.best().config().world_size == 4);

  r = base_request();
  r.accum_steps = 128;
  CHECK_THROWS_WITH(validate(r), Catch::Contains("raise --max-accum-steps to 128"));
  r = base_request();
  r.micro_batch = 0;
  CHECK_THROWS_AS(validate(r), InputError);
}

TEST_CASE("offload pins reach every evaluated plan shape", "[tuner][pins]") {
  FakeCostModel m;
  auto r = base_request();
  r.offload_optimizer = true;
  const auto res = tune(m, r);
  for (const auto& c : res.search.candidates) CHECK(c.config().offload_optimizer);
}

TEST_CASE("critical batch: the noise scale's source, or the command that measures one", "[tuner][critical]") {
  auto a = critical_batch_advice(1000.0, 500, "measured by `gaccum-tune validate -b 4 -k 8 -p 2`");
  CHECK(a.source == "measured by `gaccum-tune validate -b 4 -k 8 -p 2`");
  CHECK_THAT(a.text, Catch::Contains("B_noise ~ 1000 (McCandlish et al. 2018; B_noise from measured by `gaccum-tune validate -b 4 -k 8 -p 2`)"));
  auto none = critical_batch_advice(std::nullopt, 500, "", "gaccum-tune validate --workload gpt-tiny -b 8 -k 4 -p 2");
  CHECK_FALSE(none.available);
  CHECK_THAT(none.text, Catch::Contains("`gaccum-tune validate --workload gpt-tiny -b 8 -k 4 -p 2`"));
  CHECK(noise_scale_command("gaccum-tune validate --workload w", 8, 4, 2) ==
        "gaccum-tune validate --workload w -b 8 -k 4 -p 2");
  // k x p = 1 measures one batch size only: validate needs two, so k becomes 2.
  CHECK(noise_scale_command("gaccum-tune validate --workload w", 64, 1, 1) ==
        "gaccum-tune validate --workload w -b 64 -k 2 -p 1");

  // tune: the request's source reaches the advice; without a noise scale the hint gets the pick's b, k, p.
  FakeCostModel m;  // no noise scale
  auto r = base_request();
  r.noise_scale_hint = "gaccum-tune validate --workload fake";
  auto res = tune(m, r);
  CHECK_THAT(res.critical.text, Catch::Contains("gaccum-tune validate --workload fake -b 32 -k 2 -p 4"));
  r.noise_scale = 500.0;
  r.noise_scale_source = "a test";
  res = tune(m, r);
  CHECK(res.search.limits.noise_scale_source == "a test");
  CHECK_THAT(res.critical.text, Catch::Contains("B_noise ~ 500 (McCandlish et al. 2018; B_noise from a test)"));
}

TEST_CASE("a framework narrows the search to the plans it runs", "[tuner][framework]") {
  FakeCostModel m;
  auto r = base_request();
  // torchtitan reduces on every micro-batch: every-step is its only strategy, so it is ranked.
  r.framework = Framework::torchtitan;
  auto res = tune(m, r);
  for (auto i : res.search.ranking)
    if (res.search.candidates[i].config().world_size > 1)
      CHECK(res.search.candidates[i].config().strategy == Strategy::every_step);
  for (const auto& c : res.search.candidates)
    if (c.config().world_size > 1) CHECK(c.config().strategy == Strategy::every_step);
  // Horovod accumulates with backward_passes_per_step=k (fused) or reduces every step; never no_sync.
  r.framework = Framework::horovod;
  res = tune(m, r);
  for (const auto& c : res.search.candidates)
    if (c.config().world_size > 1) CHECK(c.config().strategy != Strategy::overlap);
  CHECK((res.best().config().world_size == 1 || res.best().config().strategy == Strategy::fused));
  // A pinned plan the framework refuses is bad input naming both.
  r.framework = Framework::deepspeed;
  r.framework_source = "deepspeed ds.json";
  r.strategy = Strategy::every_step;
  CHECK_THROWS_WITH(tune(m, r), Catch::Contains("--strategy every-step with sharding none on DeepSpeed (deepspeed ds.json): "
                                                "DeepSpeed reduces gradients once"));
}
