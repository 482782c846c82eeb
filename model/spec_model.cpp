// What/why: see spec_model.hpp.
#include "model/spec_model.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/buckets.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
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
  return t;
}

double TransformerSpec::element_bytes() const { return dtype == "fp32" ? 4.0 : 2.0; }

int TransformerSpec::optimizer_slots() const { return optimizer == "sgd" ? 1 : 2; }

namespace {

Count bounded(JsonFields& f, const std::string& key, Count max) {
  const Count v = f.positive(key);
  if (v > max) throw InputError(fmt::format("{}: {} is out of range (at most {})", f.child(key), v, max));
  return v;
}

}  // namespace

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
  const std::string dtype = f.opt_str("dtype").value_or("bf16");
  if (dtype == "fp16" || dtype == "float16") s.dtype = "fp16";
  else if (dtype == "bf16" || dtype == "bfloat16") s.dtype = "bf16";
  else if (dtype == "fp32" || dtype == "float32") s.dtype = "fp32";
  else throw InputError(fmt::format("{}.dtype: '{}' is not supported: expected fp16, bf16 or fp32", what, dtype));
  s.optimizer = f.opt_str("optimizer").value_or("adam");
  if (s.optimizer != "adam" && s.optimizer != "adamw" && s.optimizer != "sgd")
    throw InputError(fmt::format("{}.optimizer: '{}' is not supported: expected adam, adamw or sgd", what, s.optimizer));
  if (f.has("activation_checkpointing")) {
    const auto& v = f.any("activation_checkpointing");
    if (v.is_boolean())
      s.activation_checkpointing = v.get<bool>() ? Recompute::full : Recompute::none;
    else if (v.is_string())
      s.activation_checkpointing = parse_recompute(v.get<std::string>(), f.child("activation_checkpointing"));
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
      throw InputError(fmt::format("{}: unknown field '{}' (check the spelling; see examples/specs/)", what, k));
  return s;
}

TransformerSpec load_spec(const std::string& path) {
  return spec_from_json(parse_json_text(read_file(path, "--spec"), path), path);
}

namespace {

Bytes to_bytes(double v) {
  if (!(v > 0)) return 0;
  return v >= 1.8e19 ? Bytes(1.8e19) : static_cast<Bytes>(std::ceil(v));
}

class SpecModel final : public CostModel {
 public:
  SpecModel(const TransformerSpec& spec, const Cluster& cluster, double mfu);
  Prediction predict(const Config& c) const override;
  const ModelInfo& info() const override { return info_; }

 private:
  MemoryBreakdown memory(Count micro_batch, Count world_size) const;

  TransformerSpec spec_;
  TransformerShape shape_;
  Cluster cluster_;
  double mfu_ = 0.4;
  double flops_per_s_ = 0;
  Count params_ = 0;
  Bytes grad_bytes_ = 0;
  std::vector<Bytes> bucket_bytes_;
  std::vector<double> ready_;
  Seconds optimizer_ = 0, copies_ = 0;
  ModelInfo info_;
};

SpecModel::SpecModel(const TransformerSpec& spec, const Cluster& cluster, double mfu)
    : spec_(spec), shape_(spec.shape()), cluster_(cluster), mfu_(mfu) {
  if (!(mfu > 0 && mfu <= 1)) throw InputError(fmt::format("--mfu: must be in (0, 1], got {}", mfu));
  if (!cluster.device_peak_flops)
    throw InputError(fmt::format("{}: device.peak_tflops is required to price a --spec (FLOPs / (peak x MFU))", cluster.name));
  flops_per_s_ = *cluster.device_peak_flops * mfu;
  const double e = spec.element_bytes();
  params_ = transformer_params(shape_);
  grad_bytes_ = static_cast<Bytes>(params_) * static_cast<Bytes>(e);
  std::vector<Bytes> tensors;
  for (Count n : transformer_param_tensors(shape_)) tensors.push_back(static_cast<Bytes>(n) * static_cast<Bytes>(e));
  for (const auto& b : assign_buckets(tensors)) bucket_bytes_.push_back(b.bytes);
  ready_ = ready_fractions(bucket_bytes_);

  auto& notes = info_.notes;
  if (cluster.device_memory_bandwidth) {
    const double per_param = 2 * e + 8 + 8.0 * spec.optimizer_slots() + (spec.mixed_precision() ? e : 0);
    optimizer_ = double(params_) * per_param / *cluster.device_memory_bandwidth;
    copies_ = double(kSyncCopyPasses) * double(grad_bytes_) / *cluster.device_memory_bandwidth;
  } else {
    notes.push_back("spec: the cluster gives no device.memory_bandwidth_GBps; optimizer step and gradient copies priced at 0");
  }
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
  notes.push_back(fmt::format("spec: {} parameters, {} activations (Korthikanti et al. 2022, activation checkpointing {}), "
                              "compute at {:.0f}% MFU of {:.4g} TFLOP/s",
                              params_, spec.dtype, to_string(spec.activation_checkpointing), 100 * mfu,
                              *cluster.device_peak_flops / 1e12));
  notes.push_back("spec: allreduce from the cluster's hierarchical model; full overlap with backward (NCCL on its own stream)");
  // Largest micro_batch within device memory (with comm buffers, i.e. world_size > 1).
  Count lo = 0, hi = Count(1) << 24;
  while (lo < hi) {
    const Count mid = lo + (hi - lo + 1) / 2;
    if (memory(mid, 2).peak <= cluster.device_memory)
      lo = mid;
    else
      hi = mid - 1;
  }
  info_.max_micro_batch_fitting = lo;
  info_.fit = {{"params", params_},
               {"element_bytes", e},
               {"optimizer_slots", spec.optimizer_slots()},
               {"flops_per_sample", training_flops(shape_, 1, spec.activation_checkpointing)},
               {"effective_flops_per_s", flops_per_s_},
               {"optimizer_s", optimizer_},
               {"sync_copies_s", copies_},
               {"buckets", bucket_bytes_},
               {"cluster", to_json(cluster)}};
}

MemoryBreakdown SpecModel::memory(Count b, Count p) const {
  const double e = spec_.element_bytes();
  MemoryBreakdown m;
  m.weights = grad_bytes_;
  m.gradients = grad_bytes_;
  m.optimizer_state = static_cast<Bytes>(params_) * static_cast<Bytes>((spec_.mixed_precision() ? 4 : 0) + 4 * spec_.optimizer_slots());
  m.comm_buffers = p > 1 ? grad_bytes_ : 0;
  m.activations = to_bytes(activation_bytes(shape_, b, e, spec_.activation_checkpointing));
  m.peak = m.weights + m.gradients + m.optimizer_state + m.comm_buffers + m.activations;
  return m;
}

Prediction SpecModel::predict(const Config& c) const {
  check_config(c, info_.max_world_size, info_.max_world_size_reason);
  const Count b = c.micro_batch, p = c.world_size;
  StepTerms s;
  const Seconds step = training_flops(shape_, b, spec_.activation_checkpointing) / flops_per_s_;
  s.micro_step = {step, step, step};
  s.backward = step - forward_flops(shape_, b) / flops_per_s_;
  s.optimizer = {optimizer_, optimizer_, optimizer_};
  s.overlap_efficiency = 1.0;
  s.sync_copies = copies_;
  s.tokens_per_sample = spec_.mean_tokens_per_sample;
  const AffineCost cost = cluster_.allreduce(p);
  const Seconds fused = cost.at(grad_bytes_);
  const Seconds tokens = cost.at(8);  // the window's token count, one float64
  s.window_sync = {tokens, tokens, tokens};
  Prediction out = assemble_prediction(
      c, s, ready_,
      [&](std::size_t i) {
        const Seconds t = cost.at(bucket_bytes_[i]);
        return TimeBand{t, t, t};
      },
      TimeBand{fused, fused, fused}, memory(b, p));
  out.comm_source = p > 1 ? CommSource::hierarchical : CommSource::none;
  out.overlap_efficiency = 1.0;
  return out;
}

}  // namespace

std::unique_ptr<CostModel> make_spec_model(const TransformerSpec& spec, const Cluster& cluster, double mfu) {
  return std::make_unique<SpecModel>(spec, cluster, mfu);
}

}  // namespace gaccum::model
