// What/why: see cluster.hpp.
#include "model/cluster.hpp"

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/utc_time.hpp"

namespace gaccum::model {

namespace {

void reject_unknown(const JsonFields& f) {
  for (const auto& k : f.unknown_keys())
    if (k != "comment" && (k.empty() || k[0] != '_'))
      throw InputError(fmt::format("{}: unknown field '{}' (check the spelling; see examples/clusters/)", f.path(), k));
}

double positive_num(JsonFields& f, const std::string& key) {
  const double v = f.num(key);
  if (!(v > 0)) throw InputError(fmt::format("{}: must be a positive number, got {}", f.child(key), v));
  return v;
}

LinkProvenance provenance_from(const nlohmann::json& j, const std::string& path) {
  JsonFields f(j, path);
  LinkProvenance p;
  p.origin = LinkOrigin::measured;
  p.from = f.str("from");
  p.points = f.count("points");
  p.rms_rel_residual = f.opt_num("rms_rel_residual").value_or(0);
  p.max_rel_residual = f.opt_num("max_rel_residual").value_or(0);
  p.measured_utc = f.opt_str("measured_utc").value_or("");
  if (!p.measured_utc.empty() && !parse_utc(p.measured_utc))
    throw InputError(fmt::format("{}: '{}' is not an ISO-8601 UTC time like 2026-12-02T08:00:00Z", f.child("measured_utc"),
                                 p.measured_utc));
  reject_unknown(f);
  return p;
}

nlohmann::json provenance_json(const LinkProvenance& p) {
  nlohmann::json j = {{"from", p.from},
                      {"points", p.points},
                      {"rms_rel_residual", p.rms_rel_residual},
                      {"max_rel_residual", p.max_rel_residual}};
  if (!p.measured_utc.empty()) j["measured_utc"] = p.measured_utc;
  return j;
}

LinkParams link_from(const nlohmann::json& j, const std::string& path, LinkProvenance& prov) {
  JsonFields f(j, path);
  if (auto* m = f.opt_object("measured")) prov = provenance_from(*m, f.child("measured"));
  LinkParams l;
  l.bandwidth = positive_num(f, "bandwidth_GBps") * 1e9;
  const double lat = f.num("latency_us");
  if (!(lat >= 0)) throw InputError(fmt::format("{}: must be a non-negative number, got {}", f.child("latency_us"), lat));
  l.latency = lat * 1e-6;
  reject_unknown(f);
  return l;
}

}  // namespace

Cluster cluster_from_json(const nlohmann::json& j, const std::string& what) {
  JsonFields f(j, what);
  if (auto schema = f.opt_str("schema"); schema && *schema != "gaccum-tune/cluster")
    throw InputError(fmt::format("{}.schema: '{}' is not a cluster description (expected \"gaccum-tune/cluster\")", what, *schema));
  Cluster c;
  c.name = f.str("name");
  c.nodes = f.positive("nodes");
  c.gpus_per_node = f.positive("gpus_per_node");
  if (c.nodes > (Count(1) << 24) || c.gpus_per_node > (Count(1) << 16))
    throw InputError(fmt::format("{}: nodes ({}) or gpus_per_node ({}) out of range (at most 16777216 nodes of 65536 GPUs)",
                                 what, c.nodes, c.gpus_per_node));
  // "device": a catalogue id ("h100-sxm-80gb"), or an object: {"id": ..., overrides} or raw numbers.
  const nlohmann::json& dev_json = f.any("device");
  const nlohmann::json dev_obj = dev_json.is_string() ? nlohmann::json{{"id", dev_json.get<std::string>()}} : dev_json;
  if (!dev_obj.is_object())
    throw InputError(fmt::format("{}: expected a catalogue id such as \"h100-sxm-80gb\" (see `gaccum-tune devices`) or an "
                                 "object",
                                 f.child("device")));
  JsonFields d(dev_obj, f.child("device"));
  const GpuDevice* gpu = nullptr;
  if (auto id = d.opt_str("id")) {
    gpu = find_gpu(*id);
    if (!gpu) {
      std::string ids;
      for (const auto& g : gpu_catalogue()) ids += (ids.empty() ? "" : ", ") + g.id;
      throw InputError(fmt::format("{}: '{}' is not in the GPU catalogue: use one of {} (gaccum-tune devices)",
                                   d.child("id"), *id, ids));
    }
    c.gpu_id = gpu->id;
    c.gpu_named = true;
    c.device_name = gpu->name;
    c.device_memory = gpu->memory;
    c.device_peak_flops = gpu->bf16_flops;
    c.device_peak_flops_fp32 = gpu->tf32_flops;
    c.device_memory_bandwidth = gpu->hbm_bandwidth;
  }
  if (auto name = d.opt_str("name")) c.device_name = *name;
  if (!gpu || d.has("memory")) c.device_memory = d.bytes("memory");
  if (c.device_memory == 0) throw InputError(fmt::format("{}: must be a positive size", d.child("memory")));
  if (d.has("peak_tflops")) c.device_peak_flops = positive_num(d, "peak_tflops") * 1e12;
  if (d.has("peak_tflops_fp32")) c.device_peak_flops_fp32 = positive_num(d, "peak_tflops_fp32") * 1e12;
  if (d.has("memory_bandwidth_GBps")) c.device_memory_bandwidth = positive_num(d, "memory_bandwidth_GBps") * 1e9;
  if (!gpu && c.device_peak_flops) {
    // Raw numbers only: priced with the catalogue part whose peak and memory match, if one does.
    if (const GpuDevice* m = match_gpu(*c.device_peak_flops, c.device_memory)) c.gpu_id = m->id;
  }
  if (d.has("calibration")) {
    if (c.gpu_id.empty())
      throw InputError(fmt::format("{}: a calibration needs a catalogue device: add \"id\" (gaccum-tune devices)",
                                   d.child("calibration")));
    GpuCalibration cal = calibration_from_json(d.object("calibration"), d.child("calibration"));
    cal.generation = find_gpu(c.gpu_id)->generation;
    c.gpu_calibration = cal;
  }
  if (d.has("cost_per_hour_usd")) {
    const double v = d.num("cost_per_hour_usd");
    if (!(v >= 0)) throw InputError(fmt::format("{}: must be a non-negative number", d.child("cost_per_hour_usd")));
    c.cost_per_device_hour = v;
  }
  reject_unknown(d);
  c.intra_node = link_from(f.object("intra_node"), f.child("intra_node"), c.intra_source);
  if (f.has("inter_node")) {
    c.inter_node = link_from(f.object("inter_node"), f.child("inter_node"), c.inter_source);
  } else {
    (void)f.opt_object("inter_node");
    if (c.nodes > 1) throw InputError(fmt::format("{}: missing required field 'inter_node' (nodes is {})", what, c.nodes));
  }
  c.source = f.opt_str("_source").value_or(f.opt_str("comment").value_or(""));
  c.created_utc = f.opt_str("created_utc").value_or("");
  if (!c.created_utc.empty() && !parse_utc(c.created_utc))
    throw InputError(fmt::format("{}: '{}' is not an ISO-8601 UTC time like 2026-12-02T08:00:00Z", f.child("created_utc"),
                                 c.created_utc));
  reject_unknown(f);
  return c;
}

std::optional<std::int64_t> cluster_date(const Cluster& c) {
  std::optional<std::int64_t> out;
  for (const auto* p : {&c.intra_source, &c.inter_source})
    if (p->origin == LinkOrigin::measured && !p->measured_utc.empty())
      if (auto t = parse_utc(p->measured_utc); t && (!out || *t < *out)) out = t;
  if (!out && !c.created_utc.empty()) out = parse_utc(c.created_utc);
  return out;
}

std::string cluster_age_warning(const Cluster& c, const std::string& path, std::int64_t now, double max_age_s,
                                bool require_date) {
  const auto date = cluster_date(c);
  if (!date)
    return require_date ? fmt::format("cluster {} has no date (no created_utc, no measured level): its age is unknown; "
                                      "fit it again with `gaccum-tune cluster fit`, which dates it",
                                      path)
                        : "";
  const double age = double(now - *date);
  if (age <= max_age_s) return "";
  return fmt::format("cluster {}: its numbers are {:.0f} days old (from {}), older than the {:.0f} days allowed; the "
                     "fabric may have changed: measure again (nccl-tests, then `gaccum-tune cluster fit`) or pass "
                     "--cluster-max-age",
                     path, age / 86400, format_utc(*date), max_age_s / 86400);
}

Cluster load_cluster(const std::string& path) {
  return cluster_from_json(parse_json_text(read_text_file(path, "--cluster"), path), path);
}

nlohmann::json to_json(const Cluster& c) {
  nlohmann::json dev = {{"name", c.device_name}, {"memory", c.device_memory}};
  if (c.gpu_named) dev["id"] = c.gpu_id;
  if (c.gpu_calibration) dev["calibration"] = to_json(*c.gpu_calibration);
  if (c.device_peak_flops) dev["peak_tflops"] = *c.device_peak_flops / 1e12;
  if (c.device_peak_flops_fp32) dev["peak_tflops_fp32"] = *c.device_peak_flops_fp32 / 1e12;
  if (c.device_memory_bandwidth) dev["memory_bandwidth_GBps"] = *c.device_memory_bandwidth / 1e9;
  if (c.cost_per_device_hour) dev["cost_per_hour_usd"] = *c.cost_per_device_hour;
  nlohmann::json j = {{"schema", "gaccum-tune/cluster"},
                      {"name", c.name},
                      {"nodes", c.nodes},
                      {"gpus_per_node", c.gpus_per_node},
                      {"device", dev},
                      {"intra_node", {{"bandwidth_GBps", c.intra_node.bandwidth / 1e9}, {"latency_us", c.intra_node.latency * 1e6}}}};
  if (c.nodes > 1 || c.inter_node.bandwidth > 0)
    j["inter_node"] = {{"bandwidth_GBps", c.inter_node.bandwidth / 1e9}, {"latency_us", c.inter_node.latency * 1e6}};
  if (c.intra_source.origin == LinkOrigin::measured) j["intra_node"]["measured"] = provenance_json(c.intra_source);
  if (j.contains("inter_node") && c.inter_source.origin == LinkOrigin::measured)
    j["inter_node"]["measured"] = provenance_json(c.inter_source);
  if (!c.created_utc.empty()) j["created_utc"] = c.created_utc;
  if (!c.source.empty()) j["_source"] = c.source;
  return j;
}

}  // namespace gaccum::model
