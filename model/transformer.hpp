// What: closed-form sizes of a decoder-only transformer per micro-step. The default shape is
//       GPT-2 style (pre-LayerNorm blocks, learned positions, GELU MLP of width ffn_hidden, biases
//       everywhere but the output head); LLaMA-style models set gated_mlp (SwiGLU: gate, up and
//       down matrices of width ffn_hidden), kv_heads < heads (grouped-query attention), no biases,
//       RMSNorm and rotary positions (learned_positions false), and FlashAttention.
//   parameters   per layer: attention q h^2, k and v h h_kv each (h_kv = h kv_heads / heads; one
//                fused qkv tensor 3h^2 when kv_heads = heads), output h^2; MLP 2 f h (gated 3 f h);
//                biases h + 2 h_kv + h + (f + h) (gated 2f + h) when `bias`; two norms of h
//                (LayerNorm 2h: weight and bias; RMSNorm h). Outside: V h tokens + s h positions
//                (learned) + final norm + V h head (untied). GPT-2 shape: 12h^2 + 13h per layer.
//                LLaMA-2-7B (L 32, h 4096, f 11008 gated, V 32000, untied, no bias, RMSNorm):
//                6,738,415,616. Generalised for HuggingFace configs (model/hf_config.hpp): q and
//                the output projection are heads x head_dim wide (Gemma), q/k/v-only biases
//                (Qwen2), more norms per layer (Gemma 2), a position table of n_positions rows
//                (GPT-2), and mixture-of-experts layers: a router h E, E experts' MLPs, a shared
//                expert + its h x 1 gate. Memory holds every parameter; FLOPs count the active
//                ones (N_mm below uses layer_active_params: top-k experts, not E).
//   activations  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
//                Models", Sec. 4 (no tensor/sequence parallelism), per layer, s = seq_len,
//                b = micro_batch, h = hidden, a = heads, r = kv_heads / heads, f = ffn_hidden / h,
//                e = bytes per activation element, m = 1 byte per dropout-mask element (0
//                without dropout):
//                  linear     s b h (e (attn + mlp + n) + 2m)
//                             attn = 3 + 2r (qkv input, q, k, v, output-projection input;
//                                    q and the projection input scale by heads head_dim / h;
//                                    q/k norms (Qwen3, Gemma 3, OLMo 2) keep their inputs:
//                                    + (q + k widths) / h)
//                             mlp  = 1 + 2f (fc1 input, GELU input, fc2 input)
//                                    gated: 1 + 3f (input, gate and up outputs, down input)
//                             n    = the norms' inputs (2; Gemma 2: 4)
//                             f    = the active MLP width per token / h (experts: top-k x
//                                    their width + the shared expert's)
//                  scores     a s^2 b (2e + m) (softmax output, its dropout mask, dropout output);
//                             FlashAttention keeps no s^2 matrix: 4 a s b (fp32 log-sum-exp) instead
//                  none       linear + scores   (e = 2, m = 1, f = 4, r = 1: s b h (34 + 5 a s / h),
//                                                the paper's formula)
//                  selective  linear            (attention core recomputed: 34 s b h)
//                  full       e s b h per layer (its input) + one layer's "none" activations
//                             (the working set while a layer is recomputed in backward)
//                plus, outside the layers: m s b h (embedding dropout mask) + 2 e s b h (final norm
//                and head inputs) + the loss's kept bytes per logit x s b V (loss_kept_bytes:
//                8 for PyTorch's cross-entropy on fp32 logits)
//   FLOPs        6 T N_mm + 12 L b s^2 h per micro-step (T = b s tokens; N_mm = L layer
//                parameters (active ones: layer_active_params) + V h head: the matmul parameters;
//                h in the attention terms is heads x head_dim; 12 L b s^2 h = attention scores
//                and attention over values, forward 4 L b s^2 h, backward twice that; the same
//                with FlashAttention, which computes the same products);
//                recompute adds a forward: full + 2 T L N_layer + 4 L b s^2 h, selective
//                + 4 L b s^2 h.
// Why: `--spec` plans models no local machine can run (docs/DESIGN.md, Workloads).
// Units: element counts (Count), Bytes, FLOPs (double).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan.hpp"
#include "core/units.hpp"

namespace gaccum::model {


// The cross-entropy over the vocabulary (a spec's "loss"), by what it holds per logit at its peak,
// the backward of the softmax, when every layer's activations are still held (T = b s logits rows
// of V, e the compute dtype's bytes):
//   fp32            PyTorch's F.cross_entropy on logits upcast to fp32 (HuggingFace, torchtitan,
//                   the default): log_softmax's fp32 output (saved for backward) and the fp32
//                   gradient nll_loss hands it are both held while log_softmax's backward writes
//                   its own fp32 gradient: 8 bytes kept + a 4-byte transient block = 12;
//   vocab_parallel  Megatron-LM's vocab-parallel cross-entropy: one fp32 buffer, the softmax computed
//                   in place and saved, its gradient written over it, then cast: 4 kept + 4;
//   fused           a fused kernel (flash-attn's, Liger's): logits and their gradient in the
//                   compute dtype: e kept + e.
enum class LossKind { fp32, vocab_parallel, fused };
struct LossKindTraits {
  LossKind value;
  const char* name;      // the spec's spelling
  const char* what;      // who computes it so ("PyTorch's cross-entropy on fp32 logits")
  double kept_fp32;      // bytes per logit kept at the peak: kept_fp32 + kept_e x e
  double kept_e;
  double block_fp32;     // bytes per logit of the largest transient block: block_fp32 + block_e x e
  double block_e;
};
const LossKindTraits& traits(LossKind k);
std::optional<LossKind> find_loss_kind(std::string_view name);
std::string loss_kind_names();  // "fp32, vocab-parallel or fused"

enum class QkNorm { none, per_head, full };

struct TransformerShape {
  Count layers = 1, hidden = 64, heads = 1, seq_len = 64, vocab = 256;
  Count ffn_hidden = 0;          // 0: 4 x hidden (an expert's width with experts)
  bool tied_embeddings = false;  // head shares the token embedding
  bool learned_positions = true;
  bool dropout = true;
  bool gated_mlp = false;        // SwiGLU: gate, up and down matrices of width ffn_hidden
  Count kv_heads = 0;            // 0: heads (multi-head attention); fewer: grouped-query attention
  bool flash_attention = false;  // no s^2 attention matrix kept for backward
  bool bias = true;              // biases on every linear layer but the head
  bool rms_norm = false;         // RMSNorm (weight only) instead of LayerNorm (weight and bias)
  Count head_dim = 0;            // 0: hidden / heads; q and the attention are heads x head_dim wide
  bool qkv_bias = false;         // biases on q, k and v only (Qwen2), when `bias` is false
  Count layer_norms = 2;         // norms per layer (Gemma 2: 4, before and after each block)
  // RMSNorm on the queries and keys before rotary (Qwen3, Gemma 3: over each head, head_dim
  // weights each for q and k; OLMo 2: over the whole projection, q_hidden + kv_hidden weights).
  QkNorm qk_norm = QkNorm::none;
  Count positions = 0;           // rows of the learned position table; 0: seq_len (GPT-2: n_positions)
  // The loss over the vocabulary (LossKind: what it keeps per logit; loss_kept_bytes).
  LossKind loss = LossKind::fp32;
  // Mixture of experts: `experts` routed MLPs of width ffn_hidden per layer (0: one dense MLP), a
  // router of h x experts, each token through `active_experts` of them (top-k); a shared expert of
  // width shared_ffn (0: none) runs on every token behind a gate of h x 1 (Qwen2-MoE).
  Count experts = 0, active_experts = 0, shared_ffn = 0;
  // Sliding-window attention (Mistral, Phi-3, Gemma 2's every other layer): a query attends to
  // the last `attention_window` keys only (0: all), on a share `windowed_layers` of the layers.
  Count attention_window = 0;
  double windowed_layers = 1.0;
  // Keys one query attends to, averaged over the layers: without the causal mask (the FLOP
  // convention of Megatron-LM and llm-foundry: 4 b s keys h_q per layer forward), s, or min(s, w)
  // on a windowed layer; under the causal mask (what FlashAttention computes), s / 2, or
  // w - w^2 / (2 s) on a windowed layer when s > w (sum over queries of min(i + 1, w), over s).
  double attended_keys() const;
  double causal_attended_keys() const;
  Count ffn() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  Count kv() const { return kv_heads > 0 ? kv_heads : heads; }
  Count head_width() const { return head_dim > 0 ? head_dim : hidden / heads; }
  Count q_hidden() const { return heads * head_width(); }     // width of q and of the attention
  Count kv_hidden() const { return head_width() * kv(); }     // h_kv: width of k and v
  Count position_rows() const { return learned_positions ? (positions > 0 ? positions : seq_len) : 0; }
  // The MLP width one token passes through: ffn, or active_experts x ffn + shared_ffn.
  Count active_ffn() const { return experts > 0 ? active_experts * ffn() + shared_ffn : ffn(); }
};

Count layer_params(const TransformerShape& t);
// One layer's parameters a token's compute passes through: all but the experts it is not routed
// to (the router's h x experts included). layer_params for a dense layer.
Count layer_active_params(const TransformerShape& t);
// The token embedding and the learned position table.
Count embedding_params(const TransformerShape& t);
// Element counts of one layer's parameter tensors in registration order.
std::vector<Count> layer_param_tensors(const TransformerShape& t);
Count transformer_params(const TransformerShape& t);
// Element counts of every parameter tensor in registration order (DDP buckets them in reverse).
std::vector<Count> transformer_param_tensors(const TransformerShape& t);

// How one layer's work is split over tensor-parallel (tp, with or without sequence parallelism)
// and context-parallel (cp) ranks.
struct LayerSplit {
  Count tp = 1, cp = 1;
  bool sequence_parallel = false;
};

// Activation bytes of one layer / of the whole model for one micro-batch.
double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double elem_bytes, Checkpointing r);
// On one rank of a split layer (Korthikanti et al. 2022, Table 2, generalised as above): the
// replicated part s b h (4 e + 2 m) (norm, qkv and MLP inputs, dropout masks; / tp with sequence
// parallelism), the split part s b h e (2 + 2 r + mlp) / tp (mlp = 2 f, gated 3 f), scores / tp;
// everything / cp. e = 2, m = 1, f = 4, r = 1: s b h (10 + 24 / t + 5 a s / (h t)) without SP,
// s b h / t (34 + 5 a s / h) with SP. Full recompute: e s b h (/ tp with SP) / cp.
// Per-op selective (torchtitan's op SAC, bias-free linears as in the Llama family): the layer's
// input (e h; / tp with SP), the outputs of the odd matmuls in forward order, q and v (e (hq +
// hkv) / tp), w1 / fc1 (e f / tp), w2 (e h, gated MLP only: plain MLPs have 6 matmuls, fc2 is the
// 6th), attention's output (e hq / tp) and FlashAttention's log-sum-exp (4 a / tp): s b (...) / cp.
double layer_activation_bytes(const TransformerShape& t, Count micro_batch, double elem_bytes, Checkpointing r,
                              const LayerSplit& split);
// What backward holds beyond the kept activations while it recomputes one layer: full, that
// layer's activations; selective-op, those it did not keep; else 0.
double recompute_transient_bytes(const TransformerShape& t, Count micro_batch, double elem_bytes, Checkpointing r,
                                 const LayerSplit& split);
// Forward FLOPs of one layer that backward runs again: full, the whole layer; selective, the
// attention core; selective-op, the even matmuls (wk, wo, and w3 or fc2): 2 b s (h hkv + hq h + f h).
double layer_recompute_flops(const TransformerShape& t, Count micro_batch, Checkpointing r);
double activation_bytes(const TransformerShape& t, Count micro_batch, double elem_bytes, Checkpointing r);
// Bytes per logit the loss keeps at its peak (LossKind: fp32 8, vocab_parallel 4, fused e) and
// the size per logit of its largest transient block, the gradient it writes (4, 4, e): what the
// caching allocator's reserve is priced from.
double loss_kept_bytes(const TransformerShape& t, double elem_bytes);
double logit_bytes(const TransformerShape& t, double elem_bytes);

// FLOPs of one micro-step (forward + backward [+ recompute]) and of its forward alone.
double training_flops(const TransformerShape& t, Count micro_batch, Checkpointing r);
double forward_flops(const TransformerShape& t, Count micro_batch);

}  // namespace gaccum::model
