// Unit tests for tensor/pipeline/context-parallel plans: the schedules as data and their event
// simulation (model/pipeline.hpp) against the closed forms (bubble, microbatches in flight), the
// layout rules (model/parallel_plan.hpp), Korthikanti et al.'s per-layer activations with tensor
// and sequence parallelism (model/transformer.hpp), the GPU compute model's split layer, the spec
// model's per-stage prediction, and the framework table's rules for layouts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "core/framework.hpp"
#include "model/cluster.hpp"
#include "model/gpu_compute.hpp"
#include "model/parallel_plan.hpp"
#include "model/pipeline.hpp"
#include "model/spec_model.hpp"
#include "model/transformer.hpp"

using namespace gaccum;
using namespace gaccum::model;

namespace {

// Balanced stages: every model stage's F, B (and W) take the given times, no P2P.
PipelineRun run_balanced(Schedule s, Count p, Count v, Count m, double f, double b, double w = 0) {
  const PipeSchedule ops = schedule_ops(s, p, v, m);
  StageTimes t;
  const auto S = static_cast<std::size_t>(p * v);
  t.forward.assign(S, f);
  t.backward.assign(S, b);
  t.weight.assign(S, w);
  t.activations.assign(S, 1.0);
  return simulate(ops, v, t);
}

std::vector<Count> counts(std::initializer_list<Count> c) { return c; }

}  // namespace

TEST_CASE("bubbles of each schedule match the closed forms (p = 8, m = 32)", "[pipeline]") {
  // 1F1B and GPipe: (p - 1) / (m + p - 1) = 7/39 of the step, t_b = 2 t_f.
  const auto a = run_balanced(Schedule::one_f_one_b, 8, 1, 32, 1, 2);
  CHECK(a.makespan == Approx(39 * 3));
  CHECK(a.bubble_fraction() == Approx(7.0 / 39.0));
  CHECK(run_balanced(Schedule::gpipe, 8, 1, 32, 1, 2).bubble_fraction() == Approx(7.0 / 39.0));
  // Interleaved, v = 4 chunks of a quarter of the layers each: 7 / (4 x 32 + 7) = 7/135.
  const auto i = run_balanced(Schedule::interleaved_1f1b, 8, 4, 32, 0.25, 0.5);
  CHECK(i.bubble_fraction() == Approx(7.0 / 135.0));
  CHECK(i.makespan == Approx(96 + 7 * 0.75));
  // ZB-H1 with T_F = T_B = T_W: 7 / (3 x 32 + 7) = 7/103.
  const auto z = run_balanced(Schedule::zb_h1, 8, 1, 32, 1, 1, 1);
  CHECK(z.makespan == Approx(103));
  CHECK(z.bubble_fraction() == Approx(7.0 / 103.0));
}

TEST_CASE("microbatches in flight per rank for each schedule", "[pipeline]") {
  // 1F1B rank r: min(p - r, m); ZB-H1 the same; GPipe: m everywhere.
  CHECK(run_balanced(Schedule::one_f_one_b, 4, 1, 8, 1, 2).peak_in_flight == counts({4, 3, 2, 1}));
  CHECK(run_balanced(Schedule::one_f_one_b, 4, 1, 4, 1, 2).peak_in_flight == counts({4, 3, 2, 1}));
  CHECK(run_balanced(Schedule::zb_h1, 4, 1, 8, 1, 1, 1).peak_in_flight == counts({4, 3, 2, 1}));
  CHECK(run_balanced(Schedule::gpipe, 4, 1, 6, 1, 2).peak_in_flight == counts({6, 6, 6, 6}));
  // Interleaved (Megatron): warm-up 2 (p - r - 1) + (v - 1) p chunks, + 1 in the steady state:
  // p = 4, v = 2: 11, 9, 7, 5 (rank 0: (1 + (p - 1)/(p v)) x p x v / ... = L (1 + 3/8) layers' worth).
  CHECK(run_balanced(Schedule::interleaved_1f1b, 4, 2, 8, 0.5, 1).peak_in_flight == counts({11, 9, 7, 5}));
  // Activations are counted in the stage's own units: rank 0 of 1F1B holds 4 microbatches.
  CHECK(run_balanced(Schedule::one_f_one_b, 4, 1, 8, 1, 2).peak_activations[0] == Approx(4.0));
}

TEST_CASE("the operation lists are the frameworks' orders", "[pipeline]") {
  using K = PipeOpKind;
  const PipeSchedule s = schedule_ops(Schedule::one_f_one_b, 2, 1, 3);
  // Rank 0: one warm-up forward, then (F, B) pairs, then the cooldown backward.
  const std::vector<PipeOp> r0{{K::forward, 0, 0}, {K::forward, 1, 0}, {K::backward, 0, 0},
                               {K::forward, 2, 0}, {K::backward, 1, 0}, {K::backward, 2, 0}};
  const std::vector<PipeOp> r1{{K::forward, 0, 0}, {K::backward, 0, 0}, {K::forward, 1, 0},
                               {K::backward, 1, 0}, {K::forward, 2, 0}, {K::backward, 2, 0}};
  CHECK(s[0] == r0);
  CHECK(s[1] == r1);
  // Interleaved p = 2, v = 2, m = 2: forwards run chunk 0 of microbatches 0, 1, then chunk 1.
  const PipeSchedule il = schedule_ops(Schedule::interleaved_1f1b, 2, 2, 2);
  CHECK(il[0][0] == PipeOp{K::forward, 0, 0});
  CHECK(il[0][1] == PipeOp{K::forward, 1, 0});
  CHECK(il[0][2] == PipeOp{K::forward, 0, 1});
  // Every rank runs every microbatch's F and B on each of its chunks once; ZB-H1 adds W once.
  for (const auto& ops : schedule_ops(Schedule::zb_h1, 4, 1, 8)) {
    CHECK(ops.size() == 24);
    CHECK(std::count_if(ops.begin(), ops.end(), [](const PipeOp& o) { return o.kind == K::weight; }) == 8);
  }
}

TEST_CASE("uneven stages: the slowest stage paces the pipeline", "[pipeline]") {
  // p = 2, m = 4; rank 1 twice as slow (F 2, B 4) as rank 0 (F 1, B 2). By hand: rank 1 starts at
  // 1 (rank 0's first forward), then runs 4 x (2 + 4) = 24 back to back; rank 0's last backward
  // follows rank 1's: + 2. Makespan 27.
  const PipeSchedule ops = schedule_ops(Schedule::one_f_one_b, 2, 1, 4);
  StageTimes t;
  t.forward = {1, 2};
  t.backward = {2, 4};
  t.weight = {0, 0};
  t.activations = {1, 1};
  const PipelineRun r = simulate(ops, 1, t);
  CHECK(r.makespan == Approx(27));
  CHECK(r.busy[1] == Approx(24));
  CHECK(r.idle[1] == Approx(3));
  CHECK(r.idle[0] == Approx(15));
  // A P2P time on each boundary crossing adds to the dependency chain: + 2 x 0.5 at least.
  t.p2p = 0.5;
  CHECK(simulate(ops, 1, t).makespan >= Approx(28));
}

TEST_CASE("schedule rules name the fix; a deadlocked list is an error", "[pipeline]") {
  CHECK_THROWS_WITH(schedule_ops(Schedule::one_f_one_b, 4, 1, 3),
                    Catch::Contains("at least pp = 4 microbatches") && Catch::Contains("gpipe"));
  CHECK_NOTHROW(schedule_ops(Schedule::gpipe, 4, 1, 3));
  CHECK_THROWS_WITH(schedule_ops(Schedule::interleaved_1f1b, 4, 2, 6),
                    Catch::Contains("groups of pp = 4") && Catch::Contains("m = 4 or 8"));
  CHECK_THROWS_WITH(schedule_ops(Schedule::interleaved_1f1b, 4, 1, 8), Catch::Contains("at least 2 virtual stages"));
  CHECK_THROWS_WITH(schedule_ops(Schedule::one_f_one_b, 4, 2, 8), Catch::Contains("one chunk per rank"));
  // A backward listed before its forward on the last stage can never start.
  PipeSchedule bad = {{{PipeOpKind::forward, 0, 0}, {PipeOpKind::backward, 0, 0}},
                      {{PipeOpKind::backward, 0, 0}, {PipeOpKind::forward, 0, 0}}};
  StageTimes t{{1, 1}, {1, 1}, {0, 0}, {1, 1}, 0};
  CHECK_THROWS_WITH(simulate(bad, 1, t), Catch::Contains("deadlocks") && Catch::Contains("waits at B(0, chunk 0)"));
}

TEST_CASE("Korthikanti et al. 2022 Table 2: per-layer activations with tensor and sequence parallelism",
          "[pipeline][memory]") {
  TransformerShape t;  // GPT: f = 4h, kv = heads, dropout, standard attention; e = 2 (16-bit)
  t.layers = 1;
  t.hidden = 1024;
  t.heads = 16;
  t.seq_len = 2048;
  const double s = 2048, b = 2, h = 1024, a = 16, sbh = s * b * h;
  for (Count tp : {1, 2, 4, 8}) {
    const double T = double(tp);
    INFO("tp " << tp);
    CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::none, {tp, 1, false}) ==
          Approx(sbh * (10 + 24 / T + 5 * a * s / (h * T))));
    CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::selective, {tp, 1, false}) == Approx(sbh * (10 + 24 / T)));
    if (tp > 1) {
      CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::none, {tp, 1, true}) ==
            Approx(sbh / T * (34 + 5 * a * s / h)));
      CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::selective, {tp, 1, true}) == Approx(34 * sbh / T));
      CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::full, {tp, 1, true}) == Approx(2 * sbh / T));
    }
    CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::full, {tp, 1, false}) == Approx(2 * sbh));
  }
  // Unsplit, the split formula is the plain one; cp divides everything.
  CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::none, {1, 1, false}) ==
        Approx(layer_activation_bytes(t, 2, 2.0, Checkpointing::none)));
  CHECK(layer_activation_bytes(t, 2, 2.0, Checkpointing::selective, {2, 4, true}) == Approx(34 * sbh / 8));
}

namespace {

TransformerShape llama_like() {
  TransformerShape t;
  t.layers = 8;
  t.hidden = 1024;
  t.heads = 16;
  t.kv_heads = 4;
  t.ffn_hidden = 2816;
  t.gated_mlp = true;
  t.seq_len = 1024;
  t.vocab = 32000;
  t.flash_attention = true;
  t.learned_positions = false;
  t.dropout = false;
  t.bias = false;
  t.rms_norm = true;
  return t;
}

TransformerSpec spec_8l(Count vocab = 32000) {
  TransformerSpec s;
  s.name = "llama-8l";
  TransformerShape t = llama_like();
  t.vocab = vocab;
  s.layers = t.layers;
  s.hidden = t.hidden;
  s.heads = t.heads;
  s.kv_heads = t.kv_heads;
  s.ffn_hidden = t.ffn_hidden;
  s.gated_mlp = true;
  s.seq_len = t.seq_len;
  s.vocab = t.vocab;
  s.flash_attention = true;
  s.learned_positions = false;
  s.dropout = false;
  s.bias = false;
  s.rms_norm = true;
  s.tied_embeddings = false;
  s.dtype = Precision::bf16;
  s.mean_tokens_per_sample = double(t.seq_len);
  return s;
}

Cluster h100_nodes(Count nodes) {
  nlohmann::json j = {{"name", "t"},
                      {"nodes", nodes},
                      {"gpus_per_node", 8},
                      {"device", "h100-sxm-80gb"},
                      {"intra_node", {{"bandwidth_GBps", 370}, {"latency_us", 1}}},
                      {"inter_node", {{"bandwidth_GBps", 46}, {"latency_us", 5}}}};
  return cluster_from_json(j, "cluster");
}

Config layout_config(Count b, Count m, Count world, Count tp, Count pp, Schedule s = Schedule::one_f_one_b,
                     Count v = 1) {
  Config c(b, m, world, Strategy::overlap);
  c.layout.tp = tp;
  c.layout.pp = pp;
  c.layout.schedule = s;
  c.layout.virtual_stages = v;
  return c;
}

}  // namespace

TEST_CASE("a layer split over tp: GEMM and attention FLOPs divide by tp, replicated kernels only with SP",
          "[pipeline][gpu]") {
  const GpuComputeModel g(*find_gpu("h100-sxm-80gb"), GpuEfficiency{});
  const TransformerShape t = llama_like();
  const GpuParts one = g.parts(t, 2, Checkpointing::none, Precision::bf16, {1, 1, false});
  const GpuParts two = g.parts(t, 2, Checkpointing::none, Precision::bf16, {2, 1, false});
  const GpuParts two_sp = g.parts(t, 2, Checkpointing::none, Precision::bf16, {2, 1, true});
  CHECK(two.layer_forward.flops == Approx(one.layer_forward.flops / 2));
  CHECK(two.layer_backward.flops == Approx(one.layer_backward.flops / 2));
  CHECK(two.head_forward.flops == Approx(one.head_forward.flops / 2));
  CHECK(two_sp.layer_forward.memory < two.layer_forward.memory);
  CHECK(two_sp.layer_forward.flops == Approx(two.layer_forward.flops));
  // Full recompute adds the forward to the backward; the weight gradient is part of the GEMMs.
  const GpuParts full = g.parts(t, 2, Checkpointing::full, Precision::bf16, {1, 1, false});
  CHECK(full.layer_backward.flops == Approx(one.layer_backward.flops + one.layer_forward.flops));
  CHECK(one.layer_backward.weight_grad > 0);
  CHECK(one.layer_backward.weight_grad < one.layer_backward.gemm);
  // micro_step is the unsplit parts: L layers + embedding + head.
  const GpuMicroStep ms = g.micro_step(t, 2, Checkpointing::none, Precision::bf16);
  CHECK(ms.forward.flops == Approx(8 * one.layer_forward.flops + one.head_forward.flops));
}

TEST_CASE("layout rules name the fix", "[pipeline][rules]") {
  const TransformerShape t = llama_like();  // 8 layers, 16 heads, 4 kv heads
  auto why = [&](const Config& c) { return layout_rejection(c, t, 8).value_or(""); };
  CHECK(why(layout_config(1, 8, 16, 2, 4)).empty());
  CHECK_THAT(why(layout_config(1, 8, 12, 2, 4)), Catch::Contains("not a multiple of tp x pp x cp = 8"));
  CHECK_THAT(why(layout_config(1, 8, 16, 8, 2)), Catch::Contains("kv heads must be multiples of tp"));
  CHECK_THAT(why(layout_config(1, 8, 32, 16, 2)), Catch::Contains("16 attention heads"));
  CHECK_THAT(why(layout_config(1, 8, 24, 1, 3)), Catch::Contains("8 layers do not split evenly"));
  CHECK_THAT(why(layout_config(1, 2, 8, 2, 4)), Catch::Contains("at least pp = 4 microbatches"));
  CHECK_THAT(why(layout_config(1, 6, 8, 1, 4, Schedule::interleaved_1f1b, 2)), Catch::Contains("groups of pp = 4"));
  Config every = layout_config(1, 8, 8, 1, 4);
  every.strategy = Strategy::every_step;
  CHECK_THAT(why(every), Catch::Contains("once per step"));
  Config tp_every = layout_config(1, 8, 8, 2, 1);
  tp_every.strategy = Strategy::every_step;
  CHECK(why(tp_every).empty());  // tensor parallel alone: dp reduces every micro-step if asked
  Config sp = layout_config(1, 8, 8, 1, 2);
  sp.layout.sequence_parallel = true;
  CHECK_THAT(why(sp), Catch::Contains("--sequence-parallel needs --tp 2"));
  Config hsdp = layout_config(1, 8, 16, 2, 2);  // dp 4
  hsdp.sharding = {Sharding::hsdp, 4};
  CHECK_THAT(why(hsdp), Catch::Contains("leaves no replicas"));
  // Uneven stages: first and last given, the middle even.
  ParallelLayout l;
  l.pp = 4;
  l.first_stage_layers = 1;
  l.last_stage_layers = 1;
  CHECK_THROWS_WITH(stage_layers(l, 7), Catch::Contains("must split evenly"));  // 7 - 2 = 5 over 2 ranks
  CHECK(stage_layers(l, 8) == counts({1, 3, 3, 1}));
  l.first_stage_layers = 0;
  l.last_stage_layers = 0;
  l.virtual_stages = 2;
  CHECK(stage_layers(l, 16) == counts({2, 2, 2, 2, 2, 2, 2, 2}));
  // An uneven interleaved split: model stages 0 and S - 1 given (rank 0's first chunk, the last
  // rank's last), the middle even: 26 layers over pp 4 x v 2 with ends of 1: 24 over the 6 middle
  // stages, 4 each.
  l.first_stage_layers = 1;
  l.last_stage_layers = 1;
  CHECK(stage_layers(l, 26) == counts({1, 4, 4, 4, 4, 4, 4, 1}));
}

TEST_CASE("torchtitan's split of a pipeline's layers", "[pipeline][rules]") {
  // generate_llm_fqn_per_model_part: the embedding and the output count as a layer each (weights
  // 1, 1); the L + 2 effective layers go (L + 2) / S to each stage, one more to each of the first
  // (L + 2) % S; then the first stage holds one transformer layer fewer, the last one fewer.
  // 126 over 16: 128 effective, 8 each: 7, 8 x 14, 7.
  std::vector<Count> tt = torchtitan_split(126, 16);
  CHECK(tt.front() == 7);
  CHECK(tt.back() == 7);
  CHECK(std::count(tt.begin(), tt.end(), 8) == 14);
  // 126 over 8: 16 each: 15, 16 x 6, 15.
  CHECK(torchtitan_split(126, 8) == counts({15, 16, 16, 16, 16, 16, 16, 15}));
  // Llama 3 70B's 80 over 4: 82 effective, 20 each and 2 left: 21 - 1, 21, 20, 20 - 1.
  CHECK(torchtitan_split(80, 4) == counts({20, 21, 20, 19}));
  // 32 over 2: 34, 17 each: 16, 16 (even); 32 over 8: 34 = 4 x 8 + 2: 5 - 1, 5, 4 x 5, 4 - 1.
  CHECK(torchtitan_split(32, 2) == counts({16, 16}));
  CHECK(torchtitan_split(32, 8) == counts({4, 5, 4, 4, 4, 4, 4, 3}));
  // The weights (first/last_stage_less_layers): 0, 0 is the plain split, 10 over 4: 3, 3, 2, 2;
  // 2, 2 on 8 over 4: 12 effective, 3 each: 1, 3, 3, 1.
  CHECK(torchtitan_split(10, 4, 0, 0) == counts({3, 3, 2, 2}));
  CHECK(torchtitan_split(8, 4, 2, 2) == counts({1, 3, 3, 1}));
  // torchtitan's refusals: more stages than effective layers; a weight above the layers per stage.
  CHECK_THAT(torchtitan_split_rejection(3, 6).value_or(""), Catch::Contains("refuses 6 stages for 5 effective layers"));
  CHECK_THAT(torchtitan_split_rejection(8, 4, 4, 0).value_or(""), Catch::Contains("first_stage_less_layers 4 above the 3"));
  CHECK_THROWS_AS(torchtitan_split(3, 6), InputError);
  // pipeline_parallel_layers_per_stage: ceil((L + 2) / per) stages, a multiple of pp.
  CHECK(torchtitan_stages(126, 8, 8) == 16);
  CHECK_THROWS_WITH(torchtitan_stages(32, 4, 2), Catch::Contains("= 9 stages, not a multiple of pipeline_parallel_degree 2"));
  // The spellings: --stage-layers, and words.
  CHECK(stage_layers_text(torchtitan_split(126, 16)) == "7,...,7");
  CHECK(stage_layers_text(torchtitan_split(80, 4)) == "20,21,20,19");
  CHECK(gaccum::layer_counts_text(torchtitan_split(126, 16)) == "7, 8 x 14, 7");
  CHECK(gaccum::layer_counts_text(torchtitan_split(80, 4)) == "20, 21, 20, 19");
  CHECK(gaccum::layer_counts_text(counts({4, 4, 3})) == "4, 4, 3");
  // A split given stage by stage: its counts, checked against the model.
  ParallelLayout given;
  given.pp = 4;
  given.stage_layer_counts = counts({20, 21, 20, 19});
  CHECK(stage_layers(given, 80) == counts({20, 21, 20, 19}));
  CHECK_THROWS_WITH(stage_layers(given, 81), Catch::Contains("80 layers in all, the model has 81"));
  given.first_stage_layers = 20;
  CHECK_THROWS_WITH(stage_layers(given, 80), Catch::Contains("not both"));
  // The layout rule names the split to give.
  const TransformerShape t = llama_like();  // 8 layers
  Config c = layout_config(1, 8, 24, 1, 3);
  CHECK_THAT(layout_rejection(c, t, 8).value_or(""), Catch::Contains("--stage-layers 3,3,2 (torchtitan's own split"));
  // The search offers layers that do not divide as the layout with no split (a torchtitan-priced
  // model splits it), and with one chunk per rank Megatron-LM's ends too (ceil(126 / 8) = 16 on
  // the middle stages, the 30 left shared by the ends).
  TransformerShape odd = t;
  odd.layers = 126;
  int even = 0, ends = 0;
  for (const ParallelLayout& l : candidate_layouts(odd, 8, 0))
    if (l.tp == 1 && l.pp == 8 && l.virtual_stages <= 2) {
      if (!l.uneven_split()) ++even;
      if (l.first_stage_layers == 15 && l.last_stage_layers == 15) ++ends;
    }
  CHECK(even == 2);  // v 1 and v 2
  CHECK(ends == 1);   // v 1
  // A spec priced as torchtitan runs it splits so itself; the plain spec refuses, naming the split.
  c = layout_config(1, 8, 6, 1, 3);  // dp 2 on 6 of the 16 GPUs
  const auto plain = make_spec_model(spec_8l(1024), h100_nodes(2));
  CHECK_THROWS_WITH(plain->predict(c), Catch::Contains("--stage-layers 3,3,2"));
  TransformerSpec titan = spec_8l(1024);
  apply_framework_defaults(titan, Framework::torchtitan, "test");
  const auto titan_model = make_spec_model(titan, h100_nodes(2));
  const Prediction p = titan_model->predict(c);
  CHECK(p.config.layout.stage_layer_counts == counts({3, 3, 2}));  // 10 effective over 3: 4 - 1, 3, 3 - 1
  REQUIRE(p.parallel.stages.size() == 3);
  CHECK(p.parallel.stages[0].layers == 3);
  CHECK(p.parallel.stages[1].layers == 3);
  CHECK(p.parallel.stages[2].layers == 2);
  // Layers that divide split so too: 8 over 4 is 10 effective, 2 each and 2 left: 2, 3, 2, 1.
  const Prediction q = titan_model->predict(layout_config(1, 8, 8, 1, 4));
  CHECK(q.config.layout.stage_layer_counts == counts({2, 3, 2, 1}));
  CHECK(q.parallel.stages[1].layers == 3);
  CHECK(framework_cost_changes(spec_8l(1024), Framework::torchtitan).size() == 2);  // fp32 gradients, the split
  CHECK(framework_cost_changes(spec_8l(1024), Framework::ddp).empty());
}

TEST_CASE("a pipeline plan on a spec: per-stage memory, in flight, bubble and the global batch", "[pipeline][spec]") {
  // A small vocabulary: the embedding and head stages cost about what the others do.
  const auto m = make_spec_model(spec_8l(1024), h100_nodes(2));
  // 16 GPUs = tp 2 x pp 4 x dp 2; m = 8 microbatches of 2: global batch 2 x 8 x 2 = 32.
  Config c = layout_config(2, 8, 16, 2, 4);
  const Prediction p = m->predict(c);
  CHECK(p.config.global_batch() == 32);
  REQUIRE(p.parallel.stages.size() == 4);
  const auto& st = p.parallel.stages;
  CHECK(st[0].in_flight == 4);
  CHECK(st[3].in_flight == 1);
  CHECK(st[0].embedding);
  CHECK(st[3].head);
  for (const auto& s : st) CHECK(s.layers == 2);
  // Stage 0 holds 4 microbatches' activations, stage 3 one (plus the logits): 1F1B's imbalance.
  CHECK(st[0].memory.activations > st[1].memory.activations);
  CHECK(st[1].memory.activations > st[2].memory.activations);
  CHECK(p.parallel.peak_stage == 0);
  CHECK(p.memory.peak == st[0].memory.peak);
  // The bubble is close to (p - 1)/(m + p - 1) = 3/11 (stages differ by the embedding and head).
  CHECK(p.parallel.bubble_fraction == Approx(3.0 / 11.0).epsilon(0.15));
  CHECK(p.time.step_time == Approx(p.time.compute + p.time.comm_exposed + p.time.bubble + p.time.optimizer));
  CHECK(p.tokens_per_s == Approx(p.throughput * 1024));
  // The weights of one stage are about a quarter of the model's over tp (bf16, 2 bytes each).
  const double layer_bytes = 2.0 * double(layer_params(llama_like())) / 2;
  CHECK(double(st[1].memory.weights) == Approx(2 * layer_bytes).epsilon(0.01));
  // More microbatches shrink the bubble; interleaving shrinks it further.
  const Prediction p32 = m->predict(layout_config(2, 32, 16, 2, 4));
  CHECK(p32.parallel.bubble_fraction < p.parallel.bubble_fraction);
  const Prediction il = m->predict(layout_config(2, 32, 16, 2, 4, Schedule::interleaved_1f1b, 2));
  CHECK(il.parallel.bubble_fraction < p32.parallel.bubble_fraction);
  CHECK(il.parallel.stages[0].in_flight == 2 * 3 + 4 + 1);
  // Memory is priced at the m where in flight saturates (memory_accum_steps): pp for 1F1B; for
  // interleaved pp 4 x v 5 rank 0's warm-up is 2 x 3 + 4 x 4 = 22 chunks + 1, which 20 chunks (m 4)
  // cannot hold: m 8 (the next multiple of pp) holds them, as m 64 does.
  ParallelLayout five;
  five.pp = 4, five.virtual_stages = 5, five.schedule = Schedule::interleaved_1f1b;
  CHECK(memory_accum_steps(five, 64) == 8);
  CHECK(memory_accum_steps(five, 4) == 4);
  ParallelLayout two = five;
  two.virtual_stages = 2;  // 2 x 3 + 4 + 1 = 11 chunks: m 8 (16 chunks; m 4 has 8)
  CHECK(memory_accum_steps(two, 32) == 8);
  ParallelLayout plain;
  plain.pp = 4;
  CHECK(memory_accum_steps(plain, 32) == 4);
  const auto deep = make_spec_model(spec_8l(1024), h100_nodes(2));
  Config il2 = layout_config(2, 64, 8, 1, 4, Schedule::interleaved_1f1b, 2);
  Config il2_mem = il2;
  il2_mem.accum_steps = memory_accum_steps(il2.layout, il2.accum_steps);
  CHECK(deep->predict(il2_mem).memory.peak == deep->predict(il2).memory.peak);
  CHECK(deep->predict(il2).parallel.stages[0].in_flight == 11);
  // GPipe holds every microbatch on every stage.
  const Prediction gp = m->predict(layout_config(2, 8, 16, 2, 4, Schedule::gpipe));
  CHECK(gp.parallel.stages[0].in_flight == 8);
  CHECK(gp.memory.activations > p.memory.activations);
  // Tensor parallelism adds its collectives on the critical path: none at tp 1.
  const Prediction tp1 = m->predict(layout_config(2, 8, 8, 1, 4));
  CHECK(tp1.parallel.tp_comm == 0);
  CHECK(p.parallel.tp_comm > 0);
  // The trivial layout is the data-parallel plan itself.
  CHECK(m->predict(Config(2, 8, 16)).parallel.stages.empty());
  // A large vocabulary makes the last stage (head, logits) the slowest and the largest: it
  // paces the pipeline (a larger bubble) and is named as the peak.
  const auto big = make_spec_model(spec_8l(32000), h100_nodes(2));
  const Prediction pb = big->predict(c);
  CHECK(pb.parallel.peak_stage == 3);
  CHECK(pb.parallel.bubble_fraction > p.parallel.bubble_fraction);
  CHECK(pb.parallel.stages[3].busy > pb.parallel.stages[0].busy);
}

TEST_CASE("context parallelism: the cp ranks hold the same weights, so gradients and a sharded plan's state span dp x cp",
          "[pipeline][spec]") {
  const auto m = make_spec_model(spec_8l(1024), h100_nodes(1));
  auto cp_config = [](Count cp, Sharding sh) {
    Config c(1, 1, 8, Strategy::overlap);
    c.layout.cp = cp;
    c.sharding = {sh, 0};
    c.precision = Precision::bf16;
    c.checkpointing = Checkpointing::none;
    return c;
  };
  // Model states: bf16 weights and gradients (2 + 2 bytes), fp32 master + Adam (12 bytes) per
  // parameter. zero3 over dp x cp = 8 ranks at every split of the 8 GPUs: 16 P / 8 each.
  const Prediction dp8 = m->predict(cp_config(1, Sharding::zero3));
  const Prediction cp8 = m->predict(cp_config(8, Sharding::zero3));
  const Prediction cp2 = m->predict(cp_config(2, Sharding::zero3));
  const auto states = [](const Prediction& p) {
    return p.memory.weights + p.memory.gradients + p.memory.optimizer_state;
  };
  CHECK(double(states(cp8)) == Approx(double(states(cp2))).epsilon(0.001));
  // ... and about what dp 8 holds (the data-parallel path pads units; this one does not).
  CHECK(double(states(cp8)) == Approx(double(states(dp8))).epsilon(0.05));
  // cp 8 x dp 1 still reduces its gradients: across the 8 cp ranks, one sync per step.
  CHECK(cp8.gradient_syncs == 1);
  CHECK(cp8.parallel.dp_comm > 0);
  // Unsharded, every cp rank keeps all 16 bytes per parameter: 8x the sharded states.
  const Prediction cp8_ddp = m->predict(cp_config(8, Sharding::none));
  CHECK(double(states(cp8_ddp)) == Approx(8.0 * double(states(cp8))).epsilon(0.01));
  // zero3 at dp 1 is a plan now (it shards over the cp ranks), not "nothing to shard".
  CHECK_FALSE(layout_rejection(cp_config(8, Sharding::zero3), llama_like(), 8).has_value());
}

TEST_CASE("frameworks and layouts", "[pipeline][framework]") {
  FrameworkPlan fp;
  fp.strategy = Strategy::fused;
  fp.precision = Precision::bf16;
  fp.world_size = 16;
  fp.layout.pp = 4;
  CHECK(framework_runs(Framework::megatron, fp));
  CHECK(framework_runs(Framework::deepspeed, fp));
  CHECK(framework_runs(Framework::torchtitan, fp));
  CHECK_THAT(*framework_refusal(Framework::ddp, fp), Catch::Contains("no tensor or pipeline"));
  CHECK_THAT(*framework_refusal(Framework::horovod, fp), Catch::Contains("no tensor or pipeline"));
  fp.sharding = {Sharding::zero2, 0};
  CHECK_THAT(*framework_refusal(Framework::deepspeed, fp), Catch::Contains("incompatible with pipeline parallelism"));
  CHECK(framework_runs(Framework::torchtitan, fp));
  fp.sharding = {};
  fp.layout.schedule = Schedule::gpipe;
  CHECK_THAT(*framework_refusal(Framework::megatron, fp), Catch::Contains("not gpipe"));
  CHECK_THAT(*framework_refusal(Framework::deepspeed, fp), Catch::Contains("1F1B only"));
  fp.layout.schedule = Schedule::interleaved_1f1b;
  fp.layout.virtual_stages = 2;
  fp.layout.tp = 2;
  CHECK(framework_setting(Framework::megatron, fp) ==
        "Megatron-LM --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 "
        "--virtual-pipeline-model-parallel-size 2");
  CHECK_THAT(framework_setting(Framework::torchtitan, fp), Catch::Contains("pipeline_parallel_schedule Interleaved1F1B"));
  CHECK_THAT(*framework_refusal(Framework::deepspeed, fp), Catch::Contains("no tensor or context parallelism"));
  // Megatron-LM's uneven ends span a rank's chunks: one chunk of another size runs from its layout,
  // every model stage given (then the run line writes it).
  fp.layout.first_stage_layers = 7;
  CHECK_THAT(*framework_refusal(Framework::megatron, fp), Catch::Contains("give every model stage's layers"));
  CHECK(framework_runs(Framework::torchtitan, fp));
  ParallelLayout every = fp.layout;
  every.first_stage_layers = 0;
  every.stage_layer_counts = {7, 8, 8, 8, 8, 8, 8, 7};
  FrameworkPlan listed = fp;
  listed.layout = every;
  CHECK(framework_runs(Framework::megatron, listed));
  CHECK_THAT(framework_setting(Framework::megatron, listed),
             Catch::Contains("--pipeline-model-parallel-layout 'Et*7|(t*8|)*6t*7L'"));
  CHECK_THAT(framework_setting(Framework::megatron, listed), !Catch::Contains("--virtual-pipeline-model-parallel-size"));
  fp.layout.virtual_stages = 1;
  fp.layout.schedule = Schedule::one_f_one_b;
  CHECK(framework_runs(Framework::megatron, fp));
}
