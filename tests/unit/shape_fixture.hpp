// What: a small Llama-shaped transformer (2 layers, h 64, 4 heads, 2 kv heads of 16, SwiGLU f 128,
// s 16, vocabulary 100, RMSNorm, rotary, FlashAttention, no bias or dropout) for hand-computed
// FLOPs, bytes and activations.
// Why: the GPU compute model's and the activation formulas' tests share one shape.
#pragma once

#include "model/transformer.hpp"

namespace gaccum::test {

inline model::TransformerShape small_llama_shape() {
  model::TransformerShape t;
  t.layers = 2;
  t.hidden = 64;
  t.heads = 4;
  t.kv_heads = 2;
  t.ffn_hidden = 128;
  t.gated_mlp = true;
  t.seq_len = 16;
  t.vocab = 100;
  t.learned_positions = false;
  t.dropout = false;
  t.flash_attention = true;
  t.bias = false;
  t.rms_norm = true;
  return t;
}

}  // namespace gaccum::test
