// What: a cluster description (cluster.json): nodes x GPUs per node, device memory, the
//       intra-node and inter-node links as ring-model parameters, and optionally the device's
//       peak FLOP/s, memory bandwidth and price.
//   intra_node.bandwidth  bus bandwidth of a ring inside one node (nccl-tests busbw, large messages)
//   inter_node.bandwidth  what each GPU can send off-node (its NIC, or its share of the node's NICs)
//   latency               per ring step
// Why: `--cluster` lets a one-node profile (or an analytic spec) predict a multi-node job
//      through the hierarchical allreduce (model/allreduce.hpp); the tuner reads
//      max_world_size() and device_memory for feasibility and cost for the `cost` objective.
//
// File format (strict: unknown keys are errors, except "_source", "comment" and keys starting
// with '_'):
//   {"schema": "gaccum-tune/cluster", "name": "...", "nodes": 16, "gpus_per_node": 8,
//    "device": "h100-sxm-80gb" (a catalogue id: model/gpu_device.hpp, `gaccum-tune devices`), or
//    "device": {"id": "h100-sxm-80gb", "cost_per_hour_usd": 12.29, "calibration": {...}} (the
//               catalogue's numbers, any field below overriding them; calibration from
//               `gaccum-tune calibrate --cluster`), or raw numbers (priced with the catalogue part
//               whose peak and memory they match, if any):
//    "device": {"name": "...", "memory": "80GiB", "peak_tflops": 989.4,
//               "memory_bandwidth_GBps": 3350, "cost_per_hour_usd": 12.29,
//               "peak_tflops_fp32": 494.7 (optional: fp32 plans; default half of peak_tflops)},
//    "intra_node": {"bandwidth_GBps": 370, "latency_us": 1.0},
//    "inter_node": {"bandwidth_GBps": 46, "latency_us": 5.0},
//    "created_utc": "2026-12-02T08:00:00Z" (optional: when the description was written),
//    "_source": "where the numbers come from"}
// A level fitted from measurements (`gaccum-tune cluster fit`, model/cluster_fit.hpp) carries
//    "measured": {"from": "nccl-tests all_reduce_perf log ib-2node.txt (16 ranks, 2 nodes x 8)",
//                 "points": 24, "rms_rel_residual": 0.031, "max_rel_residual": 0.12,
//                 "measured_utc": "2026-11-30T10:00:00Z"}
// inside "intra_node"/"inter_node"; a level without it is "described" (numbers someone wrote).
// GB/s are decimal (1e9 bytes/s, as nccl-tests reports); memory sizes as core/parse.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/units.hpp"
#include "model/allreduce.hpp"
#include "model/gpu_device.hpp"
#include "model/prediction.hpp"

namespace gaccum::model {

// The allreduce over `ranks` ranks placed `stride` apart on nodes of `gpus_per_node` (ranks fill
// nodes in order): max(1, gpus_per_node / stride) of them share a node.
inline AffineCost strided_allreduce(Count ranks, Count stride, Count gpus_per_node, LinkParams intra, LinkParams inter) {
  const Count per_node = stride >= gpus_per_node ? 1 : std::max<Count>(1, gpus_per_node / std::max<Count>(1, stride));
  return hierarchical_allreduce(ranks, per_node, intra, inter);
}

// Where a level's latency and bandwidth come from: measured (fitted from nccl-tests output or a
// gaccum-tune profile) or described (written by hand, e.g. from a data sheet).
enum class LinkOrigin { described, measured };
inline const char* to_string(LinkOrigin o) { return o == LinkOrigin::measured ? "measured" : "described"; }

struct LinkProvenance {
  LinkOrigin origin = LinkOrigin::described;
  std::string from;                 // what was fitted (files, ranks, nodes)
  Count points = 0;                 // measurements in the fit
  double rms_rel_residual = 0, max_rel_residual = 0;
  std::string measured_utc;         // when the measurement was taken (ISO 8601; "" unknown)
};

struct Cluster {
  std::string name;
  std::string device_name;
  Count nodes = 1;
  Count gpus_per_node = 1;
  Bytes device_memory = 0;
  LinkParams intra_node;
  LinkParams inter_node;
  std::optional<double> device_peak_flops;                   // FLOP/s in the training dtype (bf16/fp16)
  std::optional<double> device_peak_flops_fp32;              // FLOP/s of fp32 training (TF32 tensor cores)
  std::optional<BytesPerSecond> device_memory_bandwidth;     // HBM bytes/s
  std::optional<double> cost_per_device_hour;                // USD
  std::string source;                                        // "_source" / "comment"
  LinkProvenance intra_source, inter_source;                 // described unless fitted
  std::string created_utc;                                   // "" when the file has none
  // The GPU catalogue entry that prices compute (model/gpu_compute.hpp): named by the file
  // ("device": "h100-sxm-80gb" or {"id": ...}: gpu_named) or matched by peak and memory; "" none.
  std::string gpu_id;
  bool gpu_named = false;
  std::optional<GpuCalibration> gpu_calibration;             // the file's own (`calibrate --cluster`)
  const GpuDevice* gpu() const { return gpu_id.empty() ? nullptr : find_gpu(gpu_id); }
  // The efficiency parameters compute is priced with: the file's calibration, else the shipped one.
  const GpuCalibration* calibration() const {
    const GpuDevice* g = gpu();
    if (!g) return nullptr;
    return gpu_calibration ? &*gpu_calibration : &shipped_calibration(g->generation);
  }

  Count max_world_size() const { return nodes * gpus_per_node; }
  // The allreduce cost of one message at world_size p on this cluster.
  AffineCost allreduce(Count world_size) const {
    return hierarchical_allreduce(world_size, gpus_per_node, intra_node, inter_node);
  }
  // The allreduce cost over `ranks` ranks placed `stride` apart (ranks fill nodes in order):
  // stride 1 is a group of consecutive ranks (allreduce(ranks)); an hsdp replica group of one
  // rank per shard group of N has stride N, so max(1, gpus_per_node / N) of its ranks share a node.
  AffineCost allreduce_group(Count ranks, Count stride) const {
    return strided_allreduce(ranks, stride, gpus_per_node, intra_node, inter_node);
  }
};

// Where a cluster level's numbers came from, for a prediction's link labels.
inline LinkSource link_source(const LinkProvenance& p) {
  return p.origin == LinkOrigin::measured ? LinkSource::measured : LinkSource::described;
}
// The link labels of a collective over `world_size` ranks priced on this cluster alone.
inline std::pair<LinkSource, LinkSource> link_sources(const Cluster& c, Count world_size) {
  if (world_size < 2) return {LinkSource::none, LinkSource::none};
  const LinkSource intra = c.gpus_per_node > 1 ? link_source(c.intra_source) : LinkSource::none;
  return {intra, world_size > c.gpus_per_node ? link_source(c.inter_source) : LinkSource::none};
}

// When the description's numbers were taken (seconds since the epoch): the oldest measured
// level's measured_utc, else created_utc; nullopt when the file says neither.
std::optional<std::int64_t> cluster_date(const Cluster& c);
// check's drift warning: "" when the description is younger than max_age_s (or has no date and
// `require_date` is false), else one line with its age and the fix.
std::string cluster_age_warning(const Cluster& c, const std::string& path, std::int64_t now, double max_age_s,
                                bool require_date);

// `what` names the source in errors.
Cluster cluster_from_json(const nlohmann::json& j, const std::string& what);
// Reads and validates a cluster file; InputError naming the file and field on any problem.
Cluster load_cluster(const std::string& path);
nlohmann::json to_json(const Cluster& c);

}  // namespace gaccum::model
