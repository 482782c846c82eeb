// Unit tests for the profile model on a synthetic profile (model_fixture.hpp): round trip
// (a measured point predicts its own measurement), hand-computed strategy costs, properties
// (memory independent of k, per-sample comm falling with k, throughput bounded by p x the
// single-rank compute throughput), cluster scaling, extrapolation flags and impossible inputs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/error.hpp"
#include "model/cluster.hpp"
#include "model/compute_fit.hpp"
#include "model/profile_model.hpp"
#include "model/spec_model.hpp"
#include "model_fixture.hpp"

using namespace gaccum;
using namespace gaccum::model;
using namespace gaccum::test;

namespace {

Config cfg(Count b, Count k, Count p, Strategy s = Strategy::overlap) {
  Config c;
  c.micro_batch = b;
  c.accum_steps = k;
  c.world_size = p;
  c.strategy = s;
  return c;
}

Cluster test_cluster() {
  Cluster c;
  c.name = "test";
  c.nodes = 4;
  c.gpus_per_node = 2;
  c.device_memory = 1 * GiB;
  c.intra_node = {10e-6, 1e9};
  c.inter_node = {20e-6, 0.5e9};
  return c;
}

}  // namespace

TEST_CASE("round trip: a measured profile point predicts its measurement", "[model][profile]") {
  auto prof = synthetic_profile();
  auto m = make_profile_model(prof);
  for (const auto& cp : prof.compute) {
    auto pred = m->predict(cfg(cp.micro_batch, 1, cp.concurrent_ranks));
    INFO("micro_batch " << cp.micro_batch << " concurrency " << cp.concurrent_ranks);
    CHECK(pred.time.compute == Approx(cp.micro_step.median));
    CHECK(pred.time.compute >= cp.micro_step.p10);
    CHECK(pred.time.compute <= cp.micro_step.p90);
    CHECK_FALSE(pred.micro_batch_extrapolated);
  }
  for (const auto& mp : prof.memory) {
    auto pred = m->predict(cfg(mp.micro_batch, 3, 1));
    CHECK(pred.memory.peak == mp.peak);
    CHECK(pred.memory.activations == mp.activations);
    CHECK(pred.memory.weights == kParamBytes);
  }
  // world_size 1: compute + optimizer, no communication.
  auto one = m->predict(cfg(4, 2, 1));
  CHECK(one.time.step_time == Approx(2 * t1(4) + 0.003));
  CHECK(one.time.comm_exposed == 0);
  CHECK(one.collectives_per_step == 0);
  CHECK(one.memory.comm_buffers == 0);
  CHECK(one.throughput == Approx(8 / (2 * t1(4) + 0.003)));
  CHECK(one.tokens_per_s == Approx(one.throughput * 40));
  // Band: the ends of each term's 95% median interval ({0.95, 1, 1.05} t: three samples cannot
  // reach 95%, so the interval is [min, max] = [0.95 t, 1.05 t]).
  CHECK(one.step_time_lo == Approx(0.95 * (2 * t1(4) + 0.003)));
  CHECK(one.step_time_hi == Approx(1.05 * (2 * t1(4) + 0.003)));
}

TEST_CASE("overlap, fused and every-step priced by hand at a profiled world_size", "[model][profile][strategy]") {
  auto m = make_profile_model(synthetic_profile());
  // p = 2, b = 4: t2(4) = 7.2 ms, backward 4.8 ms; buckets measured at 1.1 x line:
  //   c0 = 1.1 (100 us + 1.808 ms), c1 = 1.1 (100 us + 0.404 ms); ready at f0 = 1808000/2212000, 1.
  const double step = t2(4), bwd = step * 2 / 3;
  const double c0 = 1.1 * line_ar(kBucket0), c1 = 1.1 * line_ar(kBucket1);
  const double f0 = double(kBucket0) / double(kParamBytes);
  const double end0 = std::max(0.0, bwd * f0) + c0;
  const double end1 = std::max(end0, bwd) + c1;
  const double exposed_ideal = end1 - bwd;
  const double hidden_ideal = c0 + c1 - exposed_ideal;
  const double eff = 0.5;  // (10 + 4 - 12) / 4
  const double copies = 6 * 0.0035 / 21;
  const double opt = 0.0035;
  const double win = line_ar(8);  // the window's token-count allreduce

  auto ov = m->predict(cfg(4, 3, 2, Strategy::overlap));
  CHECK(ov.comm_source == CommSource::measured);
  CHECK(ov.overlap_efficiency == Approx(eff));
  CHECK(ov.time.comm_exposed == Approx(exposed_ideal + (1 - eff) * hidden_ideal + copies + win));
  CHECK(ov.time.comm_total == Approx(c0 + c1 + copies + win));
  CHECK(ov.time.compute == Approx(3 * step));
  CHECK(ov.time.step_time == Approx(3 * step + ov.time.comm_exposed + opt));
  CHECK(ov.collectives_per_step == 2);
  CHECK(ov.memory.comm_buffers == kParamBytes);

  auto fu = m->predict(cfg(4, 3, 2, Strategy::fused));
  CHECK(fu.time.comm_exposed == Approx(1.1 * line_ar(kParamBytes) + copies + win));
  CHECK(fu.collectives_per_step == 1);
  CHECK(fu.memory.peak == ov.memory.peak);

  auto ev = m->predict(cfg(4, 3, 2, Strategy::every_step));
  CHECK(ev.time.comm_exposed == Approx(3 * (exposed_ideal + (1 - eff) * hidden_ideal + copies) + win));
  CHECK(ev.collectives_per_step == 6);
  CHECK(ev.time.step_time > ov.time.step_time);
  // k = 1: every-step is overlap.
  CHECK(m->predict(cfg(4, 1, 2, Strategy::every_step)).time.step_time ==
        Approx(m->predict(cfg(4, 1, 2, Strategy::overlap)).time.step_time));
  // Band: bucket samples {0.9, 1, 1.1} t -> lo uses 0.92 t, hi 1.08 t.
  CHECK(ov.step_time_lo < ov.time.step_time);
  CHECK(ov.step_time_hi > ov.time.step_time);
}

TEST_CASE("CPU without an overlap measurement hides nothing", "[model][profile][overlap]") {
  auto m = make_profile_model(synthetic_profile(/*with_overlap=*/false));
  auto p = m->predict(cfg(4, 1, 2, Strategy::overlap));
  CHECK(p.overlap_efficiency == 0);
  const double copies = 6 * 0.0035 / 21;
  CHECK(p.time.comm_exposed == Approx(1.1 * line_ar(kBucket0) + 1.1 * line_ar(kBucket1) + copies + line_ar(8)));
  CHECK(std::any_of(m->info().notes.begin(), m->info().notes.end(),
                    [](const std::string& n) { return n.find("efficiency 0") != std::string::npos; }));
}

TEST_CASE("property: peak memory does not depend on accum_steps", "[model][property]") {
  auto m = make_profile_model(synthetic_profile());
  for (Strategy s : kAllStrategies)
    for (Count b : {1, 5, 16})
      for (Count p : {1, 2}) {
        const auto ref = m->predict(cfg(b, 1, p, s)).memory;
        for (Count k : {2, 3, 8, 64}) {
          const auto mem = m->predict(cfg(b, k, p, s)).memory;
          CHECK(mem.peak == ref.peak);
          CHECK(mem.activations == ref.activations);
        }
      }
}

TEST_CASE("property: per-sample communication falls as accum_steps grows", "[model][property]") {
  auto m = make_profile_model(synthetic_profile());
  for (Strategy s : {Strategy::overlap, Strategy::fused})
    for (Count b : {1, 4, 16}) {
      double prev = 1e30;
      for (Count k : {1, 2, 4, 8, 16}) {
        auto p = m->predict(cfg(b, k, 2, s));
        const double per_sample = p.time.comm_exposed / double(p.config.global_batch());
        CHECK(per_sample < prev);
        prev = per_sample;
      }
    }
  // every-step pays per micro-step: per-sample gradient comm stays the same (a non-token
  // workload, without the per-step token-count allreduce).
  auto prof = synthetic_profile();
  prof.workload.tokens_per_sample = 0;
  auto plain = make_profile_model(prof);
  auto e1 = plain->predict(cfg(4, 1, 2, Strategy::every_step));
  auto e8 = plain->predict(cfg(4, 8, 2, Strategy::every_step));
  CHECK(e8.time.comm_exposed / 64 == Approx(e1.time.comm_exposed / 8));
  CHECK(plain->predict(cfg(4, 1, 2, Strategy::fused)).time.comm_exposed ==
        Approx(1.1 * line_ar(kParamBytes) + 6 * 0.0035 / 21));
}

TEST_CASE("property: throughput never exceeds p x single-rank compute throughput", "[model][property]") {
  auto prof = synthetic_profile();
  Cluster cl = test_cluster();
  const std::vector<const Cluster*> clusters{nullptr, &cl};
  for (const Cluster* c : clusters) {
    auto m = make_profile_model(prof, c);
    for (Strategy s : kAllStrategies)
      for (Count b : {1, 3, 8, 16, 40})
        for (Count k : {1, 4})
          for (Count p : {1, 2, 3, 8}) {
            auto pred = m->predict(cfg(b, k, p, s));
            CHECK(pred.throughput <= double(p) * double(b) / t1(double(b)) * (1 + 1e-12));
          }
  }
}

TEST_CASE("world sizes beyond the profile: ring fit without a cluster, hierarchical with one", "[model][profile][cluster]") {
  auto prof = synthetic_profile();
  auto flat = make_profile_model(prof);
  auto p4 = flat->predict(cfg(4, 1, 4));
  CHECK(p4.comm_source == CommSource::ring_fit);
  CHECK(p4.world_size_extrapolated);
  CHECK(p4.extrapolated);
  CHECK_FALSE(p4.micro_batch_extrapolated);
  // Compute beyond the profiled concurrency: the largest profiled (2).
  CHECK(p4.time.compute == Approx(t2(4)));

  Cluster cl = test_cluster();
  auto m = make_profile_model(prof, &cl);
  CHECK(m->info().max_world_size == 8);
  CHECK(m->info().device_memory == 1 * GiB);
  // p = 2 is profiled: measured times, not the cluster's.
  CHECK(m->predict(cfg(4, 1, 2)).comm_source == CommSource::measured);
  // p = 8 = 4 nodes x 2: fused = hierarchical(8, 2) on all gradient bytes + copies.
  auto fu = m->predict(cfg(4, 1, 8, Strategy::fused));
  CHECK(fu.comm_source == CommSource::hierarchical);
  const auto hier = hierarchical_allreduce(8, 2, cl.intra_node, cl.inter_node);
  CHECK(fu.time.comm_exposed == Approx(hier.at(kParamBytes) + 6 * 0.0035 / 21 + hier.at(8)));
  CHECK_THROWS_AS(m->predict(cfg(4, 1, 9)), InputError);
}

TEST_CASE("micro_batch above the sweep is extrapolated by the stated rule", "[model][profile]") {
  auto m = make_profile_model(synthetic_profile());
  CHECK(m->info().measured_max_micro_batch == 16);
  auto p = m->predict(cfg(32, 1, 1));
  CHECK(p.micro_batch_extrapolated);
  CHECK(p.extrapolated);
  CHECK(p.time.compute == Approx(t1(32)));              // linear from the last two points
  CHECK(p.memory.activations == Bytes(activations(32)));  // linear activations
  // Between measured points: interpolation (t1 is linear, so exact).
  CHECK(m->predict(cfg(5, 1, 1)).time.compute == Approx(t1(5)));
  CHECK(m->predict(cfg(5, 1, 1)).memory.activations == Bytes(activations(5)));
}

TEST_CASE("non-linear activations fall back to piecewise-linear interpolation", "[model][memory]") {
  auto prof = synthetic_profile();
  // Convex: a floor of 600000 B (e.g. optimizer temporaries) until 100000 + 50000 b passes it.
  for (auto& mp : prof.memory) {
    mp.activations = std::max<Bytes>(600000, static_cast<Bytes>(activations(double(mp.micro_batch))));
    mp.peak = 4 * kParamBytes + mp.activations;
  }
  auto m = make_profile_model(prof);
  for (const auto& mp : prof.memory) CHECK(m->predict(cfg(mp.micro_batch, 1, 1)).memory.peak == mp.peak);
  // b = 14 lies between 12 and 16 on the linear part: exact; b = 10 straddles the kink at 10
  // (8: 600000, 12: 700000): the chord over-estimates, never under.
  CHECK(m->predict(cfg(14, 1, 1)).memory.activations == Bytes(activations(14)));
  CHECK(m->predict(cfg(10, 1, 1)).memory.activations == 650000);
  // Above the sweep: the last segment's line.
  CHECK(m->predict(cfg(20, 1, 1)).memory.activations == Bytes(activations(20)));
  CHECK(m->info().fit["memory"]["activations_rule"] == "piecewise");
}

TEST_CASE("noise scale from the profile's gradient norms", "[model][noise]") {
  auto m = make_profile_model(synthetic_profile());
  REQUIRE(m->info().noise_scale);
  CHECK(*m->info().noise_scale == Approx(32));
}

TEST_CASE("impossible inputs are InputErrors", "[model][profile]") {
  auto m = make_profile_model(synthetic_profile());
  CHECK_THROWS_AS(m->predict(cfg(0, 1, 1)), InputError);
  CHECK_THROWS_AS(m->predict(cfg(1, 0, 1)), InputError);
  CHECK_THROWS_AS(m->predict(cfg(1, 1, 0)), InputError);
  CHECK_THROWS_AS(m->predict(cfg(-3, 1, 1)), InputError);
  // No allreduce measured and no cluster: world_size 1 only.
  auto solo = make_profile_model(synthetic_profile(true, /*with_allreduce=*/false));
  CHECK(solo->info().max_world_size == 1);
  CHECK_THROWS_WITH(solo->predict(cfg(1, 1, 2)), Catch::Contains("world_size 2"));
  // A profile without compute measurements cannot be modelled.
  auto empty = synthetic_profile();
  empty.compute.clear();
  CHECK_THROWS_AS(make_profile_model(empty), ProfileError);
}

TEST_CASE("spec model: memory, compute and communication by hand", "[model][spec]") {
  TransformerSpec s;
  s.name = "small";
  s.layers = 2;
  s.hidden = 64;
  s.heads = 4;
  s.seq_len = 32;
  s.vocab = 100;
  s.dtype = Precision::bf16;
  s.optimizer = Optimizer::adam;
  s.tied_embeddings = false;
  s.mean_tokens_per_sample = 32;
  Cluster c = test_cluster();
  c.device_peak_flops = 1e12;
  c.device_memory_bandwidth = 1e11;
  auto m = make_spec_model(s, c, 0.5);
  const auto sh = s.shape();
  const double n = double(transformer_params(sh));
  auto p = m->predict(cfg(4, 2, 1));
  CHECK(p.memory.weights == Bytes(2 * n));
  CHECK(p.memory.gradients == Bytes(2 * n));
  CHECK(p.memory.optimizer_state == Bytes(12 * n));  // fp32 master + two fp32 moments
  CHECK(p.memory.comm_buffers == 0);
  CHECK(double(p.memory.activations) == Approx(activation_bytes(sh, 4, 2, Checkpointing::none)).margin(1));
  CHECK(p.time.compute == Approx(2 * training_flops(sh, 4, Checkpointing::none) / 0.5e12));
  CHECK(p.time.optimizer == Approx(n * (2 * 2 + 8 + 16 + 2) / 1e11));
  CHECK(p.tokens_per_s == Approx(p.throughput * 32));
  // p = 8 over 4 nodes: fused = hierarchical on the gradient bytes + 6 passes of copies.
  auto f = m->predict(cfg(4, 2, 8, Strategy::fused));
  const auto h = hierarchical_allreduce(8, 2, c.intra_node, c.inter_node);
  CHECK(f.time.comm_exposed == Approx(h.at(Bytes(2 * n)) + 6 * 2 * n / 1e11 + h.at(8)));
  CHECK(f.memory.comm_buffers == Bytes(2 * n));
  CHECK_THROWS_AS(m->predict(cfg(4, 2, 9)), InputError);
  CHECK(m->info().max_micro_batch_fitting > 0);
  // Without a peak FLOP/s the spec cannot be priced.
  Cluster no_peak = test_cluster();
  CHECK_THROWS_WITH(make_spec_model(s, no_peak, 0.5), Catch::Contains("peak_tflops"));
  CHECK_THROWS_WITH(make_spec_model(s, c, 0), Catch::Contains("--mfu"));
}

TEST_CASE("a bf16 profile prices bf16 plans from its measured states and refuses fp32", "[model][profile][precision]") {
  // The profiler's --precision bf16 (workloads/optimizer.hpp): 2-byte weights and gradients,
  // fp32 master + two Adam slots = 12 bytes per parameter of optimizer state.
  auto prof = synthetic_profile();
  const Bytes psi = kParamBytes / 4;  // 553000 parameters
  prof.workload.dtype = "bfloat16";
  prof.workload.param_bytes = 2 * psi;
  for (auto& b : prof.workload.param_tensor_bytes) b /= 2;
  for (auto& m : prof.memory) {
    m.weights = 2 * psi;
    m.gradients = 2 * psi;
    m.optimizer_state = 12 * psi;
    m.peak = m.weights + m.gradients + m.optimizer_state + m.activations;
  }
  auto m = make_profile_model(prof);
  REQUIRE(m->info().plans.precisions == std::vector<Precision>{Precision::bf16});
  CHECK(m->info().plans.auto_precisions == std::vector<Precision>{Precision::bf16});
  // 12 psi is what adam implies at bf16: no complaint about the optimizer state.
  for (const auto& n : m->info().notes) CHECK_THAT(n, !Catch::Contains("optimizer_state"));

  auto c = cfg(4, 2, 1);
  auto pred = m->predict(c);
  CHECK(*pred.config.precision == Precision::bf16);
  CHECK(pred.memory.weights == 2 * psi);
  CHECK(pred.memory.optimizer_state == 12 * psi);
  CHECK(pred.memory.peak == 16 * psi + static_cast<Bytes>(activations(4)));
  // zero1 at world_size 2: one unit of 553000 parameters (even), each rank holds half the state.
  auto z = cfg(4, 2, 2);
  z.sharding = parse_sharding("zero1");
  CHECK(m->predict(z).memory.optimizer_state == 6 * psi);

  c.precision = Precision::fp32;
  CHECK_THROWS_WITH(m->predict(c), Catch::Contains("this profile measured bf16") && Catch::Contains("--precision fp32"));
}

TEST_CASE("a checkpointed profile prices checkpointed plans only", "[model][profile][checkpointing]") {
  auto prof = synthetic_profile();
  prof.workload.hyper["checkpoint"] = 1;  // profile --checkpointing full
  auto m = make_profile_model(prof);
  REQUIRE(m->info().plans.checkpointings == std::vector<Checkpointing>{Checkpointing::full});
  CHECK(m->info().plans.auto_checkpointings == std::vector<Checkpointing>{Checkpointing::full});
  auto c = cfg(4, 2, 1);
  auto pred = m->predict(c);
  CHECK(*pred.config.checkpointing == Checkpointing::full);
  // The measured activations stand as they are (the recompute is in the measured compute).
  CHECK(pred.memory.activations == static_cast<Bytes>(activations(4)));
  CHECK(pred.time.compute == Approx(2 * t1(4)));
  c.checkpointing = Checkpointing::none;
  CHECK_THROWS_WITH(m->predict(c), Catch::Contains("with full activation checkpointing") &&
                                       Catch::Contains("--checkpointing none"));
  // Without the hyper-parameter: none, as every profile before it.
  CHECK(make_profile_model(synthetic_profile())->info().plans.checkpointings ==
        std::vector<Checkpointing>{Checkpointing::none});
}

TEST_CASE("a prediction names the unconfirmed measurements it is priced from", "[model][profile][trust]") {
  // Compute knots b in {1,2,3,4,6,8,12,16} at concurrencies 1 and 2 (model_fixture.hpp).
  auto prof = synthetic_profile();
  prof.unconfirmed = {{"group two", 2, 0}, {"point (1, 3)", 1, 3}};
  auto m = make_profile_model(prof);
  auto names = [&](Count b, Count p) { return m->predict(cfg(b, 2, p)).unconfirmed; };
  CHECK(names(4, 1).empty());                                     // knot 4 at concurrency 1
  CHECK(names(5, 1).empty());                                     // knots 4 and 6
  CHECK(names(3, 1) == std::vector<std::string>{"point (1, 3)"});  // the point itself
  CHECK(names(20, 1).empty());                                    // beyond: knots 12 and 16
  // p = 2: concurrency 2's knots, concurrency 1's lower bound and group 2's collectives.
  CHECK(names(4, 2) == std::vector<std::string>{"group two"});
  CHECK(names(3, 2) == std::vector<std::string>{"group two", "point (1, 3)"});
  // Beyond the profiled world sizes: the largest group prices compute and collectives.
  CHECK(names(4, 8) == std::vector<std::string>{"group two"});
  // A launched job's phase (world_size 0) covers every prediction.
  prof.unconfirmed = {{"launched job", 0, 0}};
  CHECK(make_profile_model(prof)->predict(cfg(4, 1, 1)).unconfirmed == std::vector<std::string>{"launched job"});
}

TEST_CASE("ComputeModel::sources: the knots a micro-step time is read from", "[model][profile][trust]") {
  std::vector<std::string> notes;
  const auto cm = ComputeModel::fit(synthetic_profile().compute, notes);
  using P = std::vector<std::pair<Count, Count>>;
  CHECK(cm.sources(4, 1) == P{{1, 4}});
  CHECK(cm.sources(5, 1) == P{{1, 4}, {1, 6}});
  CHECK(cm.sources(20, 1) == P{{1, 12}, {1, 16}});
  CHECK(cm.sources(1, 2) == P{{2, 1}, {1, 1}});
  CHECK(cm.sources(7, 3) == P{{2, 6}, {2, 8}, {1, 6}, {1, 8}});  // beyond concurrency 2: the largest
}

TEST_CASE("unconfirmed[] of an older profile: strings read back with their group and point", "[model][profile][trust]") {
  auto j = to_json(synthetic_profile());
  j["unconfirmed"] = nlohmann::json::array({"world_size 2 micro_batch 8: 3.00 ms, measured again 4.00 ms (x)",
                                            "world_size 1 group (compute, optimizer): measured while busy",
                                            "launched job: measured while busy"});
  const Profile p = profile_from_json(j, "test");
  REQUIRE(p.unconfirmed.size() == 3);
  CHECK(p.unconfirmed[0].world_size == 2);
  CHECK(p.unconfirmed[0].micro_batch == 8);
  CHECK(p.unconfirmed[1].world_size == 1);
  CHECK(p.unconfirmed[1].micro_batch == 0);
  CHECK(p.unconfirmed[2].world_size == 0);
  CHECK(p.unconfirmed[2].what == "launched job: measured while busy");
  CHECK_FALSE(p.confirmed());
  // Written back as objects, read back the same.
  const Profile q = profile_from_json(to_json(p), "test");
  CHECK(q.unconfirmed[0].micro_batch == 8);
  CHECK(q.unconfirmed[1].what == p.unconfirmed[1].what);
}

// A staged model (core/profile.hpp unit_tensors + MemoryPoint::phases): zero3 gathers one unit
// at a time, so its peak is the phase where activations + the gathered units are largest.
// Units {tensors 0,1 | 2,3 | 4} = {404000, 1208000, 600000} B; A = activations(b) spread over the
// 10 phases (outside 1000 B; forward u: (u+1)A/4; after it the same, the loss A; backward u:
// (u+1)A/4). At b = 4 (A = 300000), p = 2 (nothing padded), gathered + activations per phase:
//   F0 1612000 + 75000, after F0 1208000 + 75000, F1 1808000 + 150000, after F1 600000 + 150000,
//   F2 600000 + 225000, loss 0 + 300000, B0 404000 + 75000, B1 1612000 + 150000,
//   B2 1808000 + 225000 = 2033000 (the largest).
TEST_CASE("zero3 on a staged model: the peak phase's activations and gathered units, by hand", "[model][profile][sharded]") {
  auto prof = synthetic_profile();
  prof.workload.unit_tensors = {2, 2, 1};
  for (auto& m : prof.memory) {
    const Bytes a = m.activations;
    m.phases = {1000, a / 4, a / 4, a / 2, a / 2, 3 * a / 4, a, a / 4, a / 2, 3 * a / 4};
  }
  auto m = make_profile_model(prof);
  Config c = cfg(4, 2, 2, Strategy::every_step);
  c.sharding = {Sharding::zero3, 0};
  const auto z3 = m->predict(c);
  CHECK(z3.memory.gathered == 1808000);
  CHECK(z3.memory.activations == 225000);
  CHECK(z3.memory.peak_phase == "the head's backward, the head and block 1 gathered");
  // Shards: (50500 + 151000 + 75000) params x 4 B = 1106000 B of weights and of gradients, twice
  // that of Adam state; buffers 2 x the largest unit's 1208000 B.
  CHECK(z3.memory.weights == 1106000);
  CHECK(z3.memory.gradients == 1106000);
  CHECK(z3.memory.optimizer_state == 2212000);
  CHECK(z3.memory.comm_buffers == 2 * 1208000);
  CHECK(z3.memory.peak == 1106000 + 1106000 + 2212000 + 2416000 + 2033000);
  // Collectives: 3 units gathered in every forward and backward and reduce-scattered, k = 2.
  CHECK(z3.collectives_per_step == 2 * (3 + 3 + 3));
  // zero2 keeps the buckets (2) and the whole-window activations.
  c.sharding = {Sharding::zero2, 0};
  const auto z2 = m->predict(c);
  CHECK(z2.memory.activations == 300000);
  CHECK(z2.memory.gathered == 0);
  // Without phases (here one point lacks them) the model falls back to two of the largest
  // buckets gathered beside the window's activation peak: 2 x 1808000 B, capped at the model.
  prof.memory.front().phases.clear();
  auto plain = make_profile_model(prof);
  c.sharding = {Sharding::zero3, 0};
  CHECK(plain->predict(c).memory.gathered == kParamBytes);
}

// An optimizer step's temporaries (core/profile.hpp OptimizerTransient): linear in the stepped
// tensor's elements; a sharded plan steps one flat shard per unit, so its step rises above the
// window when the largest shard's temporaries outweigh the activations.
TEST_CASE("a sharded plan's optimizer step: temporaries over the largest shard, by hand", "[model][profile][sharded]") {
  // Adam on fp32 (as measured on CPU): 8 B per element (sqrt and division temporaries) + 12 B.
  const OptimizerTransient t{16384, 8 * 16384 + 12, 8 * 32768 + 12};
  CHECK(t.at(16384) == 131084);
  CHECK(t.at(79396) == 8 * 79396 + 12);
  CHECK(t.at(0) == 0);
  CHECK(OptimizerTransient{16384, 100, 50}.at(1 << 20) == 0);  // never negative

  auto prof = synthetic_profile();
  prof.optimizer_transient = t;
  auto m = make_profile_model(prof);
  // zero2 over 2 ranks: buckets 1808000 B and 404000 B = 452000 and 101000 params; the largest
  // shard 226000 params, whose step takes 8 x 226000 + 12 = 1808012 B, above b = 1's activations
  // (150000 B): the step is the peak, 1658012 B above them.
  Config c = cfg(1, 2, 2, Strategy::every_step);
  c.sharding = {Sharding::zero2, 0};
  const auto z2 = m->predict(c);
  CHECK(z2.memory.activations == 150000);
  CHECK(z2.memory.optimizer_step == 1808012 - 150000);
  CHECK(z2.memory.peak == z2.memory.weights + z2.memory.gradients + z2.memory.optimizer_state +
                              z2.memory.comm_buffers + 1808012);
  CHECK_THAT(z2.memory.peak_phase, Catch::Contains("the optimizer step") && Catch::Contains("226000 parameters"));
  // DDP: its step is inside the measured window (no term), and a profile without the measurement
  // (older files) prices no step.
  c.sharding = {Sharding::none, 0};
  CHECK(m->predict(c).memory.optimizer_step == 0);
  c.sharding = {Sharding::zero2, 0};
  CHECK(make_profile_model(synthetic_profile())->predict(c).memory.optimizer_step == 0);
  // At b = 16 the activations (900000 B) stay below the step: still the step; at 4 shards the
  // largest shard is 113000 parameters (904012 B): the window's 900000 B are below it by 4012 B.
  Config c4 = cfg(16, 2, 4, Strategy::every_step);
  c4.sharding = {Sharding::zero2, 0};
  CHECK(m->predict(c4).memory.optimizer_step == 4012);
}
