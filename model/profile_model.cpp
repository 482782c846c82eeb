// What/why: see profile_model.hpp.
#include "model/profile_model.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/backend.hpp"
#include "core/buckets.hpp"
#include "core/error.hpp"
#include "core/optimizer.hpp"
#include "model/allreduce_table.hpp"
#include "model/compute_fit.hpp"
#include "model/memory_fit.hpp"
#include "model/noise_scale.hpp"
#include "model/overlap.hpp"
#include "model/plan_cost.hpp"
#include "model/step_assembly.hpp"
#include "model/strategy_cost.hpp"

namespace gaccum::model {
namespace {

struct ConcurrencyBand {
  Count p = 1;
  TimeBand t;
};

// Same concurrency rule as compute: exact, linear between profiled, the largest beyond,
// never below concurrency 1.
TimeBand band_at(const std::vector<ConcurrencyBand>& v, Count p) {
  TimeBand t;
  if (p >= v.back().p) {
    t = v.back().t;
  } else if (p <= v.front().p) {
    t = v.front().t;
  } else {
    auto hi = std::lower_bound(v.begin(), v.end(), p, [](const ConcurrencyBand& c, Count q) { return c.p < q; });
    if (hi->p == p) {
      t = hi->t;
    } else {
      const auto& lo = *(hi - 1);
      const double f = double(p - lo.p) / double(hi->p - lo.p);
      t = {lo.t.mid + (hi->t.mid - lo.t.mid) * f, lo.t.lo + (hi->t.lo - lo.t.lo) * f, lo.t.hi + (hi->t.hi - lo.t.hi) * f};
    }
  }
  if (v.front().p == 1) {
    t.mid = std::max(t.mid, v.front().t.mid);
    t.hi = std::max(t.hi, t.mid);
  }
  return t;
}

class ProfileModel final : public CostModel {
 public:
  ProfileModel(const Profile& prof, const Cluster* cluster);
  Prediction predict(const Config& c) const override;
  const ModelInfo& info() const override { return info_; }

 private:
  struct MeasuredAt {
    Count p = 0;
    std::vector<TimeBand> buckets;  // one per bucket, launch order
    TimeBand fused;                 // the whole gradient in one message
    TimeBand window_sync;           // the 8-byte token-count allreduce (token workloads)
    LinkParams fit;
    MeasuredAllreduce table;        // every measured size (sharded plans look up their messages)
  };
  double efficiency(Count p) const;
  // One allreduce of `bytes` over `ranks` ranks placed `stride` apart, with its source: measured
  // (interpolated) at a profiled rank count, else the ring fit or the cluster (the DDP rule).
  std::pair<Seconds, CommSource> allreduce_time(Count ranks, Count stride, Bytes bytes) const;
  // A reduce-scatter / all-gather: measured (interpolated) when the profile has that op at that
  // rank count, else half the allreduce (allreduce_derived).
  std::pair<Seconds, CommSource> collective_time(CollectiveOp op, Count ranks, Count stride, Bytes bytes) const;
  struct MeasuredCollective {
    CollectiveOp op;
    Count p;
    MeasuredAllreduce table;  // the same size lookup as allreduce (interpolation between sizes)
  };
  std::vector<MeasuredCollective> collectives_;

  ModelInfo info_;
  ComputeModel compute_;
  MemoryModel memory_;
  std::vector<ConcurrencyBand> optimizer_;
  std::vector<Bytes> bucket_bytes_;
  std::vector<double> ready_;
  Bytes grad_bytes_ = 0;
  std::vector<MeasuredAt> measured_;  // by increasing p
  std::optional<Cluster> cluster_;
  LinkParams cluster_intra_;
  bool cluster_intra_measured_ = false;  // the cluster's intra link replaced by the profile's fit
  Count ranks_per_node_ = 0;             // a multi-node profile's ranks per node (0: one host)
  // The link labels of communication priced from `source` at world_size p.
  std::pair<LinkSource, LinkSource> links(Count p, CommSource source) const;
  std::vector<std::pair<Count, double>> efficiency_;  // measured, by p
  double fallback_efficiency_ = 1;
  int passes_ = 21;
  Count max_profiled_p_ = 1;
  bool token_workload_ = false;
  std::vector<UnconfirmedMeasurement> unconfirmed_;  // the profile's, by rank group and point
  StateSizes states_;  // measured weights, gradients, optimizer state; units = the DDP buckets
  // A staged model (the profile's unit_tensors and memory phases): zero3/hsdp gather one unit at
  // a time (comm/sharded_sync.hpp); its states with the model's units, forward order.
  std::optional<StateSizes> staged_states_;
  std::optional<OptimizerTransient> optimizer_transient_;  // the profile's, when measured
  bool per_unit(const Config& c) const {
    return staged_states_ && c.world_size > 1 && traits(c.sharding.sharding).shards_parameters &&
           c.sharding.sharding != Sharding::none;
  }
  // The peak of a per-unit plan's window: the phase where activations + gathered units are
  // largest, and those two terms there.
  struct PhasePeak {
    Bytes activations = 0, gathered = 0;
    std::size_t phase = 0;
    std::string where;  // the phase in words
  };
  PhasePeak per_unit_peak(const Config& c) const;
};

inline constexpr Bytes kTokenCountBytes = 8;  // one float64

ProfileModel::ProfileModel(const Profile& prof, const Cluster* cluster) {
  auto& notes = info_.notes;
  const auto& w = prof.workload;
  const bool gpu = prof.hardware.device_kind == "cuda";
  info_.source = "profile";
  info_.optimizer = prof.settings.optimizer;
  info_.workload_name = w.name;
  info_.model_name = w.name;
  if (w.kind == "torchscript" && w.hyper.contains("file") && w.hyper.at("file").is_string()) {
    // The file's name without folders, e.g. "resnet18.pt" (core/profile.hpp WorkloadIdentity::hyper).
    const std::string file = w.hyper.at("file").get<std::string>();
    const auto slash = file.find_last_of('/');
    info_.model_name = slash == std::string::npos ? file : file.substr(slash + 1);
  }
  info_.workload_hash = w.hash;
  info_.device_kind = prof.hardware.device_kind;
  info_.device_name = prof.hardware.device_name;
  info_.device_memory = prof.hardware.device_memory;
  info_.threads_per_rank = prof.hardware.threads_per_rank;
  info_.tokens_per_sample = w.mean_tokens_per_sample;
  info_.max_micro_batch_fitting = prof.max_micro_batch_fitting;
  info_.min_micro_batch = prof.model.min_micro_batch;
  for (const auto& f : prof.model.failed_micro_batches)
    if (f.micro_batch < info_.min_micro_batch)
      info_.min_micro_batch_reason = fmt::format("the model raised at micro_batch {}: {}", f.micro_batch, f.message);
  info_.batch_statistics = prof.model.batch_statistics;
  info_.dropout = prof.model.dropout;
  unconfirmed_ = prof.unconfirmed;
  if (!prof.unconfirmed.empty())
    notes.push_back(fmt::format("the profile lists {} measurement(s) it could not confirm, e.g. {}: predictions from "
                                "them carry the machine's noise (profile again on a quiet machine)",
                                prof.unconfirmed.size(), prof.unconfirmed.front().what));
  if (info_.min_micro_batch > 1)
    notes.push_back(fmt::format("micro_batch >= {} only: {} (measured by the profiler)", info_.min_micro_batch,
                                info_.min_micro_batch_reason));
  if (!info_.batch_statistics.empty())
    notes.push_back(fmt::format("batch statistics: {} BatchNorm layer(s) ({}{}) normalise over the micro_batch's "
                                "samples, not the global batch, and update their running statistics k times per "
                                "optimizer step; a micro_batch below 16 makes them noisy (SyncBatchNorm or GroupNorm "
                                "remove the dependence)",
                                info_.batch_statistics.size(), info_.batch_statistics.front(),
                                info_.batch_statistics.size() > 1 ? ", ..." : ""));
  if (!info_.dropout.empty())
    notes.push_back(fmt::format("dropout: {} layer(s) ({}{}); masks are drawn per micro-batch, so accumulation "
                                "changes which masks a sample gets, not the expected gradient",
                                info_.dropout.size(), info_.dropout.front(), info_.dropout.size() > 1 ? ", ..." : ""));
  token_workload_ = w.tokens_per_sample > 0;

  compute_ = ComputeModel::fit(prof.compute, notes);
  memory_ = MemoryModel::fit(prof.memory, w.param_bytes, notes);
  info_.measured_max_micro_batch = std::min(compute_.measured_max_micro_batch(), memory_.measured_max_micro_batch());

  // Optimizer step per concurrency (median and its 95% interval).
  if (prof.optimizer.empty())
    throw ProfileError("profile: no optimizer measurements (optimizer[] is empty); re-run `gaccum-tune profile`");
  std::map<Count, TimeBand> opt;
  for (const auto& o : prof.optimizer) opt[o.concurrent_ranks] = {o.step.median, std::min(o.step.ci_lo, o.step.median),
                                                                   std::max(o.step.ci_hi, o.step.median)};
  for (const auto& [p, t] : opt) optimizer_.push_back({p, t});
  const Optimizer optimizer = prof.settings.optimizer;
  const std::string optimizer_name(to_string(optimizer));
  passes_ = optimizer_passes(optimizer);
  const Bytes slots = traits(optimizer).state_slots;
  // The precision the profile measured (its states, activations and times) is the only one it prices.
  const Precision measured = measured_precision(w);
  // fp32/fp64: slots x parameter bytes; bf16: fp32 slots plus the fp32 master (ZeRO's K).
  const Bytes expected_state = measured == Precision::bf16
                                   ? model_state_sizes(w.param_count, measured, static_cast<int>(slots)).optimizer
                                   : slots * w.param_bytes;
  if (w.param_bytes > 0 && memory_.optimizer_state() != expected_state)
    notes.push_back(fmt::format("memory: optimizer_state {} B is not the {} B that {} implies at {} ({})",
                                memory_.optimizer_state(), expected_state, optimizer_name, w.dtype,
                                measured == Precision::bf16 ? "fp32 master + state slots" : "state slots x parameter bytes"));

  // DDP buckets of the workload's gradients.
  grad_bytes_ = w.param_bytes;
  std::vector<Bytes> tensors = w.param_tensor_bytes;
  if (tensors.empty()) {
    tensors.push_back(w.param_bytes);
    notes.push_back("buckets: profile lists no parameter tensor sizes; one bucket of all gradients assumed");
  }
  for (const auto& bk : assign_buckets(tensors)) bucket_bytes_.push_back(bk.bytes);
  ready_ = ready_fractions(bucket_bytes_);

  // Allreduce measurements of the backend this device uses.
  std::map<std::string, int> per_backend;
  for (const auto& a : prof.allreduce)
    if (a.world_size >= 2) per_backend[a.backend] += 1;
  std::string backend(to_string(backend_for(gpu ? DeviceKind::cuda : DeviceKind::cpu)));
  if (!per_backend.count(backend) && !per_backend.empty())
    backend = std::max_element(per_backend.begin(), per_backend.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
  std::map<Count, std::vector<AllreducePoint>> by_p;
  if (prof.topology.multi_node()) ranks_per_node_ = prof.topology.ranks_per_node;
  for (const auto& a : prof.allreduce) {
    // One rank per node is no job's layout (the model prices it inside the hierarchical
    // allreduce, through `cluster fit`); every other level is the allreduce of a job of that size.
    if (a.backend != backend || a.world_size < 2 || a.level == CommLevel::inter_node) continue;
    if (a.wrong > 0) {
      notes.push_back(fmt::format("allreduce: skipped {} B at world_size {} ({} wrong elements)", a.bytes, a.world_size, a.wrong));
      continue;
    }
    by_p[a.world_size].push_back(a);
  }
  nlohmann::json ar_fit = nlohmann::json::array();
  for (const auto& [p, pts] : by_p) {
    MeasuredAllreduce table(p, pts);
    MeasuredAt m{p, {}, {}, {}, {}, table};
    for (Bytes b : bucket_bytes_) m.buckets.push_back(table.time(b));
    m.fused = table.time(grad_bytes_);
    if (token_workload_) m.window_sync = table.time(kTokenCountBytes);
    m.fit = table.fit().link;
    measured_.push_back(std::move(m));
    ar_fit.push_back(table.describe());
    max_profiled_p_ = std::max(max_profiled_p_, p);
  }
  max_profiled_p_ = std::min(max_profiled_p_, compute_.max_concurrency());
  if (!measured_.empty())
    notes.push_back(fmt::format("allreduce: {} measurements at world_size {}; bucket and fused messages from the "
                                "measurements, interpolated between sizes",
                                backend, fmt::join([&] {
                                  std::vector<Count> ps;
                                  for (const auto& m : measured_) ps.push_back(m.p);
                                  return ps;
                                }(), ", ")));

  // Overlap efficiency.
  std::map<Count, std::pair<double, int>> eff;
  for (const auto& o : prof.overlap) {
    auto& e = eff[o.world_size];
    e.first += overlap_efficiency(o);
    e.second += 1;
  }
  double min_eff = 1;
  for (const auto& [p, e] : eff) {
    efficiency_.push_back({p, e.first / e.second});
    min_eff = std::min(min_eff, e.first / e.second);
  }
  if (gpu) {
    fallback_efficiency_ = 1.0;
    notes.push_back("overlap: world sizes without an overlap measurement assume full overlap (GPU: NCCL runs on its own stream)");
  } else if (!efficiency_.empty()) {
    fallback_efficiency_ = min_eff;
    notes.push_back(fmt::format("overlap: world sizes without an overlap measurement use the smallest measured efficiency "
                                "{:.2f} (CPU: communication competes with compute for cores)",
                                min_eff));
  } else {
    fallback_efficiency_ = 0.0;
    notes.push_back("overlap: no overlap measurement; CPU default efficiency 0 (communication not hidden behind backward)");
  }

  // World sizes beyond the profile.
  if (cluster) {
    cluster_ = *cluster;
    cluster_intra_ = cluster->intra_node;
    info_.device_memory = cluster->device_memory;
    info_.max_world_size = cluster->max_world_size();
    info_.max_world_size_reason = fmt::format("cluster '{}' has {} node(s) x {} GPUs", cluster->name, cluster->nodes,
                                              cluster->gpus_per_node);
    for (const auto& m : measured_)
      if (m.p == cluster->gpus_per_node && backend == to_string(Backend::nccl)) {
        cluster_intra_ = m.fit;
        cluster_intra_measured_ = true;
        notes.push_back(fmt::format("cluster: intra-node link from the profile's ring fit at world_size {} (alpha {:.3g} s, "
                                    "beta {:.4g} GB/s) instead of the cluster file",
                                    m.p, m.fit.latency, m.fit.bandwidth / 1e9));
      }
    notes.push_back(fmt::format("cluster: {} ({} x {} GPUs); world sizes above {} use the hierarchical allreduce", cluster->name,
                                cluster->nodes, cluster->gpus_per_node, max_profiled_p_));
    if (!gpu) notes.push_back("cluster: a CPU profile priced on a GPU cluster: compute and memory are the CPU's");
  } else if (measured_.empty()) {
    info_.max_world_size = 1;
    info_.max_world_size_reason = "the profile has no allreduce measurements at world_size >= 2 (pass a cluster description)";
    notes.push_back("allreduce: no measurements at world_size >= 2; predictions limited to world_size 1 (pass --cluster)");
  }

  if (token_workload_)
    notes.push_back("token workload: one allreduce of the window's token count per step (loss normalised across ranks) "
                    "added to the exposed communication");
  if (auto ns = estimate_noise_scale(prof.grad_norms, notes)) {
    info_.noise_scale = ns->b_simple;
    info_.fit["noise_scale"] = {{"b_simple", ns->b_simple}, {"grad_sq_norm", ns->grad_sq_norm},
                                {"trace_sigma", ns->trace_sigma}, {"b_small", ns->b_small}, {"b_big", ns->b_big}};
  }

  nlohmann::json opt_j = nlohmann::json::array();
  for (const auto& o : optimizer_) opt_j.push_back({{"concurrency", o.p}, {"median", o.t.mid}, {"ci_lo", o.t.lo}, {"ci_hi", o.t.hi}});
  nlohmann::json eff_j = nlohmann::json::array();
  for (const auto& [p, e] : efficiency_) eff_j.push_back({{"world_size", p}, {"efficiency", e}});
  info_.fit["compute"] = compute_.describe();
  info_.fit["memory"] = memory_.describe();
  info_.fit["optimizer"] = {{"name", optimizer_name}, {"passes", passes_}, {"measured", opt_j}};
  info_.fit["buckets"] = bucket_bytes_;
  info_.fit["allreduce"] = {{"backend", backend}, {"world_sizes", ar_fit}};
  info_.fit["overlap"] = {{"measured", eff_j}, {"fallback_efficiency", fallback_efficiency_}};
  info_.fit["sync_copy_passes"] = kSyncCopyPasses;

  // Plans: sharded memory from the measured states; precision and checkpointing as profiled.
  // Measured weights beyond the parameters' bytes (buffers, a TorchScript file's tensor constants:
  // 10,382 B on the blocks_lm fixture) stay whole on every rank: sharding them understated zero3's
  // resident bytes by half of them.
  optimizer_transient_ = prof.optimizer_transient;
  states_.weights = memory_.weights();
  if (w.param_bytes > 0 && states_.weights > w.param_bytes) {
    states_.unsharded = states_.weights - w.param_bytes;
    states_.weights = w.param_bytes;
  }
  states_.gradients = memory_.gradients();
  states_.optimizer = memory_.optimizer_state();
  states_.bucket_buffers = grad_bytes_;
  states_.units = static_cast<Count>(bucket_bytes_.size());
  // The flat layout of the runner's sharded plans: the buckets as units, in parameters.
  states_.params = prof.workload.param_count;
  if (states_.params > 0 && grad_bytes_ % static_cast<Bytes>(states_.params) == 0) {
    const Bytes elem = grad_bytes_ / static_cast<Bytes>(states_.params);
    for (Bytes b : bucket_bytes_) states_.unit_params.push_back(static_cast<Count>(b / elem));
  }
  // A staged model's units (the unit_tensors' parameters), when its memory phases were measured.
  if (!w.unit_tensors.empty() && memory_.has_phases() && !states_.unit_params.empty() &&
      memory_.phases(1).size() == phase_count(static_cast<Count>(w.unit_tensors.size()))) {
    StateSizes st = states_;
    st.unit_params.clear();
    const Bytes elem = grad_bytes_ / static_cast<Bytes>(states_.params);
    std::size_t next = 0;
    for (Count t : w.unit_tensors) {
      Bytes bytes = 0;
      for (Count j = 0; j < t && next < w.param_tensor_bytes.size(); ++j) bytes += w.param_tensor_bytes[next++];
      st.unit_params.push_back(static_cast<Count>(bytes / elem));
    }
    st.units = static_cast<Count>(st.unit_params.size());
    const Bytes largest = *std::max_element(st.unit_params.begin(), st.unit_params.end()) * elem;
    st.largest_unit_grad = largest;
    st.largest_unit = largest;
    staged_states_ = st;
    notes.push_back(fmt::format("memory: zero3/hsdp gather one of the model's {} units at a time (and prefetch one); "
                                "their peak is the window's phase where activations + gathered units are largest",
                                st.units));
  }
  const Bytes largest_bucket = *std::max_element(bucket_bytes_.begin(), bucket_bytes_.end());
  const double weight_share = grad_bytes_ > 0 ? double(states_.weights) / double(grad_bytes_) : 1.0;
  states_.largest_unit = static_cast<Bytes>(double(largest_bucket) * weight_share);
  states_.largest_unit_grad = largest_bucket;
  // Measured reduce-scatter / all-gather of the same backend (profile schema 2).
  std::map<std::pair<int, Count>, std::vector<AllreducePoint>> by_op;
  std::set<std::string> methods;
  for (const auto& c : prof.collectives) {
    // inter_node points (one rank per node) are no job's layout: they are for cluster fit.
    if (c.backend != backend || c.world_size < 2 || c.level == CommLevel::inter_node) continue;
    if (c.wrong > 0) {
      notes.push_back(fmt::format("{}: skipped {} B at world_size {} ({} wrong elements)", c.op, c.bytes, c.world_size, c.wrong));
      continue;
    }
    AllreducePoint a;
    a.backend = c.backend;
    a.world_size = c.world_size;
    a.bytes = c.bytes;
    a.time = c.time;
    a.samples = c.samples;
    a.tag = c.tag;
    const int op = static_cast<int>(c.op == "reduce_scatter" ? CollectiveOp::reduce_scatter : CollectiveOp::all_gather);
    by_op[{op, c.world_size}].push_back(a);
    methods.insert(c.method);
  }
  nlohmann::json coll_j = nlohmann::json::array();
  for (const auto& [key, pts] : by_op) {
    collectives_.push_back({static_cast<CollectiveOp>(key.first), key.second, MeasuredAllreduce(key.second, pts)});
    coll_j.push_back({{"op", to_string(static_cast<CollectiveOp>(key.first))}, {"world_size", key.second},
                      {"points", pts.size()}});
  }
  const std::string method = fmt::format("{}", fmt::join(methods, ", "));
  if (!collectives_.empty()) info_.fit["collectives"] = {{"method", method}, {"measured", coll_j}};

  auto& plans = info_.plans;
  // Likewise its checkpointing (gpt blocks recomputed).
  const Checkpointing measured_ckpt = measured_checkpointing(w);
  const bool ckpt = measured_ckpt == Checkpointing::full;
  plans.precisions = {measured};
  plans.auto_precisions = {measured};
  plans.checkpointings = {measured_ckpt};
  plans.auto_checkpointings = {measured_ckpt};
  plans.limits = fmt::format("this profile measured {} {} (profile again with --precision {} or --checkpointing {} for "
                             "the others; an analytic --spec prices every precision and checkpointing)",
                             to_string(measured),
                             ckpt ? "with full activation checkpointing (recompute measured)"
                                  : "without activation checkpointing",
                             measured == Precision::fp32 ? "bf16" : "fp32", ckpt ? "none" : "full");
  plans.gpus_per_node = cluster ? cluster->gpus_per_node : 0;
  plans.own_module = w.kind != "gpt";
  plans.sharded_comm =
      collectives_.empty()
          ? std::string("reduce-scatter and all-gather priced as half the measured allreduce of the same size "
                        "(allreduce-derived: not measured); wrapped units = the DDP buckets")
          : fmt::format("reduce-scatter and all-gather measured ({}) at the profiled rank counts, half the measured "
                        "allreduce elsewhere; wrapped units = the DDP buckets",
                        method);
  notes.push_back("plans: sharded plans (--sharding zero1|zero2|zero3|hsdp:G) are priced only when asked for: memory from "
                  "the measured states divided by the shard group, reduce-scatter / all-gather as half the measured "
                  "allreduce");
  if (cluster_) info_.fit["cluster"] = to_json(*cluster_);
}

std::pair<LinkSource, LinkSource> ProfileModel::links(Count p, CommSource source) const {
  if (p < 2 || source == CommSource::none) return {LinkSource::none, LinkSource::none};
  if (source == CommSource::hierarchical && cluster_) {
    auto l = link_sources(*cluster_, p);
    if (cluster_intra_measured_ && l.first != LinkSource::none) l.first = LinkSource::measured;
    return l;
  }
  // The profile's own collectives: one host, or a multi-node profile whose job crossed nodes.
  const bool crosses = ranks_per_node_ > 0 && p > ranks_per_node_;
  return {LinkSource::measured, crosses ? LinkSource::measured : LinkSource::none};
}

double ProfileModel::efficiency(Count p) const {
  for (const auto& [q, e] : efficiency_)
    if (q == p) return e;
  return fallback_efficiency_;
}

std::pair<Seconds, CommSource> ProfileModel::allreduce_time(Count ranks, Count stride, Bytes bytes) const {
  if (ranks < 2) return {0, CommSource::none};
  auto at = std::lower_bound(measured_.begin(), measured_.end(), ranks, [](const MeasuredAt& m, Count q) { return m.p < q; });
  if (at != measured_.end() && at->p == ranks) return {at->table.time(bytes).mid, CommSource::measured};
  if (at != measured_.end()) return {ring_allreduce(ranks, at->fit).at(bytes), CommSource::ring_fit};
  if (cluster_)  // the cluster's levels, the intra-node one from the profile's fit where measured
    return {strided_allreduce(ranks, stride, cluster_->gpus_per_node, cluster_intra_, cluster_->inter_node).at(bytes),
            CommSource::hierarchical};
  return {ring_allreduce(ranks, measured_.back().fit).at(bytes), CommSource::ring_fit};
}

std::pair<Seconds, CommSource> ProfileModel::collective_time(CollectiveOp op, Count ranks, Count stride,
                                                             Bytes bytes) const {
  if (op != CollectiveOp::allreduce)
    for (const auto& m : collectives_)
      if (m.op == op && m.p == ranks) return {m.table.time(bytes).mid, CommSource::measured};
  const auto [t, src] = allreduce_time(ranks, stride, bytes);
  if (op == CollectiveOp::allreduce) return {t, src};
  return {t / 2, src == CommSource::measured ? CommSource::allreduce_derived : src};
}

ProfileModel::PhasePeak ProfileModel::per_unit_peak(const Config& c) const {
  const StateSizes& st = *staged_states_;
  const Count n = static_cast<Count>(st.unit_params.size());
  const Count g = std::max<Count>(1, shard_group(c));
  // Unit u gathered: its padded flat buffer, ceil(S_u / N) N parameters in the compute dtype.
  const Bytes psi = static_cast<Bytes>(std::max<Count>(1, st.params));
  auto unit = [&](Count u) -> Bytes {
    if (u < 0 || u >= n) return 0;
    const Bytes e = static_cast<Bytes>((st.unit_params[static_cast<std::size_t>(u)] + g - 1) / g * g);
    return st.weights / psi * e + st.weights % psi * e / psi;
  };
  const std::vector<Bytes> act = memory_.phases(c.micro_batch);
  // Which units each phase holds (comm/sharded_sync.hpp): unit u's forward u and u + 1; after it
  // u + 1; its backward u and u - 1; outside none.
  std::vector<Bytes> gathered(act.size(), 0);
  for (Count u = 0; u < n; ++u) {
    gathered[forward_phase(u)] = unit(u) + unit(u + 1);
    gathered[after_forward_phase(u)] = unit(u + 1);
    gathered[backward_phase(u, n)] = unit(u) + unit(u - 1);
  }
  PhasePeak best;
  for (std::size_t i = 0; i < act.size(); ++i)
    if (i == 0 || act[i] + gathered[i] > best.activations + best.gathered) best = {act[i], gathered[i], i, ""};
  // The phase in words (StagedModel: unit 0 the embedding, the last the head, blocks between).
  auto name = [&](Count u) {
    return u == 0 ? std::string("the embedding") : u == n - 1 ? std::string("the head") : fmt::format("block {}", u);
  };
  auto held = [&](Count a, Count b) {
    if (b < 0 || b >= n) return fmt::format("{} gathered", name(a));
    return fmt::format("{} and {} gathered", name(a), name(b));
  };
  for (Count u = 0; u < n; ++u) {
    if (best.phase == forward_phase(u)) best.where = fmt::format("{}'s forward, {}", name(u), held(u, u + 1));
    if (best.phase == after_forward_phase(u))
      best.where = u + 1 < n ? fmt::format("after {}'s forward, {}", name(u), held(u + 1, -1))
                             : std::string("the loss, no unit gathered");
    if (best.phase == backward_phase(u, n)) best.where = fmt::format("{}'s backward, {}", name(u), held(u, u - 1));
  }
  if (best.phase == kOutsidePhase) best.where = "outside the units (batch, optimizer step), no unit gathered";
  return best;
}

Prediction ProfileModel::predict(const Config& config) const {
  const Config c = check_config(config, info_.max_world_size, info_.max_world_size_reason, info_.plans);
  const Count p = c.world_size, b = c.micro_batch;
  StepTerms s;
  s.micro_step = compute_.micro_step(b, p);
  s.backward = compute_.backward(b, p);
  s.optimizer = band_at(optimizer_, p);
  s.tokens_per_sample = info_.tokens_per_sample;

  const bool unit_gathers = per_unit(c);
  MemoryBreakdown mem = plan_memory(c, unit_gathers ? *staged_states_ : states_);
  mem.activations = memory_.activations(b);
  if (unit_gathers) {
    const PhasePeak at = per_unit_peak(c);
    mem.activations = at.activations;
    mem.gathered = at.gathered;
    mem.peak_phase = at.where;
  }
  // A sharded plan steps one flat shard per unit (comm/sharded_sync.hpp): the optimizer's
  // temporaries over the largest shard can rise above the window's activations (a model whose
  // gradients outweigh its activations, a small micro_batch). Nothing is gathered at the step. A
  // DDP step's temporaries are inside the measured window already.
  if (optimizer_transient_ && c.sharding.sharding != Sharding::none && c.world_size > 1) {
    const StateSizes& st = unit_gathers ? *staged_states_ : states_;
    const Count n = std::max<Count>(1, shard_group(c));
    Count largest = 0;
    for (Count u : st.unit_params) largest = std::max(largest, (u + n - 1) / n);
    const Bytes step = optimizer_transient_->at(largest);
    if (step > mem.activations + mem.gathered) {
      mem.optimizer_step = step - mem.activations - mem.gathered;
      mem.peak_phase = fmt::format("the optimizer step: its temporaries over the largest shard ({} parameters), {}, "
                                   "above the window's activations + gathered units",
                                   largest, format_bytes(step));
    }
  }
  mem.peak = mem.weights + mem.gradients + mem.optimizer_state + mem.gathered + mem.comm_buffers + mem.activations +
             mem.optimizer_step;

  Prediction out;
  CommSource source = CommSource::none;
  if (p == 1) {
    out = assemble_prediction(c, s, ready_, [](std::size_t) { return TimeBand{}; }, TimeBand{}, mem);
  } else if (c.sharding.sharding != Sharding::none) {
    const Count n = shard_group(c);
    const double inv_n = 1.0 / double(n);
    s.optimizer = {s.optimizer.mid * inv_n, s.optimizer.lo * inv_n, s.optimizer.hi * inv_n};
    s.overlap_efficiency = efficiency(p);
    s.sync_copies = double(kSyncCopyPasses) * band_at(optimizer_, p).mid / double(passes_);
    if (token_workload_) {
      const Seconds t = allreduce_time(p, 1, kTokenCountBytes).first;
      s.window_sync = {t, t, t};
    }
    ShardedTerms u;
    u.weights = states_.weights;
    u.gradients = states_.gradients;
    u.units = unit_gathers ? staged_states_->units : states_.units;
    u.buckets = states_.units;
    const Count r = replicas(c);
    // The plan's source: the least measured of its collectives (hierarchical < ring-fit <
    // allreduce-derived < measured), so a label never claims more than every term has.
    auto rank_of = [](CommSource x) {
      switch (x) {
        case CommSource::hierarchical: return 0;
        case CommSource::ring_fit: return 1;
        case CommSource::allreduce_derived: return 2;
        case CommSource::measured: return 3;
        case CommSource::none: return 4;
      }
      return 4;
    };
    CommSource plan_source = CommSource::none;
    out = assemble_sharded_prediction(
        c, s, u,
        [&](CollectiveOp op, CommGroup g, Bytes bytes) {
          const Count ranks = g == CommGroup::world ? p : g == CommGroup::shard ? n : r;
          const auto [t, src] = collective_time(op, ranks, g == CommGroup::replica ? n : 1, bytes);
          if (ranks > 1 && rank_of(src) < rank_of(plan_source)) plan_source = src;
          return t;
        },
        mem);
    source = plan_source;
  } else {
    s.overlap_efficiency = efficiency(p);
    s.sync_copies = double(kSyncCopyPasses) * s.optimizer.mid / double(passes_);
    auto at = std::lower_bound(measured_.begin(), measured_.end(), p, [](const MeasuredAt& m, Count q) { return m.p < q; });
    if (at != measured_.end() && at->p == p) {
      source = CommSource::measured;
      const MeasuredAt& m = *at;
      s.window_sync = m.window_sync;
      out = assemble_prediction(c, s, ready_, [&m](std::size_t i) { return m.buckets[i]; }, m.fused, mem);
    } else {
      AffineCost cost;
      if (at != measured_.end()) {  // between profiled world sizes
        cost = ring_allreduce(p, at->fit);
        source = CommSource::ring_fit;
      } else if (cluster_) {
        cost = hierarchical_allreduce(p, cluster_->gpus_per_node, cluster_intra_, cluster_->inter_node);
        source = CommSource::hierarchical;
      } else {
        cost = ring_allreduce(p, measured_.back().fit);
        source = CommSource::ring_fit;
      }
      const Seconds fused = cost.at(grad_bytes_);
      if (token_workload_) s.window_sync = {cost.at(kTokenCountBytes), cost.at(kTokenCountBytes), cost.at(kTokenCountBytes)};
      out = assemble_prediction(
          c, s, ready_,
          [&](std::size_t i) {
            const Seconds t = cost.at(bucket_bytes_[i]);
            return TimeBand{t, t, t};
          },
          TimeBand{fused, fused, fused}, mem);
    }
  }
  out.comm_source = source;
  std::tie(out.intra_link, out.inter_link) = links(p, source);
  out.overlap_efficiency = p > 1 ? s.overlap_efficiency : 1.0;
  out.micro_batch_extrapolated =
      b > std::min(compute_.measured_max_micro_batch(p), memory_.measured_max_micro_batch());
  out.world_size_extrapolated = p > max_profiled_p_;
  out.extrapolated = out.micro_batch_extrapolated || out.world_size_extrapolated;
  if (!unconfirmed_.empty()) {
    // The rank groups this prediction reads: its compute points' concurrencies (and the optimizer
    // step measured in the same groups) and, on p > 1, the group its collectives come from (p
    // itself when measured, else the next larger measured one, else the largest).
    const auto points = compute_.sources(b, p);
    std::vector<Count> groups;
    for (const auto& pt : points) groups.push_back(pt.first);
    if (p > 1 && !measured_.empty()) {
      auto m = std::lower_bound(measured_.begin(), measured_.end(), p, [](const MeasuredAt& x, Count q) { return x.p < q; });
      groups.push_back(m != measured_.end() ? m->p : measured_.back().p);
    }
    for (const auto& u : unconfirmed_) {
      const bool hit = u.micro_batch == 0
                           ? (u.world_size == 0 || std::find(groups.begin(), groups.end(), u.world_size) != groups.end())
                           : std::any_of(points.begin(), points.end(),
                                         [&](const auto& pt) { return u.covers(pt.first, pt.second); });
      if (hit) out.unconfirmed.push_back(u.what);
    }
  }
  out.own_module = info_.plans.own_module;
  return out;
}

}  // namespace

std::unique_ptr<CostModel> make_profile_model(const Profile& profile, const Cluster* cluster) {
  return std::make_unique<ProfileModel>(profile, cluster);
}

}  // namespace gaccum::model
