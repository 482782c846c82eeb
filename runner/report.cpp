// What/why: see report.hpp.
#include "runner/report.hpp"

#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.hpp"
#include "core/utc_time.hpp"
#include "core/version.hpp"

namespace gaccum::runner {

using nlohmann::json;

namespace {

std::string fmt_value(double v, const std::string& unit) {
  if (unit == "s") return format_seconds(v);
  if (unit == "bytes") return format_bytes(static_cast<Bytes>(std::llround(std::max(0.0, v))));
  if (unit == "count") return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g} {}", v, unit);
}

std::string rate(double v) {
  if (v >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3g}K", v / 1e3);
  return fmt::format("{:.3g}", v);
}

}  // namespace

Verdicts run_verdicts(const RunRecord& run) {
  Verdicts v;
  v.accumulation = run.failure || run.checks.empty() ? Accumulation::not_run : Accumulation::correct;
  for (const auto& c : run.checks)
    if (c.status == Status::fail) v.accumulation = Accumulation::incorrect;
  if (run.comparison) {
    v.prediction_held = true;
    for (const auto& r : run.comparison->rows)
      if (r.status == Status::fail) v.prediction_held = false;
  }
  return v;
}

int runs_exit_code(const std::vector<RunRecord>& runs) {
  int code = 0;
  for (const auto& r : runs) {
    const auto v = run_verdicts(r);
    if (!v.accumulation_correct()) return 1;
    if (v.prediction_held == false && r.comparison->verdict) code = kExitPredictionMissed;
  }
  return code;
}

json validation_document(const std::vector<RunRecord>& runs, int exit_code) {
  bool ok = !runs.empty(), any_prediction = false, held = true;
  // incorrect outranks not_run, which outranks correct.
  Accumulation accumulation = runs.empty() ? Accumulation::not_run : Accumulation::correct;
  std::string not_run_reason = runs.empty() ? "no configuration was run" : "";
  json records = json::array();
  for (const auto& r : runs) {
    ok = ok && r.ok;
    const auto v = run_verdicts(r);
    if (v.accumulation == Accumulation::incorrect) accumulation = Accumulation::incorrect;
    if (v.accumulation == Accumulation::not_run) {
      if (accumulation == Accumulation::correct) accumulation = Accumulation::not_run;
      if (not_run_reason.empty())
        not_run_reason = r.failure ? fmt::format("the run did not finish, so its checks never ran: {}", *r.failure)
                                   : std::string("the run recorded no checks");
    }
    if (v.prediction_held && r.comparison->verdict) {
      any_prediction = true;
      held = held && *v.prediction_held;
    }
    records.push_back(to_json(r));
  }
  json doc{{"schema_version", kValidationSchemaVersion},
           {"kind", "gaccum-tune/validation"},
           {"created_utc", utc_now()},
           {"tool", GACCUM_VERSION_STRING},
           {"ok", ok},
           {"exit_code", exit_code},
           {"accumulation", std::string(traits(accumulation).record)},
           {"prediction", !any_prediction ? "not_checked"
                          : held          ? "held"
                                          : "missed"},
           {"runs", records}};
  if (accumulation == Accumulation::not_run) doc["accumulation_reason"] = not_run_reason;
  return doc;
}

std::vector<std::string> failed_items(const RunRecord& run) {
  std::vector<std::string> out;
  if (run.failure) out.push_back("run");
  for (const auto& c : run.checks)
    if (c.status == Status::fail) out.push_back(c.name);
  if (run.comparison && run.comparison->verdict)  // an informational prediction (cached profile) fails nothing
    for (const auto& r : run.comparison->rows)
      if (r.status == Status::fail) out.push_back("prediction:" + r.figure);
  return out;
}

namespace {

std::string error_text(const ComparisonRow& r) {
  return r.error_pct ? fmt::format("{:+.1f}%", *r.error_pct) : std::string("inf");
}

std::string format_measured(const RunSpec& spec, const Measured& m) {
  std::string out;
  const auto& st = m.step_time;
  out += fmt::format("measured ({} timed steps, step time = slowest rank per step)\n", m.timed_steps);
  out += fmt::format("  step_time     median {} (95% interval {} to {})  p90 {}  (min {}, max {})\n",
                     format_seconds(st.median), format_seconds(st.ci_lo), format_seconds(st.ci_hi),
                     format_seconds(st.p90), format_seconds(st.min), format_seconds(st.max));
  std::string tput = fmt::format("{} samples/s", rate(m.throughput_samples_per_s));
  if (m.tokens_per_s > 0) tput += fmt::format("  {} tokens/s", rate(m.tokens_per_s));
  out += fmt::format("  throughput    {}\n", tput);
  std::vector<std::string> per;
  for (const auto v : m.peak_memory_per_rank) per.push_back(format_bytes(v));
  out += fmt::format("  peak_memory   {} per rank (max; ranks: {}), resident {}, comm buffers {}\n",
                     format_bytes(m.peak_memory), fmt::join(per, ", "), format_bytes(m.resident_memory),
                     format_bytes(m.comm_buffer_bytes));
  out += fmt::format(
      "  breakdown     compute {}, exposed comm {} (last rank to arrive; the others waited {} more for it), comm in "
      "flight {}, optimizer {}, rank skew {}\n",
      format_seconds(m.compute), format_seconds(m.comm_exposed), format_seconds(m.straggler_wait),
      format_seconds(m.comm_total), format_seconds(m.optimizer), format_seconds(m.rank_skew));
  out += fmt::format("  collectives   {} per step, per micro-step {}\n", m.collectives_per_step,
                     json(m.collectives_per_micro_step).dump());
  const auto& ns = m.noise_scale;
  if (ns.valid)
    out += fmt::format("  noise scale   B_simple {:.4g} samples (|G_b|^2 {:.4g} at b={}, |G_B|^2 {:.4g} at B={})\n",
                       ns.b_simple, ns.g_small_sq, spec.micro_batch, ns.g_big_sq, spec.global_batch());
  else
    out += fmt::format("  noise scale   n/a: {}\n", ns.note.empty() ? std::string("not measured") : ns.note);
  return out;
}

std::string format_comparison(const Comparison& cmp) {
  std::string out = fmt::format("predicted vs measured (tolerance {}%){}\n", cmp.tolerance_pct,
                                cmp.verdict ? "" : ": informational, from the cached profile (--profile FILE makes it a verdict)");
  out += fmt::format("  {:<22} {:>14} {:>14} {:>9}  {}\n", "figure", "measured", "predicted", "error", "status");
  for (const auto& r : cmp.rows)
    out += fmt::format("  {:<22} {:>14} {:>14} {:>9}  {}\n", r.figure, fmt_value(r.measured, r.unit),
                       fmt_value(r.predicted, r.unit), error_text(r),
                       r.status ? std::string(record_name(*r.status)) : std::string("info"));
  if (cmp.band) {
    const auto& b = *cmp.band;
    out += fmt::format(
        "  step_time band: measured {} (95% interval {} to {}) {} the predicted band {} to {} (the "
        "profile's 95% median intervals)\n",
        fmt_value(b.measured, "s"), fmt_value(b.measured_lo, "s"), fmt_value(b.measured_hi, "s"),
        b.inside ? "overlaps" : "is OUTSIDE", fmt_value(b.predicted_lo, "s"), fmt_value(b.predicted_hi, "s"));
  }
  return out;
}

// The two verdicts, apart: is the accumulation correct, did the prediction hold.
std::string format_verdicts(const RunRecord& run) {
  std::string out;
  const auto v = run_verdicts(run);
  std::vector<std::string> bad_checks, missed_rows;
  Count passed = 0, not_applicable = 0;
  for (const auto& c : run.checks) {
    if (c.status == Status::fail) bad_checks.push_back(c.name);
    if (c.status == Status::pass) ++passed;
    if (c.status == Status::skip) ++not_applicable;
  }
  const std::string_view label = traits(v.accumulation).label;
  switch (v.accumulation) {
    case Accumulation::correct:
      out += fmt::format("accumulation: {} ({} checks pass{})\n", label, passed,
                         not_applicable > 0 ? fmt::format(", {} n/a", not_applicable) : std::string());
      break;
    case Accumulation::incorrect:
      out += fmt::format("accumulation: {} ({})\n", label, fmt::join(bad_checks, ", "));
      break;
    case Accumulation::not_run:
      out += fmt::format("accumulation: {} (the run did not finish, so its checks never ran)\n", label);
      break;
  }
  if (v.accumulation == Accumulation::not_run) {
    out += "prediction:   not checked (the run did not finish)\n";
  } else if (!v.prediction_held && run.pipeline) {
    const auto& pm = *run.pipeline;
    const double measured = run.measured ? run.measured->step_time.median : 0;
    out += fmt::format("prediction:   pipeline simulation (informational): step {} predicted vs {} measured ({:+.1f}%), "
                       "bubble {:.1f}% vs {:.1f}%; stage memory is the stage_memory check\n",
                       format_seconds(pm.predicted_step_time), format_seconds(measured),
                       measured > 0 ? 100 * (pm.predicted_step_time / measured - 1) : 0.0,
                       100 * pm.predicted_bubble_fraction, 100 * pm.bubble_fraction);
  } else if (!v.prediction_held) {
    out +=
        "prediction:   not checked (no profile to predict from: pass --profile profile.json, or validate "
        "--from-tune)\n";
  } else {
    const auto& cmp = *run.comparison;
    for (const auto& r : cmp.rows)
      if (r.status == Status::fail) missed_rows.push_back(fmt::format("{} {}", r.figure, error_text(r)));
    out += *v.prediction_held ? fmt::format("prediction:   HELD (every gated figure within {}%)", cmp.tolerance_pct)
                              : fmt::format("prediction:   MISSED ({}; tolerance {}%)", fmt::join(missed_rows, ", "),
                                            cmp.tolerance_pct);
    out += cmp.verdict ? "\n" : " (informational: the cached profile; not in the exit code)\n";
  }
  auto failed = failed_items(run);
  out += failed.empty() ? "result: PASS\n" : fmt::format("result: FAIL ({})\n", fmt::join(failed, ", "));
  return out;
}

// The per-rank table of a pipeline run: measured vs the schedule simulation and the memory replay.
std::string format_pipeline(const RunSpec& s, const PipelineMeasure& pm) {
  std::string out = fmt::format(
      "pipeline ({}, p {}, v {}, m {}; simulated from the measured operation times, {} per message)\n"
      "  rank stage  F/op       B/op       busy       idle (simulated)       in flight  peak memory (replay)\n",
      to_string(s.schedule), s.pp, s.virtual_stages, s.accum_steps, format_seconds(pm.p2p));
  for (const auto& r : pm.ranks) {
    double f = 0, b = 0;
    for (double x : r.forward) f += x;
    for (double x : r.backward) b += x;
    const double n = std::max<double>(1.0, static_cast<double>(r.forward.size()));
    out += fmt::format("  {:>4} {:>5}  {:<10} {:<10} {:<10} {:<22} {:<10} {} ({})\n", r.rank, r.stage,
                       format_seconds(f / n), format_seconds(b / n), format_seconds(r.busy),
                       fmt::format("{} ({})", format_seconds(r.idle), format_seconds(r.predicted_idle)),
                       fmt::format("{}/{}", r.in_flight, r.in_flight_model), format_bytes(r.peak_memory),
                       r.peak_memory == r.predicted_peak ? std::string("exact")
                                                         : format_bytes(r.predicted_peak));
  }
  out += fmt::format("  bubble {:.1f}% measured, {:.1f}% simulated, {:.1f}% closed form (p - 1)/(v m + p - 1); "
                     "makespan {} measured, {} simulated\n",
                     100 * pm.bubble_fraction, 100 * pm.predicted_bubble_fraction,
                     100 * pm.closed_form_bubble_fraction, format_seconds(pm.makespan),
                     format_seconds(pm.predicted_makespan));
  return out;
}

}  // namespace

std::string format_run(const RunRecord& run) {
  const RunSpec& s = run.spec;
  std::string out =
      fmt::format("validate {}  micro_batch {}  accum_steps {}  world_size {}  (global_batch {})  strategy {}  {}{}\n",
                  s.workload.name, s.micro_batch, s.accum_steps, s.world_size, s.global_batch(), to_string(s.strategy),
                  s.workload.dtype,
                  s.model_parallel()
                      ? fmt::format("  pp {} x tp {}{} x dp {}, {}{}", s.pp, s.tp, s.sequence_parallel ? " sp" : "",
                                    s.data_parallel(), to_string(s.schedule),
                                    s.virtual_stages > 1 ? fmt::format(" v {}", s.virtual_stages) : "")
                      : std::string());
  if (run.failure) return out + fmt::format("  FAILED: {}\n", *run.failure) + format_verdicts(run);
  if (run.environment) {
    const auto& env = *run.environment;
    out += fmt::format("  {} on {}, {} rank(s) x {} thread(s), launcher {}\n", env.backend, env.device, env.world_size,
                       env.threads_per_rank, env.launcher);
  }
  for (const auto& w : run.warnings) out += fmt::format("  WARNING: {}\n", w);
  for (const auto& n : run.model_notes) out += fmt::format("  NOTE: {}\n", n);
  out += "checks\n";
  for (const auto& c : run.checks)
    out += fmt::format("  {:<5} {:<27} {}\n", traits(c.status).run, c.name, c.detail);
  if (run.measured) out += format_measured(s, *run.measured);
  if (run.pipeline) out += format_pipeline(s, *run.pipeline);
  if (run.comparison) out += format_comparison(*run.comparison);
  return out + format_verdicts(run);
}

}  // namespace gaccum::runner
