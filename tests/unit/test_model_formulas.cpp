// Unit tests for the cost model's formulas against hand-computed numbers: ring and hierarchical
// allreduce and the ring fit, curves (piecewise-linear, isotonic, least squares), overlap
// efficiency and bucket exposure, strategy sync costs, noise scale, transformer parameters,
// Korthikanti activations and FLOPs.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/buckets.hpp"
#include "core/error.hpp"
#include "model/allreduce.hpp"
#include "model/allreduce_table.hpp"
#include "model/compute_fit.hpp"
#include "model/curve.hpp"
#include "model/noise_scale.hpp"
#include "model/overlap.hpp"
#include "model/strategy_cost.hpp"
#include "model/transformer.hpp"
#include "shape_fixture.hpp"

using namespace gaccum;
using namespace gaccum::model;

TEST_CASE("ring allreduce: 2(p-1) alpha + 2(p-1)/p S / beta", "[model][allreduce]") {
  const LinkParams link{10e-6, 1e9};
  // p = 4, S = 1e6 B: 6 x 10 us + 1.5 x 1e6 / 1e9 s = 60 us + 1.5 ms.
  CHECK(ring_allreduce_time(1000000, 4, link) == Approx(60e-6 + 1.5e-3));
  // p = 2: 2 alpha + S / beta.
  CHECK(ring_allreduce_time(4000000, 2, link) == Approx(20e-6 + 4e-3));
  CHECK(ring_allreduce_time(4000000, 1, link) == 0);
  auto c = ring_allreduce(8, link);
  CHECK(c.latency == Approx(140e-6));
  CHECK(c.seconds_per_byte == Approx(14.0 / 8.0 / 1e9));
}

TEST_CASE("hierarchical allreduce: intra reduce-scatter, inter ring on the 1/g shard, intra allgather", "[model][allreduce]") {
  const LinkParams intra{1e-6, 100e9}, inter{5e-6, 10e9};
  // p = 16 = 2 nodes x 8, S = 8e8 B:
  //   intra RS + AG: 2 x 7 x 1 us = 14 us; 2 x 7/8 x 8e8 / 1e11 = 0.014 s
  //   inter: 2 x 1 x 5 us = 10 us;        2 x 1/2 x (8e8 / 8) / 1e10 = 0.01 s
  const double want = 0.014 + 0.01 + 24e-6;
  CHECK(hierarchical_allreduce(16, 8, intra, inter).at(800000000) == Approx(want));
  // Inside one node it is the intra-node ring.
  CHECK(hierarchical_allreduce(8, 8, intra, inter).at(800000000) == Approx(ring_allreduce_time(800000000, 8, intra)));
  // Nodes are filled first: 12 ranks = a full node + 4; the full node sets the pace (same as 16).
  CHECK(hierarchical_allreduce(12, 8, intra, inter).at(800000000) == Approx(want));
  // One GPU per node: a ring across nodes.
  CHECK(hierarchical_allreduce(4, 1, intra, inter).at(1000) == Approx(ring_allreduce_time(1000, 4, inter)));
  CHECK(hierarchical_allreduce(1, 8, intra, inter).at(1000) == 0);
}

TEST_CASE("ring fit recovers alpha and beta from exact times", "[model][allreduce]") {
  const LinkParams truth{20e-6, 2e9};
  for (Count p : {2, 4}) {
    std::vector<std::pair<Bytes, Seconds>> pts;
    for (Bytes s = 4 * KiB; s <= 64 * MiB; s *= 4) pts.emplace_back(s, ring_allreduce_time(s, p, truth));
    auto f = fit_ring(p, pts);
    CHECK(f.link.latency == Approx(20e-6).epsilon(1e-9));
    CHECK(f.link.bandwidth == Approx(2e9).epsilon(1e-9));
    CHECK(f.max_rel_residual < 1e-9);
  }
  // A negative intercept is clamped: bandwidth-only fit.
  auto f = fit_ring(2, {{1000, 1e-6}, {2000, 3e-6}});
  CHECK(f.link.latency == 0);
  CHECK(f.link.bandwidth > 0);
}

TEST_CASE("curves: piecewise-linear with linear extrapolation, isotonic pooling, least squares", "[model][curve]") {
  auto c = make_piecewise({4, 1, 2}, {10, 4, 6});
  CHECK(c(1) == 4);
  CHECK(c(1.5) == Approx(5));
  CHECK(c(3) == Approx(8));
  CHECK(c(8) == Approx(18));   // last segment's slope 2
  CHECK(c(0) == Approx(2));    // first segment's slope 2
  CHECK(isotonic_increasing({1, 3, 2, 4}) == std::vector<double>{1, 2.5, 2.5, 4});
  CHECK(isotonic_increasing({1, 2, 3}) == std::vector<double>{1, 2, 3});
  auto l = fit_line({1, 2, 3}, {3, 5, 7});
  CHECK(l.a0 == Approx(1));
  CHECK(l.a1 == Approx(2));
  CHECK(l.max_abs_residual < 1e-12);
  // y = {0, 1, 0} on x = {0, 1, 2}: a0 = 1/3, a1 = 0, residuals -1/3, 2/3, -1/3.
  auto m = fit_line({0, 1, 2}, {0, 1, 0});
  CHECK(m.a0 == Approx(1.0 / 3));
  CHECK(m.a1 == Approx(0).margin(1e-12));
  CHECK(m.max_abs_residual == Approx(2.0 / 3));
}

TEST_CASE("compute extrapolation: line through the last two points, proportional if flat", "[model][compute]") {
  auto c = make_piecewise({8, 16}, {0.010, 0.018});
  CHECK(extend_time_curve(c, 32) == Approx(0.034));   // slope 1 ms per sample
  CHECK(extend_time_curve(c, 12) == Approx(0.014));
  // Below the first point: within [t1 b / b1, t1].
  CHECK(extend_time_curve(c, 4) == Approx(0.006));
  CHECK(extend_time_curve(c, 1) == Approx(0.003));
  auto steep = make_piecewise({2, 4}, {0.010, 0.030});
  CHECK(extend_time_curve(steep, 1) == Approx(0.005));  // the line gives 0: clamped to t1 b / b1
  auto flat = make_piecewise({8, 16}, {0.010, 0.009});
  CHECK(extend_time_curve(flat, 32) == Approx(0.009 * 2));
}

TEST_CASE("overlap efficiency: hidden / min(backward, comm), clamped to [-1, 1]", "[model][overlap]") {
  CHECK(overlap_efficiency(0.100, 0.040, 0.110) == Approx(0.75));  // hidden 30 ms of 40
  CHECK(overlap_efficiency(0.100, 0.040, 0.140) == 0);             // exactly serial
  CHECK(overlap_efficiency(0.100, 0.040, 0.150) == Approx(-0.25)); // 10 ms slower than serial
  CHECK(overlap_efficiency(0.100, 0.040, 0.250) == -1);            // at most twice the comm
  CHECK(overlap_efficiency(0.100, 0.040, 0.090) == 1);             // faster than possible
  CHECK(overlap_efficiency(0.100, 0.0, 0.100) == 1);
}

TEST_CASE("measured collective table: each size's median plus the pooled excess", "[model][allreduce]") {
  auto point = [](Bytes bytes, std::vector<Seconds> samples, Seconds time) {
    AllreducePoint a;
    a.backend = "gloo";
    a.world_size = 2;
    a.bytes = bytes;
    a.samples = std::move(samples);
    a.time = time;
    return a;
  };
  // 1 MB: 1, 1, 1, 5 ms (median 1, one sample 4 ms late); 2 MB: 2 ms four times; 4 MB: no
  // samples, recorded 3 ms. Pooled excess = (0 + 0 + 0 + 4 + 0 x 4) / 8 = 0.5 ms.
  const MeasuredAllreduce t(2, {point(1000000, {1e-3, 1e-3, 5e-3, 1e-3}, 2e-3), point(2000000, {2e-3, 2e-3, 2e-3, 2e-3}, 2e-3),
                                point(4000000, {}, 3e-3)});
  CHECK(t.excess() == Approx(0.5e-3));
  CHECK(t.time(1000000).mid == Approx(1.5e-3));  // not the 1 MB mean (2 ms), not its median (1 ms)
  CHECK(t.time(2000000).mid == Approx(2.5e-3));
  CHECK(t.time(4000000).mid == Approx(3e-3));    // no samples: the recorded time
  CHECK(t.time(1500000).mid == Approx(2e-3));    // between sizes: linear
  // Without a tail the table is the medians.
  const MeasuredAllreduce quiet(2, {point(1000000, {1e-3, 1.2e-3, 0.8e-3}, 1e-3)});
  CHECK(quiet.excess() == Approx(0));
  CHECK(quiet.time(1000000).mid == Approx(1e-3));
}

TEST_CASE("bucket exposure: serial comm stream behind gradient readiness", "[model][overlap]") {
  // Buckets of 1, 2, 1 MB: ready at 25%, 75%, 100% of a 100 ms backward; comm 10, 30, 20 ms.
  //   b0 25 -> 35, b1 75 -> 105, b2 105 -> 125: exposed 25 ms of 60; ideally hidden 35 ms.
  auto f = ready_fractions({1000000, 2000000, 1000000});
  REQUIRE(f.size() == 3);
  CHECK(f[0] == Approx(0.25));
  CHECK(f[1] == Approx(0.75));
  CHECK(f[2] == 1.0);
  const std::vector<Seconds> c{0.010, 0.030, 0.020};
  auto full = bucket_exposure_of(f, 0.100, 1.0, c);
  CHECK(full.comm_total == Approx(0.060));
  CHECK(full.exposed == Approx(0.025));
  CHECK(bucket_exposure_of(f, 0.100, 0.5, c).exposed == Approx(0.025 + 0.5 * 0.035));
  CHECK(bucket_exposure_of(f, 0.100, 0.0, c).exposed == Approx(0.060));
  // Overlapping slower than serial (e < 0): the ideally hidden 35 ms cost 1.25 x.
  CHECK(bucket_exposure_of(f, 0.100, -0.25, c).exposed == Approx(0.025 + 1.25 * 0.035));
  CHECK(bucket_exposure_of(f, 0.100, -3.0, c).exposed == Approx(0.025 + 2.0 * 0.035));  // bounded
  // Backward shorter than the comm: everything after it is exposed.
  CHECK(bucket_exposure_of(f, 0.0, 1.0, c).exposed == Approx(0.060));
}

TEST_CASE("strategy sync costs", "[model][strategy]") {
  const Exposure x{0.060, 0.025};
  auto ov = overlap_sync(x, 0.002, 3);
  CHECK(ov.comm_exposed == Approx(0.027));
  CHECK(ov.comm_total == Approx(0.062));
  CHECK(ov.collectives == 3);
  auto ev = every_step_sync(x, 0.002, 3, 4);
  CHECK(ev.comm_exposed == Approx(4 * 0.027));
  CHECK(ev.comm_total == Approx(4 * 0.062));
  CHECK(ev.collectives == 12);
  auto fu = fused_sync(0.050, 0.002);
  CHECK(fu.comm_exposed == Approx(0.052));
  CHECK(fu.collectives == 1);
  CHECK(optimizer_passes(Optimizer::adam) == 21);
  CHECK(optimizer_passes(Optimizer::sgd) == 9);
  CHECK(optimizer_passes(Optimizer::adamw) == 23);
  CHECK(optimizer_passes(Optimizer::lamb) == 21);  // profiled as adam
}

TEST_CASE("DDP buckets: reverse order, first 1 MiB, later 25 MiB", "[model][buckets]") {
  // 10 tensors of 3 MiB: first bucket closes at the first tensor (3 >= 1 MiB), then 9 tensors:
  // 27 MiB >= 25 after 9 tensors (9 x 3 = 27).
  std::vector<Bytes> t(10, 3 * MiB);
  auto b = assign_buckets(t);
  REQUIRE(b.size() == 2);
  CHECK(b[0].bytes == 3 * MiB);
  CHECK(b[1].bytes == 27 * MiB);
}

TEST_CASE("noise scale: McCandlish App. A.1 on norms with a known answer", "[model][noise]") {
  // E|G_b|^2 = |G|^2 + tr(Sigma)/b with |G|^2 = 2, tr(Sigma) = 64: b = 4 -> 18, b = 32 -> 4.
  auto n = noise_scale_two_sizes(4, 18, 32, 4);
  CHECK(n.grad_sq_norm == Approx(2));
  CHECK(n.trace_sigma == Approx(64));
  CHECK(n.b_simple == Approx(32));
  std::vector<std::string> notes;
  auto est = estimate_noise_scale({{4, {17, 19}}, {32, {3.5, 4.5}}}, notes);
  REQUIRE(est);
  CHECK(est->b_simple == Approx(32));
  // A third size on the same line changes nothing.
  est = estimate_noise_scale({{4, {18}}, {8, {10}}, {32, {4}}}, notes);
  REQUIRE(est);
  CHECK(est->b_simple == Approx(32));
  CHECK_FALSE(estimate_noise_scale({{4, {18}}}, notes));
  CHECK_FALSE(estimate_noise_scale({{4, {4}}, {32, {18}}}, notes));  // norms growing with b: not positive
  CHECK(steps_factor(32, 32) == Approx(2));
  CHECK(steps_factor(32, 320) == Approx(1.1));
}

TEST_CASE("transformer parameter counts", "[model][transformer]") {
  // gpt-tiny (workloads/gpt.cpp): 2 layers, d 128, seq 64, vocab 512, untied head: 536064.
  TransformerShape tiny;
  tiny.layers = 2;
  tiny.hidden = 128;
  tiny.heads = 4;
  tiny.seq_len = 64;
  tiny.vocab = 512;
  tiny.tied_embeddings = false;
  CHECK(layer_params(tiny) == 12 * 128 * 128 + 13 * 128);
  CHECK(transformer_params(tiny) == 536064);
  // GPT-2 small, tied: 124,439,808 (the published checkpoint's count).
  TransformerShape g2;
  g2.layers = 12;
  g2.hidden = 768;
  g2.heads = 12;
  g2.seq_len = 1024;
  g2.vocab = 50257;
  g2.tied_embeddings = true;
  CHECK(transformer_params(g2) == 124439808);
  CHECK(transformer_param_tensors(g2).size() == 2 + 12 * 12 + 2);
}

TEST_CASE("Korthikanti activations for a small config", "[model][transformer]") {
  // s = 4, b = 2, h = 8, a = 2, fp16 (e = 2) with dropout: per layer s b h (34 + 5 a s / h)
  // = 64 x (34 + 5) = 2496 B; selective 64 x 34 = 2176; full 2 s b h = 128.
  TransformerShape t;
  t.layers = 3;
  t.hidden = 8;
  t.heads = 2;
  t.seq_len = 4;
  t.vocab = 10;
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::none) == Approx(2496));
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::selective) == Approx(2176));
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::full) == Approx(128));
  // fp32 (e = 4): s b h (4 x 16 + 2) + a s^2 b (2 x 4 + 1) = 64 x 66 + 64 x 9 = 4800.
  CHECK(layer_activation_bytes(t, 2, 4, Checkpointing::none) == Approx(4800));
  // Whole model: 3 layers + emb dropout mask s b h (64) + final LN and head inputs 2 e s b h
  // (256) + PyTorch's fp32 cross-entropy at its peak: log_softmax's fp32 output and the fp32
  // gradient handed to it, 8 s b V (640); the gradient it writes (4 s b V) is the transient block.
  CHECK(activation_bytes(t, 2, 2, Checkpointing::none) == Approx(3 * 2496 + 64 + 256 + 640));
  CHECK(activation_bytes(t, 2, 2, Checkpointing::full) == Approx(3 * 128 + 2496 + 64 + 256 + 640));
  CHECK(loss_kept_bytes(t, 2) == 8);
  CHECK(logit_bytes(t, 2) == 4);
  // Megatron-LM's vocab-parallel cross-entropy: one fp32 buffer, softmax and gradient in place:
  // 4 s b V = 320.
  t.loss = LossKind::vocab_parallel;
  CHECK(activation_bytes(t, 2, 2, Checkpointing::none) == Approx(3 * 2496 + 64 + 256 + 320));
  CHECK(logit_bytes(t, 2) == 4);
  // A fused cross-entropy keeps the logits in the compute dtype: e s b V = 160.
  t.loss = LossKind::fused;
  CHECK(activation_bytes(t, 2, 2, Checkpointing::none) == Approx(3 * 2496 + 64 + 256 + 160));
  CHECK(loss_kept_bytes(t, 2) == 2);
  CHECK(logit_bytes(t, 2) == 2);
  t.loss = LossKind::fp32;
  // Without dropout the masks vanish: s b h (2 x 16) + a s^2 b (2 x 2) = 64 x 32 + 64 x 4.
  t.dropout = false;
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::none) == Approx(2048 + 256));
  // Linear in micro_batch.
  t.dropout = true;
  CHECK(activation_bytes(t, 6, 2, Checkpointing::none) == Approx(3 * activation_bytes(t, 2, 2, Checkpointing::none)));
}

TEST_CASE("per-op selective activations (torchtitan's op policy) by hand", "[model][transformer]") {
  // Llama-like: h 64, 4 heads (h_q 64), 2 kv heads (h_kv 32), SwiGLU f 128, s 16, b 2 (32 tokens),
  // bf16, FlashAttention, no dropout. Kept per token: the layer input h, wq's and attention's
  // outputs 2 h_q, wv's h_kv, w1's f, w2's h: (64 + 128 + 32 + 128 + 64) x 2 = 832 B; x 32 tokens
  // = 26,624, + log-sum-exp 4 a s b = 512: 27,136.
  TransformerShape t = test::small_llama_shape();
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::selective_op) == Approx(27136));
  // Without it (Korthikanti, no dropout): norms and matmul inputs 4 h e = 512, q k v and the
  // output 2 (h_q + h_kv) + 2 h_q... = (2 + 1) h e = 384, SwiGLU 3 f e = 768: 1664 B x 32 + 512.
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::none) == Approx(53760));
  // Backward holds what one layer did not keep while it recomputes it: 53,760 - 27,136.
  CHECK(recompute_transient_bytes(t, 2, 2, Checkpointing::selective_op, LayerSplit{}) == Approx(26624));
  CHECK(recompute_transient_bytes(t, 2, 2, Checkpointing::full, LayerSplit{}) == Approx(53760));
  CHECK(recompute_transient_bytes(t, 2, 2, Checkpointing::none, LayerSplit{}) == 0);
  // Whole model: 2 layers + the transient + head input 2 e s b h (8192) + the fp32 loss's 8 s b V
  // (V 100: 25,600).
  CHECK(activation_bytes(t, 2, 2, Checkpointing::selective_op) == Approx(2 * 27136 + 26624 + 8192 + 25600));
  // A plain MLP has six matmuls: fc2 is the sixth and recomputed, so w2's h is not kept.
  t.gated_mlp = false;
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::selective_op) == Approx((64 + 128 + 32 + 128) * 2 * 32 + 512));
  // Tensor parallel 2 without SP: the split outputs halve, the input and w2's h do not.
  t.gated_mlp = true;
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::selective_op, LayerSplit{2, 1, false}) ==
        Approx((64 + (128 + 32 + 128) / 2.0 + 64) * 2 * 32 + 256));
}

TEST_CASE("transformer FLOPs: 6 T N_mm + 12 L b s^2 h", "[model][transformer]") {
  TransformerShape t;
  t.layers = 3;
  t.hidden = 8;
  t.heads = 2;
  t.seq_len = 4;
  t.vocab = 10;
  const double n_mm = 3.0 * (12 * 64 + 13 * 8) + 10 * 8;  // layers + head
  const double tokens = 2 * 4;
  CHECK(forward_flops(t, 2) == Approx(2 * tokens * n_mm + 4 * 3 * 2 * 16 * 8));
  CHECK(training_flops(t, 2, Checkpointing::none) == Approx(6 * tokens * n_mm + 12 * 3 * 2 * 16 * 8));
  CHECK(training_flops(t, 2, Checkpointing::selective) == Approx(6 * tokens * n_mm + 16 * 3 * 2 * 16 * 8));
  CHECK(training_flops(t, 2, Checkpointing::full) ==
        Approx(6 * tokens * n_mm + 12 * 3 * 2 * 16 * 8 + 2 * tokens * 3 * (12 * 64 + 13 * 8) + 4 * 3 * 2 * 16 * 8));
  // selective-op recomputes wk, wo and fc2 per layer: 2 b s (h h_kv + h_q h + f h) = 2 x 8 x
  // (64 + 64 + 256) = 6144; attention is kept, not recomputed.
  CHECK(training_flops(t, 2, Checkpointing::selective_op) ==
        Approx(6 * tokens * n_mm + 12 * 3 * 2 * 16 * 8 + 3 * 6144.0));
  CHECK(parse_checkpointing("selective-op", "x") == Checkpointing::selective_op);
  CHECK(parse_checkpointing("op", "x") == Checkpointing::selective_op);
  CHECK_THROWS_AS(parse_checkpointing("sometimes", "x"), InputError);
}
