// What/why: see transformer.hpp.
#include "model/transformer.hpp"


namespace gaccum::model {

std::vector<Count> layer_param_tensors(const TransformerShape& t) {
  const Count h = t.hidden, f = t.ffn(), hkv = t.kv_hidden();
  const bool bias = t.bias;
  std::vector<Count> out;
  out.reserve(16);
  auto norm = [&] {
    out.push_back(h);
    if (!t.rms_norm) out.push_back(h);
  };
  auto linear = [&](Count in, Count outw) {
    out.push_back(in * outw);
    if (bias) out.push_back(outw);
  };
  norm();
  if (t.kv() == t.heads) {
    linear(h, 3 * h);  // fused qkv
  } else {
    linear(h, h);            // q
    linear(h, 2 * hkv);      // k and v (grouped-query)
  }
  linear(h, h);  // output projection
  norm();
  if (t.gated_mlp) {
    linear(h, 2 * f);  // gate and up
    linear(f, h);      // down
  } else {
    linear(h, f);  // fc1
    linear(f, h);  // fc2
  }
  return out;
}

Count layer_params(const TransformerShape& t) {
  Count n = 0;
  for (Count c : layer_param_tensors(t)) n += c;
  return n;
}

std::vector<Count> transformer_param_tensors(const TransformerShape& t) {
  const Count h = t.hidden;
  std::vector<Count> out{t.vocab * h};
  if (t.learned_positions) out.push_back(t.seq_len * h);
  const std::vector<Count> layer = layer_param_tensors(t);
  for (Count l = 0; l < t.layers; ++l) out.insert(out.end(), layer.begin(), layer.end());
  out.push_back(h);  // final norm
  if (!t.rms_norm) out.push_back(h);
  if (!t.tied_embeddings) out.push_back(t.vocab * h);
  return out;
}

Count transformer_params(const TransformerShape& t) {
  Count n = 0;
  for (Count c : transformer_param_tensors(t)) n += c;
  return n;
}

double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double e, Checkpointing r) {
  return layer_activation_bytes(t, micro_batch, e, r, LayerSplit{});
}

double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double e, Checkpointing r,
                              const LayerSplit& split) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), a = double(t.heads);
  const double f = double(t.ffn()) / h;
  const double r_kv = double(t.kv()) / a;
  const double m = t.dropout ? 1.0 : 0.0;
  const double tp = double(split.tp), cp = double(split.cp);
  // Replicated over the tensor-parallel ranks unless sequence parallel: the qkv and MLP inputs,
  // the two norms' inputs (4 e) and the two dropout masks (2 m); split: q, k, v, the output
  // projection's input and the MLP's intermediates.
  const double replicated = s * b * h * (4.0 * e + 2.0 * m) / (split.sequence_parallel ? tp : 1.0);
  const double attn = 2.0 + 2.0 * r_kv;
  const double mlp = t.gated_mlp ? 3.0 * f : 2.0 * f;
  const double split_part = s * b * h * e * (attn + mlp) / tp;
  const double linear = (replicated + split_part) / cp;
  const double scores = (t.flash_attention ? 4.0 * a * s * b : a * s * s * b * (2.0 * e + m)) / (tp * cp);
  switch (r) {
    case Checkpointing::none: return linear + scores;
    case Checkpointing::selective: return linear;
    case Checkpointing::full: return e * s * b * h / (split.sequence_parallel ? tp : 1.0) / cp;
  }
  return linear + scores;
}

double activation_bytes(const TransformerShape& t, Count micro_batch, double e, Checkpointing r) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden);
  const double m = t.dropout ? 1.0 : 0.0;
  double total = double(t.layers) * layer_activation_bytes(t, micro_batch, e, r);
  if (r == Checkpointing::full) total += layer_activation_bytes(t, micro_batch, e, Checkpointing::none);
  total += m * s * b * h + 2.0 * e * s * b * h + 4.0 * s * b * double(t.vocab);
  return total;
}

double forward_flops(const TransformerShape& t, Count micro_batch) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), L = double(t.layers);
  const double n_mm = L * double(layer_params(t)) + double(t.vocab) * h;
  return 2.0 * b * s * n_mm + 4.0 * L * b * s * s * h;
}

double training_flops(const TransformerShape& t, Count micro_batch, Checkpointing r) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), L = double(t.layers);
  double flops = 3.0 * forward_flops(t, micro_batch);
  if (r == Checkpointing::full) flops += 2.0 * b * s * L * double(layer_params(t)) + 4.0 * L * b * s * s * h;
  if (r == Checkpointing::selective) flops += 4.0 * L * b * s * s * h;
  return flops;
}

}  // namespace gaccum::model
