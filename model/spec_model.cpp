// What/why: see spec_model.hpp.
#include "model/spec_model.hpp"

#include <algorithm>
#include <tuple>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/buckets.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "model/gpu_compute.hpp"
#include "model/step_assembly.hpp"

namespace gaccum::model {

TransformerShape TransformerSpec::shape() const {
  TransformerShape t;
  t.layers = layers;
  t.hidden = hidden;
  t.heads = heads;
  t.seq_len = seq_len;
  t.vocab = vocab;
  t.ffn_hidden = ffn_hidden;
  t.tied_embeddings = tied_embeddings;
  t.learned_positions = learned_positions;
  t.dropout = dropout;
  t.gated_mlp = gated_mlp;
  t.kv_heads = kv_heads;
  t.flash_attention = flash_attention;
  t.bias = bias;
  t.rms_norm = rms_norm;
  return t;
}

int TransformerSpec::optimizer_slots() const { return traits(optimizer).state_slots; }

namespace {

Count bounded(JsonFields& f, const std::string& key, Count max) {
  const Count v = f.positive(key);
  if (v > max) throw InputError(fmt::format("{}: {} is out of range (at most {})", f.child(key), v, max));
  return v;
}

}  // namespace

const std::vector<std::string>& spec_fields() {
  static const std::vector<std::string> f = {
      "schema", "name", "layers", "hidden", "heads", "kv_heads", "seq_len", "vocab", "ffn_hidden", "gated_mlp",
      "attention", "bias", "norm", "dtype", "optimizer", "activation_checkpointing", "tied_embeddings",
      "learned_positions", "dropout", "mean_tokens_per_sample"};
  return f;
}

TransformerSpec spec_from_json(const nlohmann::json& j, const std::string& what) {
  JsonFields f(j, what);
  if (auto schema = f.opt_str("schema"); schema && *schema != "gaccum-tune/spec")
    throw InputError(fmt::format("{}.schema: '{}' is not a transformer spec (expected \"gaccum-tune/spec\")", what, *schema));
  TransformerSpec s;
  s.name = f.str("name");
  s.layers = bounded(f, "layers", Count(1) << 16);
  s.hidden = bounded(f, "hidden", Count(1) << 20);
  s.heads = bounded(f, "heads", Count(1) << 16);
  s.seq_len = bounded(f, "seq_len", Count(1) << 24);
  s.vocab = bounded(f, "vocab", Count(1) << 26);
  if (s.hidden % s.heads != 0)
    throw InputError(fmt::format("{}.heads: hidden ({}) must be a multiple of heads ({})", what, s.hidden, s.heads));
  if (f.has("ffn_hidden")) s.ffn_hidden = bounded(f, "ffn_hidden", Count(1) << 22);
  if (f.has("kv_heads")) {
    s.kv_heads = bounded(f, "kv_heads", s.heads);
    if (s.heads % s.kv_heads != 0)
      throw InputError(fmt::format("{}: heads ({}) must be a multiple of kv_heads ({}) for grouped-query attention",
                                   f.child("kv_heads"), s.heads, s.kv_heads));
  }
  s.gated_mlp = f.opt_boolean("gated_mlp").value_or(false);
  if (auto att = f.opt_str("attention")) {
    if (*att == "flash") s.flash_attention = true;
    else if (*att != "standard")
      throw InputError(fmt::format("{}: '{}' is not an attention kind: expected flash or standard", f.child("attention"), *att));
  }
  s.bias = f.opt_boolean("bias").value_or(true);
  if (auto norm = f.opt_str("norm")) {
    if (*norm == "rmsnorm") s.rms_norm = true;
    else if (*norm != "layernorm")
      throw InputError(fmt::format("{}: '{}' is not a norm: expected layernorm or rmsnorm", f.child("norm"), *norm));
  }
  s.dtype = parse_precision(f.opt_str("dtype").value_or("bf16"), f.child("dtype"));
  // The priced update is a LibTorch-style fused one (sgd, adam, adamw); LAMB is not modelled here.
  s.optimizer = parse_libtorch_optimizer(f.opt_str("optimizer").value_or("adam"), what + ".optimizer");
  if (f.has("activation_checkpointing")) {
    const auto& v = f.any("activation_checkpointing");
    if (v.is_boolean())
      s.activation_checkpointing = v.get<bool>() ? Checkpointing::full : Checkpointing::none;
    else if (v.is_string())
      s.activation_checkpointing = parse_checkpointing(v.get<std::string>(), f.child("activation_checkpointing"));
    else
      throw InputError(fmt::format("{}: expected none, selective, full or a boolean", f.child("activation_checkpointing")));
  }
  s.tied_embeddings = f.opt_boolean("tied_embeddings").value_or(true);
  s.learned_positions = f.opt_boolean("learned_positions").value_or(true);
  s.dropout = f.opt_boolean("dropout").value_or(true);
  s.mean_tokens_per_sample = f.opt_num("mean_tokens_per_sample").value_or(double(s.seq_len));
  if (!(s.mean_tokens_per_sample > 0) || s.mean_tokens_per_sample > double(s.seq_len))
    throw InputError(fmt::format("{}: must be in (0, seq_len = {}]", f.child("mean_tokens_per_sample"), s.seq_len));
  s.source = f.opt_str("_source").value_or(f.opt_str("comment").value_or(""));
  for (const auto& k : f.unknown_keys())
    if (k != "comment" && (k.empty() || k[0] != '_'))
      throw InputError(fmt::format("{}: unknown field '{}': valid fields are {} (see examples/specs/)", what, k,
                                   fmt::join(spec_fields(), ", ")));
  return s;
}

TransformerSpec load_spec(const std::string& path) {
  return spec_from_json(parse_json_text(read_text_file(path, "--spec"), path), path);
}

namespace {

// Activation bytes, saturated at kMaxPredictedBytes (2^60) so that the peak, a sum of six
// terms, stays inside 64 bits; a saturated peak is no device's (predict refuses to print it).
Bytes to_bytes(double v) {
  if (!(v > 0)) return 0;
  return v >= double(kMaxPredictedBytes) ? kMaxPredictedBytes : static_cast<Bytes>(std::ceil(v));
}

// One precision's sizes: model states, DDP buckets of the gradients, per-step costs.
struct PrecisionTerms {
  StateSizes states;
  std::vector<Bytes> bucket_bytes;  // DDP buckets of the gradients in this precision
  std::vector<double> ready;
  double flops_per_s = 0;  // peak x MFU in this precision
  Seconds optimizer = 0;   // the full (unsharded) optimizer step
  Seconds copies = 0;      // kSyncCopyPasses passes over the gradient
};

class SpecModel final : public CostModel {
 public:
  SpecModel(const TransformerSpec& spec, const Cluster& cluster, std::optional<double> mfu);
  Prediction predict(const Config& c) const override;
  const ModelInfo& info() const override { return info_; }

 private:
  MemoryBreakdown memory(const Config& c) const;
  const PrecisionTerms& terms(Precision p) const { return terms_[static_cast<int>(p)]; }

  TransformerSpec spec_;
  TransformerShape shape_;
  Cluster cluster_;
  Count params_ = 0;
  Count units_ = 1;
  Count largest_unit_params_ = 0;
  PrecisionTerms terms_[kSpecPrecisions.size()];
  std::optional<GpuComputeModel> gpu_;  // the GPU compute model, when the device is a catalogue GPU
  ModelInfo info_;
};

SpecModel::SpecModel(const TransformerSpec& spec, const Cluster& cluster, std::optional<double> mfu_flag)
    : spec_(spec), shape_(spec.shape()), cluster_(cluster) {
  const double mfu = mfu_flag.value_or(kDefaultMfu);
  if (!(mfu > 0 && mfu <= 1)) throw InputError(fmt::format("--mfu: must be in (0, 1], got {}", mfu));
  if (!cluster.device_peak_flops)
    throw InputError(fmt::format("{}: device.peak_tflops is required to price a --spec (FLOPs / (peak x MFU))", cluster.name));
  auto& notes = info_.notes;
  const GpuCalibration* calibration = cluster.calibration();
  if (!mfu_flag && calibration) {
    GpuDevice d = *cluster.gpu();  // the cluster's own numbers override the catalogue's
    d.bf16_flops = *cluster.device_peak_flops;
    if (cluster.device_peak_flops_fp32) d.tf32_flops = *cluster.device_peak_flops_fp32;
    if (cluster.device_memory_bandwidth) d.hbm_bandwidth = *cluster.device_memory_bandwidth;
    gpu_.emplace(d, calibration->efficiency);
    notes.push_back(fmt::format(
        "spec: compute from the GPU compute model on {} ({}{}): GEMMs, attention and memory-bound kernels priced "
        "one by one with {} efficiencies ({}); --mfu overrides",
        d.id, cluster.gpu_named ? "named by the cluster" : "the cluster's peak and memory match it",
        d.name == cluster.device_name ? "" : ", " + cluster.device_name, to_string(d.generation),
        calibration->from));
  } else if (!mfu_flag) {
    notes.push_back(fmt::format("spec: '{}' is not a catalogue GPU (gaccum-tune devices): compute at a flat {:.0f}% "
                                "MFU; name the device (\"device\": \"h100-sxm-80gb\") to price micro_batch-dependent "
                                "GPU efficiency",
                                cluster.device_name, 100 * mfu));
  }
  params_ = transformer_params(shape_);
  // Wrapped units (FSDP auto-wrap per block): the embedding (+ positions), each layer, the final
  // norm + head.
  const Count layer = layer_params(shape_);
  const Count embed = shape_.vocab * shape_.hidden + (shape_.learned_positions ? shape_.seq_len * shape_.hidden : 0);
  const Count tail = params_ - embed - shape_.layers * layer;
  units_ = shape_.layers + 2;
  largest_unit_params_ = std::max({layer, embed, tail});
  const std::vector<Count> tensors = transformer_param_tensors(shape_);
  const double fp32_flops = cluster.device_peak_flops_fp32 ? *cluster.device_peak_flops_fp32 : *cluster.device_peak_flops / 2;
  for (Precision p : kSpecPrecisions) {
    auto& t = terms_[static_cast<int>(p)];
    const auto& tr = traits(p);
    const double e = tr.element_bytes;
    t.states = model_state_sizes(params_, p, spec.optimizer_slots());
    t.states.largest_unit = static_cast<Bytes>(largest_unit_params_) * static_cast<Bytes>(e);
    t.states.largest_unit_grad = t.states.largest_unit;
    t.states.units = units_;
    std::vector<Bytes> tb;
    for (Count n : tensors) tb.push_back(static_cast<Bytes>(n) * static_cast<Bytes>(e));
    for (const auto& b : assign_buckets(tb)) t.bucket_bytes.push_back(b.bytes);
    t.ready = ready_fractions(t.bucket_bytes);
    t.flops_per_s = (p == Precision::fp32 ? fp32_flops : *cluster.device_peak_flops) * mfu;
    const double per_param = 2 * e + 8 + 8.0 * spec.optimizer_slots() + (tr.mixed ? e : 0);
    if (gpu_) {
      t.optimizer = gpu_->optimizer_step(double(params_), per_param);
      t.copies = gpu_->memory_time(double(kSyncCopyPasses) * double(t.states.gradients));
    } else if (cluster.device_memory_bandwidth) {
      t.optimizer = double(params_) * per_param / *cluster.device_memory_bandwidth;
      t.copies = double(kSyncCopyPasses) * double(t.states.gradients) / *cluster.device_memory_bandwidth;
    }
  }
  if (!cluster.device_memory_bandwidth)
    notes.push_back("spec: the cluster gives no device.memory_bandwidth_GBps; optimizer step and gradient copies priced at 0");
  if (!cluster.device_peak_flops_fp32)
    notes.push_back(fmt::format("spec: fp32 plans priced at half the peak ({:.4g} TFLOP/s, the TF32 tensor-core rate of "
                                "A100/H100 datasheets); set device.peak_tflops_fp32 to override",
                                fp32_flops / 1e12));

  info_.source = "spec";
  info_.workload_name = spec.name;
  info_.workload_hash = "";
  info_.device_kind = "cuda";
  info_.device_name = cluster.device_name;
  info_.device_memory = cluster.device_memory;
  info_.max_world_size = cluster.max_world_size();
  info_.max_world_size_reason =
      fmt::format("cluster '{}' has {} node(s) x {} GPUs", cluster.name, cluster.nodes, cluster.gpus_per_node);
  info_.tokens_per_sample = spec.mean_tokens_per_sample;
  auto& plans = info_.plans;
  plans.precisions = {spec.dtype};
  for (Precision p : kAllPrecisions)
    if (p != spec.dtype) plans.precisions.push_back(p);
  const bool fp8 = gpu_ && gpu_->device().fp8_flops > 0;
  if (spec.dtype == Precision::fp8 && !fp8)
    throw InputError(fmt::format("{}: dtype fp8 is priced by the GPU compute model only: name a catalogue GPU with "
                                 "fp8 tensor cores in the cluster (gaccum-tune devices), or use bf16",
                                 spec.name));
  if (fp8 && spec.dtype != Precision::fp8) plans.precisions.push_back(Precision::fp8);
  if (!fp8) plans.limits = "fp8 is priced by the GPU compute model on a GPU with fp8 tensor cores only";
  plans.auto_precisions = {spec.dtype};
  if (spec.dtype != Precision::fp32) plans.auto_precisions.push_back(Precision::fp32);
  plans.checkpointings = {spec.activation_checkpointing};
  for (Checkpointing c : kAllCheckpointings)
    if (c != spec.activation_checkpointing) plans.checkpointings.push_back(c);
  plans.auto_checkpointings.clear();
  for (Checkpointing c : plans.checkpointings)
    if (!(spec.flash_attention && c == Checkpointing::selective)) plans.auto_checkpointings.push_back(c);
  plans.auto_shardings = {{Sharding::none, 0}, {Sharding::zero1, 0}, {Sharding::zero2, 0}, {Sharding::zero3, 0}};
  if (cluster.nodes > 1 && cluster.gpus_per_node >= 2) plans.auto_shardings.push_back({Sharding::hsdp, cluster.gpus_per_node});
  plans.gpus_per_node = cluster.gpus_per_node;
  plans.sharded_comm = "reduce-scatter and all-gather from the cluster description (half a ring allreduce at each level)";
  notes.push_back(fmt::format("spec: {} parameters, {} wrapped units (largest {} parameters); {} activations "
                              "(Korthikanti et al. 2022{}), compute {}",
                              params_, units_, largest_unit_params_, to_string(spec.dtype),
                              spec.flash_attention ? ", FlashAttention: no s^2 matrix" : "",
                              gpu_ ? fmt::format("from the GPU compute model ({:.4g} TFLOP/s bf16 peak)",
                                                 *cluster.device_peak_flops / 1e12)
                                   : fmt::format("at {:.0f}% MFU of {:.4g} TFLOP/s", 100 * mfu,
                                                 *cluster.device_peak_flops / 1e12)));
  if (spec.flash_attention)
    notes.push_back("spec: FlashAttention keeps no attention matrix, so selective recomputation saves nothing: not searched");
  if (gpu_)
    notes.push_back(fmt::format("spec: collectives from the cluster's hierarchical model, overlapped with compute at "
                                "the calibrated efficiency {:.2f}; peak memory includes the caching allocator's "
                                "reserve (comparable with torch.cuda.max_memory_reserved)",
                                gpu_->efficiency().overlap));
  else
    notes.push_back("spec: allreduce from the cluster's hierarchical model; full overlap with backward (NCCL on its own stream)");
  // Largest micro_batch within device memory for the spec's own plan (DDP, world_size > 1).
  Count lo = 0, hi = Count(1) << 24;
  Config probe;
  probe.world_size = 2;
  probe.precision = spec.dtype;
  probe.checkpointing = spec.activation_checkpointing;
  while (lo < hi) {
    probe.micro_batch = lo + (hi - lo + 1) / 2;
    if (memory(probe).peak <= cluster.device_memory)
      lo = probe.micro_batch;
    else
      hi = probe.micro_batch - 1;
  }
  info_.max_micro_batch_fitting = lo;
  const auto& own = terms(spec.dtype);
  info_.fit = {{"params", params_},
               {"element_bytes", traits(spec.dtype).element_bytes},
               {"optimizer_slots", spec.optimizer_slots()},
               {"wrapped_units", units_},
               {"largest_unit_params", largest_unit_params_},
               {"flops_per_sample", training_flops(shape_, 1, spec.activation_checkpointing)},
               {"effective_flops_per_s", gpu_ ? nlohmann::json(nullptr) : nlohmann::json(own.flops_per_s)},
               {"compute_model", gpu_ ? "gpu" : "flat-mfu"},
               {"optimizer_s", own.optimizer},
               {"sync_copies_s", own.copies},
               {"buckets", own.bucket_bytes},
               {"cluster", to_json(cluster)}};
}

MemoryBreakdown SpecModel::memory(const Config& c) const {
  const Precision prec = *c.precision;
  MemoryBreakdown m = plan_memory(c, terms(prec).states);
  m.activations = to_bytes(activation_bytes(shape_, c.micro_batch, traits(prec).element_bytes, *c.checkpointing));
  if (gpu_) {
    // The caching allocator's reserve: the largest transient block of a micro-step (the fp32
    // logits of the loss, or one layer's MLP intermediate), freed into the cache and not reused
    // by the next, differently sized request (block splitting and rounding).
    const double e = traits(prec).element_bytes;
    const double tokens = double(c.micro_batch) * double(shape_.seq_len);
    const double logits = 4.0 * tokens * double(shape_.vocab);
    const double mlp = (shape_.gated_mlp ? 2.0 : 1.0) * e * tokens * double(shape_.ffn());
    m.allocator_reserve = to_bytes(std::max(logits, mlp));
  }
  m.peak = m.weights + m.gradients + m.optimizer_state + m.gathered + m.comm_buffers + m.activations +
           m.allocator_reserve;
  return m;
}

Prediction SpecModel::predict(const Config& config) const {
  const Config c = check_config(config, info_.max_world_size, info_.max_world_size_reason, info_.plans);
  const Count b = c.micro_batch, p = c.world_size;
  const PrecisionTerms& pt = terms(*c.precision);
  const Count n = p > 1 ? shard_group(c) : 1;
  StepTerms s;
  ComputeDetail detail;
  if (gpu_) {
    const GpuMicroStep g = gpu_->micro_step(shape_, b, *c.checkpointing, *c.precision);
    const Seconds step = g.time();
    s.micro_step = {step, step, step};
    s.backward = g.backward.total();
    s.overlap_efficiency = gpu_->efficiency().overlap;
    detail.gpu_model = true;
    detail.gemm_efficiency = g.gemm_efficiency();
    detail.flops_per_micro_step = g.forward.flops + g.backward.flops;
    detail.gemm = g.forward.gemm + g.backward.gemm;
    detail.attention = g.forward.attention + g.backward.attention;
    detail.memory_bound = g.forward.memory + g.backward.memory;
    detail.overhead = g.forward.overhead + g.backward.overhead;
  } else {
    const Seconds step = training_flops(shape_, b, *c.checkpointing) / pt.flops_per_s;
    s.micro_step = {step, step, step};
    s.backward = step - forward_flops(shape_, b) / pt.flops_per_s;
    s.overlap_efficiency = 1.0;
  }
  const Seconds opt = c.sharding.sharding != Sharding::none && n > 1 ? pt.optimizer / double(n) : pt.optimizer;
  s.optimizer = {opt, opt, opt};
  s.sync_copies = pt.copies;
  s.tokens_per_sample = spec_.mean_tokens_per_sample;
  const AffineCost cost = cluster_.allreduce(p);
  const Seconds tokens = cost.at(8);  // the window's token count, one float64
  s.window_sync = {tokens, tokens, tokens};
  const MemoryBreakdown mem = memory(c);
  Prediction out;
  if (c.sharding.sharding == Sharding::none || p < 2) {
    const Seconds fused = cost.at(pt.states.gradients);
    out = assemble_prediction(
        c, s, pt.ready,
        [&](std::size_t i) {
          const Seconds t = cost.at(pt.bucket_bytes[i]);
          return TimeBand{t, t, t};
        },
        TimeBand{fused, fused, fused}, mem);
  } else {
    const AffineCost shard = cluster_.allreduce_group(n, 1);
    const AffineCost replica = cluster_.allreduce_group(replicas(c), n);
    ShardedTerms u;
    u.weights = pt.states.weights;
    u.gradients = pt.states.gradients;
    u.units = units_;
    u.buckets = static_cast<Count>(pt.bucket_bytes.size());
    out = assemble_sharded_prediction(
        c, s, u,
        [&](CollectiveOp op, CommGroup g, Bytes bytes) {
          const AffineCost& a = g == CommGroup::world ? cost : g == CommGroup::shard ? shard : replica;
          const Seconds t = a.at(bytes);
          return op == CollectiveOp::allreduce ? t : t / 2;
        },
        mem);
  }
  out.comm_source = p > 1 ? CommSource::hierarchical : CommSource::none;
  std::tie(out.intra_link, out.inter_link) = link_sources(cluster_, p);
  out.overlap_efficiency = s.overlap_efficiency;
  if (detail.gpu_model) {
    // MFU as llm-foundry and the PaLM paper count it: 6 N_mm + 12 L s h FLOPs per token
    // (attention non-causal, no recompute) over the step, against the bf16 peak.
    const double model_flops = training_flops(shape_, b, Checkpointing::none) * double(c.accum_steps);
    const double peak = *c.precision == Precision::fp32 ? gpu_->device().tf32_flops : gpu_->device().bf16_flops;
    detail.mfu = out.time.step_time > 0 ? model_flops / (out.time.step_time * peak) : 0;
    detail.model_flops_per_s = out.time.step_time > 0 ? model_flops / out.time.step_time : 0;
  }
  out.compute = detail;
  return out;
}

}  // namespace

std::unique_ptr<CostModel> make_spec_model(const TransformerSpec& spec, const Cluster& cluster, std::optional<double> mfu) {
  return std::make_unique<SpecModel>(spec, cluster, mfu);
}

}  // namespace gaccum::model
