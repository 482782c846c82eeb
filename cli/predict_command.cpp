// What: `gaccum-tune predict`: the cost model's answer for one configuration: step-time
//       breakdown with its band, throughput (samples/s, tokens/s), peak memory per rank with its
//       breakdown, collectives per step, and which measurements or fits it came from; by default
//       it also prices `every-step` against `overlap` (the common mistake's cost).
//       `--profile` (measured) or `--spec` (analytic transformer, needs `--cluster` with a peak
//       FLOP/s), optionally `--cluster` to scale a profile beyond the local machine.
// Why: the model must be inspectable one configuration at a time before the tuner searches it.
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/model_flags.hpp"
#include "cli/model_source.hpp"
#include "cli/command.hpp"
#include "cli/profile_cache.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/profile.hpp"
#include "core/strategy.hpp"
#include "core/units.hpp"
#include "model/cluster.hpp"
#include "model/prediction_json.hpp"
#include "model/profile_model.hpp"
#include "model/plan_cost.hpp"
#include "model/spec_model.hpp"
#include "tuner/explanation.hpp"

namespace gaccum::cli {
namespace {

struct PredictOptions {
  ModelSourceFlags source;        // --profile | --spec (+ --cluster, --mfu) | --workload / --torchscript
  std::string micro_batch;        // required
  std::string accum_steps = "1";
  std::string world_size = "1";
  std::string strategy = "overlap";  // overlap | fused | every-step | all
  std::string sharding = "none";     // none | zero1 | zero2 | zero3 | hsdp:G (FSDP names accepted)
  std::string precision;             // default: the model's own (profile: as measured; spec: its dtype)
  std::string checkpointing;         // default: the model's own
  bool extrapolate = false;       // allow micro_batch above the measured range
  bool json = false;
};

// The model of the one source the flags name (cli/model_source.hpp); a profile-first source
// says on stderr where its profile came from.
std::unique_ptr<model::CostModel> make_model(const PredictOptions& o) {
  auto src = model_source_from_flags(o.source, Optimizer::adam, "");
  if (!o.precision.empty()) src.precision = parse_precision(o.precision, "--precision");
  if (!o.checkpointing.empty()) src.checkpointing = parse_checkpointing(o.checkpointing, "--checkpointing");
  LoadedModel l = load_model_source(src);
  if (o.source.profile_first())
    std::cerr << fmt::format("gaccum-tune: profile {} {}\n",
                             l.source.value("cached", false) ? "cached" : "measured now and cached at",
                             l.source.value("path", std::string()));
  return std::move(l.model);
}

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

void print_prediction(const model::Prediction& p, const model::ModelInfo& info) {
  const auto& c = p.config;
  const auto& t = p.time;
  const auto& m = p.memory;
  fmt::print("strategy {}: micro_batch {}, accum_steps {}, world_size {}, global_batch {}{}\n", to_string(c.strategy),
             c.micro_batch, c.accum_steps, c.world_size, c.global_batch(), p.extrapolated ? "  (extrapolated)" : "");
  if (c.sharding.sharding != Sharding::none || c.precision != Precision::fp32 || c.checkpointing != Checkpointing::none)
    fmt::print("  plan           {}\n", tuner::plan_words(c));
  fmt::print("  step time      {}  [{} .. {}]\n", format_seconds(t.step_time), format_seconds(p.step_time_lo),
             format_seconds(p.step_time_hi));
  fmt::print("    compute      {}  ({} x {} per micro-step)\n", format_seconds(t.compute), c.accum_steps,
             format_seconds(t.compute / double(c.accum_steps)));
  if (c.world_size > 1)
    fmt::print("    comm exposed {}  (of {} issued incl. copies; {} {} per step; times {}{})\n",
               format_seconds(t.comm_exposed), format_seconds(t.comm_total), p.collectives_per_step,
               c.sharding.sharding == Sharding::none ? "allreduce(s)" : "collectives (all-gather, reduce-scatter)",
               fmt::format("{}, links {}", model::to_string(p.comm_source),
                           model::link_sources_text(p.intra_link, p.inter_link)),
               c.strategy == Strategy::fused ? "" : fmt::format("; overlap efficiency {:.2f}", p.overlap_efficiency));
  else
    fmt::print("    comm exposed {}  (world_size 1: no communication)\n", format_seconds(t.comm_exposed));
  fmt::print("    optimizer    {}\n", format_seconds(t.optimizer));
  if (p.compute.gpu_model)
    fmt::print("    GPU compute  GEMM efficiency {:.0f}%, MFU {:.0f}%; one micro-step: GEMMs {}, attention {}, memory-bound "
               "{}, kernel overhead {}\n",
               100 * p.compute.gemm_efficiency, 100 * p.compute.mfu, format_seconds(p.compute.gemm),
               format_seconds(p.compute.attention), format_seconds(p.compute.memory_bound),
               format_seconds(p.compute.overhead));
  if (p.tokens_per_s > 0)
    fmt::print("  throughput     {:.1f} samples/s, {:.0f} tokens/s\n", p.throughput, p.tokens_per_s);
  else
    fmt::print("  throughput     {:.1f} samples/s\n", p.throughput);
  fmt::print("  peak memory    {} per rank{}\n", format_bytes(m.peak),
             info.device_memory > 0 ? fmt::format(" ({:.1f}% of {})", 100.0 * double(m.peak) / double(info.device_memory),
                                                  format_bytes(info.device_memory))
                                    : "");
  fmt::print("    weights {}, gradients {}, optimizer state {}{}, comm buffers {}, activations {}\n",
             format_bytes(m.weights), format_bytes(m.gradients), format_bytes(m.optimizer_state),
             m.gathered > 0 ? fmt::format(", gathered parameters {}", format_bytes(m.gathered)) : "",
             format_bytes(m.comm_buffers), format_bytes(m.activations));
  if (m.allocator_reserve > 0)
    fmt::print("    allocated {} + caching allocator reserve {} (the peak compares with torch.cuda.max_memory_reserved)\n",
               format_bytes(m.allocated()), format_bytes(m.allocator_reserve));
}

int run_predict(const PredictOptions& o) {
  model::Config base;
  {  // b, k, p and b*k*p within core/checked.hpp's limit (2^40), each error naming its flag
    const Count b = parse_count_at_most(o.micro_batch, "--micro-batch");
    const Count k = parse_count_at_most(o.accum_steps, "--accum-steps");
    const Count p = parse_count_at_most(o.world_size, "--world-size");
    checked_global_batch(b, k, p, "--micro-batch x --accum-steps x --world-size");
  }

  base.micro_batch = parse_positive_count(o.micro_batch, "--micro-batch");
  base.accum_steps = parse_positive_count(o.accum_steps, "--accum-steps");
  base.world_size = parse_positive_count(o.world_size, "--world-size");
  base.sharding = parse_sharding(o.sharding, "--sharding");
  if (!o.precision.empty()) base.precision = parse_precision(o.precision, "--precision");
  if (!o.checkpointing.empty()) base.checkpointing = parse_checkpointing(o.checkpointing, "--checkpointing");
  std::vector<Strategy> strategies;
  const bool all = o.strategy == "all";
  if (all)
    strategies.assign(kAllStrategies.begin(), kAllStrategies.end());
  else
    try {
      strategies.push_back(parse_strategy(o.strategy, "--strategy"));
    } catch (const InputError&) {
      throw InputError(fmt::format("--strategy: unknown strategy '{}': expected overlap, fused, every-step or all", o.strategy));
    }

  auto m = make_model(o);
  const auto& info = m->info();
  if (base.sharding.sharding == Sharding::hsdp && base.sharding.group == 0) {
    if (info.plans.gpus_per_node < 2)
      throw InputError("--sharding hsdp: give the group size, e.g. --sharding hsdp:8 (no --cluster gives GPUs per node)");
    base.sharding.group = info.plans.gpus_per_node;
  }
  std::vector<model::Prediction> preds;
  for (Strategy s : strategies) {
    model::Config c = base;
    c.strategy = s;
    if (all && model::plan_rejection(c)) continue;  // e.g. zero1 with every-step
    preds.push_back(m->predict(c));
  }
  if (!preds.empty() && preds.front().memory.peak >= model::kMaxPredictedBytes)
    throw InputError(fmt::format("--micro-batch {}: the predicted peak memory is beyond 2^60 bytes (an exabyte) per rank; "
                                 "no device holds it: use a smaller micro_batch",
                                 base.micro_batch));
  if (preds.front().micro_batch_extrapolated && !o.extrapolate)
    throw InputError(fmt::format("--micro-batch {} is above the largest measured micro_batch {}; pass --extrapolate to use "
                                 "the model's extrapolation rule, or profile larger micro-batches",
                                 base.micro_batch, info.measured_max_micro_batch));

  // every-step priced against overlap (both with the same b, k, p).
  std::optional<std::pair<model::Prediction, model::Prediction>> vs;
  const tuner::StrategyPrice price = tuner::price_every_step(*m, base);
  if (base.world_size > 1 && price.applicable) {
    model::Config c = base;
    c.strategy = Strategy::overlap;
    auto ov = m->predict(c);
    c.strategy = Strategy::every_step;
    vs.emplace(ov, m->predict(c));
  }

  if (o.json) {
    nlohmann::json j;
    j["schema"] = "gaccum-tune/prediction";
    j["schema_version"] = 2;
    j["model"] = model::to_json(info);
    j["predictions"] = nlohmann::json::array();
    for (const auto& p : preds) j["predictions"].push_back(model::to_json(p));
    if (vs)
      j["every_step_vs_overlap"] = {{"overlap_step_time", vs->first.time.step_time},
                                    {"every_step_step_time", vs->second.time.step_time},
                                    {"slowdown", vs->second.time.step_time / vs->first.time.step_time},
                                    {"extra_comm_exposed", vs->second.time.comm_exposed - vs->first.time.comm_exposed}};
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }

  fmt::print("gaccum-tune predict: {} ({} model, {} {}{})\n", info.workload_name, info.source, info.device_kind,
             info.device_name, info.threads_per_rank > 0 ? fmt::format(", {} threads/rank", info.threads_per_rank) : "");
  for (const auto& p : preds) print_prediction(p, info);
  if (vs && base.sharding.sharding == Sharding::none) {
    const auto& [ov, ev] = *vs;
    fmt::print("every-step vs overlap: {} vs {} per step ({}; {} vs {} allreduces per step)\n",
               format_seconds(ev.time.step_time), format_seconds(ov.time.step_time),
               pct(ev.time.step_time / ov.time.step_time - 1), ev.collectives_per_step, ov.collectives_per_step);
  } else if (base.world_size > 1) {
    fmt::print("sync choice: {}\n", price.text);
  }
  if (info.noise_scale)
    fmt::print("noise scale: B_noise {:.1f} samples; steps to target x{:.2f} at global_batch {}\n", *info.noise_scale,
               1.0 + *info.noise_scale / double(base.global_batch()), base.global_batch());
  fmt::print("model notes:\n");
  for (const auto& n : info.notes) fmt::print("  - {}\n", n);
  return kExitOk;
}

}  // namespace

void add_predict_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<PredictOptions>();
  auto* sub = app.add_subcommand("predict", "Predict step time, throughput and peak memory of one configuration");
  add_model_source_flags(sub, o->source, false);
  sub->add_option("--micro-batch,-b", o->micro_batch, "samples per forward/backward on one rank (at most 2^40)")->required();
  sub->add_option("--accum-steps,-k", o->accum_steps, "micro-batches per optimizer step (at most 2^40)");
  sub->add_option("--world-size,-p", o->world_size, "data-parallel ranks (at most 2^40; b*k*p at most 2^40)");
  sub->add_option("--strategy", o->strategy, "overlap | fused | every-step | all");
  sub->add_option("--sharding", o->sharding,
                  "none | zero1 | zero2 | zero3 | hsdp:G (FSDP: no_shard, shard_grad_op, full_shard, hybrid_shard:G) "
                  "[default: none]");
  sub->add_option("--precision", o->precision, "fp32 | bf16 | fp16 [default: the model's own]");
  sub->add_option("--checkpointing", o->checkpointing, "activation checkpointing: none | selective | full [default: the model's own]");
  sub->add_flag("--extrapolate", o->extrapolate, "allow a micro_batch above the measured range");
  sub->add_flag("--json", o->json, "print one JSON object");
  sub->callback([o, &action] { action = [o] { return run_predict(*o); }; });
}

}  // namespace gaccum::cli
