// What/why: JSON (de)serialisation of profile.json (see profile.hpp). Reading is strict: every
// required field is checked and named in the error; unknown keys are tolerated (newer writers).
#include "core/profile.hpp"

#include <cstdio>

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace gaccum {

using nlohmann::json;

TimingStats TimingStats::from_samples(std::vector<Seconds> s) {
  TimingStats t;
  t.samples = s;
  if (s.empty()) return t;
  std::sort(s.begin(), s.end());
  auto q = [&](double f) {
    // Linear interpolation between closest ranks (numpy's default).
    double pos = f * double(s.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - double(lo));
  };
  t.median = q(0.5);
  t.p10 = q(0.1);
  t.p90 = q(0.9);
  t.min = s.front();
  t.max = s.back();
  double sum = 0;
  for (double v : s) sum += v;
  t.mean = sum / double(s.size());
  const auto [lo, hi] = median_interval_ranks(s.size());
  t.ci_lo = s[lo];
  t.ci_hi = s[hi];
  return t;
}

double TimingStats::ci_half_width() const { return median > 0 ? (ci_hi - ci_lo) / (2 * median) : 0; }

std::pair<std::size_t, std::size_t> median_interval_ranks(std::size_t n) {
  if (n == 0) return {0, 0};
  // P(B < l) for B ~ Binomial(n, 1/2), accumulated in log space (n may exceed 1000).
  const double log_half_n = static_cast<double>(n) * std::log(0.5);
  double cdf = 0;  // P(B <= j)
  std::size_t l = 0;  // 1-based rank; 0 = none reaches 95%
  for (std::size_t j = 0; j < n / 2; ++j) {
    const double log_choose = std::lgamma(double(n) + 1) - std::lgamma(double(j) + 1) - std::lgamma(double(n - j) + 1);
    cdf += std::exp(log_choose + log_half_n);
    if (cdf > 0.025) break;
    l = j + 1;  // P(B <= j) = P(B < j + 1) <= 2.5%
  }
  if (l == 0) return {0, n - 1};
  return {l - 1, n - l};
}

namespace {

// An unconfirmed[] entry of a profile written before they were objects: its rank group and point
// read back from the words the profiler wrote ("world_size 2 group (...)", "world_size 2
// micro_batch 8: ..."); anything else covers every group.
UnconfirmedMeasurement unconfirmed_from_text(const std::string& text) {
  UnconfirmedMeasurement u;
  u.what = text;
  long long p = 0, b = 0;
  if (std::sscanf(text.c_str(), "world_size %lld micro_batch %lld", &p, &b) == 2 && p > 0 && b > 0) {
    u.world_size = p;
    u.micro_batch = b;
  } else if (char word[8] = {}; std::sscanf(text.c_str(), "world_size %lld %7s", &p, word) == 2 && p > 0 &&
                                std::string(word) == "group") {
    u.world_size = p;
  }
  return u;
}

json timing_json(const TimingStats& t) {
  return json{{"median", t.median}, {"p10", t.p10},     {"p90", t.p90},     {"mean", t.mean}, {"min", t.min},
              {"max", t.max},       {"ci_lo", t.ci_lo}, {"ci_hi", t.ci_hi}, {"samples", t.samples}};
}

// Plausibility limits of a measured profile: sizes below 2^60 bytes (an exabyte: sums of a few
// stay inside 64 bits), times and norms non-negative, a micro-step's time positive.
constexpr Bytes kMaxProfileBytes = Bytes(1) << 60;

Bytes plausible_bytes(JsonFields& f, const std::string& key);

}  // namespace

Bytes OptimizerTransient::at(Count n) const {
  if (n <= 0 || elements <= 0) return 0;
  const auto e = static_cast<long double>(elements);
  const long double v = static_cast<long double>(at_e) +
                        (static_cast<long double>(at_2e) - static_cast<long double>(at_e)) * (static_cast<long double>(n) - e) / e;
  return v <= 0 ? 0 : static_cast<Bytes>(std::llround(v));
}

namespace {

Bytes plausible_bytes(JsonFields& f, const std::string& key) {
  const Bytes b = f.bytes(key);
  if (b >= kMaxProfileBytes)
    throw ProfileError(fmt::format("{}: {} bytes is not a plausible measurement (at least 2^60)", f.child(key), b));
  return b;
}

double non_negative(JsonFields& f, const std::string& key) {
  const double v = f.num(key);  // finite
  if (!(v >= 0)) throw ProfileError(fmt::format("{}: must be non-negative, got {}", f.child(key), v));
  return v;
}

std::optional<double> opt_non_negative(JsonFields& f, const std::string& key) {
  (void)f.opt_num(key);  // mark as seen, type-check
  if (!f.has(key)) return std::nullopt;
  return non_negative(f, key);
}

TimingStats timing_from(const json& j, const std::string& path) {
  JsonFields f(j, path);
  auto samples = f.num_list("samples");
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (!(samples[i] >= 0 && std::isfinite(samples[i])))
      throw ProfileError(fmt::format("{}.samples[{}]: times must be finite and non-negative, got {}", path, i, samples[i]));
  TimingStats t = TimingStats::from_samples(samples);
  if (samples.empty()) {
    t.median = non_negative(f, "median");
    t.p10 = opt_non_negative(f, "p10").value_or(t.median);
    t.p90 = opt_non_negative(f, "p90").value_or(t.median);
    t.mean = opt_non_negative(f, "mean").value_or(t.median);
    t.min = opt_non_negative(f, "min").value_or(t.median);
    t.max = opt_non_negative(f, "max").value_or(t.median);
    t.ci_lo = opt_non_negative(f, "ci_lo").value_or(t.min);
    t.ci_hi = opt_non_negative(f, "ci_hi").value_or(t.max);
  } else {
    (void)f.opt_num("ci_lo");  // recomputed from the samples
    (void)f.opt_num("ci_hi");
  }
  return t;
}

template <class T, class F>
std::vector<T> list_from(JsonFields& f, const std::string& key, F&& one) {
  std::vector<T> out;
  if (!f.has(key)) {
    (void)f.opt_object(key);  // mark as seen
    return out;
  }
  const auto& a = f.array(key);
  for (size_t i = 0; i < a.size(); ++i) out.push_back(one(a[i], fmt::format("{}[{}]", f.child(key), i)));
  return out;
}

}  // namespace

json to_json(const Profile& p) {
  json j;
  j["schema"] = "gaccum-tune/profile";
  j["schema_version"] = p.schema_version;
  j["created_utc"] = p.created_utc;
  const auto& h = p.hardware;
  j["hardware"] = {{"host", h.host},
                   {"device_kind", h.device_kind},
                   {"device_name", h.device_name},
                   {"cpu_cores", h.cpu_cores},
                   {"threads_per_rank", h.threads_per_rank},
                   {"device_memory", h.device_memory},
                   {"sm_count", h.sm_count},
                   {"driver", h.driver}};
  const auto& v = p.versions;
  j["versions"] = {{"tool", v.tool}, {"libtorch", v.libtorch}, {"cuda", v.cuda}, {"nccl", v.nccl}, {"gloo", v.gloo}};
  const auto& w = p.workload;
  j["workload"] = {{"name", w.name},
                   {"kind", w.kind},
                   {"hash", w.hash},
                   {"dtype", w.dtype},
                   {"hyper", w.hyper},
                   {"param_count", w.param_count},
                   {"param_bytes", w.param_bytes},
                   {"param_tensor_bytes", w.param_tensor_bytes},
                   {"unit_tensors", w.unit_tensors},
                   {"tokens_per_sample", w.tokens_per_sample},
                   {"mean_tokens_per_sample", w.mean_tokens_per_sample}};
  const auto& s = p.settings;
  j["settings"] = {{"warmup", s.warmup},
                   {"iters", s.iters},
                   {"ranks", s.ranks},
                   {"sizes", s.sizes},
                   {"memory_cap", s.memory_cap},
                   {"max_micro_batch", s.max_micro_batch},
                   {"time_budget_s", s.time_budget_s},
                   {"seed", s.seed},
                   {"optimizer", std::string(to_string(s.optimizer))},
                   {"ci_target", s.ci_target},
                   {"max_iters", s.max_iters},
                   {"collective_wait", std::string(to_string(s.collective_wait))},
                   {"comm_gap_s", s.comm_gap}};
  json mem = json::array();
  for (const auto& m : p.memory)
    mem.push_back({{"micro_batch", m.micro_batch},
                   {"weights", m.weights},
                   {"gradients", m.gradients},
                   {"optimizer_state", m.optimizer_state},
                   {"peak", m.peak},
                   {"activations", m.activations},
                   {"reserved_peak", m.reserved_peak}});
  for (std::size_t i = 0; i < p.memory.size(); ++i)
    if (!p.memory[i].phases.empty()) mem[i]["phases"] = p.memory[i].phases;
  j["memory"] = mem;
  if (const auto& t = p.optimizer_transient)
    j["optimizer_transient"] = {{"elements", t->elements}, {"at_e", t->at_e}, {"at_2e", t->at_2e}};
  json comp = json::array();
  for (const auto& c : p.compute)
    comp.push_back({{"micro_batch", c.micro_batch},
                    {"concurrent_ranks", c.concurrent_ranks},
                    {"forward", timing_json(c.forward)},
                    {"backward", timing_json(c.backward)},
                    {"micro_step", timing_json(c.micro_step)}});
  j["compute"] = comp;
  json opt = json::array();
  for (const auto& o : p.optimizer) opt.push_back({{"concurrent_ranks", o.concurrent_ranks}, {"step", timing_json(o.step)}});
  j["optimizer"] = opt;
  json ar = json::array();
  for (const auto& a : p.allreduce) {
    ar.push_back({{"backend", a.backend},
                  {"world_size", a.world_size},
                  {"bytes", a.bytes},
                  {"time", a.time},
                  {"algbw", a.algbw},
                  {"busbw", a.busbw},
                  {"wrong", a.wrong},
                  {"tag", a.tag},
                  {"samples", a.samples}});
    if (a.level != CommLevel::job) ar.back()["level"] = to_string(a.level);
  }
  j["allreduce"] = ar;
  json co = json::array();
  for (const auto& c : p.collectives) {
    co.push_back({{"op", c.op},
                  {"method", c.method},
                  {"backend", c.backend},
                  {"world_size", c.world_size},
                  {"bytes", c.bytes},
                  {"time", c.time},
                  {"algbw", c.algbw},
                  {"busbw", c.busbw},
                  {"wrong", c.wrong},
                  {"tag", c.tag},
                  {"samples", c.samples}});
    if (c.level != CommLevel::job) co.back()["level"] = to_string(c.level);
  }
  j["collectives"] = co;
  json gn = json::array();
  for (const auto& g : p.grad_norms) gn.push_back({{"micro_batch", g.micro_batch}, {"sq_norms", g.sq_norms}});
  j["grad_norms"] = gn;
  json ov = json::array();
  for (const auto& o : p.overlap)
    ov.push_back({{"world_size", o.world_size},
                  {"micro_batch", o.micro_batch},
                  {"backward_alone", o.backward_alone},
                  {"comm_alone", o.comm_alone},
                  {"overlapped", o.overlapped}});
  j["overlap"] = ov;
  if (p.topology.ranks_per_node > 0)
    j["topology"] = {{"nodes", p.topology.nodes},
                     {"ranks_per_node", p.topology.ranks_per_node},
                     {"hosts", p.topology.hosts},
                     {"launcher", p.topology.launcher}};
  j["max_micro_batch_fitting"] = p.max_micro_batch_fitting;
  if (!p.model.empty()) {
    json failed = json::array();
    for (const auto& f : p.model.failed_micro_batches)
      failed.push_back({{"micro_batch", f.micro_batch}, {"message", f.message}});
    j["model"] = {{"failed_micro_batches", failed},
                  {"min_micro_batch", p.model.min_micro_batch},
                  {"batch_statistics", p.model.batch_statistics},
                  {"dropout", p.model.dropout}};
  }
  json cond = json::array();
  for (const auto& c : p.conditions) cond.push_back(to_json(c));
  j["conditions"] = cond;
  json unconf = json::array();
  for (const auto& u : p.unconfirmed)
    unconf.push_back({{"what", u.what}, {"world_size", u.world_size}, {"micro_batch", u.micro_batch}});
  j["confirmed"] = p.confirmed();
  j["unconfirmed"] = unconf;
  j["notes"] = p.notes;
  return j;
}

const char* to_string(CommLevel l) {
  switch (l) {
    case CommLevel::job: return "job";
    case CommLevel::intra_node: return "intra_node";
    case CommLevel::inter_node: return "inter_node";
  }
  return "job";
}

std::optional<CommLevel> parse_comm_level(const std::string& s) {
  for (CommLevel l : {CommLevel::job, CommLevel::intra_node, CommLevel::inter_node})
    if (s == to_string(l)) return l;
  return std::nullopt;
}

Profile profile_from_json(const json& j, const std::string& what) {
  try {
    JsonFields f(j, what);
    Profile p;
    if (auto schema = f.opt_str("schema"); schema && *schema != "gaccum-tune/profile")
      throw ProfileError(fmt::format("{}: not a gaccum-tune profile (schema '{}')", what, *schema));
    p.schema_version = static_cast<int>(f.positive("schema_version"));
    if (p.schema_version < kOldestProfileSchemaVersion || p.schema_version > kProfileSchemaVersion)
      throw ProfileError(fmt::format("{}: profile schema version {} is not supported (this gaccum-tune reads {}); "
                                     "re-run `gaccum-tune profile`",
                                     what, p.schema_version,
                                     fmt::format("{} to {}", kOldestProfileSchemaVersion, kProfileSchemaVersion)));
    p.created_utc = f.opt_str("created_utc").value_or("");

    JsonFields h(f.object("hardware"), f.child("hardware"));
    p.hardware.host = h.opt_str("host").value_or("");
    p.hardware.device_kind = h.str("device_kind");
    p.hardware.device_name = h.opt_str("device_name").value_or("");
    p.hardware.cpu_cores = static_cast<int>(h.count("cpu_cores"));
    p.hardware.threads_per_rank = static_cast<int>(h.count("threads_per_rank"));
    p.hardware.device_memory = plausible_bytes(h, "device_memory");
    p.hardware.sm_count = static_cast<int>(h.has("sm_count") ? h.count("sm_count") : 0);
    p.hardware.driver = h.opt_str("driver").value_or("");

    if (auto* v = f.opt_object("versions")) {
      JsonFields vf(*v, f.child("versions"));
      p.versions.tool = vf.opt_str("tool").value_or("");
      p.versions.libtorch = vf.opt_str("libtorch").value_or("");
      p.versions.cuda = vf.opt_str("cuda").value_or("");
      p.versions.nccl = vf.opt_str("nccl").value_or("");
      p.versions.gloo = vf.opt_str("gloo").value_or("");
    }

    JsonFields w(f.object("workload"), f.child("workload"));
    p.workload.name = w.str("name");
    p.workload.kind = w.str("kind");
    p.workload.hash = w.str("hash");
    p.workload.dtype = w.str("dtype");
    if (auto* hy = w.opt_object("hyper")) p.workload.hyper = *hy;
    p.workload.param_count = w.positive("param_count");
    p.workload.param_bytes = plausible_bytes(w, "param_bytes");
    p.workload.param_tensor_bytes = w.bytes_list("param_tensor_bytes");
    if (w.has("unit_tensors")) p.workload.unit_tensors = w.count_list("unit_tensors");
    p.workload.tokens_per_sample = w.has("tokens_per_sample") ? w.count("tokens_per_sample") : 0;
    p.workload.mean_tokens_per_sample = opt_non_negative(w, "mean_tokens_per_sample").value_or(0);
    Bytes sum = 0;
    for (auto b : p.workload.param_tensor_bytes) sum = std::min(kMaxProfileBytes, sum + std::min(b, kMaxProfileBytes));
    if (!p.workload.param_tensor_bytes.empty() && sum != p.workload.param_bytes)
      throw ProfileError(fmt::format("{}: param_tensor_bytes sum to {} but param_bytes is {}", w.path(), sum,
                                     p.workload.param_bytes));
    Count unit_sum = 0;
    for (Count t : p.workload.unit_tensors) {
      if (t < 1) throw ProfileError(fmt::format("{}: every unit holds at least one parameter tensor", w.child("unit_tensors")));
      unit_sum += t;
    }
    if (!p.workload.unit_tensors.empty() && unit_sum != static_cast<Count>(p.workload.param_tensor_bytes.size()))
      throw ProfileError(fmt::format("{}: the units hold {} parameter tensors but param_tensor_bytes lists {}",
                                     w.child("unit_tensors"), unit_sum, p.workload.param_tensor_bytes.size()));

    if (auto* s = f.opt_object("settings")) {
      JsonFields sf(*s, f.child("settings"));
      p.settings.warmup = static_cast<int>(sf.has("warmup") ? sf.count("warmup") : 0);
      p.settings.iters = static_cast<int>(sf.has("iters") ? sf.count("iters") : 0);
      if (sf.has("ranks")) p.settings.ranks = sf.count_list("ranks");
      if (sf.has("sizes")) p.settings.sizes = sf.bytes_list("sizes");
      p.settings.memory_cap = sf.opt_bytes("memory_cap").value_or(0);
      p.settings.max_micro_batch = sf.has("max_micro_batch") ? sf.count("max_micro_batch") : 0;
      p.settings.time_budget_s = opt_non_negative(sf, "time_budget_s").value_or(0);
      p.settings.seed = sf.has("seed") ? static_cast<std::uint64_t>(sf.count("seed")) : 0;
      p.settings.ci_target = opt_non_negative(sf, "ci_target").value_or(0);
      p.settings.max_iters = static_cast<int>(sf.has("max_iters") ? sf.count("max_iters") : 0);
      const std::string wait = sf.opt_str("collective_wait").value_or("block");
      const auto mode = find_collective_wait(wait);
      if (!mode)
        throw ProfileError(fmt::format("{}: '{}' is not a collective wait (block or poll)", sf.child("collective_wait"), wait));
      p.settings.collective_wait = *mode;
      p.settings.comm_gap = opt_non_negative(sf, "comm_gap_s").value_or(0);
      const std::string optimizer = sf.opt_str("optimizer").value_or("adam");
      const auto measured = find_optimizer(optimizer);
      if (!measured || !traits(*measured).in_libtorch)
        throw ProfileError(fmt::format("{}: '{}' is not an optimizer the profiler measures (sgd, adam or adamw)",
                                       sf.child("optimizer"), optimizer));
      p.settings.optimizer = *measured;
    }

    p.memory = list_from<MemoryPoint>(f, "memory", [](const json& e, const std::string& path) {
      JsonFields m(e, path);
      MemoryPoint pt;
      pt.micro_batch = m.positive("micro_batch");
      pt.weights = plausible_bytes(m, "weights");
      pt.gradients = plausible_bytes(m, "gradients");
      pt.optimizer_state = plausible_bytes(m, "optimizer_state");
      pt.peak = plausible_bytes(m, "peak");
      pt.activations = plausible_bytes(m, "activations");
      pt.reserved_peak = m.has("reserved_peak") ? plausible_bytes(m, "reserved_peak") : 0;
      (void)m.opt_bytes("reserved_peak");
      if (m.has("phases")) pt.phases = m.bytes_list("phases");
      return pt;
    });
    for (std::size_t i = 0; i < p.memory.size(); ++i) {
      const auto& pt = p.memory[i];
      if (pt.phases.empty()) continue;
      const std::size_t want = phase_count(static_cast<Count>(p.workload.unit_tensors.size()));
      if (p.workload.unit_tensors.empty() || pt.phases.size() != want)
        throw ProfileError(fmt::format("{}: {} phases, but the workload's unit_tensors make {}; re-run `gaccum-tune "
                                       "profile`",
                                       f.child(fmt::format("memory[{}].phases", i)), pt.phases.size(),
                                       p.workload.unit_tensors.empty() ? std::size_t{0} : want));
      if (*std::max_element(pt.phases.begin(), pt.phases.end()) != pt.activations)
        throw ProfileError(fmt::format("{}: the largest phase is not the point's activations ({} B); re-run "
                                       "`gaccum-tune profile`",
                                       f.child(fmt::format("memory[{}].phases", i)), pt.activations));
    }
    p.compute = list_from<ComputePoint>(f, "compute", [](const json& e, const std::string& path) {
      JsonFields c(e, path);
      ComputePoint pt;
      pt.micro_batch = c.positive("micro_batch");
      pt.concurrent_ranks = c.opt_positive("concurrent_ranks").value_or(1);
      pt.micro_step = timing_from(c.object("micro_step"), c.child("micro_step"));
      if (!(pt.micro_step.median > 0))
        throw ProfileError(fmt::format("{}: median time is 0; a measured micro-step takes positive time",
                                       c.child("micro_step")));
      if (c.has("forward")) pt.forward = timing_from(c.object("forward"), c.child("forward"));
      if (c.has("backward")) pt.backward = timing_from(c.object("backward"), c.child("backward"));
      return pt;
    });
    p.optimizer = list_from<OptimizerPoint>(f, "optimizer", [](const json& e, const std::string& path) {
      JsonFields o(e, path);
      OptimizerPoint pt;
      pt.concurrent_ranks = o.opt_positive("concurrent_ranks").value_or(1);
      pt.step = timing_from(o.object("step"), o.child("step"));
      return pt;
    });
    p.allreduce = list_from<AllreducePoint>(f, "allreduce", [](const json& e, const std::string& path) {
      JsonFields a(e, path);
      AllreducePoint pt;
      pt.backend = a.str("backend");
      pt.world_size = a.positive("world_size");
      pt.bytes = a.bytes("bytes");
      pt.time = non_negative(a, "time");
      pt.algbw = opt_non_negative(a, "algbw").value_or(0);
      pt.busbw = opt_non_negative(a, "busbw").value_or(0);
      pt.wrong = a.has("wrong") ? a.count("wrong") : 0;
      pt.tag = a.opt_str("tag").value_or("sweep");
      if (auto lv = a.opt_str("level")) {
        const auto parsed = parse_comm_level(*lv);
        if (!parsed)
          throw ProfileError(fmt::format("{}.level: '{}' is not job, intra_node or inter_node", path, *lv));
        pt.level = *parsed;
      }
      if (a.has("samples")) pt.samples = a.num_list("samples");
      for (std::size_t i = 0; i < pt.samples.size(); ++i)
        if (!(pt.samples[i] >= 0))
          throw ProfileError(fmt::format("{}.samples[{}]: must be non-negative, got {}", path, i, pt.samples[i]));
      return pt;
    });
    if (f.has("collectives"))
      p.collectives = list_from<CollectivePoint>(f, "collectives", [](const json& e, const std::string& path) {
        JsonFields c(e, path);
        CollectivePoint pt;
        pt.op = c.str("op");
        if (pt.op != "reduce_scatter" && pt.op != "all_gather")
          throw ProfileError(fmt::format("{}.op: '{}' is not reduce_scatter or all_gather", path, pt.op));
        pt.method = c.opt_str("method").value_or("");
        pt.backend = c.str("backend");
        pt.world_size = c.positive("world_size");
        pt.bytes = c.bytes("bytes");
        pt.time = c.num("time");
        pt.algbw = c.opt_num("algbw").value_or(0);
        pt.busbw = c.opt_num("busbw").value_or(0);
        pt.wrong = c.has("wrong") ? c.count("wrong") : 0;
        pt.tag = c.opt_str("tag").value_or("sweep");
        if (auto lv = c.opt_str("level")) {
          const auto parsed = parse_comm_level(*lv);
          if (!parsed)
            throw ProfileError(fmt::format("{}.level: '{}' is not job, intra_node or inter_node", path, *lv));
          pt.level = *parsed;
        }
        if (c.has("samples")) pt.samples = c.num_list("samples");
        if (!(pt.time >= 0)) throw ProfileError(fmt::format("{}.time: must be non-negative", path));
        return pt;
      });
    p.grad_norms = list_from<GradNormPoint>(f, "grad_norms", [](const json& e, const std::string& path) {
      JsonFields g(e, path);
      GradNormPoint pt;
      pt.micro_batch = g.positive("micro_batch");
      pt.sq_norms = g.num_list("sq_norms");
      for (std::size_t i = 0; i < pt.sq_norms.size(); ++i)
        if (!(pt.sq_norms[i] >= 0 && std::isfinite(pt.sq_norms[i])))
          throw ProfileError(fmt::format("{}.sq_norms[{}]: a squared norm must be finite and non-negative, got {}",
                                         path, i, pt.sq_norms[i]));
      return pt;
    });
    p.overlap = list_from<OverlapPoint>(f, "overlap", [](const json& e, const std::string& path) {
      JsonFields o(e, path);
      OverlapPoint pt;
      pt.world_size = o.positive("world_size");
      pt.micro_batch = o.positive("micro_batch");
      pt.backward_alone = non_negative(o, "backward_alone");
      pt.comm_alone = non_negative(o, "comm_alone");
      pt.overlapped = non_negative(o, "overlapped");
      return pt;
    });
    if (const json* t = f.opt_object("topology")) {
      JsonFields tf(*t, f.child("topology"));
      p.topology.nodes = tf.positive("nodes");
      p.topology.ranks_per_node = tf.positive("ranks_per_node");
      for (const auto& host : tf.array("hosts")) {
        if (!host.is_string()) throw ProfileError(fmt::format("{}: host names are strings", tf.child("hosts")));
        p.topology.hosts.push_back(host.get<std::string>());
      }
      p.topology.launcher = tf.opt_str("launcher").value_or("");
      if (static_cast<Count>(p.topology.hosts.size()) != p.topology.nodes)
        throw ProfileError(fmt::format("{}: {} host names for {} nodes", tf.child("hosts"), p.topology.hosts.size(),
                                       p.topology.nodes));
    }
    p.max_micro_batch_fitting = f.has("max_micro_batch_fitting") ? f.count("max_micro_batch_fitting") : 0;
    if (const json* m = f.opt_object("model")) {
      JsonFields mf(*m, f.child("model"));
      p.model.failed_micro_batches =
          list_from<FailedMicroBatch>(mf, "failed_micro_batches", [](const json& e, const std::string& path) {
            JsonFields g(e, path);
            FailedMicroBatch fb;
            fb.micro_batch = g.positive("micro_batch");
            fb.message = g.str("message");
            return fb;
          });
      p.model.min_micro_batch = mf.has("min_micro_batch") ? mf.positive("min_micro_batch") : 1;
      auto strings = [&](const char* key) {
        std::vector<std::string> out;
        if (!mf.has(key)) return out;
        const auto& arr = mf.array(key);
        for (std::size_t i = 0; i < arr.size(); ++i) {
          if (!arr[i].is_string())
            throw ProfileError(fmt::format("{}[{}]: expected a layer name (string)", mf.child(key), i));
          out.push_back(arr[i].get<std::string>());
        }
        return out;
      };
      p.model.batch_statistics = strings("batch_statistics");
      p.model.dropout = strings("dropout");
    }
    if (f.has("optimizer_transient")) {
      JsonFields t(f.object("optimizer_transient"), f.child("optimizer_transient"));
      OptimizerTransient ot;
      ot.elements = t.positive("elements");
      ot.at_e = plausible_bytes(t, "at_e");
      ot.at_2e = plausible_bytes(t, "at_2e");
      p.optimizer_transient = ot;
    }
    if (f.has("conditions")) {
      const auto& arr = f.array("conditions");
      for (std::size_t i = 0; i < arr.size(); ++i)
        p.conditions.push_back(phase_conditions_from_json(arr[i], fmt::format("{}[{}]", f.child("conditions"), i)));
    }
    if (f.has("unconfirmed")) {
      for (const auto& n : f.array("unconfirmed")) {
        if (n.is_string()) {
          p.unconfirmed.push_back(unconfirmed_from_text(n.get<std::string>()));
        } else if (n.is_object() && n.contains("what") && n["what"].is_string()) {
          UnconfirmedMeasurement u;
          u.what = n["what"].get<std::string>();
          if (n.contains("world_size") && n["world_size"].is_number_integer()) u.world_size = std::max<Count>(0, n["world_size"].get<Count>());
          if (n.contains("micro_batch") && n["micro_batch"].is_number_integer()) u.micro_batch = std::max<Count>(0, n["micro_batch"].get<Count>());
          p.unconfirmed.push_back(u);
        }
      }
    }
    if (f.has("notes")) {
      for (const auto& n : f.array("notes"))
        if (n.is_string()) p.notes.push_back(n.get<std::string>());
    }
    return p;
  } catch (const ProfileError&) {
    throw;
  } catch (const InputError& e) {
    throw ProfileError(e.what());
  }
}

Precision measured_precision(const WorkloadIdentity& w) {
  return w.dtype == kBf16Dtype ? Precision::bf16 : Precision::fp32;
}

Checkpointing measured_checkpointing(const WorkloadIdentity& w) {
  return w.hyper.is_object() && w.hyper.value(kCheckpointKey, 0) == 1 ? Checkpointing::full : Checkpointing::none;
}

Profile load_profile(const std::string& path, const std::string& expected_workload_hash) {
  auto text = read_text_file(path, "profile");
  Profile p = profile_from_json(parse_json_text(text, path), path);
  if (!expected_workload_hash.empty() && p.workload.hash != expected_workload_hash)
    throw ProfileError(fmt::format("{}: profile is for workload '{}' in {} (hash {}), not the requested one (hash {}); "
                                   "re-run `gaccum-tune profile` for this workload{}",
                                   path, p.workload.name, p.workload.dtype, p.workload.hash, expected_workload_hash,
                                   measured_precision(p.workload) == Precision::bf16
                                       ? " (a bf16 profile prices bf16 plans; validate runs fp32 or fp64: compare it "
                                         "with an fp32 profile)"
                                       : ""));
  return p;
}

void save_profile(const Profile& p, const std::string& path) {
  const std::string text = to_json(p).dump(1) + "\n";
  try {
    (void)profile_from_json(parse_json_text(text, path), path);
  } catch (const InputError& e) {
    throw RuntimeFailure(fmt::format("profile: not written: {} would not read back ({})", path, e.what()));
  }
  write_file_atomic(path, text);
}

}  // namespace gaccum
