// Unit tests for the GPU compute model (model/gpu_compute.hpp), the catalogue and calibration
// files (model/gpu_device.hpp), the spec model on a catalogue GPU, and the calibration fit
// (model/calibration.hpp): hand-computed FLOPs, bytes and times of one small model, wave
// quantisation, the efficiency curve over micro_batch, exposed all-gathers at a small
// micro_batch, and a fit that recovers known parameters from runs it generated.
#include <catch2/catch.hpp>

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/calibration.hpp"
#include "model/cluster.hpp"
#include "model/gpu_compute.hpp"
#include "model/gpu_device.hpp"
#include "model/recompute_mix.hpp"
#include "model/spec_model.hpp"
#include "shape_fixture.hpp"

using namespace gaccum;
using namespace gaccum::model;

namespace {

GpuEfficiency test_efficiency() { return {0.8, 0.9, 0.5, 0.7, 10e-6, 0.6}; }

// h 64, 4 heads, 2 kv heads (h_kv 32), gated f 128, s 16, V 100, 2 layers, rotary, no dropout.
TransformerShape small_shape() { return test::small_llama_shape(); }

const GpuDevice& h100() { return *find_gpu("h100-sxm-80gb"); }

}  // namespace

TEST_CASE("catalogue: ids, aliases, datasheet numbers and matching raw numbers", "[gpu][catalogue]") {
  REQUIRE(find_gpu("h100-sxm-80gb") != nullptr);
  CHECK(find_gpu("H100_80GB") == find_gpu("h100-sxm-80gb"));  // llm-foundry's spelling
  CHECK(find_gpu("a100_40gb")->id == "a100-sxm-40gb");
  CHECK(find_gpu("tpu-v5") == nullptr);
  CHECK(h100().bf16_flops == Approx(989.4e12));
  CHECK(h100().fp8_flops == Approx(1978.9e12));
  CHECK(h100().memory == Bytes(81559) << 20);
  CHECK(find_gpu("a100-sxm-80gb")->fp8_flops == 0);  // no fp8 tensor cores on Ampere
  for (const auto& d : gpu_catalogue()) {
    CHECK(!d.datasheet.empty());
    CHECK(d.bf16_flops > 0);
    CHECK(d.hbm_bandwidth > 0);
  }
  // Raw numbers (examples/clusters' H100: 989.4 TFLOP/s, 81559 MiB) match the SXM part; an
  // H200 (same peak, 141 GB) does not match the 80 GB part.
  CHECK(match_gpu(989.4e12, Bytes(81559) << 20)->id == "h100-sxm-80gb");
  CHECK(match_gpu(989.4e12, Bytes(143771) << 20)->id == "h200-sxm-141gb");
  CHECK(match_gpu(123e12, Bytes(80) << 30) == nullptr);
}

TEST_CASE("wave quantisation and one GEMM's time by hand", "[gpu][gemm]") {
  const GpuComputeModel m(h100(), test_efficiency());
  // 4096 x 4096 output in 128 x 256 tiles: 32 x 16 = 512 tiles on 132 SMs = 4 waves of 528 slots.
  CHECK(m.wave_efficiency({4096, 4096, 4096}) == Approx(512.0 / 528.0));
  // 132 tiles exactly: one full wave.
  CHECK(m.wave_efficiency({128 * 132, 256, 64}) == Approx(1.0));
  // One tile: 1 of 132 SMs busy.
  CHECK(m.wave_efficiency({100, 100, 100}) == Approx(1.0 / 132.0));
  // Compute-bound: 2 x 4096^3 FLOPs at 989.4e12 x 0.8 x 512/528, + 10 us.
  const double big = 2.0 * 4096.0 * 4096.0 * 4096.0 / (989.4e12 * 0.8 * 512.0 / 528.0) + 10e-6;
  CHECK(m.gemm_time({4096, 4096, 4096}, 989.4e12, 2) == Approx(big));
  // Memory-bound: one token through a 4096 x 4096 weight reads the weight (2 x 4096^2 bytes) at
  // 3350e9 x 0.7 B/s (plus the 4096-element input and output), + 10 us.
  const double bytes = 2.0 * (4096.0 + 4096.0 * 4096.0 + 4096.0);
  CHECK(m.gemm_time({1, 4096, 4096}, 989.4e12, 2) == Approx(bytes / (3350e9 * 0.7) + 10e-6));
}

TEST_CASE("one micro-step's FLOPs by hand: gated MLP, GQA, causal FlashAttention, each checkpointing mode",
          "[gpu][flops]") {
  const GpuComputeModel m(h100(), test_efficiency());
  const auto t = small_shape();
  // T = b s = 32 tokens. Per layer forward GEMMs: 2 T (h (h + 2 h_kv) + h h + h 2f + f h)
  //   = 64 (64 x 128 + 4096 + 64 x 256 + 128 x 64) = 64 x 36864 = 2,359,296.
  // Causal FlashAttention forward 2 b s^2 h = 2 x 2 x 256 x 64 = 65,536; backward 2.5 x that.
  // Head 2 T V h = 2 x 32 x 100 x 64 = 409,600 (backward twice).
  const auto none = m.micro_step(t, 2, Checkpointing::none, Precision::bf16);
  CHECK(none.forward.flops == Approx(2 * (2359296.0 + 65536.0) + 409600.0));
  CHECK(none.backward.flops == Approx(2 * (2 * 2359296.0 + 2.5 * 65536.0) + 2 * 409600.0));
  // Full recomputation re-runs every layer's forward in backward.
  const auto full = m.micro_step(t, 2, Checkpointing::full, Precision::bf16);
  CHECK(full.backward.flops == Approx(none.backward.flops + 2 * (2359296.0 + 65536.0)));
  CHECK(full.forward.flops == Approx(none.forward.flops));
  // Per-op selective (torchtitan's): wk, wo and w3 again in backward, attention kept:
  // 2 T (h h_kv + h_q h + f h) = 64 (2048 + 4096 + 8192) = 917,504 per layer.
  const auto op = m.micro_step(t, 2, Checkpointing::selective_op, Precision::bf16);
  CHECK(op.backward.flops == Approx(none.backward.flops + 2 * 917504.0));
  CHECK(op.backward.attention == Approx(none.backward.attention));
  // ... and every memory-bound kernel of the layer's forward: 2 layers x 32 tokens x 2432 bytes
  // (the next test's per-token sum) at 3350e9 x 0.7 B/s.
  CHECK(op.backward.memory == Approx(none.backward.memory + 2 * 32 * 2432.0 / (3350e9 * 0.7)));
  // Selective: FlashAttention's backward recomputes already, nothing added.
  CHECK(m.micro_step(t, 2, Checkpointing::selective, Precision::bf16).backward.flops == Approx(none.backward.flops));
  // Plain MLP of f = 128: 2 T (h 192... ) with f h + h f instead of 2f h + f h.
  auto plain = t;
  plain.gated_mlp = false;
  const auto p = m.micro_step(plain, 2, Checkpointing::none, Precision::bf16);
  CHECK(p.forward.flops == Approx(2 * (64.0 * (8192 + 4096 + 8192 + 8192) + 65536.0) + 409600.0));
  // Standard attention: 4 b s^2 h forward (no causal saving), backward twice; selective adds a forward.
  auto std_attn = t;
  std_attn.flash_attention = false;
  const auto s0 = m.micro_step(std_attn, 2, Checkpointing::none, Precision::bf16);
  const auto s1 = m.micro_step(std_attn, 2, Checkpointing::selective, Precision::bf16);
  CHECK(s0.forward.flops == Approx(2 * (2359296.0 + 131072.0) + 409600.0));
  CHECK(s1.backward.flops == Approx(s0.backward.flops + 2 * 131072.0));
}

TEST_CASE("sliding-window attention by hand: FlashAttention computes the window's causal pairs", "[gpu][flops][window]") {
  const GpuComputeModel m(h100(), test_efficiency());
  auto t = small_shape();  // s 16, h_q 64, b 2
  auto w = t;
  w.attention_window = 4;
  // Causal pairs over s = 16 queries, each attending to min(i + 1, 4) keys: 4 x 5 / 2 + 12 x 4 =
  // 58, against the formula's s w - w^2 / 2 = 64 - 8 = 56 (continuous) and the full 16 x 8 = 128.
  CHECK(w.causal_attended_keys() * 16 == Approx(56.0));
  CHECK(t.causal_attended_keys() * 16 == Approx(128.0));
  // Without the mask (the MFU convention): 4 keys per query instead of 16.
  CHECK(w.attended_keys() == Approx(4.0));
  CHECK(t.attended_keys() == Approx(16.0));
  // Attention forward FLOPs 4 b s keys h_q: 4 x 2 x 16 x 3.5 x 64 = 28,672 per layer (65,536 full).
  const auto full = m.micro_step(t, 2, Checkpointing::none, Precision::bf16);
  const auto win = m.micro_step(w, 2, Checkpointing::none, Precision::bf16);
  CHECK(win.forward.flops == Approx(2 * (2359296.0 + 28672.0) + 409600.0));
  CHECK(win.backward.flops == Approx(2 * (2 * 2359296.0 + 2.5 * 28672.0) + 2 * 409600.0));
  CHECK(win.forward.attention < full.forward.attention);
  CHECK(win.forward.gemm == Approx(full.forward.gemm));
  // Half the layers windowed (Gemma 2): keys are the layers' mean, 10 without the mask.
  auto half = w;
  half.windowed_layers = 0.5;
  CHECK(half.attended_keys() == Approx(10.0));
  CHECK(half.causal_attended_keys() == Approx((8.0 + 3.5) / 2));
  // The MFU convention: 4 L b s keys h_q = 4 x 2 x 2 x 16 x 4 x 64 attention FLOPs in forward.
  CHECK(forward_flops(w, 2) == Approx(forward_flops(t, 2) - 4.0 * 2 * 2 * 16 * (16 - 4) * 64));
  // A window as long as the sequence changes nothing; standard attention computes the whole
  // masked score matrix whatever the window.
  auto longw = t;
  longw.attention_window = 16;
  CHECK(m.micro_step(longw, 2, Checkpointing::none, Precision::bf16).forward.flops == Approx(full.forward.flops));
  auto std_w = w, std_full = t;
  std_w.flash_attention = std_full.flash_attention = false;
  CHECK(m.micro_step(std_w, 2, Checkpointing::none, Precision::bf16).forward.flops ==
        Approx(m.micro_step(std_full, 2, Checkpointing::none, Precision::bf16).forward.flops));
}

TEST_CASE("one micro-step's memory-bound bytes by hand", "[gpu][bytes]") {
  const GpuComputeModel m(h100(), test_efficiency());
  const auto t = small_shape();
  // Per layer and token, forward (e = 2): norms 4 h e = 512, residuals 6 h e = 768, SwiGLU 3 f e
  // = 768, rotary 2 (h + h_kv) e = 384: 2432 bytes. Outside: embedding 2 h e = 256 and the loss
  // V (e + 8) = 1000 per token. Forward: 2 layers x 32 tokens x 2432 + 32 x 1256 = 195,840 bytes.
  const double bw = 3350e9 * 0.7;
  const auto g = m.micro_step(t, 2, Checkpointing::none, Precision::bf16);
  CHECK(g.forward.memory == Approx(195840.0 / bw));
  CHECK(g.backward.memory == Approx((2 * 2 * 32 * 2432.0 + 32 * 1256.0) / bw));
  // A fused loss changes the memory it keeps, not the time priced (see gpu_compute.cpp).
  auto fused = t;
  fused.loss = LossKind::fused;
  CHECK(m.micro_step(fused, 2, Checkpointing::none, Precision::bf16).backward.memory == Approx(g.backward.memory));
  // Kernel overhead: per layer 5 + 1 (rotary) memory-bound kernels forward, twice backward;
  // 3 outside each pass; GEMMs and attention carry their own.
  CHECK(g.forward.overhead == Approx((2 * 6 + 3) * 10e-6));
  CHECK(g.backward.overhead == Approx((2 * 12 + 3) * 10e-6));
  // Optimizer step: bytes per parameter x parameters at the memory-bound rate.
  CHECK(m.optimizer_step(1e9, 16) == Approx(16e9 / bw));
}

TEST_CASE("GEMM efficiency grows with micro_batch; fp8 and fp32 use their peaks", "[gpu][curve]") {
  const GpuComputeModel m(h100(), test_efficiency());
  TransformerShape t;  // LLaMA-2-7B-like
  t.layers = 32;
  t.hidden = 4096;
  t.heads = 32;
  t.ffn_hidden = 11008;
  t.gated_mlp = true;
  t.seq_len = 512;
  t.vocab = 32000;
  t.flash_attention = true;
  double last = 0;
  for (Count b : {1, 2, 4, 8}) {
    const double e = m.micro_step(t, b, Checkpointing::none, Precision::bf16).gemm_efficiency();
    CHECK(e > last);
    CHECK(e <= 0.8 + 1e-12);
    last = e;
  }
  const auto bf16 = m.micro_step(t, 4, Checkpointing::none, Precision::bf16);
  const auto fp8 = m.micro_step(t, 4, Checkpointing::none, Precision::fp8);
  const auto fp32 = m.micro_step(t, 4, Checkpointing::none, Precision::fp32);
  CHECK(fp8.time() < bf16.time());
  CHECK(fp32.time() > bf16.time());
  const GpuComputeModel a100(*find_gpu("a100-sxm-80gb"), test_efficiency());
  CHECK_THROWS_AS(a100.micro_step(t, 4, Checkpointing::none, Precision::fp8), InputError);
}

namespace {

TransformerSpec spec_7b() {
  TransformerSpec s;
  s.name = "llama-7b-like";
  s.layers = 32;
  s.hidden = 4096;
  s.heads = 32;
  s.ffn_hidden = 11008;
  s.gated_mlp = true;
  s.seq_len = 4096;
  s.vocab = 32000;
  s.flash_attention = true;
  s.bias = false;
  s.rms_norm = true;
  s.learned_positions = false;
  s.dropout = false;
  s.tied_embeddings = false;
  s.dtype = Precision::bf16;
  s.mean_tokens_per_sample = 4096;
  return s;
}

Cluster h100_cluster(Count nodes) {
  nlohmann::json j = {{"name", "t"},
                      {"nodes", nodes},
                      {"gpus_per_node", 8},
                      {"device", "h100-sxm-80gb"},
                      {"intra_node", {{"bandwidth_GBps", 370}, {"latency_us", 1}}},
                      {"inter_node", {{"bandwidth_GBps", 46}, {"latency_us", 5}}}};
  return cluster_from_json(j, "cluster");
}

// A hopper run of spec_7b() cut to `layers` layers at 1024 tokens, "published" at the GPU model's
// own tokens/s under `truth` (what a fit must recover).
CalibrationRun synthetic_run(std::string id, Count layers, Cluster cluster, Config config, const GpuEfficiency& truth) {
  CalibrationRun r;
  r.id = std::move(id);
  r.model = fmt::format("L{}", layers);
  r.gpu_id = "h100-sxm-80gb";
  r.generation = GpuGeneration::hopper;
  r.spec = spec_7b();
  r.spec.layers = layers;
  r.spec.seq_len = 1024;
  r.spec.mean_tokens_per_sample = 1024;
  r.cluster = std::move(cluster);
  r.config = std::move(config);
  r.config.checkpointing = Checkpointing::none;
  r.config.precision = Precision::bf16;
  r.published = predicted_tokens_per_gpu(predict_run(r, truth), r);
  return r;
}

// fit_generation over `runs` (hopper) with `starts` starts and `evaluations` evaluations.
GpuCalibration fit_hopper(const std::vector<CalibrationRun>& runs, const std::string& from, int starts, int evaluations) {
  std::vector<const CalibrationRun*> ptrs;
  for (const auto& r : runs) ptrs.push_back(&r);
  FitOptions o;
  o.starts = starts;
  o.max_evaluations = evaluations;
  return fit_generation(ptrs, GpuGeneration::hopper, from, o);
}

}  // namespace

TEST_CASE("a cluster names a catalogue GPU; the spec model prices compute with the GPU model", "[gpu][spec]") {
  const Cluster c = h100_cluster(8);
  CHECK(c.gpu_id == "h100-sxm-80gb");
  CHECK(c.gpu_named);
  CHECK(*c.device_peak_flops == Approx(989.4e12));
  CHECK(c.device_memory == Bytes(81559) << 20);
  nlohmann::json bad = {{"name", "t"}, {"nodes", 1}, {"gpus_per_node", 8}, {"device", "h100-sxm"},
                        {"intra_node", {{"bandwidth_GBps", 370}, {"latency_us", 1}}}};
  CHECK_NOTHROW(cluster_from_json(bad, "c"));  // an alias
  bad["device"] = "h1000";
  CHECK_THROWS_WITH(cluster_from_json(bad, "c"), Catch::Contains("device.id") && Catch::Contains("h100-sxm-80gb"));

  const auto gpu = make_spec_model(spec_7b(), c);
  const auto flat = make_spec_model(spec_7b(), c, 0.4);
  Config cfg(1, 8, 64, Strategy::every_step);
  cfg.sharding = {Sharding::zero3, 0};
  const auto p = gpu->predict(cfg);
  CHECK(p.compute.gpu_model);
  CHECK(p.compute.gemm_efficiency > 0);
  CHECK(p.compute.mfu > 0);
  CHECK(p.compute.mfu < 1);
  CHECK(p.memory.allocator_reserve > 0);
  CHECK(p.memory.allocated() + p.memory.allocator_reserve == p.memory.peak);
  // The largest transient block at b = 1: the fp32 logits, 4 bytes x 4096 tokens x 32000.
  CHECK(p.memory.allocator_reserve == Bytes(4) * 4096 * 32000);
  const auto q = flat->predict(cfg);
  CHECK(!q.compute.gpu_model);
  CHECK(q.memory.allocator_reserve == 0);
  CHECK(p.time.compute != Approx(q.time.compute));
  // fp8 is a plan on H100 (not under a flat MFU).
  Config f8 = cfg;
  f8.precision = Precision::fp8;
  CHECK(gpu->predict(f8).time.compute < p.time.compute);
  CHECK_THROWS_AS(flat->predict(f8), InputError);
}

TEST_CASE("exposed all-gathers: a small micro_batch cannot hide zero3's per-layer collectives", "[gpu][comm]") {
  const auto m = make_spec_model(spec_7b(), h100_cluster(8));
  // The same global batch of 512 samples on 64 GPUs: micro_batch 1 x 8 vs micro_batch 4 x 2.
  auto at = [&](Count b, Count k) {
    Config c(b, k, 64, Strategy::every_step);
    c.sharding = {Sharding::zero3, 0};
    c.checkpointing = Checkpointing::full;
    return m->predict(c);
  };
  const auto small = at(1, 8), large = at(4, 2);
  // Per sample, b = 1 exposes more communication than b = 4: it all-gathers every layer 4x as
  // often for the same samples, behind a quarter of the compute each time.
  CHECK(small.time.comm_exposed / 8 > large.time.comm_exposed / 8);
  CHECK(small.time.comm_exposed > 0);
  CHECK(small.compute.gemm_efficiency < large.compute.gemm_efficiency);
}

TEST_CASE("error summaries by hand", "[gpu][calibration]") {
  const auto s = summarise_errors({0.1, -0.2, 0.05, 0.3});
  CHECK(s.rows == 4);
  CHECK(s.median_abs == Approx(0.15));
  CHECK(s.p90_abs == Approx(0.27));  // sorted |e| 0.05 0.1 0.2 0.3: position 2.7 -> 0.2 + 0.7 x 0.1
  CHECK(s.max_abs == Approx(0.3));
  CHECK(s.signed_mean == Approx(0.0625));
}

TEST_CASE("calibration files: round trip, bounds, borrowed generations", "[gpu][calibration]") {
  GpuCalibration c;
  c.generation = GpuGeneration::ampere;
  c.efficiency = test_efficiency();
  c.fitted = true;
  c.from = "test";
  c.in_sample = summarise_errors({0.1, -0.1});
  const auto j = calibrations_to_json({c}, "2026-12-04T00:00:00Z");
  const auto back = calibrations_from_json(j, "f");
  REQUIRE(back.size() == 1);
  CHECK(back[0].generation == GpuGeneration::ampere);
  CHECK(back[0].efficiency.gemm == Approx(0.8));
  CHECK(back[0].efficiency.overhead == Approx(10e-6));
  CHECK(back[0].in_sample.median_abs == Approx(0.1));
  auto bad = j;
  bad["generations"]["ampere"]["gemm"] = 1.5;
  CHECK_THROWS_WITH(calibrations_from_json(bad, "f"), Catch::Contains("generations.ampere.gemm"));
  bad = j;
  bad["generations"]["volta"] = bad["generations"]["ampere"];
  CHECK_THROWS_WITH(calibrations_from_json(bad, "f"), Catch::Contains("volta"));
  // Blackwell and CDNA3 have no published runs: they borrow and say so.
  CHECK(!shipped_calibration(GpuGeneration::blackwell).fitted);
  CHECK_THAT(shipped_calibration(GpuGeneration::cdna3).from, Catch::Contains("not calibrated"));
}

TEST_CASE("the fit recovers known efficiencies from runs they generated", "[gpu][calibration][fit]") {
  // Six runs of two model sizes at several micro_batches on 8-64 H100s, their "published"
  // tokens/s the GPU model's own at known parameters; a fit from the shipped start recovers them.
  const GpuEfficiency truth{0.72, 0.8, 0.35, 0.6, 25e-6, 0.5};
  std::vector<CalibrationRun> runs;
  int i = 0;
  for (Count layers : {8, 24})
    for (Count b : {1, 4, 16}) {
      Config c(b, 2, layers == 8 ? 8 : 64, Strategy::every_step);
      c.sharding = {Sharding::zero3, 0};
      runs.push_back(synthetic_run(fmt::format("r{}", i++), layers, h100_cluster(layers == 8 ? 1 : 8), c, truth));
    }
  const auto fit = fit_hopper(runs, "synthetic", 2, 3000);
  CHECK(fit.fitted);
  CHECK(fit.in_sample.max_abs < 0.01);
  CHECK(fit.efficiency.gemm == Approx(truth.gemm).epsilon(0.05));
}

TEST_CASE("one-GPU runs communicate nothing: overlap (and fp8 without fp8 runs) keep the shipped values", "[gpu][calibration][fit]") {
  // Runs like bench/gpu_truth.py's: one GPU, micro_batch 1-8, published at the model's own
  // tokens/s with another overlap than the shipped one; the fit cannot see overlap and keeps it.
  GpuEfficiency truth = shipped_calibration(GpuGeneration::hopper).efficiency;
  truth.gemm = 0.65;
  truth.overlap = 0.2;
  std::vector<CalibrationRun> runs;
  for (Count b : {1, 2, 4, 8})
    runs.push_back(synthetic_run(fmt::format("one-gpu-b{}", b), 8, h100_cluster(1), Config(b, 4, 1, Strategy::overlap), truth));
  const auto fit = fit_hopper(runs, "one gpu", 1, 400);
  CHECK(fit.efficiency.overlap == shipped_calibration(GpuGeneration::hopper).efficiency.overlap);
  CHECK(fit.efficiency.fp8 == shipped_calibration(GpuGeneration::hopper).efficiency.fp8);
  CHECK(fit.from == "one gpu; kept from the shipped calibration: fp8 (no fp8 run), overlap (no run on more than one GPU)");
  CHECK(fit.in_sample.max_abs < 0.05);
}

TEST_CASE("recomputing a fraction of the layers: f of the way from none to full, by hand", "[gpu][recompute]") {
  Prediction full, none;
  full.memory.peak = 20, none.memory.peak = 100;
  full.memory.activations = 10, none.memory.activations = 90;
  full.time.step_time = 10, none.time.step_time = 8;
  full.time.compute = 9, none.time.compute = 7;
  full.throughput = 100, full.tokens_per_s = 1000, full.compute.mfu = 0.4;
  // f = 1/4: peak 100 - 80/4 = 80, activations 70, step 8 + 2/4 = 8.5 s, compute 7.5 s; throughput
  // 100 x 10 / 8.5 = 117.65 samples/s, MFU 0.4 x 10 / 8.5 = 0.4706.
  const auto q = mix_recompute(full, none, 0.25);
  CHECK(q.memory.peak == 80);
  CHECK(q.memory.activations == 70);
  CHECK(q.time.step_time == Approx(8.5));
  CHECK(q.time.compute == Approx(7.5));
  CHECK(q.throughput == Approx(1000.0 / 8.5));
  CHECK(q.tokens_per_s == Approx(10000.0 / 8.5));
  CHECK(q.compute.mfu == Approx(4.0 / 8.5));
  // Pipeline stages: each stage's memory mixed, the peak the heaviest stage of the mix.
  full.parallel.stages.resize(2), none.parallel.stages.resize(2);
  full.parallel.stages[0].memory.peak = 30, none.parallel.stages[0].memory.peak = 50;
  full.parallel.stages[1].memory.peak = 20, none.parallel.stages[1].memory.peak = 90;
  full.parallel.peak_stage = 0;
  const auto s = mix_recompute(full, none, 0.5);
  CHECK(s.parallel.stages[0].memory.peak == 40);
  CHECK(s.parallel.stages[1].memory.peak == 55);
  CHECK(s.parallel.peak_stage == 1);
  CHECK(s.memory.peak == 55);
}
