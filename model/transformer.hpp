// What: closed-form sizes of a GPT-style decoder (pre-LayerNorm blocks, learned positions,
//       GELU MLP of width ffn_hidden, biases everywhere but the output head), per micro-step:
//   parameters   V h [tokens] + s h [positions] + L ((4 + 2f) h^2 + (9 + f) h) + 2h [final LN]
//                + V h [head, unless tied]                       (f = ffn_hidden / h; f = 4: 12h^2 + 13h)
//   activations  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
//                Models", Sec. 4 (no tensor/sequence parallelism), per layer, s = seq_len,
//                b = micro_batch, h = hidden, a = heads, e = bytes per activation element,
//                m = 1 byte per dropout-mask element (0 without dropout):
//                  none       s b h (e (8 + 2f) + 2m) + a s^2 b (2e + m)
//                             (e = 2, m = 1, f = 4: s b h (34 + 5 a s / h), the paper's formula)
//                  selective  s b h (e (8 + 2f) + 2m)          (attention core recomputed: 34 s b h)
//                  full       e s b h per layer (its input) + one layer's "none" activations
//                             (the working set while a layer is recomputed in backward)
//                plus, outside the layers: m s b h (embedding dropout mask) + 2 e s b h (final LN
//                and head inputs) + 4 s b V (fp32 logits for the loss)
//   FLOPs        6 T N_mm + 12 L b s^2 h per micro-step (T = b s tokens; N_mm = L layer
//                parameters + V h head: the matmul parameters; 12 L b s^2 h = attention scores
//                and attention over values, forward 4 L b s^2 h, backward twice that);
//                recompute adds a forward: full + 2 T L N_layer + 4 L b s^2 h, selective
//                + 4 L b s^2 h.
// Why: `--spec` plans models no local machine can run (DESIGN.md, Workloads).
// Units: element counts (Count), Bytes, FLOPs (double).
#pragma once

#include <string>
#include <vector>

#include "core/units.hpp"

namespace gaccum::model {

enum class Recompute { none, selective, full };
Recompute parse_recompute(const std::string& text, const std::string& field);
const char* to_string(Recompute r);

struct TransformerShape {
  Count layers = 1, hidden = 64, heads = 1, seq_len = 64, vocab = 256;
  Count ffn_hidden = 0;          // 0: 4 x hidden
  bool tied_embeddings = false;  // head shares the token embedding
  bool learned_positions = true;
  bool dropout = true;
  Count ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
};

Count layer_params(const TransformerShape& t);
Count transformer_params(const TransformerShape& t);
// Element counts of every parameter tensor in registration order (DDP buckets them in reverse).
std::vector<Count> transformer_param_tensors(const TransformerShape& t);

// Activation bytes of one layer / of the whole model for one micro-batch.
double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double elem_bytes, Recompute r);
double activation_bytes(const TransformerShape& t, Count micro_batch, double elem_bytes, Recompute r);

// FLOPs of one micro-step (forward + backward [+ recompute]) and of its forward alone.
double training_flops(const TransformerShape& t, Count micro_batch, Recompute r);
double forward_flops(const TransformerShape& t, Count micro_batch);

}  // namespace gaccum::model
