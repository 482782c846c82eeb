// What/why: see noise_source.hpp.
#include "tuner/noise_source.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "model/noise_scale.hpp"

namespace gaccum::tuner {

using nlohmann::json;

double MeasuredNoiseScale::b_simple() const {
  return model::noise_scale_two_sizes(b_small, mean_sq_small, b_big, mean_sq_big).b_simple;
}

bool stronger(const NoiseStrength& a, const NoiseStrength& b) {
  if (a.spread != b.spread) return a.spread > b.spread;
  return a.samples > b.samples;
}

NoiseStrength strength(const MeasuredNoiseScale& m) {
  return {double(m.b_big) / double(m.b_small), m.n_small + m.n_big};
}

std::optional<NoiseStrength> profile_noise_strength(const std::vector<GradNormPoint>& points) {
  std::vector<std::string> notes;
  const auto ns = model::estimate_noise_scale(points, notes);
  if (!ns) return std::nullopt;
  NoiseStrength s{double(ns->b_big) / double(ns->b_small), 0};
  for (const auto& p : points) s.samples += Count(p.sq_norms.size());
  return s;
}

std::optional<MeasuredNoiseScale> measurement_from_validation_run(const json& run) {
  if (!run.is_object() || !run.contains("checks") || !run.contains("measured") || !run.contains("config"))
    return std::nullopt;
  for (const auto& c : run.at("checks"))
    if (c.is_object() && c.value("status", std::string()) == "fail") return std::nullopt;
  const auto& m = run.at("measured");
  if (!m.is_object() || !m.contains("noise_scale")) return std::nullopt;
  const auto& ns = m.at("noise_scale");
  if (!ns.is_object() || !ns.value("valid", false)) return std::nullopt;
  JsonFields f(ns, "validation.json: measured.noise_scale");
  MeasuredNoiseScale out;
  const double bs = f.num("b_small"), bb = f.num("b_big");
  if (!(bs >= 1 && bb > bs) || bs != std::floor(bs) || bb != std::floor(bb)) return std::nullopt;
  out.b_small = Count(bs), out.b_big = Count(bb);
  out.mean_sq_small = f.num("mean_sq_norm_small");
  out.mean_sq_big = f.num("mean_sq_norm_big");
  out.n_small = f.count("n_small");
  out.n_big = f.count("n_big");
  if (!(out.b_simple() > 0) || !std::isfinite(out.b_simple())) return std::nullopt;
  const auto& cfg = run.at("config");
  out.origin = fmt::format("validate -b {} -k {} -p {}", cfg.value("micro_batch", Count(0)),
                           cfg.value("accum_steps", Count(0)), cfg.value("world_size", Count(0)));
  return out;
}

json noise_record_json(const std::string& workload_hash, const std::vector<MeasuredNoiseScale>& ms) {
  json list = json::array();
  for (const auto& m : ms)
    list.push_back({{"b_small", m.b_small},
                    {"mean_sq_norm_small", m.mean_sq_small},
                    {"n_small", m.n_small},
                    {"b_big", m.b_big},
                    {"mean_sq_norm_big", m.mean_sq_big},
                    {"n_big", m.n_big},
                    {"origin", m.origin},
                    {"b_simple", m.b_simple()}});
  return {{"schema", kNoiseScaleSchema},
          {"schema_version", kNoiseScaleSchemaVersion},
          {"workload_hash", workload_hash},
          {"measurements", list}};
}

std::vector<MeasuredNoiseScale> read_noise_record(const json& doc, const std::string& what,
                                                  const std::string& workload_hash) {
  if (!doc.is_object()) throw InputError(fmt::format("{}: expected a JSON object", what));
  JsonFields f(doc, what);
  if (f.str("schema") != kNoiseScaleSchema)
    throw InputError(fmt::format("{}: schema: expected \"{}\"", what, kNoiseScaleSchema));
  if (f.count("schema_version") != Count(kNoiseScaleSchemaVersion))
    throw InputError(fmt::format("{}: schema_version: expected {}", what, kNoiseScaleSchemaVersion));
  const std::string hash = f.str("workload_hash");
  if (hash != workload_hash)
    throw InputError(fmt::format("{}: workload_hash {} is not this workload's ({})", what, hash, workload_hash));
  std::vector<MeasuredNoiseScale> out;
  const json& list = f.array("measurements");
  for (std::size_t i = 0; i < list.size(); ++i) {
    JsonFields m(list[i], fmt::format("{}.measurements[{}]", what, i));
    MeasuredNoiseScale r;
    r.b_small = m.positive("b_small");
    r.b_big = m.positive("b_big");
    if (r.b_big <= r.b_small) throw InputError(fmt::format("{}: b_big must exceed b_small", m.path()));
    r.mean_sq_small = m.num("mean_sq_norm_small");
    r.mean_sq_big = m.num("mean_sq_norm_big");
    r.n_small = m.count("n_small");
    r.n_big = m.count("n_big");
    r.origin = m.opt_str("origin").value_or("validate");
    (void)m.opt_num("b_simple");  // written for readers; recomputed from the means here
    if (r.b_simple() > 0 && std::isfinite(r.b_simple())) out.push_back(r);
  }
  return out;
}

std::vector<MeasuredNoiseScale> merge_measurement(std::vector<MeasuredNoiseScale> existing, const MeasuredNoiseScale& m) {
  existing.erase(std::remove_if(existing.begin(), existing.end(),
                                [&](const MeasuredNoiseScale& e) { return e.b_small == m.b_small && e.b_big == m.b_big; }),
                 existing.end());
  existing.push_back(m);
  std::stable_sort(existing.begin(), existing.end(), [](const MeasuredNoiseScale& a, const MeasuredNoiseScale& b) {
    return stronger(strength(a), strength(b));
  });
  if (existing.size() > 16) existing.resize(16);
  return existing;
}

std::optional<NoiseChoice> choose_recorded_noise_scale(const std::vector<MeasuredNoiseScale>& recorded,
                                                       const std::optional<NoiseStrength>& profile,
                                                       const std::string& where) {
  const MeasuredNoiseScale* best = nullptr;
  for (const auto& m : recorded)
    if (!best || stronger(strength(m), strength(*best))) best = &m;
  if (!best) return std::nullopt;
  if (profile && !stronger(strength(*best), *profile)) return std::nullopt;
  return NoiseChoice{best->b_simple(),
                     fmt::format("measured by `gaccum-tune {}` (b={} vs B={}, {} gradient norms), recorded in {}{}",
                                 best->origin, best->b_small, best->b_big, best->n_small + best->n_big, where,
                                 profile ? ": a wider batch spread than the profile's" : "")};
}

}  // namespace gaccum::tuner
