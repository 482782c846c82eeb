// What: `gaccum-tune predict`: the cost model's answer for one configuration: step-time
//       breakdown with its band, throughput (samples/s, tokens/s), peak memory per rank with its
//       breakdown, collectives per step, and which measurements or fits it came from; by default
//       it also prices `every-step` against `overlap` (the common mistake's cost).
//       `--profile` (measured) or `--spec` (analytic transformer, needs `--cluster` with a peak
//       FLOP/s), optionally `--cluster` to scale a profile beyond the local machine.
// Why: the model must be inspectable one configuration at a time before the tuner searches it.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/layout_flags.hpp"
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
#include "reports/summary.hpp"
#include "tuner/explanation.hpp"
#include "tuner/tune_request.hpp"

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
  std::string memory_cap;            // default: the device memory
  std::string margin = "10%";        // the safety margin tune and check keep
  std::string framework;          // ddp | fsdp | fsdp2 | deepspeed | megatron | torchtitan | horovod; "": any
  LayoutFlags layout;             // --tp, --pp, --cp, --virtual-stages, --schedule, --sequence-parallel, --stage-layers
  bool extrapolate = false;       // allow micro_batch above the measured range
  bool json = false;
};

std::optional<Framework> framework_of(const PredictOptions& o) {
  if (o.framework.empty()) return std::nullopt;
  return parse_framework(o.framework, "--framework");
}

// Does the prediction fit? Against the device memory (or --memory-cap, never above the device)
// and the margin tune and check keep below it. A plan over the hard limit gets the layout
// change that fits while keeping the global batch (micro_batch x accum_steps), else the plan
// change that does.
struct FitVerdict {
  bool known = false;         // false: no device memory and no absolute --memory-cap
  bool fits = false;          // peak <= hard limit
  bool within_margin = false; // peak <= limit (hard less the margin)
  Bytes hard = 0, limit = 0;
  std::string text;           // the line after "fits" / "DOES NOT FIT"
};

FitVerdict fit_verdict(const model::CostModel& m, const model::Prediction& p, const PredictOptions& o, bool extrapolate) {
  FitVerdict v;
  const Bytes device = m.info().device_memory;
  const MemoryCap cap = o.memory_cap.empty() ? MemoryCap{} : parse_memory_cap(o.memory_cap, "--memory-cap");
  const double margin = parse_fraction(o.margin, "--margin");
  if (!cap.absolute && device == 0) {
    v.text = "unknown (no device memory: give --memory-cap 80GiB)";
    return v;
  }
  v.known = true;
  const Bytes capped = cap.resolve(device);
  v.hard = device > 0 ? std::min(capped, device) : capped;
  v.limit = tuner::apply_margin(v.hard, margin);
  const std::string where = device > 0 && v.hard == device
                                ? fmt::format("the {} device", format_bytes(device))
                                : fmt::format("the --memory-cap {}", format_bytes(v.hard));
  const Bytes peak = p.memory.peak;
  v.fits = peak <= v.hard;
  v.within_margin = peak <= v.limit;
  if (v.within_margin) {
    v.text = fmt::format("yes: {} headroom on {} ({} below the {:g}% margin's limit {})", format_bytes(v.hard - peak),
                         where, format_bytes(v.limit - peak), 100 * margin, format_bytes(v.limit));
    return v;
  }
  if (v.fits) {
    v.text = fmt::format("only just: {} headroom on {}, inside the {:g}% margin tune and check keep (limit {}): the "
                         "allocator's fragmentation can still run it out of memory",
                         format_bytes(v.hard - peak), where, 100 * margin, format_bytes(v.limit));
    return v;
  }
  // The fix: the largest smaller micro_batch that divides b x k (the global batch stays), else a
  // plan change at the same b and k.
  const model::Config& c0 = p.config;
  const Count local = c0.micro_batch * c0.accum_steps;
  std::vector<Count> divisors;
  for (Count d = 1; d * d <= local; ++d)
    if (local % d == 0) {
      if (d < c0.micro_batch) divisors.push_back(d);
      if (local / d < c0.micro_batch && local / d != d) divisors.push_back(local / d);
    }
  std::sort(divisors.rbegin(), divisors.rend());
  std::string fix;
  int tries = 0;
  for (Count b : divisors) {
    if (++tries > 64) break;
    model::Config c = c0;
    c.micro_batch = b;
    c.accum_steps = local / b;
    const model::Prediction q = m.predict(c);
    if (q.micro_batch_extrapolated && !extrapolate) continue;
    if (q.memory.peak <= v.limit) {
      fix = fmt::format("micro_batch {} x accum_steps {} keeps global_batch {} and fits (peak {})", b, c.accum_steps,
                        c.global_batch(), format_bytes(q.memory.peak));
      break;
    }
  }
  if (fix.empty()) {
    // Plan changes at the smallest micro_batch (the global batch kept), each priced: only one
    // that fits is offered.
    struct Change {
      std::string flags;
      model::Config config;
    };
    model::Config small = c0;
    small.micro_batch = 1;
    small.accum_steps = local;
    std::vector<Change> changes;
    const bool sharded = c0.sharding.sharding == Sharding::zero3 || c0.sharding.sharding == Sharding::hsdp;
    const bool full = c0.checkpointing && *c0.checkpointing == Checkpointing::full;
    if (!sharded && c0.world_size > 1) {
      Change z{"--sharding zero3", small};
      z.config.sharding = ShardingChoice{Sharding::zero3, 0};
      changes.push_back(z);
    }
    if (!full) {
      Change f{"--checkpointing full", small};
      f.config.checkpointing = Checkpointing::full;
      changes.push_back(f);
    }
    if (!sharded && !full && c0.world_size > 1) {
      Change zf{"--sharding zero3 --checkpointing full", small};
      zf.config.sharding = ShardingChoice{Sharding::zero3, 0};
      zf.config.checkpointing = Checkpointing::full;
      changes.push_back(zf);
    }
    // Sharded gradients: overlap/fused (no_sync) hold the whole gradient across the window; every-step
    // reduce-scatters it each micro-step, so only the shard stays (zero2, zero3, hsdp; zero1 keeps it whole).
    const bool whole_grads = c0.world_size > 1 && !traits(c0.strategy).every_micro_step &&
                             c0.sharding.sharding != Sharding::zero1;
    if (whole_grads) {
      Change e{sharded || c0.sharding.sharding == Sharding::zero2 ? "--strategy every-step"
                                                                   : "--sharding zero3 --strategy every-step",
               small};
      if (!sharded && c0.sharding.sharding != Sharding::zero2) e.config.sharding = ShardingChoice{Sharding::zero3, 0};
      e.config.strategy = Strategy::every_step;
      changes.push_back(e);
      if (!full) {
        Change ef{e.flags + " --checkpointing full", e.config};
        ef.config.checkpointing = Checkpointing::full;
        changes.push_back(ef);
      }
    }
    // Each change at the largest micro_batch (b itself, then the divisors of b x k below it) that fits.
    const std::optional<Framework> fw = framework_of(o);  // parsed once, not per priced change
    std::vector<Count> sizes{c0.micro_batch};
    sizes.insert(sizes.end(), divisors.begin(), divisors.end());
    for (const auto& ch : changes) {
      if (!fix.empty()) break;
      int priced = 0;
      for (Count b : sizes) {
        if (++priced > 32) break;
        model::Config c = ch.config;
        c.micro_batch = b;
        c.accum_steps = local / b;
        try {
          if (model::plan_rejection(c)) break;
          if (fw && !framework_runs(*fw, model::framework_plan(c))) break;
          const model::Prediction q = m.predict(c);
          if (q.micro_batch_extrapolated && !extrapolate) continue;
          if (q.memory.peak <= v.limit) {
            fix = fmt::format("micro_batch {} x accum_steps {} with {} fits (peak {})", b, c.accum_steps, ch.flags,
                              format_bytes(q.memory.peak));
            break;
          }
        } catch (const InputError&) {
          break;  // a plan this model cannot price (e.g. a profile measured in fp32 only): not offered
        }
      }
    }
    if (fix.empty()) {
      const auto& mm = p.memory;
      fix = fmt::format("no smaller micro_batch or plan change at world_size {} fits (weights, gradients and optimizer "
                        "state alone take {}): more ranks with --sharding zero3 shard them further",
                        c0.world_size, format_bytes(mm.weights + mm.gradients + mm.optimizer_state));
    }
  }
  v.text = fmt::format("peak {} is {} over {}: {}", format_bytes(peak), format_bytes(peak - v.hard), where, fix);
  return v;
}

// The model of the one source the flags name (cli/model_source.hpp); a profile-first source
// says on stderr where its profile came from.
std::unique_ptr<model::CostModel> make_model(const PredictOptions& o) {
  auto src = model_source_from_flags(o.source, Optimizer::adam, "");
  if (!o.precision.empty()) src.precision = parse_precision(o.precision, "--precision");
  if (!o.checkpointing.empty()) src.checkpointing = parse_checkpointing(o.checkpointing, "--checkpointing");
  src.framework = framework_of(o);
  src.framework_source = "flag --framework";
  LoadedModel l = load_model_source(src);
  if (o.source.profile_first())
    std::cerr << fmt::format("gaccum-tune: profile {} {}\n",
                             l.source.value("cached", false) ? "cached" : "measured now and cached at",
                             l.source.value("path", std::string()));
  return std::move(l.model);
}

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

// A tensor/pipeline/context-parallel plan: the layout, the schedule's bubble and each pipeline
// rank's time and memory (the peak rank marked).
void print_stages(const model::Prediction& p, const model::ModelInfo& info) {
  const auto& c = p.config;
  const auto& l = c.layout;
  const auto& d = p.parallel;
  fmt::print("  layout         {} x dp {} = world_size {} (tp {} x pp {} x cp {} x dp {}){}\n", to_string(l),
             c.data_parallel(), c.world_size, l.tp, l.pp, l.cp, c.data_parallel(),
             l.pp > 1 ? fmt::format("; m = accum_steps = {} microbatches per step", c.accum_steps) : "");
  if (l.pp > 1)
    fmt::print("  pipeline       {} schedule {}, bubble {:.1f}% (idle, averaged over the {} ranks); P2P {} per send\n",
               to_string(l.schedule), format_seconds(d.pipeline), 100 * d.bubble_fraction, l.pp,
               format_seconds(d.p2p));
  if (l.tp > 1 || l.cp > 1)
    fmt::print("  model comm     tensor-parallel collectives {} per step{}, on the critical path\n",
               format_seconds(d.tp_comm), l.cp > 1 ? fmt::format(", context-parallel K/V {} beyond attention",
                                                               format_seconds(d.cp_comm))
                                                   : "");
  if (c.data_parallel() * l.cp > 1)
    fmt::print("  dp reduction   {} exposed after the schedule (over {} ranks {} apart{})\n", format_seconds(d.dp_comm),
               c.data_parallel() * l.cp, l.tp,
               l.cp > 1 ? fmt::format(": dp {} x cp {}, whose ranks hold the same weights", c.data_parallel(), l.cp) : "");
  if (l.pp <= 1) return;  // one stage: the peak memory and step time above are its row
  fmt::print("  {:<6} {:>6} {:>10} {:>10} {:>9} {:>11} {:>11} {:>11} {:>11}\n", "stage", "layers", "busy", "idle",
             "in flight", "weights", "grads+opt", "activations", "peak");
  for (const auto& s : d.stages) {
    const auto& m = s.memory;
    std::string name = fmt::format("{}{}{}", s.rank, s.embedding ? "e" : "", s.head ? "h" : "");
    fmt::print("  {:<6} {:>6} {:>10} {:>10} {:>9} {:>11} {:>11} {:>11} {:>11}{}\n", name, s.layers,
               format_seconds(s.busy), format_seconds(s.idle), s.in_flight, format_bytes(m.weights + m.gathered),
               format_bytes(m.gradients + m.optimizer_state), format_bytes(m.activations), format_bytes(m.peak),
               s.rank == d.peak_stage
                   ? (info.device_memory > 0 ? fmt::format("  <- peak ({:.1f}% of the device)",
                                                          100.0 * double(m.peak) / double(info.device_memory))
                                             : std::string("  <- peak"))
                   : "");
  }
  fmt::print("  (stage: pipeline rank; e embedding, h head; in flight: microbatch chunks whose activations one "
               "rank holds at once)\n");
}

void print_prediction(const model::Prediction& p, const model::ModelInfo& info, std::optional<Framework> fw) {
  const auto& c = p.config;
  const auto& t = p.time;
  const auto& m = p.memory;
  fmt::print("strategy {}: micro_batch {}, accum_steps {}, world_size {}, global_batch {}{}\n", to_string(c.strategy),
             c.micro_batch, c.accum_steps, c.world_size, c.global_batch(), p.extrapolated ? "  (extrapolated)" : "");
  {
    // The plan, always: with the model's own precision and checkpointing named as such.
    model::Config shown = c;
    std::string own;
    if (!shown.precision) {
      shown.precision = info.plans.own_precision();
      own = info.source == "spec" ? " (precision: the spec's dtype)" : " (precision: as profiled)";
    }
    if (!shown.checkpointing && !info.plans.checkpointings.empty()) shown.checkpointing = info.plans.own_checkpointing();
    fmt::print("  plan           {}{}\n", tuner::plan_words(shown), own);
  }
  if (const std::string on = tuner::runs_on_text(p, fw); !on.empty()) fmt::print("  frameworks     {}\n", on);
  if (format_seconds(p.step_time_lo) == format_seconds(p.step_time_hi))  // a spec's band is a point
    fmt::print("  step time      {}\n", format_seconds(t.step_time));
  else
    fmt::print("  step time      {}  [{} .. {}]\n", format_seconds(t.step_time), format_seconds(p.step_time_lo),
               format_seconds(p.step_time_hi));
  fmt::print("    compute      {}  ({} x {} per micro-step)\n", format_seconds(t.compute), c.accum_steps,
             format_seconds(t.compute / double(c.accum_steps)));
  if (!c.layout.data_parallel_only()) {
    fmt::print("    comm exposed {}  (tensor/context-parallel collectives {} on the critical path, data-parallel "
               "reduction {} after the schedule; times {}, links {})\n",
               format_seconds(t.comm_exposed), format_seconds(p.parallel.tp_comm + p.parallel.cp_comm),
               format_seconds(p.parallel.dp_comm), model::to_string(p.comm_source),
               model::link_sources_text(p.intra_link, p.inter_link));
    if (c.layout.pp > 1)
      fmt::print("    bubble       {}  (the critical pipeline rank's idle time in the {} schedule)\n",
                 format_seconds(t.bubble), to_string(c.layout.schedule));
  } else if (c.world_size > 1)
    fmt::print("    comm exposed {}  (of {} issued incl. copies; {} {} per step; times {}{})\n",
               format_seconds(t.comm_exposed), format_seconds(t.comm_total), p.collectives_per_step,
               c.sharding.sharding == Sharding::none ? "allreduce(s)" : "collectives (all-gather, reduce-scatter)",
               fmt::format("{}, links {}", model::to_string(p.comm_source),
                           model::link_sources_text(p.intra_link, p.inter_link)),
               c.strategy == Strategy::fused ? std::string()
               : p.overlap_efficiency < 0
                   ? fmt::format("; overlap efficiency {:.2f}: overlapping slowed the backward it ran beside by more "
                                 "than it hid, so more is exposed than issued",
                                 p.overlap_efficiency)
                   : fmt::format("; overlap efficiency {:.2f}: the share of what the bucket schedule could hide "
                                 "that backward does hide",
                                 p.overlap_efficiency));
  else
    fmt::print("    comm exposed {}  (world_size 1: no communication)\n", format_seconds(t.comm_exposed));
  fmt::print("    optimizer    {}\n", format_seconds(t.optimizer));
  if (p.compute.gpu_model)
    fmt::print("    GPU compute  GEMM efficiency {:.0f}%, MFU {:.0f}%; one micro-step{}: GEMMs {}, attention {}, "
               "memory-bound {}, kernel overhead {}\n",
               100 * p.compute.gemm_efficiency, 100 * p.compute.mfu,
               c.layout.data_parallel_only() ? "" : " of one rank's layers", format_seconds(p.compute.gemm),
               format_seconds(p.compute.attention), format_seconds(p.compute.memory_bound),
               format_seconds(p.compute.overhead));
  if (p.tokens_per_s > 0)
    fmt::print("  throughput     {} samples/s, {}\n", format_rate(p.throughput), reports::llm_units_text(p));
  else
    fmt::print("  throughput     {} samples/s\n", format_rate(p.throughput));
  fmt::print("  peak memory    {} per rank{}\n", format_bytes(m.peak),
             info.device_memory > 0 ? fmt::format(" ({:.1f}% of {})", 100.0 * double(m.peak) / double(info.device_memory),
                                                  format_bytes(info.device_memory))
                                    : "");
  fmt::print("    weights {}, gradients {}, optimizer state {}{}, comm buffers {}, activations {}\n",
             format_bytes(m.weights), format_bytes(m.gradients), format_bytes(m.optimizer_state),
             m.gathered > 0 ? fmt::format(", gathered parameters {}", format_bytes(m.gathered)) : "",
             format_bytes(m.comm_buffers), format_bytes(m.activations));
  if (!m.peak_phase.empty()) fmt::print("    peak phase   {}\n", m.peak_phase);
  if (p.priced_as)
    fmt::print("    priced as {} runs it (no --framework: the framework here that runs this plan)\n",
               traits(*p.priced_as).display);
  if (m.allocator_reserve > 0)
    fmt::print("    allocated {} + caching allocator reserve {} (the peak compares with torch.cuda.max_memory_reserved)\n",
               format_bytes(m.allocated()), format_bytes(m.allocator_reserve));
  if (!c.layout.data_parallel_only()) print_stages(p, info);
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
  base.layout = layout_from_flags(o.layout);
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
  const std::optional<Framework> fw = framework_of(o);
  if (fw)
    if (auto why = model_refusal(*fw, info.plans.own_module)) throw InputError(fmt::format("--framework {}: {}", to_string(*fw), *why));
  std::vector<model::Prediction> preds;
  for (Strategy s : strategies) {
    model::Config c = base;
    c.strategy = s;
    if (all && model::plan_rejection(c)) continue;  // e.g. zero1 with every-step
    if (all && !c.layout.data_parallel_only() && traits(s).every_micro_step) continue;  // a pipeline reduces once
    if (fw) {
      // A plan the job's framework refuses is not predicted as if it could run.
      if (auto why = framework_refusal(*fw, model::framework_plan(c))) {
        if (all) continue;
        if (c.checkpointing == Checkpointing::selective_op && !framework_refusal(*fw, [&] {
              auto fp = model::framework_plan(c);
              fp.checkpointing = Checkpointing::full;
              return fp;
            }()))
          throw InputError(fmt::format("--framework {}: {}; predict --checkpointing full instead",
                                       to_string(*fw), *why));
        throw InputError(fmt::format("--framework {}: {} (--strategy {}, --sharding {}); predict a plan it runs, e.g. "
                                     "--strategy all lists them",
                                     to_string(*fw), *why, to_string(s), to_string(c.sharding)));
      }
    }
    preds.push_back(m->predict(c));
  }
  if (preds.empty())
    throw InputError(fmt::format("--framework {}: runs no strategy with --sharding {}", to_string(*fw),
                                 to_string(base.sharding)));
  if (preds.front().memory.peak >= model::kMaxPredictedBytes)
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
  auto framework_runs_it = [&](Strategy s) {
    model::Config c = base;
    c.strategy = s;
    return !fw || framework_runs(*fw, model::framework_plan(c));
  };
  if (base.world_size > 1 && base.layout.data_parallel_only() && price.applicable && framework_runs_it(Strategy::overlap) &&
      framework_runs_it(Strategy::every_step)) {
    model::Config c = base;
    c.strategy = Strategy::overlap;
    auto ov = m->predict(c);
    c.strategy = Strategy::every_step;
    vs.emplace(ov, m->predict(c));
  }

  std::vector<FitVerdict> fits;
  for (const auto& p : preds) fits.push_back(fit_verdict(*m, p, o, o.extrapolate));

  if (o.json) {
    nlohmann::json j;
    j["schema"] = "gaccum-tune/prediction";
    j["schema_version"] = 2;
    j["model"] = model::to_json(info);
    j["predictions"] = nlohmann::json::array();
    for (std::size_t i = 0; i < preds.size(); ++i) {
      nlohmann::json pj = model::to_json(preds[i]);
      const FitVerdict& v = fits[i];
      pj["fits"] = v.known ? nlohmann::json(v.fits) : nlohmann::json(nullptr);
      pj["fits_within_margin"] = v.known ? nlohmann::json(v.within_margin) : nlohmann::json(nullptr);
      pj["memory_limit_bytes"] = v.known ? nlohmann::json(v.hard) : nlohmann::json(nullptr);
      pj["memory_verdict"] = v.text;
      j["predictions"].push_back(pj);
    }
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
  for (std::size_t i = 0; i < preds.size(); ++i) {
    print_prediction(preds[i], info, fw);
    const FitVerdict& v = fits[i];
    fmt::print("  {:<14} {}\n", v.known && !v.fits ? "DOES NOT FIT" : "fits", v.text);
    if (!preds[i].unconfirmed.empty())
      fmt::print("  {:<14} priced from {} measurement(s) the profile could not confirm: {}; profile again on a quiet "
                 "machine before trusting it\n",
                 "CAVEAT", preds[i].unconfirmed.size(), fmt::join(preds[i].unconfirmed, "; "));
  }
  if (vs && base.sharding.sharding == Sharding::none) {
    const auto& [ov, ev] = *vs;
    fmt::print("every-step vs overlap: {} vs {} per step ({}; {} vs {} allreduces per step)\n",
               format_seconds(ev.time.step_time), format_seconds(ov.time.step_time),
               pct(ev.time.step_time / ov.time.step_time - 1), ev.collectives_per_step, ov.collectives_per_step);
  } else if (base.world_size > 1 && !(framework_runs_it(Strategy::overlap) && framework_runs_it(Strategy::every_step))) {
    model::Config c = base;
    c.strategy = framework_runs_it(Strategy::overlap) ? Strategy::every_step : Strategy::overlap;
    fmt::print("sync choice: {}: not a choice on {}\n", *framework_refusal(*fw, model::framework_plan(c)),
               traits(*fw).display);
  } else if (base.world_size > 1 && base.layout.data_parallel_only()) {
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
  add_layout_flags(sub, o->layout);
  sub->add_option("--micro-batch,-b", o->micro_batch, "samples per forward/backward on one rank (at most 2^40)")->required();
  sub->add_option("--accum-steps,-k", o->accum_steps, "micro-batches per optimizer step (at most 2^40)");
  sub->add_option("--world-size,-p", o->world_size, "data-parallel ranks (at most 2^40; b*k*p at most 2^40)");
  sub->add_option("--strategy", o->strategy, "overlap | fused | every-step | all");
  sub->add_option("--sharding", o->sharding,
                  "none | zero1 | zero2 | zero3 | hsdp:G (FSDP: no_shard, shard_grad_op, full_shard, hybrid_shard:G) "
                  "[default: none]");
  sub->add_option("--precision", o->precision, "fp32 | bf16 | fp16 [default: the model's own]");
  sub->add_option("--checkpointing", o->checkpointing, "activation checkpointing: none | selective (Megatron's) | selective-op (torchtitan's per-op) | full [default: the model's own]");
  sub->add_option("--framework", o->framework,
                  "the framework the job runs on: ddp | fsdp | fsdp2 | deepspeed | megatron | torchtitan | horovod "
                  "(a plan it refuses is an error; fixes stay within it) [default: any, each plan labelled]");
  sub->add_option("--memory-cap", o->memory_cap,
                  "per-rank memory limit the fits line checks: bytes (70GiB) or a share of the device (90%) "
                  "[default: the device memory]");
  sub->add_option("--margin", o->margin, "safety margin below the limit, as tune and check keep it [default: 10%]");
  sub->add_flag("--extrapolate", o->extrapolate, "allow a micro_batch above the measured range");
  sub->add_flag("--json", o->json, "print one JSON object");
  sub->callback([o, &action] { action = [o] { return run_predict(*o); }; });
}

}  // namespace gaccum::cli
