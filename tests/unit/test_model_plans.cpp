// Unit tests for the plan table (model/plan_cost.hpp) and the transformer extensions: model-state
// memory against the ZeRO paper's formulas for every stage, the unsharded-gradient cost of
// no_sync, rejected plans, the collectives of each plan, the pipelined exposure and a sharded
// step assembled by hand, LLaMA-2 parameter counts, and the plan vocabulary's parsers.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "model/cluster.hpp"
#include "core/profile.hpp"
#include "model/plan_cost.hpp"
#include "model/profile_model.hpp"
#include "model/spec_model.hpp"
#include "model/step_assembly.hpp"
#include "model/transformer.hpp"

using namespace gaccum;
using namespace gaccum::model;

namespace {

Config plan(Sharding s, Strategy st, Count p, Count group = 0) {
  Config c{1, 4, p, st};
  c.sharding = {s, group};
  return c;
}

Bytes model_states(const MemoryBreakdown& m) { return m.weights + m.gradients + m.optimizer_state; }

}  // namespace

TEST_CASE("model states per stage match the ZeRO paper (mixed-precision Adam, K = 12)", "[model][plans]") {
  const Count psi = 1000000;  // Psi parameters; N = 8 divides every term
  const Bytes P = Bytes(psi);
  const StateSizes s = model_state_sizes(psi, Precision::bf16, 2);
  CHECK(s.weights == 2 * P);
  CHECK(s.gradients == 2 * P);
  CHECK(s.optimizer == 12 * P);  // fp32 master 4 + Adam m 4 + v 4
  const Count N = 8;
  // DDP 16 Psi; ZeRO-1 4 Psi + 12 Psi / N; ZeRO-2 2 Psi + 14 Psi / N; ZeRO-3 16 Psi / N (Rajbhandari et al. 2020).
  // ZeRO-1 also holds the gradient shard its full gradient is reduce-scattered into: + 2 Psi / N.
  CHECK(model_states(plan_memory(plan(Sharding::none, Strategy::overlap, N), s)) == 16 * P);
  CHECK(model_states(plan_memory(plan(Sharding::zero1, Strategy::overlap, N), s)) == 4 * P + 12 * P / 8 + 2 * P / 8);
  CHECK(model_states(plan_memory(plan(Sharding::zero2, Strategy::every_step, N), s)) == 2 * P + 14 * P / 8);
  CHECK(model_states(plan_memory(plan(Sharding::zero3, Strategy::every_step, N), s)) == 16 * P / 8);
  // The same at N = 64 (exact: 64 divides 2e6 and 12e6).
  CHECK(model_states(plan_memory(plan(Sharding::zero3, Strategy::every_step, 64), s)) == 16 * P / 64);
  CHECK(model_states(plan_memory(plan(Sharding::zero2, Strategy::every_step, 64), s)) == 2 * P + 14 * P / 64);
  // hsdp:4 on 8 ranks shards inside groups of 4: 16 Psi / 4.
  CHECK(model_states(plan_memory(plan(Sharding::hsdp, Strategy::every_step, 8, 4), s)) == 16 * P / 4);
  // fp32 Adam: 4 + 4 + 8 = 16 Psi too; SGD momentum fp32: 4 + 4 + 4.
  CHECK(model_states(plan_memory(plan(Sharding::none, Strategy::overlap, 2), model_state_sizes(psi, Precision::fp32, 2))) ==
        16 * P);
  CHECK(model_state_sizes(psi, Precision::fp32, 1).optimizer == 4 * P);
  CHECK(model_state_sizes(psi, Precision::fp16, 1).optimizer == 8 * P);  // master + momentum
}

TEST_CASE("no_sync under zero2/zero3 keeps the unsharded gradient across the window, and its shard", "[model][plans]") {
  const Count psi = 1000000;
  const Bytes P = Bytes(psi);
  const StateSizes s = model_state_sizes(psi, Precision::bf16, 2);
  const auto z2_every = plan_memory(plan(Sharding::zero2, Strategy::every_step, 8), s);
  const auto z2_nosync = plan_memory(plan(Sharding::zero2, Strategy::overlap, 8), s);
  const auto z2_fused = plan_memory(plan(Sharding::zero2, Strategy::fused, 8), s);
  CHECK(z2_every.gradients == 2 * P / 8);
  CHECK(z2_nosync.gradients == 2 * P + 2 * P / 8);  // the full gradient + the shard it is reduced into
  CHECK(z2_fused.gradients == 2 * P + 2 * P / 8);
  const auto z3_nosync = plan_memory(plan(Sharding::zero3, Strategy::overlap, 8), s);
  CHECK(z3_nosync.weights == 2 * P / 8);
  CHECK(z3_nosync.gradients == 2 * P + 2 * P / 8);
  CHECK(model_states(z3_nosync) == 2 * P / 8 + 2 * P + 2 * P / 8 + 12 * P / 8);
  // zero1 never shards the gradient it accumulates.
  CHECK(plan_memory(plan(Sharding::zero1, Strategy::fused, 8), s).gradients == 2 * P + 2 * P / 8);
}

TEST_CASE("overlap at accum_steps 1 has no no_sync() window: its sharded gradient is every-step's", "[model][plans]") {
  const Count psi = 1000000;
  const Bytes P = Bytes(psi);
  const StateSizes s = model_state_sizes(psi, Precision::bf16, 2);
  auto one = [](Sharding sh, Strategy st) {
    Config c = plan(sh, st, 8, sh == Sharding::hsdp ? 4 : 0);
    c.accum_steps = 1;
    return c;
  };
  // bf16 gradients: 2 bytes x 1,000,000, sharded over 8 (zero2, zero3) or the hsdp group of 4.
  CHECK(plan_memory(one(Sharding::zero2, Strategy::overlap), s).gradients == 2 * P / 8);
  CHECK(plan_memory(one(Sharding::zero3, Strategy::overlap), s).gradients == 2 * P / 8);
  CHECK(plan_memory(one(Sharding::hsdp, Strategy::overlap), s).gradients == 2 * P / 4);
  CHECK(plan_memory(one(Sharding::zero3, Strategy::overlap), s).gradients ==
        plan_memory(one(Sharding::zero3, Strategy::every_step), s).gradients);
  // fused reduces once after the backward: the whole gradient exists first, k = 1 or not.
  CHECK(plan_memory(one(Sharding::zero3, Strategy::fused), s).gradients == 2 * P + 2 * P / 8);
  // zero1 keeps the whole gradient whatever the strategy.
  CHECK(plan_memory(one(Sharding::zero1, Strategy::overlap), s).gradients == 2 * P + 2 * P / 8);
  CHECK_FALSE(holds_whole_gradient(Strategy::overlap, 1));
  CHECK(holds_whole_gradient(Strategy::overlap, 2));
  CHECK(holds_whole_gradient(Strategy::fused, 1));
  CHECK_FALSE(holds_whole_gradient(Strategy::every_step, 4));
}

TEST_CASE("zero3 working set, buffers, padding and offload", "[model][plans]") {
  StateSizes s = model_state_sizes(1000, Precision::bf16, 2);  // W = G = 2000, O = 12000
  s.largest_unit = 300;
  s.largest_unit_grad = 300;
  s.units = 7;
  const auto z3 = plan_memory(plan(Sharding::zero3, Strategy::every_step, 4), s);
  CHECK(z3.gathered == 600);       // the unit computing + the one prefetched
  CHECK(z3.comm_buffers == 600);   // 2 x the largest unit's gradient
  CHECK(plan_memory(plan(Sharding::zero2, Strategy::every_step, 4), s).gathered == 0);
  const auto ddp = plan_memory(plan(Sharding::none, Strategy::overlap, 4), s);
  CHECK(ddp.comm_buffers == 2000);  // DDP's bucket buffers: the whole gradient
  CHECK(ddp.gathered == 0);
  CHECK(plan_memory(plan(Sharding::none, Strategy::overlap, 1), s).comm_buffers == 0);
  // Flat shards are padded to N equal parts: ceil(2000 / 3) = 667.
  CHECK(plan_memory(plan(Sharding::zero3, Strategy::every_step, 3), s).weights == 667);
  Config off = plan(Sharding::zero3, Strategy::every_step, 4);
  off.offload_optimizer = true;
  off.offload_params = true;
  const auto o = plan_memory(off, s);
  CHECK(o.optimizer_state == 0);
  CHECK(o.weights == 0);
  CHECK(o.gathered == 600);  // gathered parameters still live on the device
}

TEST_CASE("plans no framework runs are rejected with the reason", "[model][plans]") {
  CHECK_FALSE(plan_rejection(plan(Sharding::none, Strategy::every_step, 1)));
  CHECK_FALSE(plan_rejection(plan(Sharding::zero3, Strategy::every_step, 2)));
  CHECK_FALSE(plan_rejection(plan(Sharding::hsdp, Strategy::overlap, 16, 8)));
  CHECK_THAT(*plan_rejection(plan(Sharding::zero3, Strategy::overlap, 1)), Catch::Contains("nothing to shard"));
  CHECK_THAT(*plan_rejection(plan(Sharding::hsdp, Strategy::overlap, 12, 8)), Catch::Contains("multiple of the group"));
  CHECK_THAT(*plan_rejection(plan(Sharding::hsdp, Strategy::overlap, 8, 8)), Catch::Contains("that is zero3"));
  CHECK_THAT(*plan_rejection(plan(Sharding::hsdp, Strategy::overlap, 8, 0)), Catch::Contains("hsdp:G"));
  CHECK_THAT(*plan_rejection(plan(Sharding::zero1, Strategy::every_step, 8)), Catch::Contains("zero1 keeps full gradients"));
  CHECK(shard_group(plan(Sharding::hsdp, Strategy::overlap, 16, 8)) == 8);
  CHECK(replicas(plan(Sharding::hsdp, Strategy::overlap, 16, 8)) == 2);
  CHECK(shard_group(plan(Sharding::zero2, Strategy::overlap, 16)) == 16);
  CHECK(replicas(plan(Sharding::zero2, Strategy::overlap, 16)) == 1);
}

TEST_CASE("the collectives of each plan", "[model][plans]") {
  const SyncPlan ddp = sync_plan(plan(Sharding::none, Strategy::fused, 4));
  REQUIRE(ddp.count == 1);
  CHECK(ddp.uses[0].op == CollectiveOp::allreduce);
  CHECK(ddp.uses[0].phase == CommPhase::after_backward);

  const SyncPlan z2 = sync_plan(plan(Sharding::zero2, Strategy::every_step, 4));
  REQUIRE(z2.count == 2);
  CHECK(z2.uses[0].op == CollectiveOp::reduce_scatter);
  CHECK(z2.uses[0].every_micro_step);
  CHECK(z2.uses[1].op == CollectiveOp::all_gather);
  CHECK(z2.uses[1].phase == CommPhase::after_step);
  CHECK(z2.uses[1].parameters);
  CHECK(z2.gradient_every_micro_step);

  const SyncPlan z3 = sync_plan(plan(Sharding::zero3, Strategy::overlap, 4));
  REQUIRE(z3.count == 3);
  CHECK(z3.uses[0].phase == CommPhase::forward);
  CHECK(z3.uses[0].every_micro_step);  // parameters gathered every micro-step, no_sync or not
  CHECK(z3.uses[1].phase == CommPhase::backward);
  CHECK(z3.uses[2].op == CollectiveOp::reduce_scatter);
  CHECK_FALSE(z3.uses[2].every_micro_step);

  const SyncPlan h = sync_plan(plan(Sharding::hsdp, Strategy::every_step, 16, 8));
  REQUIRE(h.count == 4);
  CHECK(h.uses[2].group == CommGroup::shard);
  CHECK(h.uses[2].every_micro_step);
  CHECK(h.uses[3].op == CollectiveOp::allreduce);
  CHECK(h.uses[3].group == CommGroup::replica);
  CHECK_FALSE(h.uses[3].every_micro_step);  // the cross-group all-reduce once per window
  CHECK(h.uses[3].divisor == 8);            // of the 1/G gradient shard
}

TEST_CASE("a flat layout pads each unit to N equal shards (the runner's bytes)", "[model][plans]") {
  // 10 fp32 parameters in units of 7 and 3, Adam: W = G = 40 B, O = 80 B. N = 4: shards of
  // ceil(7/4) + ceil(3/4) = 3 parameters, padded flat buffers 4 x 2 + 4 x 1 = 12, largest 8.
  StateSizes s = model_state_sizes(10, Precision::fp32, 2);
  s.unit_params = {7, 3};
  s.params = 10;
  const auto z2 = plan_memory(plan(Sharding::zero2, Strategy::every_step, 4), s);
  CHECK(z2.weights == 48);        // 12 padded parameters x 4 B
  CHECK(z2.gradients == 12);      // 3 x 4 B
  CHECK(z2.optimizer_state == 24);
  CHECK(z2.gathered == 0);
  CHECK(z2.comm_buffers == 64);   // fill + receive buffer of the largest padded unit: 2 x 8 x 4 B
  CHECK(plan_memory(plan(Sharding::zero2, Strategy::overlap, 4), s).gradients == 40 + 12);
  const auto z3 = plan_memory(plan(Sharding::zero3, Strategy::every_step, 4), s);
  CHECK(z3.weights == 12);
  CHECK(z3.gathered == 48);       // min(all 12 padded, 2 x the largest 8) parameters x 4 B
  const auto z1 = plan_memory(plan(Sharding::zero1, Strategy::fused, 4), s);
  CHECK(z1.weights == 48);
  CHECK(z1.gradients == 52);
  CHECK(z1.optimizer_state == 24);
  CHECK(plan_memory(plan(Sharding::none, Strategy::overlap, 4), s).weights == 40);  // DDP: no padding
}

TEST_CASE("pipelined exposure of collectives behind a compute phase", "[model][plans]") {
  CHECK(pipelined_exposure(10, 20, 5, 1.0) == Approx(2));   // c = 2 <= t = 4: one piece exposed
  CHECK(pipelined_exposure(30, 10, 5, 1.0) == Approx(22));  // C - T + T/n
  CHECK(pipelined_exposure(30, 10, 5, 0.0) == Approx(30));  // no overlap at all
  CHECK(pipelined_exposure(10, 20, 5, 0.5) == Approx(2 + 0.5 * 8));
  CHECK(pipelined_exposure(0, 20, 5, 1.0) == 0);
  CHECK(pipelined_exposure(30, 10, 5, -0.5) == Approx(30));  // a negative efficiency: never more than C
  CHECK(pipelined_exposure(7, 0, 1, 1.0) == Approx(7));
}

TEST_CASE("a sharded step assembled by hand", "[model][plans]") {
  // W = G = 4e8 B in 4 buckets / 4 units; allreduce 1e-9 s/B, reduce-scatter and all-gather half.
  StepTerms s;
  s.micro_step = {1.0, 1.0, 1.0};
  s.backward = 0.6;
  s.optimizer = {0.1, 0.1, 0.1};
  s.overlap_efficiency = 1.0;
  ShardedTerms u;
  u.weights = u.gradients = 400000000;
  u.units = u.buckets = 4;
  auto cost = [](CollectiveOp op, CommGroup, Bytes b) {
    const double t = double(b) * 1e-9;
    return op == CollectiveOp::allreduce ? t : t / 2;
  };
  MemoryBreakdown mem;
  {
    // zero2 every-step, k = 4: RS 4 x 0.05 = 0.2 s per backward, exposed 0.05 each (one bucket);
    // AG of the parameters after the step 0.2 s, exposed.
    Config c = plan(Sharding::zero2, Strategy::every_step, 4);
    const Prediction p = assemble_sharded_prediction(c, s, u, cost, mem);
    CHECK(p.time.compute == Approx(4.0));
    CHECK(p.time.comm_exposed == Approx(3 * 0.05 + 0.05 + 0.2));
    CHECK(p.time.comm_total == Approx(4 * 0.2 + 0.2));
    CHECK(p.time.step_time == Approx(4.0 + 0.4 + 0.1));
    CHECK(p.collectives_per_step == 4 * 4 + 4);  // 4 RS per backward + 4 unit AGs after the step
    CHECK(p.gradient_syncs == 4);
  }
  {
    // zero3 no_sync (overlap), k = 4: AG forward 0.2 behind a 0.4 s forward (exposed 0.05, x4),
    // AG backward 0.2 behind each 0.6 s backward (0.05, x3), the last backward AG + RS 0.4 (0.1).
    Config c = plan(Sharding::zero3, Strategy::overlap, 4);
    const Prediction p = assemble_sharded_prediction(c, s, u, cost, mem);
    CHECK(p.time.comm_exposed == Approx(4 * 0.05 + 3 * 0.05 + 0.1));
    CHECK(p.time.comm_total == Approx(4 * (0.2 + 0.2) + 0.2));
    CHECK(p.collectives_per_step == 4 * 4 + 4 * 4 + 4);
    CHECK(p.gradient_syncs == 1);
    CHECK(p.throughput == Approx(double(c.global_batch()) / p.time.step_time));
  }
}

TEST_CASE("LLaMA-2 parameter counts and the LLaMA-style transformer terms", "[model][plans]") {
  const std::string src = GACCUM_SOURCE_DIR;
  const auto s7 = load_spec(src + "/examples/specs/llama2-7b.json");
  CHECK(transformer_params(s7.shape()) == 6738415616);
  const auto s70 = load_spec(src + "/examples/specs/llama2-70b.json");
  CHECK(transformer_params(s70.shape()) == 68976648192);
  CHECK(s70.activation_checkpointing == Checkpointing::full);

  // A small LLaMA-style layer: h 16, 4 heads, 2 kv heads (h_kv 8), gated f 32, no bias, RMSNorm:
  // norms 2 x 16, q 256, k+v 2 x 16 x 8, o 256, gate+up 2 x 32 x 16, down 32 x 16.
  TransformerShape t;
  t.layers = 1;
  t.hidden = 16;
  t.heads = 4;
  t.kv_heads = 2;
  t.seq_len = 8;
  t.vocab = 10;
  t.ffn_hidden = 32;
  t.gated_mlp = true;
  t.bias = false;
  t.rms_norm = true;
  t.dropout = false;
  t.flash_attention = true;
  CHECK(layer_params(t) == 32 + 256 + 256 + 256 + 1024 + 512);
  // Activations, e = 2, b = 2: s b h (e (attn 3 + 2 r + mlp 1 + 3 f + 2)) = 256 x 2 x 13; FlashAttention
  // keeps 4 a s b bytes of log-sum-exp instead of the s^2 scores.
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::none) == Approx(256 * 26 + 4 * 4 * 8 * 2));
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::selective) == Approx(256 * 26));
  t.flash_attention = false;
  CHECK(layer_activation_bytes(t, 2, 2, Checkpointing::none) == Approx(256 * 26 + 4 * 64 * 2 * 4));
}

TEST_CASE("the spec model prices every plan; unknown spec fields list the valid ones", "[model][plans]") {
  const std::string src = GACCUM_SOURCE_DIR;
  const auto spec = load_spec(src + "/examples/specs/llama2-7b.json");
  const auto cluster = load_cluster(src + "/examples/clusters/h100-8node-ib400.json");
  auto m = make_spec_model(spec, cluster, 0.4);
  const auto& plans = m->info().plans;
  CHECK(plans.own_precision() == Precision::bf16);
  CHECK(plans.auto_shardings.size() == 5);  // none, zero1, zero2, zero3, hsdp:8
  CHECK(plans.auto_shardings.back().group == 8);
  Config c{1, 16, 64, Strategy::every_step};
  c.sharding = {Sharding::zero3, 0};
  const Prediction p = m->predict(c);
  const Bytes psi = 6738415616;
  CHECK(*p.config.precision == Precision::bf16);  // resolved to the spec's own
  CHECK(p.memory.weights == (2 * psi + 63) / 64);
  CHECK(p.memory.gradients == (2 * psi + 63) / 64);
  CHECK(p.memory.optimizer_state == (12 * psi + 63) / 64);
  CHECK(p.memory.gathered == 2 * 2 * Bytes(layer_params(spec.shape())));  // two layers in bf16
  CHECK(p.gradient_syncs == 16);
  // DDP of the same model does not fit an 80 GB device even at micro_batch 1.
  Config ddp{1, 16, 64, Strategy::overlap};
  CHECK(m->predict(ddp).memory.peak > cluster.device_memory);
  // fp32 at the TF32 peak: twice the compute of bf16 (peak_tflops_fp32 = peak / 2 in this cluster).
  Config f32 = ddp;
  f32.precision = Precision::fp32;
  CHECK(m->predict(f32).time.compute == Approx(2 * m->predict(ddp).time.compute).epsilon(1e-3));
  nlohmann::json j = {{"name", "x"}, {"layers", 1}, {"hidden", 8}, {"heads", 2}, {"seq_len", 4}, {"vocab", 4},
                      {"gated", true}};
  CHECK_THROWS_WITH(spec_from_json(j, "s.json"), Catch::Contains("valid fields are") && Catch::Contains("gated_mlp"));
  // "loss": fp32 (the default), vocab-parallel or fused; anything else names the field and the choices.
  j.erase("gated");
  CHECK(spec_from_json(j, "s.json").loss == LossKind::fp32);
  j["loss"] = "fused";
  CHECK(spec_from_json(j, "s.json").shape().loss == LossKind::fused);
  j["loss"] = "vocab-parallel";
  CHECK(spec_from_json(j, "s.json").shape().loss == LossKind::vocab_parallel);
  // The job's framework sets the loss a spec leaves to the default: Megatron-LM its vocab-parallel
  // one; every other framework keeps PyTorch's fp32; a spec's own "loss" is never overridden.
  {
    j.erase("loss");
    TransformerSpec d = spec_from_json(j, "s.json");
    CHECK(d.loss_source.empty());
    TransformerSpec t = d;
    apply_framework_defaults(t, Framework::torchtitan, "flag --framework");
    CHECK(t.loss == LossKind::fp32);
    CHECK(t.loss_source.empty());
    apply_framework_defaults(d, Framework::megatron, "flag --framework");
    CHECK(d.loss == LossKind::vocab_parallel);
    CHECK(d.loss_source == "Megatron-LM, the job's framework: flag --framework");
    j["loss"] = "fp32";
    TransformerSpec own = spec_from_json(j, "s.json");
    CHECK(own.loss_source == "s.json.loss");
    apply_framework_defaults(own, Framework::megatron, "flag --framework");
    CHECK(own.loss == LossKind::fp32);
  }
  j["loss"] = "bf16";
  CHECK_THROWS_WITH(spec_from_json(j, "s.json"), Catch::Contains("s.json.loss: 'bf16'") &&
                                                     Catch::Contains("expected fp32, vocab-parallel or fused"));
}

TEST_CASE("gradients in fp32 under bf16: Megatron-LM's and torchtitan's, held and reduced as the plan holds them", "[model][plans]") {
  // The element bytes of a gradient: fp32_for_bf16 is 4 under bf16 and fp8 (bf16 weights), the
  // plan's own under fp16 and fp32; fp32 is 4 under every half precision.
  CHECK(gradient_element_bytes(GradDtype::param, Precision::bf16) == 2);
  CHECK(gradient_element_bytes(GradDtype::fp32_for_bf16, Precision::bf16) == 4);
  CHECK(gradient_element_bytes(GradDtype::fp32_for_bf16, Precision::fp8) == 4);
  CHECK(gradient_element_bytes(GradDtype::fp32_for_bf16, Precision::fp16) == 2);
  CHECK(gradient_element_bytes(GradDtype::fp32, Precision::fp16) == 4);
  CHECK(gradient_element_bytes(GradDtype::fp32, Precision::fp32) == 4);
  CHECK(model_state_sizes(1000, Precision::bf16, 2, 4).gradients == 4000);
  CHECK(model_state_sizes(1000, Precision::bf16, 2).gradients == 2000);

  const std::string src = GACCUM_SOURCE_DIR;
  const auto spec = load_spec(src + "/examples/specs/llama2-7b.json");
  const auto cluster = load_cluster(src + "/examples/clusters/h100-8node-ib400.json");
  const Bytes psi = 6738415616;
  TransformerSpec mega = spec, titan = spec, own = spec;
  apply_framework_defaults(mega, Framework::megatron, "flag --framework");
  apply_framework_defaults(titan, Framework::torchtitan, "flag --framework");
  CHECK(mega.grad_dtype == GradDtype::fp32_for_bf16);
  CHECK(mega.grad_source == "Megatron-LM, the job's framework: flag --framework");
  CHECK(titan.grad_dtype == GradDtype::fp32_for_bf16);
  CHECK(titan.loss == LossKind::fp32);
  own.grad_dtype = GradDtype::param;  // a spec's "grad_reduce_in_fp32": false is never overridden
  own.grad_source = "s.json.grad_reduce_in_fp32";
  apply_framework_defaults(own, Framework::megatron, "flag --framework");
  CHECK(own.grad_dtype == GradDtype::param);
  TransformerSpec ddp = spec;
  apply_framework_defaults(ddp, Framework::ddp, "flag --framework");
  CHECK(ddp.grad_dtype == GradDtype::param);
  CHECK(ddp.grad_source.empty());

  // DDP on 8 ranks, bf16: Megatron-LM holds 4 psi bytes of gradients (its main_grad buffer), PyTorch 2 psi.
  Config c{1, 4, 8, Strategy::overlap};
  c.precision = Precision::bf16;
  const auto plain = make_spec_model(spec, cluster);
  const auto megatron = make_spec_model(mega, cluster);
  CHECK(plain->predict(c).memory.gradients == 2 * psi);
  CHECK(megatron->predict(c).memory.gradients == 4 * psi);
  // Its buckets are views of that buffer (PyTorch DDP copies each bucket: G more).
  CHECK(plain->predict(c).memory.comm_buffers == 2 * psi);
  CHECK(megatron->predict(c).memory.comm_buffers == 0);
  // Its distributed optimizer (zero1) reduce-scatters the buffer in place: 2 + 4 + 12/8 bytes per
  // parameter, Megatron-LM's own count (6 + 12/d); ZeroRedundancyOptimizer keeps a shard beside G.
  Config z1 = c;
  z1.sharding = {Sharding::zero1, 0};
  const Prediction mz1 = megatron->predict(z1);
  CHECK(mz1.memory.gradients == 4 * psi);
  CHECK(mz1.memory.weights + mz1.memory.gradients == 6 * psi);
  CHECK(mz1.memory.optimizer_state == (12 * psi + 7) / 8);
  CHECK(plain->predict(z1).memory.gradients == 2 * psi + (2 * psi + 7) / 8);
  // ... and reduces them in fp32: twice the bytes of the one allreduce after the backward.
  Config fused = c;
  fused.strategy = Strategy::fused;
  CHECK(megatron->predict(fused).time.comm_total > 1.9 * plain->predict(fused).time.comm_total);
  // zero2 (torchtitan's FSDP2 without reshard) every-step: the fp32 gradient shard, 4 psi / 8 (+ unit padding).
  Config z2{1, 4, 8, Strategy::every_step};
  z2.precision = Precision::bf16;
  z2.sharding = {Sharding::zero2, 0};
  const Bytes shard = make_spec_model(titan, cluster)->predict(z2).memory.gradients;
  CHECK(shard >= 4 * psi / 8);
  CHECK(shard < 4 * psi / 8 + 4 * 8 * 1000000);
  // fp16 under Megatron-LM keeps fp16 gradients (it forces fp32 for bf16 only).
  Config h = c;
  h.precision = Precision::fp16;
  CHECK(megatron->predict(h).memory.gradients == 2 * psi);

  // No framework named: a plan only Megatron-LM runs (tp 2 x pp 2, ZeRO-1 = its distributed
  // optimizer) is priced as Megatron-LM runs it; a data-parallel plan as the spec says.
  const auto any = make_spec_model_any_framework(spec, cluster);
  Config l{1, 8, 8, Strategy::overlap};
  l.precision = Precision::bf16;
  l.sharding = {Sharding::zero1, 0};
  l.layout.tp = 2;
  l.layout.pp = 2;
  l.layout.sequence_parallel = true;
  const Prediction lp = any->predict(l);
  REQUIRE(lp.priced_as.has_value());
  CHECK(*lp.priced_as == Framework::megatron);
  CHECK(lp.memory.peak == megatron->predict(l).memory.peak);
  CHECK(lp.memory.peak > plain->predict(l).memory.peak);
  const Prediction dp = any->predict(c);
  CHECK_FALSE(dp.priced_as.has_value());
  CHECK(dp.memory.peak == plain->predict(c).memory.peak);
  // A spec that says its own loss and gradients keeps them; Megatron-LM's plan still has its
  // contiguous buffer (2-byte gradients here, none of ZeroRedundancyOptimizer's extra shard).
  TransformerSpec fixed = spec;
  fixed.loss = LossKind::vocab_parallel, fixed.loss_source = "s.json.loss";
  fixed.grad_dtype = GradDtype::param, fixed.grad_source = "s.json.grad_reduce_in_fp32";
  const Prediction fp = make_spec_model_any_framework(fixed, cluster)->predict(l);
  REQUIRE(fp.priced_as.has_value());
  CHECK(fp.memory.gradients == fp.memory.weights);
  // The spec field.
  nlohmann::json j = {{"name", "x"}, {"layers", 1}, {"hidden", 8}, {"heads", 2}, {"seq_len", 4}, {"vocab", 4},
                      {"grad_reduce_in_fp32", true}};
  CHECK(spec_from_json(j, "s.json").grad_dtype == GradDtype::fp32);
  CHECK(spec_from_json(j, "s.json").grad_source == "s.json.grad_reduce_in_fp32");
}

TEST_CASE("plan names: FSDP and DeepSpeed aliases, hsdp groups, errors listing the valid values", "[model][plans]") {
  CHECK(parse_sharding("ddp").sharding == Sharding::none);
  CHECK(parse_sharding("shard_grad_op").sharding == Sharding::zero2);
  CHECK(parse_sharding("full_shard").sharding == Sharding::zero3);
  CHECK(parse_sharding("fsdp").sharding == Sharding::zero3);
  const auto h = parse_sharding("hybrid_shard:8");
  CHECK(h.sharding == Sharding::hsdp);
  CHECK(h.group == 8);
  CHECK(parse_sharding("hsdp").group == 0);
  CHECK(to_string(parse_sharding("hsdp:4")) == "hsdp:4");
  CHECK_THROWS_WITH(parse_sharding("zero4"), Catch::Contains("--sharding") && Catch::Contains("zero3 (fsdp"));
  CHECK_THROWS_WITH(parse_sharding("hsdp:1"), Catch::Contains("at least 2"));
  CHECK_THROWS_WITH(parse_sharding("hsdp:x"), Catch::Contains("hsdp:8"));
  CHECK(parse_precision("bfloat16") == Precision::bf16);
  CHECK_THROWS_AS(parse_precision("int8"), InputError);
  CHECK(parse_checkpointing("selective") == Checkpointing::selective);
  CHECK(traits(Sharding::zero2).shards_gradients);
  CHECK_FALSE(traits(Sharding::zero1).shards_gradients);
  CHECK(std::string(traits(Sharding::zero3).fsdp_name) == "FULL_SHARD");
  CHECK(traits(Precision::fp16).element_bytes == 2.0);
}

TEST_CASE("measured reduce-scatter / all-gather replace the allreduce-derived prices", "[model][plans]") {
  const std::string src = GACCUM_SOURCE_DIR;
  Profile prof = load_profile(src + "/tests/data/small-profile.json");
  Config c{4, 1, 2, Strategy::fused};
  c.sharding = {Sharding::zero2, 0};
  const auto model = make_profile_model(prof);
  const Prediction derived = model->predict(c);
  CHECK(derived.comm_source == CommSource::allreduce_derived);
  // Every collective is cut into the n units (the profile's buckets): messages of W / n and G / n.
  const Count n = static_cast<Count>(model->info().fit.at("buckets").size());
  Config ddp = c;
  ddp.sharding = {};
  const Prediction full = model->predict(ddp);
  const Bytes W = full.memory.weights / static_cast<Bytes>(n), G = full.memory.gradients / static_cast<Bytes>(n);
  // Measured points at W, G and twice the larger; lookups at exactly W and G return the measurement.
  auto with = [&](Seconds rs, Seconds ag) {
    Profile q = prof;
    for (Bytes b : std::set<Bytes>{W, G, 2 * std::max(W, G)})
      for (const char* op : {"reduce_scatter", "all_gather"}) {
        CollectivePoint pt;
        pt.op = op;
        pt.method = "alltoall+local-sum";
        pt.backend = "gloo";
        pt.world_size = 2;
        pt.bytes = b;
        pt.tag = "sweep";
        const bool at_g = b == G, at_w = b == W;
        pt.time = std::string(op) == "reduce_scatter" ? (at_g ? rs : 3 * rs) : (at_w ? ag : 3 * ag);
        q.collectives.push_back(pt);
      }
    return make_profile_model(q)->predict(c);
  };
  const Prediction a = with(0.010, 0.020), b = with(0.110, 0.220);
  CHECK(a.comm_source == CommSource::measured);
  // fused zero2 at k = 1: n reduce-scatters after the backward and n all-gathers after the
  // step, all exposed whole: +0.1 s and +0.2 s of measurement per piece add exactly n x 0.3 s.
  CHECK(b.time.comm_exposed - a.time.comm_exposed == Approx(0.3 * double(n)));
  CHECK(b.time.step_time - a.time.step_time == Approx(0.3 * double(n)));
  CHECK(b.collectives_per_step == 2 * n);
  // Old profiles (schema 1, no collectives) still load and price as before.
  CHECK(prof.collectives.empty());
  CHECK(prof.schema_version == 1);
}
