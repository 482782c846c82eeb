// What/why: see transformer.hpp.
#include "model/transformer.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::model {

Recompute parse_recompute(const std::string& text, const std::string& field) {
  if (text == "none") return Recompute::none;
  if (text == "selective") return Recompute::selective;
  if (text == "full") return Recompute::full;
  throw InputError(fmt::format("{}: '{}' is not an activation checkpointing mode: expected none, selective or full", field, text));
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "none";
}

Count layer_params(const TransformerShape& t) {
  const Count h = t.hidden, f = t.ffn();
  // qkv 3h^2+3h, proj h^2+h, fc1 f h + f, fc2 f h + h, two LayerNorms 4h.
  return 3 * h * h + 3 * h + h * h + h + f * h + f + f * h + h + 4 * h;
}

std::vector<Count> transformer_param_tensors(const TransformerShape& t) {
  const Count h = t.hidden, f = t.ffn();
  std::vector<Count> out{t.vocab * h};
  if (t.learned_positions) out.push_back(t.seq_len * h);
  for (Count l = 0; l < t.layers; ++l)
    for (Count n : {h, h, 3 * h * h, 3 * h, h * h, h, h, h, f * h, f, f * h, h}) out.push_back(n);
  out.push_back(h);
  out.push_back(h);
  if (!t.tied_embeddings) out.push_back(t.vocab * h);
  return out;
}

Count transformer_params(const TransformerShape& t) {
  Count n = 0;
  for (Count c : transformer_param_tensors(t)) n += c;
  return n;
}

double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double e, Recompute r) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), a = double(t.heads);
  const double f = double(t.ffn()) / h;
  const double m = t.dropout ? 1.0 : 0.0;
  const double linear = s * b * h * (e * (8.0 + 2.0 * f) + 2.0 * m);
  const double scores = a * s * s * b * (2.0 * e + m);
  switch (r) {
    case Recompute::none: return linear + scores;
    case Recompute::selective: return linear;
    case Recompute::full: return e * s * b * h;
  }
  return linear + scores;
}

double activation_bytes(const TransformerShape& t, Count micro_batch, double e, Recompute r) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden);
  const double m = t.dropout ? 1.0 : 0.0;
  double total = double(t.layers) * layer_activation_bytes(t, micro_batch, e, r);
  if (r == Recompute::full) total += layer_activation_bytes(t, micro_batch, e, Recompute::none);
  total += m * s * b * h + 2.0 * e * s * b * h + 4.0 * s * b * double(t.vocab);
  return total;
}

double forward_flops(const TransformerShape& t, Count micro_batch) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), L = double(t.layers);
  const double n_mm = L * double(layer_params(t)) + double(t.vocab) * h;
  return 2.0 * b * s * n_mm + 4.0 * L * b * s * s * h;
}

double training_flops(const TransformerShape& t, Count micro_batch, Recompute r) {
  const double s = double(t.seq_len), b = double(micro_batch), h = double(t.hidden), L = double(t.layers);
  double flops = 3.0 * forward_flops(t, micro_batch);
  if (r == Recompute::full) flops += 2.0 * b * s * L * double(layer_params(t)) + 4.0 * L * b * s * s * h;
  if (r == Recompute::selective) flops += 4.0 * L * b * s * s * h;
  return flops;
}

}  // namespace gaccum::model
