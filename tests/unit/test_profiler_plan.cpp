// Unit tests for profiler/sweep_plan: defaults, peak prediction, the bisection step, compute
// point planning under a budget, and the B_simple line of the profile summary (model/noise_scale's
// estimator), all with hand-computed values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "profiler/summary.hpp"
#include "profiler/sweep_plan.hpp"

using namespace gaccum;
using namespace gaccum::profiler;

static MemoryPoint point(Count b, Bytes peak) {
  MemoryPoint m;
  m.micro_batch = b;
  m.weights = 100;
  m.gradients = 100;
  m.optimizer_state = 200;  // static = 400
  m.peak = peak;
  m.activations = peak - 400;
  return m;
}

TEST_CASE("machine defaults: ranks, threads per rank, allreduce sizes", "[profiler][plan]") {
  CHECK(default_ranks(false, 2, 0) == std::vector<Count>{1, 2});
  CHECK(default_ranks(false, 1, 0) == std::vector<Count>{1});
  CHECK(default_ranks(false, 16, 0) == std::vector<Count>{1, 2, 4});
  CHECK(default_ranks(true, 16, 8) == std::vector<Count>{1, 2, 4, 8});
  CHECK(default_ranks(true, 16, 1) == std::vector<Count>{1});
  CHECK(default_threads_per_rank(2, {1, 2}) == 1);
  CHECK(default_threads_per_rank(16, {1, 2, 4}) == 4);
  CHECK(default_threads_per_rank(3, {1, 2}) == 1);
  CHECK(default_threads_per_rank(1, {1, 2}) == 1);
  // 4K x4 up to the first size >= max(16M, gradient): 4K 16K 64K 256K 1M 4M 16M.
  auto s = default_allreduce_sizes(2 * MiB);
  CHECK(s == std::vector<Bytes>{4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB});
  // A 20 MiB gradient needs 64M as the last size.
  CHECK(default_allreduce_sizes(20 * MiB).back() == 64 * MiB);
}

TEST_CASE("peak prediction is the line through the two largest points", "[profiler][plan]") {
  // One point: through (0, static=400) and (1, 1400): 400 + 1000 b.
  std::vector<MemoryPoint> pts{point(1, 1400)};
  CHECK(predict_peak(pts, 4) == Approx(4400));
  // Two points (2, 2400), (4, 4400): slope 1000, intercept 400.
  pts = {point(1, 1500), point(2, 2400), point(4, 4400)};
  CHECK(predict_peak(pts, 8) == Approx(8400));
  CHECK(predict_peak(pts, 3) == Approx(3400));
  // Largest b with 400 + 1000 b <= 6000 -> 5 (6 would need 6400).
  CHECK(predicted_largest_fitting(pts, 6000, 100) == 5);
  CHECK(predicted_largest_fitting(pts, 6400, 100) == 6);
  CHECK(predicted_largest_fitting(pts, 6400, 4) == 4);     // capped
  CHECK(predicted_largest_fitting(pts, 1000, 100) == 0);   // not even b = 1 (1400)
}

TEST_CASE("bisection step: predicted boundary, then one above it, else the midpoint", "[profiler][plan]") {
  CHECK(next_bisect_candidate(32, 33, 40) == 0);  // nothing left between
  CHECK(next_bisect_candidate(32, 64, 51) == 51);
  CHECK(next_bisect_candidate(51, 64, 51) == 52);  // boundary fitted: test the next one
  CHECK(next_bisect_candidate(32, 64, 80) == 48);  // prediction outside: midpoint
  CHECK(next_bisect_candidate(32, 64, 10) == 48);
  // A whole bisection on a true boundary of 51 with an exact prediction: 51 fits, 52 does not.
  Count lo = 32, hi = 64, steps = 0;
  while (Count c = next_bisect_candidate(lo, hi, 51)) {
    (c <= 51 ? lo : hi) = c;
    ++steps;
  }
  CHECK(lo == 51);
  CHECK(hi == 52);
  CHECK(steps == 2);
  // A bad prediction still converges (plain bisection).
  lo = 32, hi = 64, steps = 0;
  while (Count c = next_bisect_candidate(lo, hi, 1000)) {
    (c <= 37 ? lo : hi) = c;
    ++steps;
  }
  CHECK(lo == 37);
  CHECK(steps <= 6);
}

TEST_CASE("compute points: powers of two, the largest fitting size and refinement levels", "[profiler][plan]") {
  auto plan = plan_compute_points(51);
  CHECK(plan.required == std::vector<Count>{1, 2, 4, 8, 16, 32, 51});
  REQUIRE(plan.levels.size() >= 2);
  CHECK(plan.levels[0] == std::vector<Count>{3, 6, 12, 24, 41});
  CHECK(plan.levels[1] == std::vector<Count>{5, 7, 10, 14, 20, 28, 36, 46});
  CHECK(plan_compute_points(64).required == std::vector<Count>{1, 2, 4, 8, 16, 32, 64});
  CHECK(plan_compute_points(1).required == std::vector<Count>{1});
  CHECK(plan_compute_points(1).levels.empty());

  auto cost = [](Count b) { return 0.01 * static_cast<double>(b); };  // seconds
  // Budget 0: required only.
  CHECK(choose_compute_points(plan, cost, 0) == plan.required);
  // Level 1 costs 0.03+0.06+0.12+0.24+0.41 = 0.86 s; with 0.9 s it fits, level 2 (1.66 s) does not
  // and its cheapest points (5: 0.05) still fit partially? 0.86 + 0.05 = 0.91 > 0.9: no.
  auto pts = choose_compute_points(plan, cost, 0.9);
  CHECK(pts == std::vector<Count>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 41, 51});
  // With 0.5 s only the cheapest of level 1 that fit in order 3, 6, 12, 24 (0.45 s); then 41 does
  // not fit, and level 2 is not started.
  pts = choose_compute_points(plan, cost, 0.5);
  CHECK(pts == std::vector<Count>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 51});
}

TEST_CASE("time interpolation between measured points", "[profiler][plan]") {
  std::vector<std::pair<Count, Seconds>> pts{{1, 0.010}, {4, 0.040}, {8, 0.060}};
  CHECK(interpolate_time(pts, 2) == Approx(0.020));
  CHECK(interpolate_time(pts, 6) == Approx(0.050));
  CHECK(interpolate_time(pts, 16) == Approx(0.100));  // extrapolated through (4, 8)
  CHECK(interpolate_time({{2, 0.02}}, 8) == Approx(0.08));
}

TEST_CASE("profile summary prints the least-squares B_simple that tune uses", "[profiler][plan]") {
  // Mean |G_b|^2 at b = 2, 4, 16: 10, 8, 3 (one sample each). Smallest and largest size alone:
  // |G|^2 = (16*3 - 2*10)/14 = 2, tr(Sigma) = (10 - 3)/(1/2 - 1/16) = 16, B_simple 8.0.
  // Least squares on x = 1/b (0.5, 0.25, 0.0625), equal weights: mean x = 13/48, mean y = 7,
  // Sxx = 37/384, Sxy = 3/2 -> tr(Sigma) = 576/37 = 15.57, |G|^2 = 7 - 15.57 x 13/48 = 103/37
  // = 2.784, B_simple = 576/103 = 5.6 samples.
  auto summary_of = [](const Profile& p) {
    std::FILE* f = std::tmpfile();
    REQUIRE(f);
    print_summary(p, f);
    std::rewind(f);
    std::string text;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
    return text;
  };
  Profile p;
  p.grad_norms = {{2, {10}}, {4, {8}}, {16, {3}}};
  CHECK_THAT(summary_of(p), Catch::Contains("B_simple = tr(Sigma)/|G|^2 = 15.57 / 2.784 = 5.6 samples"));
  p.grad_norms = {{4, {1.0}}};
  CHECK_THAT(summary_of(p), Catch::Contains("B_simple: not estimable"));
}

namespace {
ComputePoint point_at(Count b, Count p, double seconds) {
  ComputePoint c;
  c.micro_batch = b;
  c.concurrent_ranks = p;
  // Three samples within +-1%: a tight interval, so the 20% neighbour rule decides.
  c.micro_step = TimingStats::from_samples({0.99 * seconds, seconds, 1.01 * seconds});
  return c;
}
}  // namespace

TEST_CASE("suspect compute points: neighbours and contention physics", "[profiler][plan]") {
  // t(b, 1) = 1 ms x b, t(b, 2) = 1.1 ms x b: consistent, nothing to re-measure.
  std::vector<ComputePoint> pts;
  for (Count b : {1, 2, 4, 8, 16}) pts.push_back(point_at(b, 1, 1e-3 * b));
  for (Count b : {1, 2, 4, 8, 16}) pts.push_back(point_at(b, 2, 1.1e-3 * b));
  CHECK(find_suspect_points(pts, 0.02).empty());

  // b = 8 at concurrency 1 read 12 ms: the line through b = 4 (4 ms) and 16 (16 ms) says 8 ms,
  // +50% > 20%; it also drags b = 4 off the line through b = 2 (2 ms) and 8 (12 ms), which
  // says 5.33 ms: -25%. Its concurrency-2 ratio is 8.8 / 12 = 0.73 < 0.8: (8, 2) as well
  // ((8, 1) is listed once).
  auto bumped = pts;
  bumped[3] = point_at(8, 1, 12e-3);
  auto s = find_suspect_points(bumped, 0.02);
  REQUIRE(s.size() == 3);
  CHECK(s[0].micro_batch == 4);
  CHECK(s[0].concurrent_ranks == 1);
  CHECK(s[0].why == "-25% from the line through micro_batch 2 and 8");
  CHECK(s[1].micro_batch == 8);
  CHECK(s[1].concurrent_ranks == 1);
  CHECK(s[1].why == "+50% from the line through micro_batch 4 and 16");
  CHECK(s[2].micro_batch == 8);
  CHECK(s[2].concurrent_ranks == 2);
  CHECK(s[2].why == "concurrency 2 reads 0.73x concurrency 1, the sweep's median ratio is 1.10x");

  // A stretch of concurrency 2 at 2x (issue 16's gpt-tiny profile): b = 2 and 4 read 2.2 ms x b;
  // the median ratio over b = 1, 2, 4, 8, 16 is 1.1, and 2.2 / 1.1 - 1 = +100% > 25%.
  auto stretch = pts;
  stretch[6] = point_at(2, 2, 4.4e-3);
  stretch[7] = point_at(4, 2, 8.8e-3);
  s = find_suspect_points(stretch, 0.02);
  std::vector<std::pair<Count, Count>> got;
  for (const auto& x : s) got.push_back({x.micro_batch, x.concurrent_ranks});
  CHECK(std::count(got.begin(), got.end(), std::make_pair(Count(2), Count(2))) == 1);
  CHECK(std::count(got.begin(), got.end(), std::make_pair(Count(4), Count(2))) == 1);
  CHECK(std::count(got.begin(), got.end(), std::make_pair(Count(4), Count(1))) == 1);
  for (const auto& x : s)
    if (x.concurrent_ranks == 1 && x.micro_batch == 4)
      CHECK(x.why == "concurrency 2 reads 2.20x concurrency 1, the sweep's median ratio is 1.10x");
}
