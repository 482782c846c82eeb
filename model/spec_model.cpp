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
#include "model/hf_config.hpp"
#include "model/parallel_plan.hpp"
#include "model/pipeline.hpp"
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
  t.head_dim = head_dim;
  t.qkv_bias = qkv_bias;
  t.layer_norms = layer_norms;
  t.qk_norm = qk_norm;
  t.positions = positions;
  t.experts = experts;
  t.active_experts = active_experts;
  t.shared_ffn = shared_ffn;
  t.loss = loss;
  t.attention_window = attention_window;
  t.windowed_layers = windowed_layers;
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
      "learned_positions", "dropout", "loss", "sliding_window", "sliding_window_layers", "mean_tokens_per_sample",
      "grad_reduce_in_fp32"};
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
  if (auto loss = f.opt_str("loss")) {
    const auto kind = find_loss_kind(*loss);
    if (!kind)
      throw InputError(fmt::format("{}: '{}' is not a loss kind: expected {} (fp32: PyTorch's cross-entropy on fp32 "
                                   "logits, the default; vocab-parallel: Megatron-LM's; fused: flash-attn's or "
                                   "Liger's fused cross-entropy)",
                                   f.child("loss"), *loss, loss_kind_names()));
    s.loss = *kind;
    s.loss_source = f.child("loss");
  }
  if (auto fp32 = f.opt_boolean("grad_reduce_in_fp32")) {
    s.grad_dtype = *fp32 ? GradDtype::fp32 : GradDtype::param;
    s.grad_source = f.child("grad_reduce_in_fp32");
  }
  if (auto att = f.opt_str("attention")) {
    if (*att == "flash") s.flash_attention = true;
    else if (*att != "standard")
      throw InputError(fmt::format("{}: '{}' is not an attention kind: expected flash or standard", f.child("attention"), *att));
  }
  if (f.has("sliding_window")) s.attention_window = bounded(f, "sliding_window", Count(1) << 24);
  if (auto share = f.opt_num("sliding_window_layers")) {
    if (!f.has("sliding_window"))
      throw InputError(fmt::format("{}: given without sliding_window: add the window's length in tokens",
                                   f.child("sliding_window_layers")));
    if (!(*share > 0) || *share > 1)
      throw InputError(fmt::format("{}: must be the share of layers with the window, in (0, 1] (Gemma 2: 0.5), got {}",
                                   f.child("sliding_window_layers"), *share));
    s.windowed_layers = *share;
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
      throw InputError(fmt::format("{}: expected none, selective, selective-op, full or a boolean", f.child("activation_checkpointing")));
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

const char* to_string(GradDtype g) {
  switch (g) {
    case GradDtype::param: return "the plan's precision";
    case GradDtype::fp32_for_bf16: return "fp32 under bf16";
    case GradDtype::fp32: return "fp32";
  }
  return "?";
}

int gradient_element_bytes(GradDtype g, Precision p) {
  const int e = static_cast<int>(traits(p).element_bytes);
  if (p == Precision::fp32 || g == GradDtype::param) return e;
  if (g == GradDtype::fp32_for_bf16 && p == Precision::fp16) return e;
  return 4;
}

void apply_framework_defaults(TransformerSpec& spec, Framework framework, const std::string& from) {
  if (spec.loss_source.empty() && framework == Framework::megatron) {
    spec.loss = LossKind::vocab_parallel;
    spec.loss_source = fmt::format("Megatron-LM, the job's framework: {}", from);
  }
  if (framework == Framework::megatron) spec.contiguous_grad_buffer = true;
  if (framework == Framework::torchtitan) spec.torchtitan_split = true;
  if (spec.grad_source.empty() && (framework == Framework::megatron || framework == Framework::torchtitan)) {
    spec.grad_dtype = GradDtype::fp32_for_bf16;
    spec.grad_source = fmt::format("{}, the job's framework: {}", traits(framework).display, from);
  }
}

std::vector<std::string> framework_cost_changes(const TransformerSpec& spec, Framework framework) {
  TransformerSpec s = spec;
  apply_framework_defaults(s, framework, "");
  std::vector<std::string> out;
  if (s.loss != spec.loss) out.push_back(traits(s.loss).what);
  if (s.grad_dtype != spec.grad_dtype)
    out.push_back(fmt::format("gradients held and reduced in {}", to_string(s.grad_dtype)));
  if (s.contiguous_grad_buffer != spec.contiguous_grad_buffer)
    out.push_back("one contiguous gradient buffer, reduce-scattered in place");
  if (s.torchtitan_split != spec.torchtitan_split)
    out.push_back("a pipeline's layers split as its pipeline builder splits them (the embedding and the output "
                  "counted as a layer each)");
  return out;
}

TransformerSpec builtin_spec(const std::string& name_seq) {
  std::string name = name_seq;
  Count seq = 8192;
  if (const auto at = name.find('@'); at != std::string::npos) {
    const std::string s = name.substr(at + 1);
    name.resize(at);
    seq = 0;
    for (char c : s) seq = (c >= '0' && c <= '9' && seq < (Count(1) << 24)) ? seq * 10 + (c - '0') : -1;
    if (seq < 1) throw InputError(fmt::format("builtin:{}: '{}' is not a sequence length", name_seq, s));
  }
  TransformerSpec t;
  t.name = name;
  t.heads = 0;
  if (name == "llama3-8b") t.layers = 32, t.hidden = 4096, t.heads = 32, t.ffn_hidden = 14336;
  else if (name == "llama3-70b") t.layers = 80, t.hidden = 8192, t.heads = 64, t.ffn_hidden = 28672;
  else if (name == "llama3-405b") t.layers = 126, t.hidden = 16384, t.heads = 128, t.ffn_hidden = 53248;
  else
    throw InputError(fmt::format("builtin:{}: not a model this tool knows: llama3-8b, llama3-70b or llama3-405b (or give "
                                 "a spec file)",
                                 name));
  t.kv_heads = 8;
  t.vocab = 128256;
  t.seq_len = seq;
  t.gated_mlp = true;
  t.flash_attention = true;
  t.bias = false;
  t.rms_norm = true;
  t.learned_positions = false;
  t.tied_embeddings = false;
  t.dropout = false;
  t.dtype = Precision::bf16;
  t.optimizer = Optimizer::adamw;
  t.mean_tokens_per_sample = double(seq);
  t.source = "Meta, The Llama 3 Herd of Models (2024), Table 3";
  return t;
}

TransformerSpec load_spec(const std::string& path, Count seq_len, bool model_config) {
  const char* flag = model_config ? "--model-config" : "--spec";
  const bool builtin = path.rfind("builtin:", 0) == 0;
  const nlohmann::json j = builtin ? nlohmann::json() : parse_json_text(read_text_file(path, flag), path);
  if (is_hf_config(j)) {
    std::string stem = path.substr(path.find_last_of('/') + 1);
    if (const auto dot = stem.rfind(".json"); dot != std::string::npos && dot > 0) stem.resize(dot);
    return spec_from_hf_config(j, fmt::format("{} {}", flag, path), seq_len, stem);
  }
  if (model_config)
    throw InputError(fmt::format("--model-config {}: not a HuggingFace config.json (it has no model_type): pass a "
                                 "gaccum-tune spec with --spec",
                                 path));
  if (seq_len > 0)
    throw InputError(fmt::format("--seq-len: applies to a HuggingFace config.json; {} sets its own sequence length "
                                 "({})",
                                 path, builtin ? "builtin:NAME@SEQ_LEN" : "seq_len"));
  if (builtin) return builtin_spec(path.substr(8));
  return spec_from_json(j, path);
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
  Prediction predict_parallel(const Config& c) const;
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
  const Count embed = embedding_params(shape_);
  const Count tail = params_ - embed - shape_.layers * layer;
  units_ = shape_.layers + 2;
  largest_unit_params_ = std::max({layer, embed, tail});
  const std::vector<Count> tensors = transformer_param_tensors(shape_);
  const double fp32_flops = cluster.device_peak_flops_fp32 ? *cluster.device_peak_flops_fp32 : *cluster.device_peak_flops / 2;
  for (Precision p : kSpecPrecisions) {
    auto& t = terms_[static_cast<int>(p)];
    const auto& tr = traits(p);
    const double e = tr.element_bytes;
    const int g = gradient_element_bytes(spec.grad_dtype, p);
    t.states = model_state_sizes(params_, p, spec.optimizer_slots(), g);
    t.states.largest_unit = static_cast<Bytes>(largest_unit_params_) * static_cast<Bytes>(e);
    t.states.largest_unit_grad = static_cast<Bytes>(largest_unit_params_) * static_cast<Bytes>(g);
    t.states.units = units_;
    t.states.contiguous_grad_buffer = spec.contiguous_grad_buffer;
    std::vector<Bytes> tb;  // the gradient tensors, in the reduction's dtype
    for (Count n : tensors) tb.push_back(static_cast<Bytes>(n) * static_cast<Bytes>(g));
    for (const auto& b : assign_buckets(tb)) t.bucket_bytes.push_back(b.bytes);
    t.ready = ready_fractions(t.bucket_bytes);
    t.flops_per_s = (p == Precision::fp32 ? fp32_flops : *cluster.device_peak_flops) * mfu;
    const double per_param = e + g + 8 + 8.0 * spec.optimizer_slots() + (tr.mixed ? e : 0);
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
  info_.optimizer = spec.optimizer;
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
    // selective-op (torchtitan's) is priced when named (--checkpointing, or the spec's own) and
    // searched for a torchtitan job (tuner/tune_request.cpp); other frameworks cannot run it.
    if (!(spec.flash_attention && c == Checkpointing::selective) &&
        (c != Checkpointing::selective_op || spec.activation_checkpointing == c))
      plans.auto_checkpointings.push_back(c);
  plans.auto_shardings = {{Sharding::none, 0}, {Sharding::zero1, 0}, {Sharding::zero2, 0}, {Sharding::zero3, 0}};
  if (cluster.nodes > 1 && cluster.gpus_per_node >= 2) plans.auto_shardings.push_back({Sharding::hsdp, cluster.gpus_per_node});
  plans.gpus_per_node = cluster.gpus_per_node;
  plans.layouts = true;
  plans.layers = shape_.layers;
  plans.layout_candidates = candidate_layouts(shape_, cluster.gpus_per_node, cluster.max_world_size());
  plans.sharded_comm = "reduce-scatter and all-gather from the cluster description (half a ring allreduce at each level)";
  notes.push_back(fmt::format("spec: {} parameters, {} wrapped units (largest {} parameters); {} activations "
                              "(Korthikanti et al. 2022{}), compute {}",
                              params_, units_, largest_unit_params_, to_string(spec.dtype),
                              spec.flash_attention ? ", FlashAttention: no s^2 matrix" : "",
                              gpu_ ? fmt::format("from the GPU compute model ({:.4g} TFLOP/s bf16 peak)",
                                                 *cluster.device_peak_flops / 1e12)
                                   : fmt::format("at {:.0f}% MFU of {:.4g} TFLOP/s", 100 * mfu,
                                                 *cluster.device_peak_flops / 1e12)));
  if (shape_.experts > 0)
    notes.push_back(fmt::format("spec: mixture of experts ({} experts, top-{}{}): memory holds all {} parameters, "
                                "compute prices the {} a token passes through; expert parallelism is not planned "
                                "(every data-parallel rank holds every expert, tp splits each expert's MLP)",
                                shape_.experts, shape_.active_experts, shape_.shared_ffn > 0 ? ", a shared expert" : "",
                                params_, transformer_params(shape_) - shape_.layers * (layer_params(shape_) - layer_active_params(shape_))));
  if (shape_.attention_window > 0 && shape_.attention_window < shape_.seq_len)
    notes.push_back(fmt::format("spec: sliding-window attention: a query attends to the last {} of the {} tokens on {:.0f}% "
                                "of the layers: {:.0f} keys per query on average instead of {} (without the causal mask){}",
                                shape_.attention_window, shape_.seq_len, 100 * shape_.windowed_layers,
                                shape_.attended_keys(), shape_.seq_len,
                                spec.flash_attention ? "; FlashAttention computes only the window's causal pairs"
                                                     : "; standard attention still computes and keeps the whole masked "
                                                       "s x s score matrix"));
  else if (shape_.attention_window > 0)
    notes.push_back(fmt::format("spec: sliding window of {} tokens is no shorter than the sequence ({}): every query "
                                "attends to all earlier tokens",
                                shape_.attention_window, shape_.seq_len));
  {
    // The loss over the vocabulary at its peak, per sample: a large vocabulary makes it a term to act on.
    const double e = traits(spec.dtype).element_bytes;
    const double logits = double(spec.seq_len) * double(shape_.vocab);
    const auto& k = traits(shape_.loss);
    notes.push_back(fmt::format(
        "spec: loss {}{}: {} holds {} bytes per logit at its peak (the softmax's backward) plus a {}-byte transient "
        "block: {} per sample of {} tokens over the {}-token vocabulary (tensor parallelism divides it by tp){}",
        k.name, spec.loss_source.empty() ? std::string() : fmt::format(" (set by {})", spec.loss_source), k.what,
        loss_kept_bytes(shape_, e), logit_bytes(shape_, e),
        format_bytes(to_bytes((loss_kept_bytes(shape_, e) + logit_bytes(shape_, e)) * logits)),
        spec.seq_len, shape_.vocab,
        shape_.loss == LossKind::fused
            ? ""
            : fmt::format("; a fused one (Liger's, flash-attn's: \"loss\": \"fused\" in the spec) holds {} + {}: {}",
                          e, e, format_bytes(to_bytes(2 * e * logits)))));
  }
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
    // The caching allocator's reserve: the largest transient block of a micro-step (the logits'
    // gradient of the loss, or one layer's MLP intermediate), freed into the cache and not
    // reused by the next, differently sized request (block splitting and rounding).
    const double e = traits(prec).element_bytes;
    const double tokens = double(c.micro_batch) * double(shape_.seq_len);
    const double logits = logit_bytes(shape_, e) * tokens * double(shape_.vocab);
    const double mlp = (shape_.gated_mlp ? 2.0 : 1.0) * e * tokens * double(shape_.active_ffn());
    m.allocator_reserve = to_bytes(std::max(logits, mlp));
  }
  m.peak = m.weights + m.gradients + m.optimizer_state + m.gathered + m.comm_buffers + m.activations +
           m.allocator_reserve;
  return m;
}

Prediction SpecModel::predict(const Config& config) const {
  Config c = check_config(config, info_.max_world_size, info_.max_world_size_reason, info_.plans);
  ParallelLayout& l = c.layout;
  if (spec_.torchtitan_split && l.pp > 1 && !l.uneven_split()) {
    const Count S = l.pp * l.virtual_stages;
    if (auto why = torchtitan_split_rejection(shape_.layers, S))
      throw InputError(fmt::format("{} ({} layers over pp {} x virtual stages {}): choose fewer stages", *why,
                                   shape_.layers, l.pp, l.virtual_stages));
    const std::vector<Count> tt = torchtitan_split(shape_.layers, S);
    if (std::any_of(tt.begin(), tt.end(), [&](Count n) { return n != tt.front(); })) l.stage_layer_counts = tt;
  }
  if (auto why = layout_rejection(c, shape_, cluster_.gpus_per_node)) throw InputError(*why);
  if (!c.layout.data_parallel_only()) return predict_parallel(c);
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

// A tensor/pipeline/context-parallel plan (docs/DESIGN.md, Pipeline plans): per model stage and
// microbatch, its layers' forward and backward on one rank of the tp x cp split (the GPU compute
// model's parts, or FLOPs at the flat MFU), the tensor-parallel collectives of each layer (2
// allreduces of b s h / cp elements forward, 2 backward, 2 more with full recompute; with sequence
// parallelism a reduce-scatter and an all-gather of the same volume each; on the critical path),
// the context-parallel K/V exchange beyond the attention it overlaps, and one P2P send per stage
// boundary (b s h / cp / tp elements: Megatron's scatter/gather); the schedule replayed by
// model/pipeline.hpp; after it, each rank's gradient reduction over the dp x cp ranks that hold
// its weights, tp apart (overlap: hidden behind its last backward at the calibrated efficiency;
// fused: exposed) and its optimizer step over its (dp x cp-sharded) parameters. The step ends with the slowest rank.
Prediction SpecModel::predict_parallel(const Config& c) const {
  const ParallelLayout& l = c.layout;
  const Precision prec = *c.precision;
  const Checkpointing ckpt = *c.checkpointing;
  const PrecisionTerms& pt = terms(prec);
  const double e = traits(prec).element_bytes;
  const Count b = c.micro_batch, m = c.accum_steps, dp = c.data_parallel();
  const Count tp = l.tp, pp = l.pp, cp = l.cp, v = l.virtual_stages, S = pp * v;
  const LayerSplit split{tp, cp, l.sequence_parallel};
  const double s = double(shape_.seq_len), h = double(shape_.hidden), V = double(shape_.vocab);
  const double tokens = double(b) * s / double(cp);  // this rank's tokens of one microbatch

  // One layer / the embedding / the head, forward and backward (+ recompute), on one rank.
  struct Pass {
    Seconds f = 0, b = 0, w = 0;  // w: the weight-gradient part of b
  };
  Pass layer, embed, head;
  Seconds attn_f = 0, attn_b = 0;
  ComputeDetail detail;
  if (gpu_) {
    const GpuParts g = gpu_->parts(shape_, b, ckpt, prec, split);
    layer = {g.layer_forward.total(), g.layer_backward.total(), g.layer_backward.weight_grad};
    embed = {g.embedding_forward.total(), g.embedding_backward.total(), 0};
    head = {g.head_forward.total(), g.head_backward.total(), g.head_backward.weight_grad};
    attn_f = g.layer_forward.attention;
    attn_b = g.layer_backward.attention;
    detail.gpu_model = true;
    GpuPassTime all_f = g.layer_forward.scaled(double(shape_.layers) / double(pp));
    GpuPassTime all_b = g.layer_backward.scaled(double(shape_.layers) / double(pp));
    detail.gemm_efficiency = (all_f.gemm + all_b.gemm) > 0 ? (all_f.gemm_ideal + all_b.gemm_ideal) / (all_f.gemm + all_b.gemm) : 0;
    // One micro-step of one pipeline rank's layers (an average rank: layers / pp).
    detail.gemm = all_f.gemm + all_b.gemm;
    detail.attention = all_f.attention + all_b.attention;
    detail.memory_bound = all_f.memory + all_b.memory;
    detail.overhead = all_f.overhead + all_b.overhead;
  } else {
    // Flat MFU: the layer's matmul FLOPs and attention FLOPs split over tp x cp.
    const double rate = pt.flops_per_s;
    const double share = double(tp) * double(cp);
    const double hq = double(shape_.q_hidden());
    const double lf = (2.0 * tokens * double(cp) * double(layer_active_params(shape_)) + 4.0 * double(b) * s * shape_.attended_keys() * hq) / share;
    layer.f = lf / rate;
    layer.b = 2 * lf / rate + layer_recompute_flops(shape_, b, ckpt) / share / rate;
    layer.w = lf / rate;
    const double hf = 2.0 * tokens * V * h / double(tp);
    head = {hf / rate, 2 * hf / rate, hf / rate};
  }
  // Tensor-parallel collectives of one microbatch (seconds on the critical path).
  const double act_msg = tokens * h * e;
  const Seconds ar = tp > 1 ? cluster_.allreduce_group(tp, 1).at(static_cast<Bytes>(act_msg)) : 0;
  const TpLayerCollectives tpc = tp_layer_collectives(ckpt);
  const Seconds tp_layer_f = double(tpc.forward) * ar, tp_layer_b = double(tpc.backward) * ar;
  // Context parallelism: the whole sequence's K and V of this rank's heads gathered around the
  // cp ring in forward (and again, with dK/dV reduce-scattered, in backward), behind attention.
  Seconds cp_f = 0, cp_b = 0;
  if (cp > 1) {
    const double kv = 2.0 * double(b) * s * double(shape_.kv_hidden()) / double(tp) * e;
    const Seconds ag = cluster_.allreduce_group(cp, tp).at(static_cast<Bytes>(kv)) / 2;
    cp_f = std::max(0.0, ag - attn_f);
    cp_b = std::max(0.0, 2 * ag - attn_b);
  }
  // P2P between consecutive model stages: ranks tp cp dp apart.
  Seconds p2p = 0;
  if (pp > 1) {
    const Count stride = tp * cp * dp;
    const LinkParams link = stride >= cluster_.gpus_per_node ? cluster_.inter_node : cluster_.intra_node;
    const double msg = act_msg / double(tp);
    p2p = link.latency + (link.bandwidth > 0 ? msg / link.bandwidth : 0);
  }

  const std::vector<Count> layers = pp > 1 ? stage_layers(l, shape_.layers) : std::vector<Count>{shape_.layers};
  const bool split_w = traits(l.schedule).splits_weight_grad && pp > 1;
  const double layer_act = layer_activation_bytes(shape_, b, e, ckpt, split);
  const double sp = l.sequence_parallel ? double(tp) : 1.0;
  const double drop = shape_.dropout ? 1.0 : 0.0;
  StageTimes st;
  st.p2p = p2p;
  for (Count j = 0; j < S; ++j) {
    const double n = double(layers[static_cast<std::size_t>(j)]);
    Seconds f = n * (layer.f + tp_layer_f + cp_f), bw = n * (layer.b + tp_layer_b + cp_b), w = 0;
    double act = n * layer_act;
    if (j == 0) {
      f += embed.f + ar;  // the vocabulary-parallel embedding's allreduce
      bw += embed.b;
      act += drop * tokens * h / sp;  // the embedding's dropout mask
    }
    if (j == S - 1) {
      f += head.f;
      bw += head.b + ar;  // the head's input gradient, reduced over tp
    }
    if (split_w) {
      w = n * layer.w + (j == S - 1 ? head.w : 0);
      bw -= w;
    }
    st.forward.push_back(f);
    st.backward.push_back(bw);
    st.weight.push_back(w);
    st.activations.push_back(act);
  }
  const PipelineRun run = simulate(schedule_ops(pp > 1 ? l.schedule : Schedule::one_f_one_b, pp, v, m), v, st);

  // Parameters per pipeline rank (this tp rank's share): its layers, the embedding (+ positions)
  // on rank 0, the final norm and the head on the last rank (a tied head with pp > 1 keeps a copy
  // of the embedding there, as Megatron-LM does).
  const double per_layer = double(layer_params(shape_)) / double(tp);
  const double embed_params = V * h / double(tp) + double(shape_.position_rows()) * h;
  const double head_params = (pp > 1 || !shape_.tied_embeddings ? V * h / double(tp) : 0) + h;
  const Config dpc = data_parallel_view(c);
  const Count grad_group = dpc.world_size;  // dp x cp ranks reduce each gradient (stride tp)
  const Count n_shard = grad_group > 1 ? shard_group(dpc) : 1;
  const bool sharded = dpc.sharding.sharding != Sharding::none && grad_group > 1;
  const bool held_unsharded = pp > 1 && (dpc.sharding.sharding == Sharding::zero2 ||
                                         dpc.sharding.sharding == Sharding::zero3 || dpc.sharding.sharding == Sharding::hsdp);
  const double g = gradient_element_bytes(spec_.grad_dtype, prec);  // bytes per gradient element
  const double per_param = e + g + 8 + 8.0 * spec_.optimizer_slots() + (traits(prec).mixed ? e : 0);
  const double overlap_eff = gpu_ ? gpu_->efficiency().overlap : 1.0;

  Prediction out;
  out.config = c;
  ParallelDetail& par = out.parallel;
  par.pipeline = run.makespan;
  par.bubble_fraction = pp > 1 ? run.bubble_fraction() : 0;
  par.p2p = p2p;
  const double layers_per_rank = double(shape_.layers) / double(pp);
  par.tp_comm = double(m) * (layers_per_rank * (tp_layer_f + tp_layer_b) + 2 * ar / double(pp));
  par.cp_comm = double(m) * layers_per_rank * (cp_f + cp_b);
  Seconds worst_end = -1;
  Count critical = 0;
  std::vector<Seconds> dp_exposed(static_cast<std::size_t>(pp)), opt_time(static_cast<std::size_t>(pp));
  for (Count r = 0; r < pp; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    StageDetail sd;
    sd.rank = r;
    double params = 0;
    Seconds last_backward = 0;
    for (Count ch = 0; ch < v; ++ch) {
      const Count j = ch * pp + r;
      sd.layers += layers[static_cast<std::size_t>(j)];
      params += double(layers[static_cast<std::size_t>(j)]) * per_layer;
      if (j == 0) { sd.embedding = true; params += embed_params; }
      if (j == S - 1) { sd.head = true; params += head_params; }
      if (ch == 0) last_backward = st.backward[static_cast<std::size_t>(j)] + st.weight[static_cast<std::size_t>(j)];
    }
    sd.busy = run.busy[ru];
    sd.idle = run.idle[ru];
    sd.in_flight = run.peak_in_flight[ru];
    // Model states of this rank's parameters, sharded over dp x cp as plan_cost.hpp prices them.
    StateSizes states = model_state_sizes(static_cast<Count>(std::ceil(params)), prec, spec_.optimizer_slots(), g);
    states.largest_unit = static_cast<Bytes>(std::max(per_layer, sd.embedding ? embed_params : 0.0) * e);
    states.largest_unit_grad = static_cast<Bytes>(std::max(per_layer, sd.embedding ? embed_params : 0.0) * g);
    states.units = sd.layers + (sd.embedding ? 1 : 0) + (sd.head ? 1 : 0);
    states.contiguous_grad_buffer = spec_.contiguous_grad_buffer;
    Config mem_view = dpc;
    if (held_unsharded) mem_view.sharding = {Sharding::zero1, 0};
    if (grad_group < 2) mem_view.sharding = {Sharding::none, 0};
    MemoryBreakdown mem = plan_memory(mem_view, states);
    if (held_unsharded) mem.weights += states.weights / static_cast<Bytes>(std::max<Count>(1, n_shard));
    double act = run.peak_activations[ru];
    act += recompute_transient_bytes(shape_, b, e, ckpt, split);
    if (sd.head) act += 2.0 * e * tokens * h / sp + loss_kept_bytes(shape_, e) * tokens * V / double(tp);
    mem.activations = to_bytes(act);
    if (gpu_) {
      const double logits = sd.head ? logit_bytes(shape_, e) * tokens * V / double(tp) : 0;
      const double mlp = (shape_.gated_mlp ? 2.0 : 1.0) * e * tokens * double(shape_.active_ffn()) / double(tp);
      mem.allocator_reserve = to_bytes(std::max(logits, mlp));
    }
    mem.peak = mem.weights + mem.gradients + mem.optimizer_state + mem.gathered + mem.comm_buffers + mem.activations +
               mem.allocator_reserve;
    sd.memory = mem;
    // After the schedule: the gradient reduction over dp x cp (sharded: reduce-scatter + all-gather,
    // the same volume) and the optimizer step. every-step (no pipeline): one reduction per
    // microbatch, each behind that microbatch's backward. zero3/hsdp without a pipeline: each
    // microbatch all-gathers the rank's parameters for its forward and again for its backward,
    // unit by unit behind the compute (plan_cost.hpp pipelined_exposure); with a pipeline they
    // stay gathered over the schedule (torch pipelining): one all-gather before it.
    // Gradients travel in their own dtype (GradDtype: fp32 under Megatron-LM's bf16), parameters
    // in the plan's.
    Seconds reduce = 0, gather = 0;
    if (grad_group > 1) {
      const Bytes grad_bytes = static_cast<Bytes>(params * g), weight_bytes = static_cast<Bytes>(params * e);
      const AffineCost group = cluster_.allreduce_group(n_shard > 1 ? n_shard : grad_group, tp);
      const AffineCost all = cluster_.allreduce_group(grad_group, tp);
      reduce = sharded ? (all.at(grad_bytes) + all.at(weight_bytes)) / 2 : all.at(grad_bytes);
      if (traits(dpc.sharding.sharding).shards_parameters) gather = group.at(weight_bytes) / 2;
    }
    const Seconds f_mb = st.forward[static_cast<std::size_t>(r)], b_mb = last_backward;
    if (traits(c.strategy).every_micro_step) {
      dp_exposed[ru] = double(m) * (reduce - std::min(reduce, b_mb * overlap_eff));
    } else {
      const Seconds hidden = c.strategy == Strategy::overlap ? std::min(reduce, last_backward * overlap_eff) : 0;
      dp_exposed[ru] = reduce - hidden;
    }
    if (gather > 0) {
      if (pp > 1) {
        dp_exposed[ru] += gather;
      } else {
        const Count units = std::max<Count>(1, states.units);
        dp_exposed[ru] += double(m) * (pipelined_exposure(gather, f_mb, units, overlap_eff) +
                                       pipelined_exposure(gather, b_mb, units, overlap_eff));
      }
    }
    const double local = sharded ? params / double(n_shard) : params;
    opt_time[ru] = gpu_ ? gpu_->optimizer_step(local, per_param)
                        : (cluster_.device_memory_bandwidth ? local * per_param / *cluster_.device_memory_bandwidth : 0);
    const Seconds end = run.makespan + dp_exposed[ru] + opt_time[ru];
    if (end > worst_end) {
      worst_end = end;
      critical = r;
    }
    par.stages.push_back(sd);
  }
  for (const auto& sd : par.stages)
    if (sd.memory.peak > par.stages[static_cast<std::size_t>(par.peak_stage)].memory.peak) par.peak_stage = sd.rank;
  const auto cu = static_cast<std::size_t>(critical);
  const StageDetail& crit = par.stages[cu];
  const Seconds comm_in_schedule = par.tp_comm + par.cp_comm;
  par.dp_comm = dp_exposed[cu];
  out.time.compute = std::max(0.0, crit.busy - comm_in_schedule);
  out.time.comm_total = comm_in_schedule + (grad_group > 1 ? dp_exposed[cu] : 0);
  out.time.comm_exposed = std::min(crit.busy, comm_in_schedule) + dp_exposed[cu];
  out.time.bubble = crit.idle;
  out.time.optimizer = opt_time[cu];
  out.time.step_time = out.time.compute + out.time.comm_exposed + out.time.bubble + out.time.optimizer;
  out.step_time_lo = out.step_time_hi = out.time.step_time;
  out.memory = par.stages[static_cast<std::size_t>(par.peak_stage)].memory;
  out.throughput = out.time.step_time > 0 ? double(c.global_batch()) / out.time.step_time : 0;
  out.tokens_per_s = out.throughput * spec_.mean_tokens_per_sample;
  out.collectives_per_step = (tp > 1 ? m * (4 * (shape_.layers / pp) + 2) : 0) + (grad_group > 1 ? 1 : 0);
  out.gradient_syncs = grad_group > 1 ? 1 : 0;
  out.comm_source = c.world_size > 1 ? CommSource::hierarchical : CommSource::none;
  std::tie(out.intra_link, out.inter_link) = link_sources(cluster_, c.world_size);
  out.overlap_efficiency = overlap_eff;
  if (detail.gpu_model) {
    // MFU per GPU: the model FLOPs of the global batch over the step and all GPUs.
    const double model_flops = training_flops(shape_, b, Checkpointing::none) * double(m) * double(dp);
    const double peak = prec == Precision::fp32 ? gpu_->device().tf32_flops : gpu_->device().bf16_flops;
    const double per_gpu = out.time.step_time > 0 ? model_flops / out.time.step_time / double(c.world_size) : 0;
    detail.mfu = per_gpu / peak;
    detail.model_flops_per_s = per_gpu;
    detail.flops_per_micro_step = training_flops(shape_, b, ckpt) / double(c.world_size / dp);
  }
  out.compute = detail;
  return out;
}

}  // namespace

std::unique_ptr<CostModel> make_spec_model(const TransformerSpec& spec, const Cluster& cluster, std::optional<double> mfu) {
  return std::make_unique<SpecModel>(spec, cluster, mfu);
}

namespace {

class AnyFrameworkSpecModel final : public CostModel {
 public:
  AnyFrameworkSpecModel(const TransformerSpec& spec, const Cluster& cluster, std::optional<double> mfu)
      : generic_(spec, cluster, mfu), info_(generic_.info()) {
    std::vector<std::string> changed;
    for (Framework f : kFrameworksWithOwnCosts) {
      const std::vector<std::string> words = framework_cost_changes(spec, f);
      if (words.empty()) continue;
      TransformerSpec s = spec;
      apply_framework_defaults(s, f, "the only framework that runs the plan");
      own_.emplace_back(f, std::make_unique<SpecModel>(s, cluster, mfu));
      changed.push_back(fmt::format("{} ({})", traits(f).display, fmt::join(words, ", ")));
    }
    if (!changed.empty())
      info_.notes.push_back(fmt::format(
          "spec: no --framework: a plan only {} runs is priced as it runs it: {}; the plans plain PyTorch, DeepSpeed "
          "or Horovod run with the spec as it is",
          changed.size() > 1 ? "Megatron-LM or torchtitan" : own_.front().first == Framework::megatron ? "Megatron-LM" : "torchtitan",
          fmt::join(changed, "; ")));
  }

  Prediction predict(const Config& config) const override {
    Config r = config;
    if (!r.precision) r.precision = info_.plans.own_precision();
    if (!r.checkpointing) r.checkpointing = info_.plans.own_checkpointing();
    const std::vector<Framework> running = frameworks_running(framework_plan(r));
    std::vector<std::pair<Framework, const SpecModel*>> models;
    for (Framework f : running) {
      const auto it = std::find_if(own_.begin(), own_.end(), [&](const auto& o) { return o.first == f; });
      if (it == own_.end()) return generic_.predict(config);  // a framework with the spec's own costs runs it
      models.emplace_back(f, it->second.get());
    }
    if (models.empty()) return generic_.predict(config);
    // The lower peak of those that run it; a layout one of them cannot split (Megatron-LM's
    // interleaved stages need the layers to divide) is priced by the other.
    std::optional<Prediction> best;
    std::optional<InputError> refused;
    for (const auto& [f, m] : models) {
      try {
        Prediction p = m->predict(config);
        p.priced_as = f;
        if (!best || p.memory.peak < best->memory.peak) best = std::move(p);
      } catch (const InputError& e) {
        if (!refused) refused = e;
      }
    }
    if (!best) throw *refused;
    return *best;
  }
  const ModelInfo& info() const override { return info_; }

 private:
  SpecModel generic_;
  std::vector<std::pair<Framework, std::unique_ptr<SpecModel>>> own_;
  ModelInfo info_;
};

}  // namespace

std::unique_ptr<CostModel> make_spec_model_any_framework(const TransformerSpec& spec, const Cluster& cluster,
                                                         std::optional<double> mfu) {
  return std::make_unique<AnyFrameworkSpecModel>(spec, cluster, mfu);
}

}  // namespace gaccum::model
