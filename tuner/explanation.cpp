// What/why: the per-pick explanations of explanation.hpp. Texts are single sentences with their
// numbers so the terminal, Markdown, JSON and HTML reports can show them unchanged.
#include "tuner/explanation.hpp"

#include <algorithm>
#include <optional>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "model/pipeline.hpp"
#include "model/plan_cost.hpp"
#include "model/recompute_mix.hpp"

namespace gaccum::tuner {
namespace {

std::string pct(double f) {
  return fmt::format("{:.1f}%", f * 100);
}

std::string signed_seconds(Seconds s) {
  return (s >= 0 ? "+" : "-") + format_seconds(std::fabs(s));
}

std::string objective_unit(Objective o) {
  switch (o) {
    case Objective::throughput:
      return "samples/s";
    case Objective::cost:
      return "GPU-s/sample";
    case Objective::time_to_target:
      return "s per S_min step";
  }
  return "";
}

std::string value_text(Objective o, double v) {
  return o == Objective::throughput ? fmt::format("{:.1f} {}", v, objective_unit(o))
                                    : fmt::format("{:.4g} {}", v, objective_unit(o));
}

}  // namespace

std::string short_config(const model::Config& c) {
  std::string s = fmt::format("b={} k={} p={} {}", c.micro_batch, c.accum_steps, c.world_size, to_string(c.strategy));
  if (!c.layout.data_parallel_only()) s += " " + short_string(c.layout);
  if (c.sharding.sharding != Sharding::none) s += " " + to_string(c.sharding);
  if (c.precision && *c.precision != Precision::fp32) s += fmt::format(" {}", to_string(*c.precision));
  if (c.checkpointing && *c.checkpointing != Checkpointing::none) s += fmt::format(" ckpt={}", to_string(*c.checkpointing));
  return s;
}

std::string plan_words(const model::Config& c) {
  static const char* kWhat[] = {"-", "optimizer state sharded", "gradients and optimizer state sharded",
                                "parameters, gradients and optimizer state sharded",
                                "parameters, gradients and optimizer state sharded in groups, replicated across them"};
  std::string s = c.layout.data_parallel_only()
                      ? std::string()
                      : fmt::format("{} x dp {}, ", to_string(c.layout), c.data_parallel());
  s += c.sharding.sharding == Sharding::none
           ? std::string("no sharding")
           : fmt::format("{} ({})", to_string(c.sharding), kWhat[static_cast<int>(c.sharding.sharding)]);
  if (c.precision) s += fmt::format(", {}", to_string(*c.precision));
  if (c.checkpointing)
    s += *c.checkpointing == Checkpointing::none ? std::string(", no activation checkpointing")
                                                 : fmt::format(", {} activation checkpointing", to_string(*c.checkpointing));
  return s;
}

std::string runs_on_text(const model::Prediction& p, std::optional<Framework> framework) {
  const model::Config& c = p.config;
  const FrameworkPlan fp = model::framework_plan(p);
  if (framework) {
    if (auto why = framework_refusal(*framework, fp)) return fmt::format("{} cannot run it: {}", traits(*framework).display, *why);
    return fmt::format("run as: {}", framework_setting(*framework, fp));
  }
  if (c.world_size <= 1) return "";
  const auto fs = frameworks_running(fp);
  if (fs.empty()) return "no framework in the table runs it (core/framework.hpp)";
  std::string s = "runs on ";
  for (std::size_t i = 0; i < fs.size(); ++i) s += (i ? "; " : "") + framework_setting(fs[i], fp);
  return s;
}

StrategyPrice price_every_step(const model::CostModel& model, const model::Config& config, Bytes limit) {
  StrategyPrice sp;
  sp.sharding = config.sharding.sharding;
  if (config.layout.pp > 1) {
    // (A tensor/context-parallel plan without a pipeline is priced both ways below: torchtitan's
    // FSDP with tp reduces on every micro-batch, Megatron-LM once per batch.)
    sp.text = "a pipeline plan reduces gradients once per step, after its last microbatch (Megatron-LM, DeepSpeed and torch "
              "pipelining all disable the sync on the others): every-step is not a choice";
    return sp;
  }
  auto exists = [&](Strategy s) {
    model::Config c = config;
    c.strategy = s;
    return !model::plan_rejection(c);
  };
  sp.applicable = config.world_size > 1 && exists(Strategy::every_step) && exists(Strategy::overlap);
  if (config.world_size > 1 && !sp.applicable) {
    sp.text = fmt::format("{}: gradients are accumulated unsharded and reduced once per window; reducing them on every "
                          "micro-step is not offered (it would save no memory)",
                          to_string(config.sharding));
    return sp;
  }
  auto at = [&](Strategy s) {
    model::Config c = config;
    c.strategy = s;
    return model.predict(c);
  };
  auto ov = at(Strategy::overlap), fu = at(Strategy::fused), ev = at(Strategy::every_step);
  sp.overlap_peak = ov.memory.peak;
  sp.every_step_peak = ev.memory.peak;
  sp.overlap_fits = limit == 0 || ov.memory.peak <= limit;
  sp.every_step_fits = limit == 0 || ev.memory.peak <= limit;
  sp.overlap_step = ov.time.step_time;
  sp.fused_step = fu.time.step_time;
  sp.every_step_step = ev.time.step_time;
  sp.overlap_throughput = ov.throughput;
  sp.fused_throughput = fu.throughput;
  sp.every_step_throughput = ev.throughput;
  sp.extra_s = ev.time.step_time - ov.time.step_time;
  sp.throughput_lost = ov.throughput > 0 ? 1.0 - ev.throughput / ov.throughput : 0;
  sp.overlap_collectives = ov.collectives_per_step;
  sp.every_step_collectives = ev.collectives_per_step;
  const bool sharded_grads = traits(config.sharding.sharding).shards_gradients;
  if (!sp.applicable) {
    sp.text = "world_size 1: no gradient synchronisation, so every-step and overlap are the same run";
  } else if (config.accum_steps == 1) {
    sp.text = "accum_steps 1: every-step and overlap are the same run (one micro-step per optimizer step)";
  } else if (sharded_grads) {
    const Seconds saved = ev.time.comm_exposed - ov.time.comm_exposed;
    const std::string fit_text = limit == 0 ? std::string()
                                 : sp.overlap_fits
                                     ? fmt::format(": fits (limit {})", format_bytes(limit))
                                     : fmt::format(": does not fit (limit {})", format_bytes(limit));
    sp.text = fmt::format(
        "no_sync (overlap) under {} would save {} of {} reduce-scatter micro-steps ({} exposed per step, {} vs {} "
        "s/step) but holds {} of unsharded gradients instead of {} across the window: peak {} vs {}{}",
        to_string(config.sharding), config.accum_steps - 1, config.accum_steps, format_seconds(std::max(0.0, saved)),
        fmt::format("{:.4g}", ov.time.step_time), fmt::format("{:.4g}", ev.time.step_time),
        format_bytes(ov.memory.gradients), format_bytes(ev.memory.gradients), format_bytes(ov.memory.peak),
        format_bytes(ev.memory.peak), fit_text);
  } else {
    sp.text = fmt::format(
        "every-step (DDP without no_sync: allreduce on each of the {} micro-steps) would add {} per step over overlap "
        "({} vs {} s/step, {} throughput lost, {} vs {} allreduce calls per step)",
        config.accum_steps, format_seconds(sp.extra_s), fmt::format("{:.4g}", ev.time.step_time),
        fmt::format("{:.4g}", ov.time.step_time), pct(sp.throughput_lost), sp.every_step_collectives,
        sp.overlap_collectives);
  }
  return sp;
}

Explanation explain(const model::CostModel& model, const SearchResult& res, const std::vector<ParetoPoint>& pareto,
                    std::size_t rank_index, double margin) {
  const auto& l = res.limits;
  Explanation e;
  e.candidate = res.ranking.at(rank_index);
  const Candidate& c = res.candidates[e.candidate];
  e.rank = c.rank;
  const auto& cfg = c.config();
  const auto& pr = c.prediction;
  const Count B = cfg.global_batch(), p = cfg.world_size, b = cfg.micro_batch;
  const Count q = B / cfg.data_parallel();  // samples per data-parallel rank (a pipeline's b x m)
  const bool pipeline = cfg.layout.pp > 1;

  // Binding constraint: what stops the next larger micro_batch (fewer accumulation steps).
  Count next = 0;
  for (Count d : divisors(q))
    if (d > b) {
      next = d;
      break;
    }
  if (next == 0) {
    e.binding = "whole-batch";
    e.binding_text = fmt::format(
        "accum_steps 1: micro_batch {} is the whole per-rank batch (global_batch {} / "
        "{} {}); nothing is left to trade for memory",
        b, B, cfg.layout.data_parallel_only() ? "world_size" : "data-parallel size", cfg.data_parallel());
  }
  std::optional<model::Prediction> next_pred;
  if (next != 0 && pipeline) {
    if (auto why = model::schedule_rejection(cfg.layout.schedule, cfg.layout.pp, cfg.layout.virtual_stages, q / next)) {
      e.binding = "schedule";
      e.binding_text = fmt::format("schedule: the next larger micro_batch {} leaves m = {} microbatches: {}", next,
                                   q / next, *why);
      next = 0;
    }
  }
  if (next != 0) {
    model::Config nc = cfg;
    nc.micro_batch = next;
    nc.accum_steps = q / next;
    const auto np = model.predict(nc);
    next_pred = np;
    if (np.memory.peak > l.limit) {
      const Count fit = max_micro_batch_within(model, l, cfg, next - 1);
      const Bytes over = np.memory.peak - l.limit;
      if (fit > b) {
        e.binding = "divisibility";
        e.binding_text = fmt::format(
            "divisibility: micro_batch up to {} fits in memory, but {} (= {}/{}) has no divisor between {} and {}; the "
            "next divisor {} would need {}, {} over the limit {}",
            fit, q, B, p, b + 1, fit, next, format_bytes(np.memory.peak), format_bytes(over), format_bytes(l.limit));
      } else {
        e.binding = "memory";
        e.binding_text = fmt::format(
            "memory: the next larger micro_batch {} (accum_steps {}) would need {}, exceeding the limit {} by {} (cap "
            "{} minus {:g}% margin)",
            next, q / next, format_bytes(np.memory.peak), format_bytes(l.limit), format_bytes(over),
            format_bytes(l.cap), margin * 100);
      }
    } else if (l.micro_batch_limit > 0 && next > l.micro_batch_limit) {
      e.binding = "measured-range";
      e.binding_text = fmt::format(
          "measured range: the next larger micro_batch {} is above the largest profiled micro_batch {} "
          "(--extrapolate lets the model extrapolate; memory would be {})",
          next, l.micro_batch_limit, format_bytes(np.memory.peak));
    } else {
      e.binding = "objective";
      const double v = objective_value(res.objective, pr, l.noise_scale);
      const double nv = objective_value(res.objective, np, l.noise_scale);
      e.binding_text =
          fmt::format("not memory-bound: micro_batch {} (accum_steps {}) also fits ({} of {}) but scores {} against {}",
                      next, q / next, format_bytes(np.memory.peak), format_bytes(l.limit),
                      value_text(res.objective, nv), value_text(res.objective, v));
    }
  }

  // The GPU compute model's terms: what the micro_batch buys in efficiency.
  if (pr.compute.gpu_model) {
    const auto& d = pr.compute;
    e.compute_text = fmt::format(
        "GPU compute: GEMM efficiency {:.0f}% at micro_batch {} (MFU {:.0f}%); one micro-step = GEMMs {} + attention {} "
        "+ memory-bound kernels {} + kernel overhead {}",
        100 * d.gemm_efficiency, b, 100 * d.mfu, format_seconds(d.gemm), format_seconds(d.attention),
        format_seconds(d.memory_bound), format_seconds(d.overhead));
    if (pipeline)
      e.compute_text += fmt::format("; pipeline {}: bubble {:.1f}% with m = {} microbatches over {} stages, peak on stage {}",
                                    to_string(cfg.layout), 100 * pr.parallel.bubble_fraction, cfg.accum_steps,
                                    cfg.layout.pp, pr.parallel.peak_stage);
    auto neighbour = [&](Count nb, const model::Prediction& np) {
      const double gain = pr.throughput > 0 ? np.throughput / pr.throughput - 1 : 0;
      const std::int64_t act = std::int64_t(np.memory.activations) - std::int64_t(pr.memory.activations);
      return fmt::format("micro_batch {} (accum_steps {}): GEMM efficiency {:.0f}%{}, {:+.1f}% throughput, activations "
                         "{}{}{}",
                         nb, q / nb, 100 * np.compute.gemm_efficiency,
                         pipeline ? fmt::format(", bubble {:.1f}%", 100 * np.parallel.bubble_fraction) : "",
                         100 * gain, act >= 0 ? "+" : "-",
                         format_bytes(Bytes(act >= 0 ? act : -act)),
                         np.memory.peak > l.limit ? fmt::format(" (peak {}: does not fit)", format_bytes(np.memory.peak))
                                                  : "");
    };
    Count prev = 0;
    for (Count d2 : divisors(q))
      if (d2 < b) prev = d2;
    if (prev > 0) {
      model::Config pc = cfg;
      pc.micro_batch = prev;
      pc.accum_steps = q / prev;
      try {
        e.compute_text += "; " + neighbour(prev, model.predict(pc));
      } catch (const Error&) {
      }
    }
    if (next_pred) e.compute_text += "; " + neighbour(next, *next_pred);
  }

  // Step-time breakdown and communication.
  const auto& t = pr.time;
  e.comm_exposed_share = t.step_time > 0 ? t.comm_exposed / t.step_time : 0;
  e.comm_bound = e.comm_exposed_share >= kCommBoundShare;
  e.breakdown_text = fmt::format(
      "step {} = compute {} ({} x {} per micro-step, {}) + exposed comm {} ({}; {} issued) + optimizer {} ({})",
      format_seconds(t.step_time), format_seconds(t.compute), cfg.accum_steps,
      format_seconds(t.compute / double(cfg.accum_steps)), pct(t.step_time > 0 ? t.compute / t.step_time : 0),
      format_seconds(t.comm_exposed), pct(e.comm_exposed_share), format_seconds(t.comm_total),
      format_seconds(t.optimizer), pct(t.step_time > 0 ? t.optimizer / t.step_time : 0));
  if (pipeline)
    e.breakdown_text += fmt::format(" + pipeline bubble {} ({})", format_seconds(t.bubble),
                                    pct(t.step_time > 0 ? t.bubble / t.step_time : 0));
  if (p == 1) {
    e.comm_text = "world_size 1: no communication";
  } else if (e.comm_bound) {
    e.comm_text = fmt::format("comm-bound: exposed communication is {} of the step ({} of {}, {} allreduce calls)",
                              pct(e.comm_exposed_share), format_seconds(t.comm_exposed), format_seconds(t.step_time),
                              pr.collectives_per_step);
  } else {
    const Seconds hidden = std::max(0.0, t.comm_total - t.comm_exposed);
    e.comm_text =
        cfg.strategy == Strategy::fused
            ? fmt::format("exposed communication is {} of the step (fused: all {} issued runs after the last backward)",
                          pct(e.comm_exposed_share), format_seconds(t.comm_total))
        : hidden <= 0
            ? fmt::format("exposed communication is {} of the step (none of the {} issued hides behind backward)",
                          pct(e.comm_exposed_share), format_seconds(t.comm_total))
            : fmt::format("exposed communication is {} of the step ({} of the {} issued hides behind backward)",
                          pct(e.comm_exposed_share), format_seconds(hidden), format_seconds(t.comm_total));
  }

  // Where the communication comes from, and where the inter-node link binds.
  if (p > 1) {
    auto words = [](model::LinkSource s) {
      return s == model::LinkSource::described ? "described (a cluster file's numbers, not measured: `gaccum-tune "
                                                 "cluster fit` measures them)"
                                               : model::to_string(s);
    };
    e.links_text = fmt::format("communication links: intra-node {}", words(pr.intra_link));
    if (pr.inter_link != model::LinkSource::none) e.links_text += fmt::format(", inter-node {}", words(pr.inter_link));
    const Count g = model.info().plans.gpus_per_node;
    if (g > 0 && p > g && pr.inter_link != model::LinkSource::none && e.comm_exposed_share >= 0.10 &&
        cfg.layout.data_parallel_only()) {
      const Count nodes = (p + g - 1) / g;
      const double want = std::max(0.10, e.comm_exposed_share / 2);
      std::string better;
      for (Count mult : {2, 4, 8, 16}) {
        model::Config alt = cfg;
        alt.accum_steps = cfg.accum_steps * mult;
        model::Prediction ap;
        try {
          ap = model.predict(alt);
        } catch (const Error&) {
          break;
        }
        const double share = ap.time.step_time > 0 ? ap.time.comm_exposed / ap.time.step_time : 0;
        if (share <= want || mult == 16) {
          better = fmt::format("; accum_steps {} brings it to {} (global batch {} instead of {})", alt.accum_steps,
                               pct(share), alt.global_batch(), B);
          break;
        }
      }
      e.links_text += fmt::format(". At {} nodes the inter-node link binds: exposed communication is {} of the step at "
                                  "accum_steps {}{}",
                                  nodes, pct(e.comm_exposed_share), cfg.accum_steps, better);
    }
  }

  // Memory headroom.
  e.headroom = std::int64_t(l.limit) - std::int64_t(pr.memory.peak);
  e.headroom_to_cap = std::int64_t(l.cap) - std::int64_t(pr.memory.peak);
  e.headroom_text =
      fmt::format("peak {} per rank: {} below the limit {} ({} below the cap {})", format_bytes(pr.memory.peak),
                  format_bytes(Bytes(std::max<std::int64_t>(0, e.headroom))), format_bytes(l.limit),
                  format_bytes(Bytes(std::max<std::int64_t>(0, e.headroom_to_cap))), format_bytes(l.cap));

  // Partial recompute: the pick recomputes every layer; when recomputing none does not fit, the
  // fewest layers of each model chunk (Megatron-LM's block method counts per chunk) that fit.
  const Count layers = model.info().plans.layers;
  if (cfg.checkpointing == Checkpointing::full && layers > 0) {
    model::Config nc = cfg;
    nc.checkpointing = Checkpointing::none;
    std::optional<model::Prediction> none;
    try {
      none = model.predict(nc);
    } catch (const Error&) {
    }
    const Count chunks = cfg.layout.pp * std::max<Count>(1, cfg.layout.virtual_stages);
    const Count chunk = (layers + chunks - 1) / chunks;  // layers per chunk (the largest, uneven splits)
    if (none && none->memory.peak > l.limit && chunk > 1) {
      const std::string per = chunks > 1 ? "model chunk" : "model";
      Count n = 0;
      model::Prediction mixed;
      for (Count i = 1; i < chunk && n == 0; ++i) {
        mixed = model::mix_recompute(pr, *none, double(i) / double(chunk));
        if (mixed.memory.peak <= l.limit) n = i;
      }
      if (n > 0) {
        const double gain = pr.throughput > 0 ? mixed.throughput / pr.throughput - 1 : 0;
        // How the frameworks that run the pick say it (world_size 1: any of them).
        std::vector<std::string> how;
        bool from_file = false;
        const auto fs = l.framework           ? std::vector<Framework>{*l.framework}
                        : cfg.world_size > 1 ? frameworks_running(model::framework_plan(pr))
                                             : std::vector<Framework>(kAllFrameworks.begin(), kAllFrameworks.end());
        for (Framework f : fs) {
          if (f == Framework::fsdp2 && std::find(fs.begin(), fs.end(), Framework::fsdp) != fs.end()) continue;  // one line
          if (auto s = partial_recompute_setting(f, n, chunk, chunks)) {
            how.push_back(*s);
            from_file = from_file || partial_recompute_in_file(f);
          } else if (f == Framework::torchtitan && chunks == 1) {
            how.push_back(fmt::format("torchtitan recomputes 1 in every n layers (selective_ac_option \"n\"), and "
                                      "its most, 1 in every 2, would need {}",
                                      format_bytes(model::mix_recompute(pr, *none, 0.5).memory.peak)));
          }
        }
        if (from_file) how.push_back("`gaccum-tune check` prices it from the Megatron-LM, NeMo or torchtitan file");
        e.recompute_text = fmt::format(
            "recompute: {} of the {} layers of each {} ({:.0f}%) instead of all would fit (peak {} within the limit "
            "{}; none recomputed needs {}) and run {:+.1f}% throughput ({} per step instead of {}), estimated between "
            "the two priced plans (tune searches none, selective and full only): {}",
            n, chunk, per, 100.0 * double(n) / double(chunk), format_bytes(mixed.memory.peak), format_bytes(l.limit),
            format_bytes(none->memory.peak), 100 * gain, format_seconds(mixed.time.step_time),
            format_seconds(pr.time.step_time),
            how.empty() ? "no framework that runs this plan recomputes only some layers from its settings"
                        : fmt::format("{}", fmt::join(how, "; ")));
      } else {
        e.recompute_text = fmt::format(
            "recompute: every layer must be recomputed: recomputing {} of the {} layers of each {} would need {} "
            "(limit {})",
            chunk - 1, chunk, per, format_bytes(mixed.memory.peak), format_bytes(l.limit));
      }
    }
  }

  // The next-ranked config.
  if (rank_index + 1 < res.ranking.size()) {
    e.runner_up = res.ranking[rank_index + 1];
    const Candidate& r = res.candidates[*e.runner_up];
    const auto& rc = r.config();
    const auto& rt = r.prediction.time;
    e.runner_up_delta = pr.throughput > 0 ? (r.prediction.throughput - pr.throughput) / pr.throughput : 0;
    // Compare per step when the global batch is the same, else per sample.
    const bool same_B = rc.global_batch() == B;
    const double sa = same_B ? 1.0 : 1.0 / double(B), sb = same_B ? 1.0 : 1.0 / double(rc.global_batch());
    const double d_compute = rt.compute * sb - t.compute * sa;
    const double d_comm = rt.comm_exposed * sb - t.comm_exposed * sa;
    const double d_opt = rt.optimizer * sb - t.optimizer * sa;
    const char* unit = same_B ? "/step" : "/sample";
    std::vector<std::string> changed;
    if (rc.micro_batch != b) changed.push_back(fmt::format("micro_batch {}->{}", b, rc.micro_batch));
    if (rc.accum_steps != cfg.accum_steps)
      changed.push_back(fmt::format("accum_steps {}->{}", cfg.accum_steps, rc.accum_steps));
    if (rc.world_size != p) changed.push_back(fmt::format("world_size {}->{}", p, rc.world_size));
    if (rc.strategy != cfg.strategy)
      changed.push_back(fmt::format("strategy {}->{}", to_string(cfg.strategy), to_string(rc.strategy)));
    if (rc.sharding.sharding != cfg.sharding.sharding || rc.sharding.group != cfg.sharding.group)
      changed.push_back(fmt::format("sharding {}->{}", to_string(cfg.sharding), to_string(rc.sharding)));
    if (rc.precision != cfg.precision && rc.precision && cfg.precision)
      changed.push_back(fmt::format("precision {}->{}", to_string(*cfg.precision), to_string(*rc.precision)));
    if (rc.checkpointing != cfg.checkpointing && rc.checkpointing && cfg.checkpointing)
      changed.push_back(fmt::format("checkpointing {}->{}", to_string(*cfg.checkpointing), to_string(*rc.checkpointing)));
    std::string why;
    const double ac = std::fabs(d_compute), am = std::fabs(d_comm), ao = std::fabs(d_opt);
    if (ac >= am && ac >= ao) {
      why = fmt::format("mostly compute {}{}", signed_seconds(d_compute), unit);
    } else if (am >= ao) {
      why = fmt::format("mostly exposed communication {}{}", signed_seconds(d_comm), unit);
    } else {
      why = fmt::format("mostly optimizer {}{}", signed_seconds(d_opt), unit);
    }
    // A runner-up priced the same in time and memory (zero1 and zero2 with no_sync accumulation
    // hold and reduce the same gradients): say so, not "+0.0% throughput, +0 us/step".
    const bool same_price = std::fabs(e.runner_up_delta) < 5e-4 && same_B &&
                            std::fabs(double(r.prediction.memory.peak) - double(pr.memory.peak)) <=
                                5e-4 * double(std::max<Bytes>(1, pr.memory.peak));
    const std::string what = changed.empty() ? "same config" : fmt::format("{}", fmt::join(changed, ", "));
    e.runner_up_text =
        same_price
            ? fmt::format("next: #{} {} ({}): the same step time and peak memory ({} samples/s, {}): an equivalent "
                          "run here, either may be used",
                          r.rank, short_config(rc), what, format_rate(r.prediction.throughput),
                          format_bytes(r.prediction.memory.peak))
            : fmt::format("next: #{} {} ({}): {:+.1f}% throughput ({} vs {} samples/s), {}", r.rank, short_config(rc),
                          what, e.runner_up_delta * 100, format_rate(r.prediction.throughput),
                          format_rate(pr.throughput), why);
    if (res.objective != Objective::throughput)
      e.runner_up_text +=
          fmt::format("; {} {} vs {}", to_string(res.objective),
                      value_text(res.objective, objective_value(res.objective, r.prediction, l.noise_scale)),
                      value_text(res.objective, objective_value(res.objective, pr, l.noise_scale)));
  } else {
    e.runner_up_text = "no other feasible config";
  }

  // World size: what more ranks would give.
  const ParetoPoint* larger = nullptr;
  for (const auto& pt : pareto)
    if (pt.world_size > p && pt.best) {
      larger = &pt;
      break;
    }
  if (p == l.world_sizes.back()) {
    e.world_size_text = fmt::format("world_size {} is the largest allowed (--max-world-size / --world-sizes)", p);
  } else if (larger) {
    const double d = pr.throughput > 0 ? (larger->throughput - pr.throughput) / pr.throughput : 0;
    e.world_size_text =
        fmt::format("world_size {} would reach at best {} samples/s ({:+.1f}%) with {}", larger->world_size,
                    format_rate(larger->throughput), d * 100, short_config(res.candidates[*larger->best].config()));
  } else {
    e.world_size_text = fmt::format("no larger allowed world_size has a feasible config for this target");
  }

  e.every_step = price_every_step(model, cfg, l.limit);
  const auto& m = pr.memory;
  e.plan_text = fmt::format(
      "plan {}: weights {} + gradients {} + optimizer state {}{} + comm buffers {} + activations {}{} = peak {} per rank",
      plan_words(cfg), format_bytes(m.weights), format_bytes(m.gradients), format_bytes(m.optimizer_state),
      m.gathered > 0 ? fmt::format(" + gathered parameters {}", format_bytes(m.gathered)) : "",
      format_bytes(m.comm_buffers), format_bytes(m.activations),
      m.allocator_reserve > 0 ? fmt::format(" + caching allocator reserve {}", format_bytes(m.allocator_reserve)) : "",
      format_bytes(m.peak));
  return e;
}

}  // namespace gaccum::tuner
