// What/why: see json_printer.hpp.
#include "reports/json_printer.hpp"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "model/prediction_json.hpp"
#include "reports/row.hpp"
#include "reports/summary.hpp"

namespace gaccum::reports {
namespace {

using oj = nlohmann::ordered_json;

oj cell_json(const Cell& c) {
  switch (c.kind) {
    case Cell::Kind::empty:
      return nullptr;
    case Cell::Kind::integer:
      return c.i;
    case Cell::Kind::real:
      return std::isfinite(c.d) ? oj(round_sig(c.d)) : oj(nullptr);
    case Cell::Kind::text:
      return c.s;
    case Cell::Kind::boolean:
      return c.b;
  }
  return nullptr;
}

oj row_json(const Row& r) {
  oj o = oj::object();
  for (const auto& col : columns()) o[col.name] = cell_json(col.get(r));
  return o;
}

oj opt(const std::optional<double>& v) {
  return v ? oj(round_sig(*v)) : oj(nullptr);
}

}  // namespace

double round_sig(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  return std::strtod(fmt::format("{:.10g}", v).c_str(), nullptr);
}

oj to_json(const tuner::TuneResult& r, const ReportContext& ctx) {
  const auto& q = r.request;
  const auto& l = r.search.limits;
  oj j;
  j["schema"] = kTuneResultSchema;
  j["schema_version"] = kTuneResultSchemaVersion;
  j["tool_version"] = ctx.tool_version;
  j["generated_utc"] = ctx.generated_utc;
  j["command"] = ctx.command;
  j["source"] = oj::parse(ctx.source.dump());
  if (!ctx.deepspeed_config.empty()) j["deepspeed_config"] = ctx.deepspeed_config;
  if (!ctx.next_command.empty()) j["next_command"] = ctx.next_command;

  oj in;
  in["global_batch"] = {{"min", q.global_batch_min}, {"max", q.global_batch_max}};
  in["world_sizes"] = q.world_sizes;
  in["memory_cap"] = q.memory_cap.to_string();
  in["margin"] = round_sig(q.margin);
  in["max_accum_steps"] = q.max_accum_steps;
  in["strategy"] = q.strategy ? std::string(to_string(*q.strategy)) : std::string("auto");
  in["framework"] = q.framework ? nlohmann::ordered_json{{"value", std::string(to_string(*q.framework))},
                                                         {"source", q.framework_source}}
                                : nlohmann::ordered_json("any");
  in["sharding"] = q.sharding ? to_string(*q.sharding) : std::string("auto");
  in["precision"] = q.precision ? std::string(to_string(*q.precision)) : std::string("auto");
  in["checkpointing"] = q.checkpointing ? std::string(to_string(*q.checkpointing)) : std::string("auto");
  in["allow_extrapolation"] = q.allow_extrapolation;
  in["objective"] = std::string(to_string(q.objective));
  in["noise_scale"] = opt(q.noise_scale);
  in["cost_per_device_hour"] = round_sig(q.cost_per_device_hour);
  in["lr_ref"] = q.lr_reference
                     ? oj{{"lr", round_sig(q.lr_reference->lr)}, {"global_batch", q.lr_reference->global_batch}}
                     : oj(nullptr);
  in["optimizer"] = std::string(to_string(q.optimizer));
  in["dataset_size"] = q.dataset_size ? oj(*q.dataset_size) : oj(nullptr);
  in["top"] = q.top;
  in["limits"] = {{"device_memory_bytes", l.device_memory},
                  {"memory_cap_bytes", l.cap},
                  {"memory_limit_bytes", l.limit},
                  {"max_accum_steps", l.max_accum_steps},
                  {"micro_batch_limit", l.micro_batch_limit},
                  {"world_sizes", l.world_sizes},
                  {"noise_scale", opt(l.noise_scale)}};
  oj ranked = oj::array(), evaluated = oj::array();
  for (Strategy s : l.ranked) ranked.push_back(std::string(to_string(s)));
  for (Strategy s : l.evaluated) evaluated.push_back(std::string(to_string(s)));
  in["limits"]["strategies_ranked"] = ranked;
  in["limits"]["strategies_evaluated"] = evaluated;
  oj shardings = oj::array(), precisions = oj::array(), checkpointings = oj::array();
  for (const auto& x : l.shardings) shardings.push_back(to_string(x));
  for (Precision x : l.precisions) precisions.push_back(std::string(to_string(x)));
  for (Checkpointing x : l.checkpointings) checkpointings.push_back(std::string(to_string(x)));
  in["limits"]["shardings"] = shardings;
  in["limits"]["precisions"] = precisions;
  in["limits"]["checkpointings"] = checkpointings;
  j["inputs"] = in;

  const auto& info = r.info;
  j["model"] = {{"source", info.source},
                {"workload_name", info.workload_name},
                {"workload_hash", info.workload_hash},
                {"device_kind", info.device_kind},
                {"device_name", info.device_name},
                {"device_memory_bytes", info.device_memory},
                {"max_world_size", info.max_world_size},
                {"measured_max_micro_batch", info.measured_max_micro_batch},
                {"max_micro_batch_fitting", info.max_micro_batch_fitting},
                {"threads_per_rank", info.threads_per_rank},
                {"tokens_per_sample", round_sig(info.tokens_per_sample)},
                {"noise_scale", opt(info.noise_scale)},
                {"notes", info.notes},
                {"fit", oj::parse(info.fit.dump())}};

  j["headline"] = headline(r);
  j["recommendation"] = recommendation(r);
  {
    const auto& t = r.trust;
    j["trust"] = {{"ranking_confirmed", !t.applies},
                  {"pick_confirmed", t.pick_confirmed},
                  {"pick_unconfirmed", t.pick_unconfirmed},
                  {"other", t.other ? model::to_ordered_json(r.search.candidates[*t.other].config()) : oj(nullptr)},
                  {"other_unconfirmed", t.other_unconfirmed},
                  {"lead", t.lead},
                  {"caveat", t.applies ? oj(t.text) : oj(nullptr)}};
  }

  oj cols = oj::array();
  for (const auto& c : columns()) cols.push_back({{"name", c.name}, {"description", c.description}});
  j["columns"] = cols;

  oj picks = oj::array();
  for (const auto& e : r.picks) {
    const auto& c = r.search.candidates[e.candidate];
    const auto& t = c.prediction.time;
    oj pk;
    pk["rank"] = e.rank;
    pk["config"] = model::to_ordered_json(c.config());
    pk["objective_value"] = round_sig(tuner::objective_value(r.search.objective, c.prediction, l.noise_scale));
    pk["objective_text"] = objective_value_text(r, c);
    pk["throughput_samples_s"] = round_sig(c.prediction.throughput);
    pk["binding"] = {{"kind", e.binding}, {"text", e.binding_text}};
    pk["breakdown"] = {{"step_time_s", round_sig(t.step_time)},
                       {"compute_s", round_sig(t.compute)},
                       {"comm_exposed_s", round_sig(t.comm_exposed)},
                       {"comm_total_s", round_sig(t.comm_total)},
                       {"optimizer_s", round_sig(t.optimizer)},
                       {"comm_exposed_share", round_sig(e.comm_exposed_share)},
                       {"comm_bound", e.comm_bound},
                       {"text", e.breakdown_text},
                       {"comm_text", e.comm_text}};
    pk["links_text"] = e.links_text;
    if (!e.compute_text.empty()) pk["compute_text"] = e.compute_text;
    if (!e.recompute_text.empty()) pk["recompute_text"] = e.recompute_text;
    pk["plan_text"] = e.plan_text;
    pk["memory"] = {{"peak_bytes", c.prediction.memory.peak},
                    {"headroom_bytes", e.headroom},
                    {"headroom_to_cap_bytes", e.headroom_to_cap},
                    {"text", e.headroom_text}};
    if (e.runner_up) {
      const auto& ru = r.search.candidates[*e.runner_up];
      pk["runner_up"] = {{"rank", ru.rank},
                         {"config", model::to_ordered_json(ru.config())},
                         {"throughput_delta", round_sig(e.runner_up_delta)},
                         {"text", e.runner_up_text}};
    } else {
      pk["runner_up"] = nullptr;
    }
    pk["world_size_text"] = e.world_size_text;
    const auto& sp = e.every_step;
    pk["every_step_vs_overlap"] = {{"applicable", sp.applicable},
                                   {"overlap_step_s", round_sig(sp.overlap_step)},
                                   {"fused_step_s", round_sig(sp.fused_step)},
                                   {"every_step_step_s", round_sig(sp.every_step_step)},
                                   {"extra_s_per_step", round_sig(sp.extra_s)},
                                   {"throughput_lost", round_sig(sp.throughput_lost)},
                                   {"overlap_collectives_per_step", sp.overlap_collectives},
                                   {"every_step_collectives_per_step", sp.every_step_collectives},
                                   {"overlap_peak_bytes", sp.overlap_peak},
                                   {"every_step_peak_bytes", sp.every_step_peak},
                                   {"text", sp.text}};
    picks.push_back(pk);
  }
  j["picks"] = picks;

  const auto& lr = r.lr;
  j["lr"] = {{"available", lr.available},
             {"optimizer", std::string(to_string(lr.optimizer))},
             {"rule", lr.rule},
             {"rule_source", lr.rule_source},
             {"lr_ref", round_sig(lr.lr_ref)},
             {"batch_ref", lr.batch_ref},
             {"global_batch", lr.global_batch},
             {"scale", round_sig(lr.scale)},
             {"lr", round_sig(lr.lr)},
             {"warmup", lr.warmup},
             {"warmup_epochs", round_sig(lr.warmup_epochs)},
             {"warmup_steps", lr.warmup_steps ? oj(*lr.warmup_steps) : oj(nullptr)},
             {"text", lr.text}};
  const auto& cb = r.critical;
  j["critical_batch"] = {
      {"available", cb.available},
      {"formula", "S(B) = S_min (1 + B_noise/B); E(B) = E_min (1 + B/B_noise) (McCandlish et al. 2018)"},
      {"noise_scale", round_sig(cb.noise_scale)},
      {"noise_scale_source", cb.source},
      {"global_batch", cb.global_batch},
      {"exceeds", cb.exceeds},
      {"steps_factor", round_sig(cb.steps_factor)},
      {"samples_factor", round_sig(cb.samples_factor)},
      {"extra_samples_factor", round_sig(cb.extra_samples)},
      {"text", cb.text}};
  oj pareto = oj::array();
  for (const auto& pt : r.pareto) {
    pareto.push_back({{"world_size", pt.world_size},
                      {"config", pt.best ? model::to_ordered_json(r.search.candidates[*pt.best].config()) : oj(nullptr)},
                      {"throughput_samples_s", round_sig(pt.throughput)},
                      {"on_front", pt.on_front},
                      {"previous_world_size", pt.previous_world_size},
                      {"marginal_per_device_samples_s", round_sig(pt.marginal_per_device)},
                      {"marginal_efficiency", round_sig(pt.marginal_efficiency)},
                      {"verdict", pt.verdict}});
  }
  j["pareto"] = pareto;
  oj alts = oj::array();
  for (const auto& a : r.plan_alternatives)
    alts.push_back({{"axis", a.axis},
                    {"value", a.value},
                    {"best", a.best ? model::to_ordered_json(r.search.candidates[*a.best].config()) : oj(nullptr)},
                    {"min_peak_bytes", a.min_peak},
                    {"text", a.text}});
  j["plan_alternatives"] = alts;
  oj curve = oj::array();
  for (const auto& m : r.memory_curve)
    curve.push_back({{"world_size", m.world_size},
                     {"micro_batch", m.micro_batch},
                     {"peak_memory_bytes", m.peak},
                     {"extrapolated", m.extrapolated}});
  j["memory_curve"] = curve;
  j["notes"] = r.notes;

  oj preds = oj::array();
  for (std::size_t i = 0; i < r.search.candidates.size(); ++i) preds.push_back(row_json(make_row(r, i)));
  j["predictions"] = std::move(preds);
  return j;
}

std::string print_json(const tuner::TuneResult& r, const ReportContext& ctx) {
  return to_json(r, ctx).dump(2) + "\n";
}

}  // namespace gaccum::reports
