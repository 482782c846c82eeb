// What/why: see transformer.hpp.
#include "model/transformer.hpp"

#include <array>


namespace gaccum::model {

namespace {

// One layer's tensors with `experts_counted` of its experts (all: its parameters; top-k: what a
// token's compute passes through).
std::vector<Count> layer_tensors(const TransformerShape& t, Count experts_counted) {
  const Count h = t.hidden, f = t.ffn(), q = t.q_hidden(), hkv = t.kv_hidden();
  std::vector<Count> out;
  out.reserve(16);
  auto norm = [&] {
    out.push_back(h);
    if (!t.rms_norm) out.push_back(h);
  };
  auto linear = [&](Count in, Count outw, bool bias) {
    out.push_back(in * outw);
    if (bias) out.push_back(outw);
  };
  auto mlp = [&](Count width) {
    if (t.gated_mlp) {
      linear(h, 2 * width, t.bias);  // gate and up
      linear(width, h, t.bias);      // down
    } else {
      linear(h, width, t.bias);  // fc1
      linear(width, h, t.bias);  // fc2
    }
  };
  const bool qkv_bias = t.bias || t.qkv_bias;
  norm();
  if (t.kv() == t.heads) {
    linear(h, q + 2 * hkv, qkv_bias);  // fused qkv
  } else {
    linear(h, q, qkv_bias);        // q
    linear(h, 2 * hkv, qkv_bias);  // k and v (grouped-query)
  }
  if (t.qk_norm == QkNorm::per_head) out.insert(out.end(), {t.head_width(), t.head_width()});
  if (t.qk_norm == QkNorm::full) out.insert(out.end(), {q, hkv});
  linear(q, h, t.bias);  // output projection
  for (Count n = 1; n < t.layer_norms; ++n) norm();
  if (t.experts > 0) {
    out.push_back(h * t.experts);  // router
    for (Count e = 0; e < experts_counted; ++e) mlp(f);
    if (t.shared_ffn > 0) {
      mlp(t.shared_ffn);
      out.push_back(h);  // the shared expert's gate
    }
  } else {
    mlp(f);
  }
  return out;
}

Count sum(const std::vector<Count>& v) {
  Count n = 0;
  for (Count c : v) n += c;
  return n;
}

}  // namespace

std::vector<Count> layer_param_tensors(const TransformerShape& t) { return layer_tensors(t, t.experts); }

Count layer_params(const TransformerShape& t) { return sum(layer_param_tensors(t)); }

Count layer_active_params(const TransformerShape& t) { return sum(layer_tensors(t, t.active_experts)); }

Count embedding_params(const TransformerShape& t) { return (t.vocab + t.position_rows()) * t.hidden; }

std::vector<Count> transformer_param_tensors(const TransformerShape& t) {
  const Count h = t.hidden;
  std::vector<Count> out{t.vocab * h};
  if (t.learned_positions) out.push_back(t.position_rows() * h);
  const std::vector<Count> layer = layer_param_tensors(t);
  for (Count l = 0; l < t.layers; ++l) out.insert(out.end(), layer.begin(), layer.end());
  out.push_back(h);  // final norm
  if (!t.rms_norm) out.push_back(h);
  if (!t.tied_embeddings) out.push_back(t.vocab * h);
  return out;
}

Count transformer_params(const TransformerShape& t) { return sum(transformer_param_tensors(t)); }

double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double e, Checkpointing r) {
  return layer_activation_bytes(t, micro_batch, e, r, LayerSplit{});
}

double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double e, Checkpointing r,
                              const LayerSplit& split) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), a = double(t.heads);
  const double f = double(t.active_ffn()) / h;
  const double m = t.dropout ? 1.0 : 0.0;
  const double tp = double(split.tp), cp = double(split.cp);
  // Replicated over the tensor-parallel ranks unless sequence parallel: the qkv and MLP inputs,
  // the norms' inputs ((2 + norms) e) and the two dropout masks (2 m); split: q, k, v, the output
  // projection's input and the MLP's intermediates.
  const double norms = double(t.layer_norms);
  const double replicated = s * b * h * ((2.0 + norms) * e + 2.0 * m) / (split.sequence_parallel ? tp : 1.0);
  const double qk = double(t.q_hidden() + t.kv_hidden()) / h;
  const double attn = 2.0 * double(t.q_hidden()) / h + 2.0 * double(t.kv_hidden()) / h +
                      (t.qk_norm != QkNorm::none ? qk : 0.0);
  const double mlp = t.gated_mlp ? 3.0 * f : 2.0 * f;
  const double split_part = s * b * h * e * (attn + mlp) / tp;
  const double linear = (replicated + split_part) / cp;
  const double scores = (t.flash_attention ? 4.0 * a * s * b : a * s * s * b * (2.0 * e + m)) / (tp * cp);
  const double input = e * s * b * h / (split.sequence_parallel ? tp : 1.0) / cp;
  switch (r) {
    case Checkpointing::none: return linear + scores;
    case Checkpointing::selective: return linear;
    case Checkpointing::full: return input;
    case Checkpointing::selective_op: {
      const double kept = (2.0 * double(t.q_hidden()) + double(t.kv_hidden()) + double(t.active_ffn())) / tp +
                          (t.gated_mlp ? h : 0.0);
      const double lse = t.flash_attention ? 4.0 * a * s * b / (tp * cp) : 0.0;
      return input + e * s * b * kept / cp + lse;
    }
  }
  return linear + scores;
}

double recompute_transient_bytes(const TransformerShape& t, Count micro_batch, double e, Checkpointing r,
                                 const LayerSplit& split) {
  if (r != Checkpointing::full && r != Checkpointing::selective_op) return 0;
  const double all = layer_activation_bytes(t, micro_batch, e, Checkpointing::none, split);
  return r == Checkpointing::full ? all : std::max(0.0, all - layer_activation_bytes(t, micro_batch, e, r, split));
}

double TransformerShape::attended_keys() const {
  const double s = double(seq_len);
  if (attention_window == 0 || attention_window >= seq_len) return s;
  return (1.0 - windowed_layers) * s + windowed_layers * double(attention_window);
}

double TransformerShape::causal_attended_keys() const {
  const double s = double(seq_len), w = double(attention_window);
  if (attention_window == 0 || attention_window >= seq_len) return s / 2;
  return (1.0 - windowed_layers) * s / 2 + windowed_layers * (w - w * w / (2 * s));
}

double layer_recompute_flops(const TransformerShape& t, Count micro_batch, Checkpointing r) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), hq = double(t.q_hidden());
  switch (r) {
    case Checkpointing::none: return 0;
    case Checkpointing::selective: return 4.0 * b * s * t.attended_keys() * hq;
    case Checkpointing::full: return 2.0 * b * s * double(layer_active_params(t)) + 4.0 * b * s * t.attended_keys() * hq;
    case Checkpointing::selective_op:
      return 2.0 * b * s * (h * double(t.kv_hidden()) + hq * h + double(t.active_ffn()) * h);
  }
  return 0;
}

double activation_bytes(const TransformerShape& t, Count micro_batch, double e, Checkpointing r) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden);
  const double m = t.dropout ? 1.0 : 0.0;
  double total = double(t.layers) * layer_activation_bytes(t, micro_batch, e, r);
  total += recompute_transient_bytes(t, micro_batch, e, r, LayerSplit{});
  total += m * s * b * h + 2.0 * e * s * b * h + loss_kept_bytes(t, e) * s * b * double(t.vocab);
  return total;
}

namespace {
constexpr std::array<LossKindTraits, 3> kLossKinds{{
    {LossKind::fp32, "fp32", "PyTorch's cross-entropy on fp32 logits", 8, 0, 4, 0},
    {LossKind::vocab_parallel, "vocab-parallel", "Megatron-LM's vocab-parallel cross-entropy", 4, 0, 4, 0},
    {LossKind::fused, "fused", "a fused cross-entropy", 0, 1, 0, 1},
}};
}  // namespace

const LossKindTraits& traits(LossKind k) { return kLossKinds[static_cast<std::size_t>(k)]; }

std::optional<LossKind> find_loss_kind(std::string_view name) {
  for (const auto& k : kLossKinds)
    if (name == k.name) return k.value;
  return std::nullopt;
}

std::string loss_kind_names() {
  std::string out;
  for (std::size_t i = 0; i < kLossKinds.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == kLossKinds.size() ? " or " : ", ") + kLossKinds[i].name;
  return out;
}

double loss_kept_bytes(const TransformerShape& t, double e) {
  const auto& k = traits(t.loss);
  return k.kept_fp32 + k.kept_e * e;
}

double logit_bytes(const TransformerShape& t, double e) {
  const auto& k = traits(t.loss);
  return k.block_fp32 + k.block_e * e;
}

double forward_flops(const TransformerShape& t, Count micro_batch) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), L = double(t.layers);
  const double n_mm = L * double(layer_active_params(t)) + double(t.vocab) * h;
  return 2.0 * b * s * n_mm + 4.0 * L * b * s * t.attended_keys() * double(t.q_hidden());
}

double training_flops(const TransformerShape& t, Count micro_batch, Checkpointing r) {
  return 3.0 * forward_flops(t, micro_batch) + double(t.layers) * layer_recompute_flops(t, micro_batch, r);
}

}  // namespace gaccum::model
