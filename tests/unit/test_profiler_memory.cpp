// Unit tests for the profiler's in-process probes: the memory sweep's exact static parts
// (weights, gradients, optimizer state vs hand-computed parameter bytes), activations growing
// with micro_batch, the sweep's bounds and its "does not fit" error, gradient norms, the
// iteration driver at world_size 1, the bandwidth formulas, and the rank plan/result round trip.
#include <catch2/catch.hpp>

#include <chrono>

#include <thread>

#include <torch/torch.h>

#include <filesystem>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "profiler/grad_norm_probe.hpp"
#include "core/canary.hpp"
#include "engine/iteration_driver.hpp"
#include "profiler/memory_sweep.hpp"
#include "profiler/rank_worker.hpp"

using namespace gaccum;
using namespace gaccum::profiler;

static workloads::WorkloadConfig config(const std::string& name) {
  workloads::WorkloadConfig c;
  c.name = name;
  c.device = "cpu";
  return c;
}

TEST_CASE("static memory is exact: weights, gradients, Adam = 2x, SGD = 1x parameter bytes", "[profiler][memory]") {
  torch::set_num_threads(1);
  // gpt-tiny: V*d + S*d + n*(12 d^2 + 13 d) + 2d + d*V with d=128, V=512, S=64, n=2
  //         = 65536 + 8192 + 2*(196608 + 1664) + 256 + 65536 = 536064 parameters.
  const Bytes P = 536064 * 4;
  MemorySweep adam(config("gpt-tiny"), Optimizer::adam, 1e-3);
  CHECK(adam.workload().identity().param_count == 536064);
  CHECK(adam.static_parts().weights == P);
  CHECK(adam.static_parts().gradients == P);
  CHECK(adam.static_parts().optimizer_state == 2 * P);
  MemorySweep sgd(config("mlp-small"), Optimizer::sgd, 1e-2);
  // mlp-small 256-512-512-10: 256*512+512 + 512*512+512 + 512*10+10 = 399370 parameters; the
  // workload also keeps its data stream's teacher matrix, [10, 256] float64 = 20480 bytes.
  CHECK(sgd.static_parts().weights == 399370 * 4 + 10 * 256 * 8);
  CHECK(sgd.static_parts().gradients == 399370 * 4);
  CHECK(sgd.static_parts().optimizer_state == 399370 * 4);
}

TEST_CASE("activation memory grows with micro_batch; peak = static + activations", "[profiler][memory]") {
  torch::set_num_threads(1);
  MemorySweep ms(config("gpt-tiny"), Optimizer::adam, 1e-3);
  std::vector<MemoryPoint> pts;
  for (Count b : {1, 2, 4}) {
    auto p = ms.measure(b, 1);
    REQUIRE(p);
    CHECK(p->peak == p->weights + p->gradients + p->optimizer_state + p->activations);
    CHECK(p->reserved_peak == 0);
    pts.push_back(*p);
  }
  CHECK(pts[0].activations > 0);
  CHECK(pts[1].activations > pts[0].activations);
  CHECK(pts[2].activations > pts[1].activations);
  // Fixed shapes: the activation bytes grow (almost) linearly, so 4 costs about twice 2.
  const double ratio = double(pts[2].activations) / double(pts[1].activations);
  CHECK(ratio > 1.6);
  CHECK(ratio < 2.4);
  // The same window measured twice gives the same bytes (deterministic allocator counts).
  auto again = ms.measure(2, 1);
  REQUIRE(again);
  CHECK(again->peak == pts[1].peak);
}

TEST_CASE("the sweep finds the largest micro_batch under the cap", "[profiler][memory]") {
  torch::set_num_threads(1);
  // gpt-tiny's peak is affine in micro_batch (activations dominate the window's peak); an MLP's
  // is not at small b (the optimizer step's temporaries dominate), which the sweep also handles.
  MemorySweep ms(config("gpt-tiny"), Optimizer::adam, 1e-3);
  auto p4 = ms.measure(4, 1);
  auto p8 = ms.measure(8, 1);
  REQUIRE(p4);
  REQUIRE(p8);
  const Bytes per_sample = (p8->peak - p4->peak) / 4;
  // A cap between the peaks at 10 and 11 samples.
  MemorySweepOptions o;
  o.cap = p8->peak + 2 * per_sample + per_sample / 2;
  o.max_micro_batch = 64;
  auto r = ms.run(o);
  CHECK(r.max_fitting == 10);
  CHECK(r.stop == SweepStop::memory_cap);
  for (const auto& m : r.points) CHECK((m.peak <= o.cap) == (m.micro_batch <= 10));
  // Doubling measured 1, 2, 4, 8; 16 is predicted over the cap and not run; the bisection
  // measured 10 and 11 (the predicted boundary and the one above it).
  std::vector<Count> measured;
  for (const auto& m : r.points) measured.push_back(m.micro_batch);
  CHECK(measured == std::vector<Count>{1, 2, 4, 8, 10, 11});
  // A spent time budget ends the doubling after two points; the predicted boundary is then
  // measured together with its upper neighbour.
  o.time_budget = 1e-9;
  r = ms.run(o);
  CHECK(r.stop == SweepStop::time_budget);
  CHECK(r.max_fitting == 10);
  measured.clear();
  for (const auto& m : r.points) measured.push_back(m.micro_batch);
  CHECK(measured == std::vector<Count>{1, 2, 10, 11});
  o.time_budget = 0;
  // --max-micro-batch bounds it (not a power of two: the sweep still tries it).
  MemorySweep small(config("mlp-small"), Optimizer::sgd, 1e-2);
  o.cap = 1ull << 40;
  o.max_micro_batch = 6;
  r = small.run(o);
  CHECK(r.max_fitting == 6);
  CHECK(r.stop == SweepStop::max_micro_batch);
  // An explicit list is measured as given.
  o.micro_batches = {1, 3};
  r = small.run(o);
  CHECK(r.points.size() == 2);
  CHECK(r.max_fitting == 3);
  CHECK(r.stop == SweepStop::explicit_list);
}

TEST_CASE("a cap below the static memory fails with the needed and the capped bytes", "[profiler][memory]") {
  MemorySweep ms(config("gpt-tiny"), Optimizer::adam, 1e-3);
  MemorySweepOptions o;
  o.cap = 1 * MiB;
  CHECK_THROWS_AS(ms.run(o), InfeasibleError);
  CHECK_THROWS_WITH(ms.run(o), Catch::Contains("does not fit even at micro_batch 1") &&
                                   Catch::Contains("needs 8.18 MiB (8577024 bytes") && Catch::Contains("cap 1.00 MiB"));
  // Above static but below the b = 1 peak: the measured peak is named.
  o.cap = ms.static_parts().peak + 1;
  CHECK_THROWS_WITH(ms.run(o), Catch::Contains("does not fit even at micro_batch 1"));
}

TEST_CASE("gradient norms: independent micro-batches, two sizes, positive", "[profiler][gradnorm]") {
  CHECK(default_grad_norm_sizes(51) == std::vector<Count>{4, 32});
  CHECK(default_grad_norm_sizes(12) == std::vector<Count>{1, 8});
  CHECK(default_grad_norm_sizes(3) == std::vector<Count>{1, 2});
  CHECK(default_grad_norm_sizes(1) == std::vector<Count>{1});
  auto w = workloads::make_workload(config("mlp-small"));
  auto g = measure_grad_norms(*w, {1, 8}, 4, 5);
  REQUIRE(g.size() == 2);
  CHECK(g[0].sq_norms.size() == 4);
  for (const auto& p : g)
    for (double v : p.sq_norms) CHECK(v > 0);
  // Distinct samples give distinct norms.
  CHECK(g[0].sq_norms[0] != g[0].sq_norms[1]);
  // The same call again is deterministic.
  auto w2 = workloads::make_workload(config("mlp-small"));
  CHECK(measure_grad_norms(*w2, {1, 8}, 4, 5)[1].sq_norms == g[1].sq_norms);
}

TEST_CASE("iteration driver at world_size 1: phases, totals, warm-up not recorded", "[profiler][driver]") {
  engine::IterationDriver d(nullptr, torch::Device("cpu"), 2, 3);
  int calls = 0;
  auto r = d.run(2, [&](engine::PhaseClock& clock, int it) {
    ++calls;
    CHECK(it == calls - 1);
    clock.mark();
    clock.mark();
  });
  CHECK(calls == 5);
  REQUIRE(r.phases.size() == 2);
  CHECK(r.phases[0].samples.size() == 3);
  CHECK(r.total.samples.size() == 3);
  for (size_t i = 0; i < 3; ++i)
    CHECK(r.total.samples[i] == Approx(r.phases[0].samples[i] + r.phases[1].samples[i]));
  CHECK_THROWS_AS(d.run(3, [](engine::PhaseClock& clock, int) { clock.mark(); }), RuntimeFailure);
  CHECK(d.max_over_ranks({{1, 2}, {3, 4}}) == std::vector<std::vector<double>>{{1, 2}, {3, 4}});
}

namespace {

// A phase clock the test body moves by hand: phases last exactly what the body says.
class ManualClock final : public engine::PhaseClock {
 public:
  void begin() override { marks_ = {now_}; }
  void mark() override { marks_.push_back(now_); }
  std::vector<Seconds> intervals() override {
    std::vector<Seconds> out;
    for (std::size_t i = 1; i < marks_.size(); ++i) out.push_back(marks_[i] - marks_[i - 1]);
    return out;
  }
  void advance(Seconds s) { now_ += s; }

 private:
  Seconds now_ = 0;
  std::vector<Seconds> marks_;
};

}  // namespace

TEST_CASE("adaptive runs judge the total, or one phase when asked", "[profiler][driver]") {
  // Phase 0 alternates 0 and 20 ms, phase 1 is 2 ms (a manual clock: no sleeping, no load
  // dependence). Judged by the total, the median's interval spans 2..22 ms and never gets within
  // +-50%: the point runs to max_iters. Judged by phase 1 alone it is within +-50% at min_iters.
  engine::IterationDriver d(nullptr, torch::Device("cpu"), 0, 4, std::make_unique<ManualClock>());
  auto body = [](int, engine::PhaseClock& clock, int it) {
    auto& manual = dynamic_cast<ManualClock&>(clock);
    manual.advance(it % 2 == 0 ? 0 : 20e-3);
    clock.mark();
    manual.advance(2e-3);
    clock.mark();
  };
  engine::AdaptivePolicy policy;
  policy.warmup = 0;
  policy.min_iters = 4;
  policy.max_iters = 12;
  policy.ci_target = 0.5;
  const auto by_total = d.run_interleaved(1, 2, policy, body);
  CHECK(by_total.points[0].total.samples.size() == 12);
  CHECK_FALSE(by_total.converged[0]);
  policy.judged_phase = 1;
  const auto by_phase = d.run_interleaved(1, 2, policy, body);
  CHECK(by_phase.points[0].phases[1].samples.size() == 4);
  CHECK(by_phase.converged[0]);
}

TEST_CASE("algbw and busbw follow nccl-tests", "[profiler][driver]") {
  // 1 MB in 1 ms: algbw 1 GB/s; p = 4: busbw = 1 * 2*3/4 = 1.5 GB/s; p = 2: 1 GB/s; p = 1: 0.
  CHECK(engine::algbw(1000000, 0.001) == Approx(1e9));
  CHECK(engine::busbw(1000000, 0.001, 4) == Approx(1.5e9));
  CHECK(engine::busbw(1000000, 0.001, 2) == Approx(1e9));
  CHECK(engine::busbw(1000000, 0.001, 1) == 0);
  CHECK(engine::algbw(10, 0) == 0);
}

TEST_CASE("rank plan round-trips through its JSON args file", "[profiler][rank]") {
  RankPlan p;
  p.workload.name = "gpt-tiny";
  p.workload.overrides = {{"layers", 1}};
  p.threads_per_rank = 3;
  p.micro_batches = {1, 2, 5};
  p.sizes = {4096, 65536};
  p.buckets = {1048576, 20000};
  p.fused = 1068576;
  p.job_dir = "/tmp/x";
  auto q = RankPlan::from_json(p.to_json());
  CHECK(q.to_json() == p.to_json());
  CHECK(q.micro_batches == p.micro_batches);
  CHECK(q.workload.overrides["layers"] == 1);
  auto bad = p.to_json();
  bad.erase("iters");
  CHECK_THROWS_WITH(RankPlan::from_json(bad), Catch::Contains("iters"));
}
