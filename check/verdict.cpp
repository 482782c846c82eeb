// What/why: see verdict.hpp.
#include "check/verdict.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "model/prediction_json.hpp"

namespace gaccum::check {
namespace {

using oj = nlohmann::ordered_json;

// Rounds every real to 10 significant digits and keeps key order (model JSON is unordered).
oj stable(const nlohmann::json& j) {
  if (j.is_object()) {
    oj o = oj::object();
    for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = stable(it.value());
    return o;
  }
  if (j.is_array()) {
    oj a = oj::array();
    for (const auto& e : j) a.push_back(stable(e));
    return a;
  }
  if (j.is_number_float()) return round_sig(j.get<double>());
  return oj::parse(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string value_text(const oj& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, oj::error_handler_t::replace);
}

// An input as the table shows it: fractions as percentages, lr_ref as LR@BATCH.
std::string input_text(const std::string& key, const oj& v) {
  if ((key == "margin" || key == "tolerance" || key == "lr_tolerance" || key == "mfu") && v.is_number())
    return fmt::format("{:g}%", 100.0 * v.get<double>());
  if (key == "lr_ref" && v.is_object() && v.contains("lr") && v.contains("global_batch"))
    return fmt::format("{:g}@{}", v["lr"].get<double>(), value_text(v["global_batch"]));
  if (key == "lr" && v.is_number()) return fmt::format("{:g}", v.get<double>());
  if (key == "device_memory" && v.is_number_integer()) return format_bytes(v.get<Bytes>());
  return value_text(v);
}

}  // namespace

int Verdict::count(Status s) const {
  return int(std::count_if(checks.begin(), checks.end(), [&](const CheckResult& c) { return c.status == s; }));
}

Status Verdict::overall() const {
  if (count(Status::fail) > 0) return Status::fail;
  if (count(Status::warn) > 0) return Status::warn;
  if (ctx.link_probe && !ctx.link_probe->drifted_levels.empty()) return Status::warn;
  return Status::pass;
}

int Verdict::exit_code() const {
  const Status o = overall();
  return (o == Status::fail || (o == Status::warn && ctx.strict)) ? 1 : 0;
}

Verdict run_checks(const ResolvedJob& job, const model::CostModel* model, CheckResult rank_agreement,
                   VerdictContext ctx) {
  Verdict v;
  v.job = job;
  v.ctx = std::move(ctx);
  if (model) {
    v.model_info = model->info();
    try {
      v.prediction = job_prediction(job, *model);
    } catch (const InputError&) {
      if (job.layout.data_parallel_only()) throw;  // a layout the model refuses fails check 9 instead
    }
  }
  if (model && v.prediction) {
    const auto& u = v.prediction->unconfirmed;
    if (!u.empty())
      v.ctx.warnings.push_back(fmt::format(
          "CAVEAT: the predicted time and memory of this job are priced from {} measurement(s) the profile could not "
          "confirm ({}{}): profile again on a quiet machine (`profile --require-quiet`) before trusting the model checks",
          u.size(), u.front(), u.size() > 1 ? "; ..." : ""));
  }
  v.checks.push_back(check_batch_arithmetic(job));
  v.checks.push_back(check_memory(job, model));
  v.checks.push_back(std::move(rank_agreement));
  v.checks.push_back(check_epoch_remainder(job));
  v.checks.push_back(check_efficiency(job, model));
  v.checks.push_back(check_strategy(job, model));
  v.checks.push_back(check_learning_rate(job));
  v.checks.push_back(check_critical_batch(job, model));
  if (!job.layout.data_parallel_only()) v.checks.push_back(check_layout(job, model));
  return v;
}

oj to_json(const Verdict& v) {
  oj j;
  j["schema"] = kCheckSchema;
  j["schema_version"] = kCheckSchemaVersion;
  j["tool_version"] = v.ctx.tool_version;
  j["verdict"] = lower(to_string(v.overall()));
  j["exit_code"] = v.exit_code();
  j["strict"] = v.ctx.strict;
  j["summary"] = {{"pass", v.count(Status::pass)},
                  {"warn", v.count(Status::warn)},
                  {"fail", v.count(Status::fail)},
                  {"skip", v.count(Status::skip)}};
  const auto& jb = v.job;
  j["job"] = {{"micro_batch", jb.micro_batch},   {"accum_steps", jb.accum_steps},
              {"world_size", jb.world_size},     {"global_batch", jb.global_batch},
              {"samples_per_step", jb.product}, {"strategy", std::string(to_string(jb.strategy))}};
  j["inputs"] = inputs_json(jb.inputs);
  if (v.model_info) {
    oj m = stable(model::to_json(*v.model_info, false));
    m["from"] = v.ctx.model_source;
    j["model"] = m;
  } else {
    j["model"] = nullptr;
  }
  j["prediction"] = v.prediction ? stable(model::to_json(*v.prediction)) : oj(nullptr);
  oj checks = oj::array();
  for (const auto& c : v.checks)
    checks.push_back(oj{{"number", c.number},
                        {"id", c.id},
                        {"title", c.title},
                        {"status", std::string(to_string(c.status))},
                        {"reason", c.reason},
                        {"fix", c.fix},
                        {"data", c.data}});
  j["checks"] = checks;
  j["warnings"] = v.ctx.warnings;
  j["rank"] = v.ctx.rank;
  if (v.ctx.link_probe) {
    const auto& d = *v.ctx.link_probe;
    oj pts = oj::array();
    for (const auto& p : d.points)
      pts.push_back(oj{{"level", to_string(p.level)},
                       {"ranks", p.ranks},
                       {"bytes", p.bytes},
                       {"measured_s", p.measured},
                       {"predicted_s", p.predicted},
                       {"ratio", p.ratio},
                       {"drifted", p.drifted}});
    j["link_probe"] = oj{{"cluster", d.cluster_path},
                         {"tolerance", d.tolerance},
                         {"nodes", d.nodes},
                         {"ranks_per_node", d.ranks_per_node},
                         {"drifted", d.drifted_levels},
                         {"points", pts}};
  }
  return j;
}

std::string print_json(const Verdict& v) {
  return to_json(v).dump(2, ' ', false, oj::error_handler_t::replace) + "\n";
}

std::string print_table(const Verdict& v) {
  const auto& jb = v.job;
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  if (v.model_info) {
    const auto& i = *v.model_info;
    std::string from = i.source;
    if (v.ctx.model_source.is_object() && v.ctx.model_source.contains("path"))
      from += " " + value_text(v.ctx.model_source["path"]);
    if (v.ctx.model_source.is_object() && v.ctx.model_source.contains("cached"))
      from += v.ctx.model_source["cached"] == true ? " (cached)" : " (measured now)";
    line(fmt::format("gaccum-tune check: {} ({}; {} {})", i.title_name(), from, i.device_kind, i.device_name));
  } else {
    line("gaccum-tune check: no cost model (memory, efficiency and strategy checks skipped)");
  }
  if (jb.layout.data_parallel_only())
    line(fmt::format("  job    micro_batch {} x accum_steps {} x world_size {} = {} samples per step (global_batch {}), "
                     "strategy {}",
                     jb.micro_batch, jb.accum_steps, jb.world_size, jb.product, jb.global_batch, to_string(jb.strategy)));
  else
    line(fmt::format("  job    micro_batch {} x accum_steps (microbatches) {} x dp {} = {} samples per step (global_batch "
                     "{}), {} x dp {} on world_size {}, strategy {}",
                     jb.micro_batch, jb.accum_steps, jb.data_parallel(), jb.product, jb.global_batch,
                     to_string(jb.layout), jb.data_parallel(), jb.world_size, to_string(jb.strategy)));
  if (v.prediction) {
    const auto& p = *v.prediction;
    line(fmt::format("  model  {} per step, {} samples/s, peak memory {} per rank{}{}", format_seconds(p.time.step_time),
                     format_rate(p.throughput), format_bytes(p.memory.peak), p.extrapolated ? " (extrapolated)" : "",
                     p.priced_as ? fmt::format(" (priced as {} runs it, the framework that runs this plan)",
                                               traits(*p.priced_as).display)
                                 : ""));
  }
  if (v.ctx.rank.is_object())
    line(fmt::format("  rank   {} of {} ({})", value_text(v.ctx.rank["rank"]), value_text(v.ctx.rank["world_size"]),
                     value_text(v.ctx.rank["launcher"])));
  line("");
  std::size_t w = 5;
  for (const auto& c : v.checks) w = std::max(w, c.title.size());
  line(fmt::format(" #  {:<{}}  status  reason", "check", w));
  for (const auto& c : v.checks) {
    line(fmt::format(" {}  {:<{}}  {:<6}  {}", c.number, c.title, w, to_string(c.status), c.reason));
    if (!c.fix.empty()) line(fmt::format("    {:<{}}          fix: {}", "", w, c.fix));
  }
  line("");
  line("inputs:");
  const oj in = inputs_json(jb.inputs);
  std::size_t kw = 0;
  for (auto it = in.begin(); it != in.end(); ++it) kw = std::max(kw, it.key().size());
  for (auto it = in.begin(); it != in.end(); ++it)
    line(fmt::format("  {:<{}}  {:<12}  {}", it.key(), kw, input_text(it.key(), it.value()["value"]),
                     value_text(it.value()["source"])));
  if (v.ctx.link_probe) {
    const auto& d = *v.ctx.link_probe;
    line(fmt::format("link probe: the job's allreduce ({} node(s) x {} ranks) against {}, tolerance +-{:.0f}%",
                     d.nodes, d.ranks_per_node, d.cluster_path, 100 * d.tolerance));
    line(fmt::format("  {:<10}  {:>5}  {:>10}  {:>10}  {:>10}  {:>6}", "level", "ranks", "bytes", "measured", "cluster",
                     "ratio"));
    for (const auto& p : d.points)
      line(fmt::format("  {:<10}  {:>5}  {:>10}  {:>10}  {:>10}  {:>6.2f}{}", to_string(p.level), p.ranks,
                       format_bytes(p.bytes), format_seconds(p.measured), format_seconds(p.predicted), p.ratio,
                       p.drifted ? "  DRIFT" : ""));
  }
  if (!v.ctx.warnings.empty()) {
    line("warnings:");
    for (const auto& wtext : v.ctx.warnings) line("  " + wtext);
  }
  line("");
  line(fmt::format("verdict: {} ({} fail, {} warn, {} pass, {} skip{}) -> exit {}", to_string(v.overall()),
                   v.count(Status::fail), v.count(Status::warn), v.count(Status::pass), v.count(Status::skip),
                   v.ctx.strict ? "; --strict: warnings fail" : "", v.exit_code()));
  return out;
}

std::string print_error_json(const std::string& error, int exit_code, const std::string& tool_version) {
  nlohmann::ordered_json j;
  j["schema"] = "gaccum-tune/check";
  j["schema_version"] = kCheckSchemaVersion;
  j["tool_version"] = tool_version;
  j["verdict"] = "error";
  j["exit_code"] = exit_code;
  j["error"] = error;
  j["checks"] = nlohmann::ordered_json::array();
  return j.dump(2) + "\n";
}

}  // namespace gaccum::check
