// What/why: see job.hpp.
#include "check/job.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/structured_text.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace gaccum::check {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  if (p.empty()) return p;
  fs::path path(p);
  if (path.is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

std::optional<std::string> opt_path(JsonFields& f, const std::string& key, const std::string& base_dir) {
  auto v = f.opt_str(key);
  if (!v) return std::nullopt;
  if (v->empty()) throw InputError(fmt::format("{}: empty path", f.child(key)));
  return resolve_path(*v, base_dir);
}

const std::vector<std::string> kJobKeys = {
    "schema",      "schema_version", "name",        "workload",      "workload_hash",   "torchscript",
    "profile",     "spec",           "cluster",     "mfu",           "deepspeed_config", "micro_batch",
    "accum_steps", "world_size",     "global_batch", "strategy",     "max_accum_steps", "dataset_size",
    "drop_last",   "optimizer",      "lr",          "lr_ref",        "noise_scale",     "memory_cap",
    "margin",      "tolerance",      "lr_tolerance", "sharding",      "precision",       "checkpointing",
    "framework",   "tp",             "pp",          "cp",            "virtual_stages",  "schedule",
    "sequence_parallel", "megatron_args", "nemo_config", "torchtitan_config"};
const std::vector<std::string> kTorchScriptKeys = {"path", "input_shape", "inputs", "target"};
const std::vector<std::string> kLrRefKeys = {"lr", "global_batch"};

tuner::LrReference read_lr_ref(const json& v, const std::string& field, std::vector<std::string>& warnings) {
  if (v.is_string()) return tuner::parse_lr_reference(v.get<std::string>(), field);
  if (!v.is_object())
    throw InputError(fmt::format("{}: expected \"LR@GLOBAL_BATCH\" such as \"3e-4@256\" or {{lr, global_batch}}, got {}",
                                 field, v.type_name()));
  JsonFields f(v, field);
  tuner::LrReference r;
  r.lr = read_positive_number(f.any("lr"), f.child("lr"));
  r.global_batch = f.positive("global_batch");
  warn_unknown_keys(f.unknown_keys(), kLrRefKeys, field, warnings);
  return r;
}

}  // namespace

double read_positive_number(const json& v, const std::string& field) {
  double d = 0;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
      throw InputError(fmt::format("{}: invalid value '{}': expected a positive number such as 3e-4", field, s));
  } else {
    throw InputError(fmt::format("{}: expected a positive number, got {}", field, v.type_name()));
  }
  if (!std::isfinite(d) || d <= 0)
    throw InputError(fmt::format("{}: expected a positive finite number, got {}", field, v.dump()));
  return d;
}

double read_fraction(const json& v, const std::string& field) {
  if (v.is_string()) return parse_fraction(v.get<std::string>(), field);
  if (v.is_number()) {
    const double d = v.get<double>();
    if (!(d >= 0 && d <= 1))
      throw InputError(fmt::format("{}: invalid value {}: expected a fraction between 0 and 1 (or \"10%\")", field,
                                   v.dump()));
    return d;
  }
  throw InputError(fmt::format("{}: expected a fraction such as 0.1 or \"10%\", got {}", field, v.type_name()));
}

MemoryCap read_memory_cap(const json& v, const std::string& field) {
  if (v.is_string()) return parse_memory_cap(v.get<std::string>(), field);
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() > 0)) {
    MemoryCap cap;
    cap.absolute = v.get<std::uint64_t>();
    if (*cap.absolute == 0) throw InputError(fmt::format("{}: expected a size above 0 bytes", field));
    return cap;
  }
  throw InputError(
      fmt::format("{}: expected a size such as \"70GiB\", a share such as \"90%\" or a positive number of bytes, got {}",
                  field, v.dump()));
}

void warn_unknown_keys(const std::vector<std::string>& unknown, const std::vector<std::string>& known,
                       const std::string& path, std::vector<std::string>& warnings) {
  for (const auto& key : unknown) {
    if ((!key.empty() && key[0] == '_') || key == "comment") continue;
    std::string best;
    std::size_t best_d = 3;  // suggest only close matches (typos)
    for (const auto& k : known) {
      const std::size_t d = edit_distance(key, k);
      if (d < best_d) best_d = d, best = k;
    }
    warnings.push_back(fmt::format("{}: unknown key '{}' ignored{}", path, key,
                                   best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best)));
  }
}

JobFile job_from_json(const json& doc, const std::string& what, const std::string& base_dir) {
  JsonFields f(doc, what);
  JobFile j;
  j.path = what;
  j.hash = canonical_hash(doc);
  if (auto s = f.opt_str("schema"); s && *s != kJobSchema)
    throw InputError(fmt::format("{}.schema: '{}' is not a gaccum-tune job file (expected \"{}\")", what, *s, kJobSchema));
  if (f.has("schema_version")) {
    const Count v = f.positive("schema_version");
    if (v != kJobSchemaVersion)
      throw InputError(fmt::format("{}.schema_version: version {} is not supported (this gaccum-tune reads {})", what,
                                   v, kJobSchemaVersion));
  }
  j.name = f.opt_str("name");
  j.workload = f.opt_str("workload");
  if (j.workload && j.workload->empty()) throw InputError(fmt::format("{}: empty workload name", f.child("workload")));
  j.workload_hash = f.opt_str("workload_hash");
  j.profile = opt_path(f, "profile", base_dir);
  j.spec = opt_path(f, "spec", base_dir);
  j.cluster = opt_path(f, "cluster", base_dir);
  j.deepspeed_config = opt_path(f, "deepspeed_config", base_dir);
  if (const json* ts = f.opt_object("torchscript")) {
    JsonFields t(*ts, f.child("torchscript"));
    TorchScriptSource s;
    s.path = resolve_path(t.str("path"), base_dir);
    if (s.path.empty()) throw InputError(fmt::format("{}: empty path", t.child("path")));
    std::vector<std::string> texts;
    if (t.has("input_shape")) {
      const auto shape = t.count_list("input_shape");
      for (std::size_t i = 0; i < shape.size(); ++i)
        if (shape[i] < 1) throw InputError(fmt::format("{}[{}]: expected a positive integer", t.child("input_shape"), i));
      texts.push_back(fmt::format("float:{}", fmt::join(shape, ",")));
    }
    if (t.has("inputs")) {
      if (!texts.empty())
        throw InputError(fmt::format("{}: give input_shape (one float input) or inputs, not both", t.path()));
      const auto& arr = t.array("inputs");
      for (std::size_t i = 0; i < arr.size(); ++i) {
        if (!arr[i].is_string())
          throw InputError(fmt::format("{}[{}]: expected an input such as \"tokens:1000:64\"", t.child("inputs"), i));
        texts.push_back(arr[i].get<std::string>());
      }
    }
    if (!texts.empty()) s.inputs = parse_model_inputs(texts, t.child(t.has("inputs") ? "inputs" : "input_shape"));
    if (auto tg = t.opt_str("target")) s.target = parse_model_target(*tg, t.child("target"));
    if (!s.inputs.empty()) check_target_fits_inputs(s.target, s.inputs, t.child("target"));
    warn_unknown_keys(t.unknown_keys(), kTorchScriptKeys, t.path(), j.warnings);
    j.torchscript = s;
  }
  const int models = int(j.workload.has_value()) + int(j.torchscript.has_value()) + int(j.spec.has_value());
  if (models > 1) throw InputError(fmt::format("{}: give at most one of workload, torchscript or spec", what));
  if (j.spec && j.profile) throw InputError(fmt::format("{}: give profile or spec, not both", what));
  if (f.has("mfu")) j.mfu = read_fraction(f.any("mfu"), f.child("mfu"));
  else (void)f.opt_str("mfu");

  j.micro_batch = f.opt_positive("micro_batch");
  j.accum_steps = f.opt_positive("accum_steps");
  j.world_size = f.opt_positive("world_size");
  j.global_batch = f.opt_positive("global_batch");
  j.max_accum_steps = f.opt_positive("max_accum_steps");
  j.dataset_size = f.opt_positive("dataset_size");
  if (auto s = f.opt_str("strategy")) j.strategy = parse_strategy(*s, f.child("strategy"));
  if (auto s = f.opt_str("framework")) j.framework = parse_framework(*s, f.child("framework"));
  if (auto s = f.opt_str("sharding")) j.sharding = parse_sharding(*s, f.child("sharding"));
  if (auto s = f.opt_str("precision")) j.precision = parse_precision(*s, f.child("precision"));
  if (auto s = f.opt_str("checkpointing")) j.checkpointing = parse_checkpointing(*s, f.child("checkpointing"));
  j.tp = f.opt_positive("tp");
  j.pp = f.opt_positive("pp");
  j.cp = f.opt_positive("cp");
  j.virtual_stages = f.opt_positive("virtual_stages");
  if (auto s = f.opt_str("schedule")) j.schedule = parse_schedule(*s, f.child("schedule"));
  j.sequence_parallel = f.opt_boolean("sequence_parallel");
  for (auto [key, dst] : {std::pair{"megatron_args", &j.megatron_args}, std::pair{"nemo_config", &j.nemo_config},
                          std::pair{"torchtitan_config", &j.torchtitan_config}})
    if (auto s = f.opt_str(key)) *dst = resolve_path(*s, base_dir);
  j.drop_last = f.opt_boolean("drop_last");
  j.optimizer = f.opt_str("optimizer");
  if (f.has("lr")) j.lr = read_positive_number(f.any("lr"), f.child("lr"));
  else (void)f.opt_str("lr");
  if (f.has("lr_ref")) j.lr_ref = read_lr_ref(f.any("lr_ref"), f.child("lr_ref"), j.warnings);
  else (void)f.opt_str("lr_ref");
  if (f.has("noise_scale")) j.noise_scale = read_positive_number(f.any("noise_scale"), f.child("noise_scale"));
  else (void)f.opt_str("noise_scale");
  if (f.has("memory_cap")) j.memory_cap = read_memory_cap(f.any("memory_cap"), f.child("memory_cap"));
  else (void)f.opt_str("memory_cap");
  for (auto [key, out] : {std::pair<const char*, std::optional<double>*>{"margin", &j.margin},
                          {"tolerance", &j.tolerance},
                          {"lr_tolerance", &j.lr_tolerance}}) {
    if (f.has(key)) *out = read_fraction(f.any(key), f.child(key));
    else (void)f.opt_str(key);
  }
  warn_unknown_keys(f.unknown_keys(), kJobKeys, what, j.warnings);
  return j;
}

JobFile load_job(const std::string& path) {
  const std::string text = read_text_file(path, "--job");
  const json doc = parse_structured_text(text, format_of_path(path), path);
  return job_from_json(doc, path, fs::path(path).parent_path().string());
}

}  // namespace gaccum::check
