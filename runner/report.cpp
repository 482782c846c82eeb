// What/why: see report.hpp.
#include "runner/report.hpp"

#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.hpp"
#include "core/version.hpp"
#include "core/utc_time.hpp"

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

Verdicts run_verdicts(const json& run) {
  Verdicts v;
  v.accumulation_correct = !run.contains("failure") && run.contains("checks");
  if (run.contains("checks"))
    for (const auto& c : run.at("checks"))
      if (c.at("status") == "fail") v.accumulation_correct = false;
  if (run.contains("comparison")) {
    v.prediction_held = true;
    for (const auto& r : run.at("comparison").at("rows"))
      if (r.at("status") == "fail") v.prediction_held = false;
  }
  return v;
}

int runs_exit_code(const std::vector<json>& runs) {
  int code = 0;
  for (const auto& r : runs) {
    const auto v = run_verdicts(r);
    if (!v.accumulation_correct) return 1;
    if (v.prediction_held == false) code = kExitPredictionMissed;
  }
  return code;
}

json validation_document(const std::vector<json>& runs, int exit_code) {
  bool ok = !runs.empty(), correct = !runs.empty(), any_prediction = false, held = true;
  for (const auto& r : runs) {
    ok = ok && r.value("ok", false);
    const auto v = run_verdicts(r);
    correct = correct && v.accumulation_correct;
    if (v.prediction_held) {
      any_prediction = true;
      held = held && *v.prediction_held;
    }
  }
  return json{{"schema_version", kValidationSchemaVersion},
              {"kind", "gaccum-tune/validation"},
              {"created_utc", utc_now()},
              {"tool", GACCUM_VERSION_STRING},
              {"ok", ok},
              {"exit_code", exit_code},
              {"accumulation", correct ? "correct" : "incorrect"},
              {"prediction", !any_prediction ? "not_checked" : held ? "held" : "missed"},
              {"runs", runs}};
}

std::vector<std::string> failed_items(const json& run) {
  std::vector<std::string> out;
  if (run.contains("failure")) out.push_back("run");
  if (run.contains("checks"))
    for (const auto& c : run.at("checks"))
      if (c.at("status") == "fail") out.push_back(c.at("name").get<std::string>());
  if (run.contains("comparison"))
    for (const auto& r : run.at("comparison").at("rows"))
      if (r.at("status") == "fail") out.push_back("prediction:" + r.at("figure").get<std::string>());
  return out;
}

std::string format_run(const json& run) {
  std::string out;
  const auto& cfg = run.at("config");
  const auto& w = cfg.at("workload");
  const Count b = cfg.at("micro_batch"), k = cfg.at("accum_steps"), p = cfg.at("world_size");
  out += fmt::format("validate {}  micro_batch {}  accum_steps {}  world_size {}  (global_batch {})  strategy {}  {}\n",
                     w.at("name").get<std::string>(), b, k, p, b * k * p, cfg.at("strategy").get<std::string>(),
                     w.at("dtype").get<std::string>());
  if (run.contains("failure")) {
    out += fmt::format("  FAILED: {}\n", run.at("failure").get<std::string>());
    return out;
  }
  const auto& env = run.at("environment");
  out += fmt::format("  {} on {}, {} rank(s) x {} thread(s), launcher {}\n", env.at("backend").get<std::string>(),
                     env.at("device").get<std::string>(), env.at("world_size").get<int>(),
                     env.at("threads_per_rank").get<int>(), env.at("launcher").get<std::string>());
  for (const auto& wmsg : run.value("warnings", json::array())) out += fmt::format("  WARNING: {}\n", wmsg.get<std::string>());
  for (const auto& n : run.value("model_notes", json::array())) out += fmt::format("  NOTE: {}\n", n.get<std::string>());

  out += "checks\n";
  for (const auto& c : run.at("checks")) {
    const std::string st = c.at("status").get<std::string>();
    out += fmt::format("  {:<5} {:<27} {}\n", st == "pass" ? "PASS" : st == "fail" ? "FAIL" : "n/a",
                       c.at("name").get<std::string>(), c.at("detail").get<std::string>());
  }
  if (run.contains("measured")) {
    const auto& m = run.at("measured");
    const auto& st = m.at("step_time");
    out += fmt::format("measured ({} timed steps, step time = slowest rank per step)\n", m.at("timed_steps").get<Count>());
    out += fmt::format("  step_time     median {}  p90 {}  (min {}, max {})\n", format_seconds(st.at("median")),
                       format_seconds(st.at("p90")), format_seconds(st.at("min")), format_seconds(st.at("max")));
    std::string tput = fmt::format("{} samples/s", rate(m.at("throughput_samples_per_s")));
    if (m.at("tokens_per_s").get<double>() > 0) tput += fmt::format("  {} tokens/s", rate(m.at("tokens_per_s")));
    out += fmt::format("  throughput    {}\n", tput);
    std::vector<std::string> per;
    for (const auto& v : m.at("peak_memory_per_rank")) per.push_back(format_bytes(v.get<Bytes>()));
    out += fmt::format("  peak_memory   {} per rank (max; ranks: {}), comm buffers {}\n",
                       format_bytes(m.at("peak_memory").get<Bytes>()), fmt::join(per, ", "),
                       format_bytes(m.at("comm_buffer_bytes").get<Bytes>()));
    out += fmt::format("  breakdown     compute {}, exposed comm {}, comm in flight {}, optimizer {}, rank skew {}\n",
                       format_seconds(m.at("compute")), format_seconds(m.at("comm_exposed")),
                       format_seconds(m.at("comm_total")), format_seconds(m.at("optimizer")),
                       format_seconds(m.at("rank_skew")));
    out += fmt::format("  collectives   {} per step, per micro-step {}\n", m.at("collectives_per_step").get<Count>(),
                       m.at("collectives_per_micro_step").dump());
    const auto& ns = m.at("noise_scale");
    if (ns.at("valid").get<bool>())
      out += fmt::format("  noise scale   B_simple {:.4g} samples (|G_b|^2 {:.4g} at b={}, |G_B|^2 {:.4g} at B={})\n",
                         ns.at("b_simple").get<double>(), ns.at("mean_sq_norm_small").get<double>(), b,
                         ns.at("mean_sq_norm_big").get<double>(), b * k * p);
    else
      out += fmt::format("  noise scale   n/a: {}\n", ns.value("note", std::string("not measured")));
  }
  if (run.contains("comparison")) {
    const auto& cmp = run.at("comparison");
    out += fmt::format("predicted vs measured (tolerance {}%)\n", cmp.at("tolerance_pct").get<double>());
    out += fmt::format("  {:<22} {:>14} {:>14} {:>9}  {}\n", "figure", "measured", "predicted", "error", "status");
    for (const auto& r : cmp.at("rows")) {
      const std::string unit = r.at("unit");
      std::string err = r.at("error_pct").is_null() ? "inf" : fmt::format("{:+.1f}%", r.at("error_pct").get<double>());
      out += fmt::format("  {:<22} {:>14} {:>14} {:>9}  {}\n", r.at("figure").get<std::string>(),
                         fmt_value(r.at("measured"), unit), fmt_value(r.at("predicted"), unit), err,
                         r.at("status").get<std::string>());
    }
  }
  // The two verdicts, apart: is the accumulation correct, did the prediction hold.
  const auto v = run_verdicts(run);
  std::vector<std::string> bad_checks, missed_rows;
  Count checks_run = 0;
  for (const auto& c : run.at("checks")) {
    if (c.at("status") == "fail") bad_checks.push_back(c.at("name").get<std::string>());
    if (c.at("status") != "n/a") ++checks_run;
  }
  out += v.accumulation_correct
             ? fmt::format("accumulation: CORRECT ({} checks pass)\n", checks_run)
             : fmt::format("accumulation: INCORRECT ({})\n", fmt::join(bad_checks, ", "));
  if (!v.prediction_held) {
    out += "prediction:   not checked (no profile to predict from: pass --profile profile.json, or validate "
           "--from-tune)\n";
  } else {
    const auto& cmp = run.at("comparison");
    for (const auto& r : cmp.at("rows"))
      if (r.at("status") == "fail")
        missed_rows.push_back(fmt::format(
            "{} {}", r.at("figure").get<std::string>(),
            r.at("error_pct").is_null() ? std::string("inf") : fmt::format("{:+.1f}%", r.at("error_pct").get<double>())));
    out += *v.prediction_held
               ? fmt::format("prediction:   HELD (every gated figure within {}%)\n", cmp.at("tolerance_pct").get<double>())
               : fmt::format("prediction:   MISSED ({}; tolerance {}%)\n", fmt::join(missed_rows, ", "),
                             cmp.at("tolerance_pct").get<double>());
  }
  auto failed = failed_items(run);
  out += failed.empty() ? "result: PASS\n" : fmt::format("result: FAIL ({})\n", fmt::join(failed, ", "));
  return out;
}

}  // namespace gaccum::runner
