// What/why: see run_record.hpp. The one writer and the one reader of the run record's JSON; the
// only place in runner/ that looks fields up by name.
#include "runner/run_record.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "runner/record_reader.hpp"

namespace gaccum::runner {

using nlohmann::json;

namespace {

using record::Reader;

// ---- writer helpers -----------------------------------------------------------------------------

json spec_config(const RunSpec& spec, const std::optional<WorkloadFacts>& facts) {
  json c = to_json(spec);
  if (!facts) return c;
  c["workload"]["hash"] = facts->hash;
  c["workload"]["kind"] = facts->kind;
  c["workload"]["param_count"] = facts->param_count;
  c["workload"]["param_bytes"] = facts->param_bytes;
  c["global_batch"] = spec.global_batch();
  c["dataset_size"] = spec.effective_dataset_size();
  c["full_windows"] = spec.full_windows();
  c["partial_samples"] = spec.partial_samples();
  return c;
}

json check_json(const CheckRecord& c) {
  return json{
      {"name", c.name}, {"status", std::string(record_name(c.status))}, {"detail", c.detail}, {"numbers", c.numbers}};
}

json measured_json(const Measured& m) {
  const auto& st = m.step_time;
  return json{{"step_time", json{{"median", st.median},
                                 {"p10", st.p10},
                                 {"p90", st.p90},
                                 {"mean", st.mean},
                                 {"min", st.min},
                                 {"max", st.max},
                                 {"ci_lo", st.ci_lo},
                                 {"ci_hi", st.ci_hi}}},
              {"throughput_samples_per_s", m.throughput_samples_per_s},
              {"tokens_per_s", m.tokens_per_s},
              {"peak_memory", m.peak_memory},
              {"peak_memory_per_rank", m.peak_memory_per_rank},
              {"resident_memory", m.resident_memory},
              {"comm_exposed", m.comm_exposed},
              {"straggler_wait", m.straggler_wait},
              {"comm_total", m.comm_total},
              {"compute", m.compute},
              {"optimizer", m.optimizer},
              {"rank_skew", m.rank_skew},
              {"collectives_per_step", m.collectives_per_step},
              {"collectives_per_micro_step", m.collectives_per_micro_step},
              {"collectives_launched_in_backward", m.collectives_launched_in_backward},
              {"comm_buffer_bytes", m.comm_buffer_bytes},
              {"timed_steps", m.timed_steps},
              {"loss", json{{"first_window", m.loss_first_window}, {"last_window", m.loss_last_window}}},
              {"noise_scale", m.noise_scale.to_json()}};
}

json environment_json(const Environment& e) {
  json ranks = json::array();
  for (const auto& r : e.ranks)
    ranks.push_back(json{{"rank", r.rank},
                         {"local_rank", r.local_rank},
                         {"host", r.host},
                         {"pid", r.pid},
                         {"threads", r.threads},
                         {"interop_threads", r.interop_threads},
                         {"cores", r.cores},
                         {"collective_wait", std::string(to_string(r.collective_wait))}});
  json j{{"launcher", e.launcher},
         {"backend", e.backend},
         {"device", e.device},
         {"world_size", e.world_size},
         {"threads_per_rank", e.threads_per_rank},
         {"oversubscribed", e.oversubscribed},
         {"ranks", ranks},
         {"versions", json{{"tool", e.tool_version}, {"libtorch", e.libtorch_version}, {"gloo", e.gloo_version}}}};
  for (auto it = e.launch.begin(); it != e.launch.end(); ++it) j[it.key()] = it.value();
  return j;
}

const char* gate_name(Gate g) {
  switch (g) {
    case Gate::tolerance:
      return "tolerance";
    case Gate::exact:
      return "exact";
    case Gate::info:
      return "info";
  }
  return "info";
}

json comparison_json(const Comparison& c) {
  json rows = json::array();
  for (const auto& r : c.rows)
    rows.push_back(json{{"figure", r.figure},
                        {"unit", r.unit},
                        {"measured", r.measured},
                        {"predicted", r.predicted},
                        {"error_pct", r.error_pct ? json(*r.error_pct) : json(nullptr)},
                        {"gate", gate_name(r.gate)},
                        {"status", r.status ? std::string(record_name(*r.status)) : std::string("info")}});
  json j{{"tolerance_pct", c.tolerance_pct}, {"ok", c.ok}, {"verdict", c.verdict}, {"rows", rows}};
  if (c.band)
    j["band"] = {{"predicted_lo", c.band->predicted_lo}, {"predicted_hi", c.band->predicted_hi},
                 {"measured", c.band->measured},         {"measured_lo", c.band->measured_lo},
                 {"measured_hi", c.band->measured_hi},   {"inside", c.band->inside}};
  return j;
}

json steps_json(const std::vector<WindowRow>& steps) {
  json out = json::array();
  for (const auto& s : steps)
    out.push_back(json{{"window", s.window},
                       {"timed", s.timed},
                       {"partial", s.partial},
                       {"samples", s.samples},
                       {"loss_terms", s.loss_terms},
                       {"loss", s.loss},
                       {"step_time", s.step_time},
                       {"exposed_comm", s.exposed_comm},
                       {"straggler_wait", s.straggler_wait},
                       {"rank_skew", s.rank_skew},
                       {"per_rank", s.per_rank}});
  return out;
}

Status status_of(const std::string& word, const std::string& what) {
  if (auto s = status_from_record(word)) return *s;
  throw InputError(fmt::format("{}: unknown status '{}'", what, word));
}

NoiseScale noise_scale_from(const Reader& r) {
  NoiseScale n;
  n.b_small = r.get_or<double>("b_small", 0);
  n.b_big = r.get_or<double>("b_big", 0);
  n.g_small_sq = r.get_or<double>("mean_sq_norm_small", 0);
  n.g_big_sq = r.get_or<double>("mean_sq_norm_big", 0);
  n.n_small = r.get_or<Count>("n_small", 0);
  n.n_big = r.get_or<Count>("n_big", 0);
  n.true_grad_sq = r.get_or<double>("true_grad_sq", 0);
  n.trace_cov = r.get_or<double>("trace_cov", 0);
  n.valid = r.get_or<bool>("valid", false);
  n.b_simple = n.valid ? r.get<double>("b_simple") : 0.0;
  n.note = r.get_or<std::string>("note", "");
  return n;
}

Measured measured_from(const Reader& r) {
  Measured m;
  const Reader st = r.child("step_time");
  m.step_time.median = st.get<double>("median");
  m.step_time.p10 = st.get<double>("p10");
  m.step_time.p90 = st.get<double>("p90");
  m.step_time.mean = st.get<double>("mean");
  m.step_time.min = st.get<double>("min");
  m.step_time.max = st.get<double>("max");
  m.step_time.ci_lo = st.get_or<double>("ci_lo", m.step_time.min);  // absent before issue 16
  m.step_time.ci_hi = st.get_or<double>("ci_hi", m.step_time.max);
  m.throughput_samples_per_s = r.get<double>("throughput_samples_per_s");
  m.tokens_per_s = r.get<double>("tokens_per_s");
  m.peak_memory = r.get<Bytes>("peak_memory");
  m.peak_memory_per_rank = r.get<std::vector<Bytes>>("peak_memory_per_rank");
  m.resident_memory = r.get_or<Bytes>("resident_memory", 0);  // absent before sharded runs
  m.comm_exposed = r.get<double>("comm_exposed");
  m.straggler_wait = r.get_or<double>("straggler_wait", 0.0);  // absent before 2026-12-02
  m.comm_total = r.get<double>("comm_total");
  m.compute = r.get<double>("compute");
  m.optimizer = r.get<double>("optimizer");
  m.rank_skew = r.get<double>("rank_skew");
  m.collectives_per_step = r.get<Count>("collectives_per_step");
  m.collectives_per_micro_step = r.get<std::vector<Count>>("collectives_per_micro_step");
  m.collectives_launched_in_backward = r.get<Count>("collectives_launched_in_backward");
  m.comm_buffer_bytes = r.get<Bytes>("comm_buffer_bytes");
  m.timed_steps = r.get<Count>("timed_steps");
  if (r.has("loss")) {
    const Reader l = r.child("loss");
    m.loss_first_window = l.get<double>("first_window");
    m.loss_last_window = l.get<double>("last_window");
  }
  m.noise_scale = noise_scale_from(r.child("noise_scale"));
  return m;
}

Environment environment_from(const Reader& r) {
  Environment e;
  e.launcher = r.get<std::string>("launcher");
  e.backend = r.get<std::string>("backend");
  e.device = r.get<std::string>("device");
  e.world_size = r.get<Count>("world_size");
  e.threads_per_rank = r.get<int>("threads_per_rank");
  e.oversubscribed = r.get<bool>("oversubscribed");
  for (std::size_t i = 0; i < r.size("ranks"); ++i) {
    const Reader x = r.item("ranks", i);
    e.ranks.push_back(RankEnvironment{
        x.get<int>("rank"), x.get<int>("local_rank"), x.get<std::string>("host"), x.get<long>("pid"),
        x.get<int>("threads"), x.get<int>("interop_threads"), x.get<int>("cores"),
        parse_collective_wait(x.get_or<std::string>("collective_wait", "block"), x.what + ".collective_wait")});
  }
  const Reader v = r.child("versions");
  e.tool_version = v.get<std::string>("tool");
  e.libtorch_version = v.get<std::string>("libtorch");
  e.gloo_version = v.get<std::string>("gloo");
  static const char* kKnown[] = {"launcher",         "backend",        "device", "world_size",
                                 "threads_per_rank", "oversubscribed", "ranks",  "versions"};
  for (auto it = r.j.begin(); it != r.j.end(); ++it)
    if (std::none_of(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return it.key() == k; }))
      e.launch[it.key()] = it.value();
  return e;
}

Comparison comparison_from(const Reader& r) {
  Comparison c;
  c.tolerance_pct = r.get<double>("tolerance_pct");
  c.ok = r.get<bool>("ok");
  if (r.has("verdict")) c.verdict = r.get<bool>("verdict");
  for (std::size_t i = 0; i < r.size("rows"); ++i) {
    const Reader x = r.item("rows", i);
    ComparisonRow row;
    row.figure = x.get<std::string>("figure");
    row.unit = x.get<std::string>("unit");
    row.measured = x.get<double>("measured");
    row.predicted = x.get<double>("predicted");
    if (x.has("error_pct")) row.error_pct = x.get<double>("error_pct");
    const std::string gate = x.get<std::string>("gate");
    row.gate = gate == "tolerance" ? Gate::tolerance : gate == "exact" ? Gate::exact : Gate::info;
    const std::string st = x.get<std::string>("status");
    if (st != "info") row.status = status_of(st, x.what + ".status");
    c.rows.push_back(std::move(row));
  }
  if (r.has("band")) {
    const Reader b = r.child("band");
    BandCheck x;
    x.predicted_lo = b.get<double>("predicted_lo");
    x.predicted_hi = b.get<double>("predicted_hi");
    x.measured = b.get<double>("measured");
    x.measured_lo = b.get<double>("measured_lo");
    x.measured_hi = b.get<double>("measured_hi");
    x.inside = b.get<bool>("inside");
    c.band = x;
  }
  return c;
}

WindowRow window_from(const Reader& r) {
  WindowRow w;
  w.window = r.get<Count>("window");
  w.timed = r.get<bool>("timed");
  w.partial = r.get<bool>("partial");
  w.samples = r.get<Count>("samples");
  w.loss_terms = r.get<Count>("loss_terms");
  w.loss = r.get<double>("loss");
  w.step_time = r.get<double>("step_time");
  w.exposed_comm = r.get<double>("exposed_comm");
  w.straggler_wait = r.get_or<double>("straggler_wait", 0.0);
  w.rank_skew = r.get<double>("rank_skew");
  w.per_rank = r.at("per_rank");
  return w;
}

}  // namespace

CheckRecord check_record(RunCheck check, Status status, std::string detail, json numbers) {
  return CheckRecord{std::string(to_string(check)), status, std::move(detail), std::move(numbers)};
}

void add_not_run_checks(std::vector<CheckRecord>& checks, const std::string& reason, bool pipeline) {
  for (const auto& t : kRunCheckTraits)
    if ((pipeline || !t.pipeline_only) && std::none_of(checks.begin(), checks.end(), [&](const CheckRecord& c) { return c.name == t.name; }))
      checks.push_back(check_record(t.check, Status::skip, reason));
}

json to_json(const PipelineMeasure& p) {
  json ranks = json::array();
  for (const auto& r : p.ranks)
    ranks.push_back(json{{"rank", r.rank},
                         {"stage", r.stage},
                         {"replica", r.replica},
                         {"order", r.order},
                         {"in_flight", r.in_flight},
                         {"in_flight_model", r.in_flight_model},
                         {"peak_memory", r.peak_memory},
                         {"predicted_peak", r.predicted_peak},
                         {"chunk_activations", r.chunk_activations},
                         {"forward_s", r.forward},
                         {"backward_s", r.backward},
                         {"busy_s", r.busy},
                         {"idle_s", r.idle},
                         {"predicted_idle_s", r.predicted_idle}});
  return json{{"ranks", ranks},
              {"makespan_s", p.makespan},
              {"predicted_makespan_s", p.predicted_makespan},
              {"bubble_fraction", p.bubble_fraction},
              {"predicted_bubble_fraction", p.predicted_bubble_fraction},
              {"closed_form_bubble_fraction", p.closed_form_bubble_fraction},
              {"predicted_step_time_s", p.predicted_step_time},
              {"p2p_s", p.p2p}};
}

PipelineMeasure pipeline_measure_from_json(const json& j, const std::string& what) {
  const Reader r{j, what};
  PipelineMeasure p;
  for (std::size_t i = 0; i < r.size("ranks"); ++i) {
    const Reader x = r.item("ranks", i);
    StageRecord s;
    s.rank = x.get<int>("rank");
    s.stage = x.get<Count>("stage");
    s.replica = x.get<Count>("replica");
    s.order = x.get<std::vector<std::string>>("order");
    s.in_flight = x.get<Count>("in_flight");
    s.in_flight_model = x.get<Count>("in_flight_model");
    s.peak_memory = x.get<Bytes>("peak_memory");
    s.predicted_peak = x.get<Bytes>("predicted_peak");
    s.chunk_activations = x.get<std::vector<Bytes>>("chunk_activations");
    s.forward = x.get<std::vector<double>>("forward_s");
    s.backward = x.get<std::vector<double>>("backward_s");
    s.busy = x.get<double>("busy_s");
    s.idle = x.get<double>("idle_s");
    s.predicted_idle = x.get<double>("predicted_idle_s");
    p.ranks.push_back(std::move(s));
  }
  p.makespan = r.get<double>("makespan_s");
  p.predicted_makespan = r.get<double>("predicted_makespan_s");
  p.bubble_fraction = r.get<double>("bubble_fraction");
  p.predicted_bubble_fraction = r.get<double>("predicted_bubble_fraction");
  p.closed_form_bubble_fraction = r.get<double>("closed_form_bubble_fraction");
  p.predicted_step_time = r.get<double>("predicted_step_time_s");
  p.p2p = r.get<double>("p2p_s");
  return p;
}

json to_json(const RunRecord& r) {
  json j{{"config", spec_config(r.spec, r.facts)}, {"ok", r.ok}};
  json checks = json::array();
  for (const auto& c : r.checks) checks.push_back(check_json(c));
  j["checks"] = checks;
  if (r.failure) {
    j["failure"] = *r.failure;
    if (r.launcher_wall_s) j["launcher_wall_s"] = *r.launcher_wall_s;
    return j;
  }
  if (r.stopped) {
    j["stopped"] = *r.stopped;
    return j;
  }
  if (r.environment) j["environment"] = environment_json(*r.environment);
  j["warnings"] = r.warnings;
  j["model_notes"] = r.model_notes;
  if (r.measured) j["measured"] = measured_json(*r.measured);
  j["steps"] = steps_json(r.steps);
  if (r.prediction) j["prediction"] = *r.prediction;
  if (r.comparison) j["comparison"] = comparison_json(*r.comparison);
  if (r.pipeline) j["pipeline"] = to_json(*r.pipeline);
  return j;
}

RunRecord run_record_from_json(const json& j, const std::string& what) {
  const Reader r{j, what};
  RunRecord x;
  x.spec = run_spec_from_json(r.at("config"), what + ".config");
  const Reader w = r.child("config").child("workload");
  if (w.has("hash"))
    x.facts = WorkloadFacts{w.get<std::string>("hash"), w.get<std::string>("kind"), w.get<Count>("param_count"),
                            w.get<Bytes>("param_bytes")};
  x.ok = r.get<bool>("ok");
  // A failed run's checks (all not run) are absent in records written before 2026-12-04.
  if (!r.has("failure") || r.has("checks"))
    for (std::size_t i = 0; i < r.size("checks"); ++i) {
      const Reader c = r.item("checks", i);
      x.checks.push_back(CheckRecord{c.get<std::string>("name"), status_of(c.get<std::string>("status"), c.what),
                                     c.get<std::string>("detail"),
                                     c.has("numbers") ? c.at("numbers") : json::object()});
    }
  if (r.has("failure")) {
    x.failure = r.get<std::string>("failure");
    if (r.has("launcher_wall_s")) x.launcher_wall_s = r.get<double>("launcher_wall_s");
    return x;
  }
  if (r.has("stopped")) {
    x.stopped = r.get<std::string>("stopped");
    return x;
  }
  if (r.has("environment")) x.environment = environment_from(r.child("environment"));
  x.warnings = r.get_or<std::vector<std::string>>("warnings", {});
  x.model_notes = r.get_or<std::vector<std::string>>("model_notes", {});
  if (r.has("measured")) x.measured = measured_from(r.child("measured"));
  if (r.has("steps"))
    for (std::size_t i = 0; i < r.size("steps"); ++i) x.steps.push_back(window_from(r.item("steps", i)));
  if (r.has("prediction")) x.prediction = r.at("prediction");
  if (r.has("comparison")) x.comparison = comparison_from(r.child("comparison"));
  if (r.has("pipeline")) x.pipeline = pipeline_measure_from_json(r.at("pipeline"), what + ".pipeline");
  return x;
}

}  // namespace gaccum::runner
