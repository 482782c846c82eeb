// What: what one micro-step of a decoder-only transformer costs on one GPU, kernel by kernel
//       (docs/DESIGN.md, GPU compute model). T = b s tokens, h hidden, h_kv = h kv_heads/heads,
//       f ffn_hidden, V vocab, a heads, e bytes per activation element (fp32 4, bf16/fp16 2).
//   GEMMs (M x N x K, 2 M N K FLOPs), per layer forward:
//       qkv (T, h + 2 h_kv, h), output projection (T, h, h),
//       MLP in (T, f, h) or gated (T, 2f, h) (gate and up fused), MLP out (T, h, f);
//       once: the head (T, V, h). h in qkv, the projection and the attention core is
//       heads x head_dim where a model sets head_dim (Gemma). Mixture of experts: the router
//       (T, E, h), each of the E experts' MLP GEMMs on T top-k / E routed tokens (balanced
//       routing), the shared expert's on all T; the activation kernel over the active width.
//     backward of each (m, n, k): data gradient (m, k, n) and weight gradient (n, k, m).
//     time = max(FLOPs / (peak x gemm x wave), bytes / (HBM x memory)) + overhead
//       wave  = tiles / (ceil(tiles / SMs) x SMs), tiles = ceil(M / tile_m) ceil(N / tile_n)
//               (the last wave's idle SMs: wave quantisation)
//       bytes = e (M K + K N + M N)
//       peak  = bf16 dense peak; fp32 plans the TF32 peak; fp8 GEMMs (layers only, the head
//               stays bf16, as TransformerEngine) the fp8 peak x fp8
//   Attention core: FlashAttention, causal: forward 2 b s^2 h FLOPs (half of 4 b s^2 h; with a
//     sliding window w < s, 4 b s h (w - w^2 / 2s) on the windowed layers),
//     backward 2.5 x forward (it recomputes the scores: 5 products against 2), at peak x
//     attention. Standard attention: 4 b s^2 h forward at the GEMM rate (no causal saving) plus
//     the score matrix's bytes, 3 e a s^2 b forward (write scores, read and write softmax).
//   Memory-bound kernels per layer and token, forward bytes (backward twice):
//     norms 2 x 2 h e, residual adds 2 x 3 h e, activation 2 f e (gated 3 f e),
//     rotary 2 (h + h_kv) e (without learned positions), q/k norms 2 (h + h_kv) e (Qwen3, Gemma 3,
//     OLMo 2: two more kernels), dropout 2 x (2 h e + h) (with dropout);
//     outside the layers per token: embedding 2 h e, loss over the vocabulary V (e + 8)
//     forward and V (e + 8) backward (fp32 logits). time = bytes / (HBM x memory).
//   Kernels (each pays `overhead`): per layer forward 4 GEMMs + 1 attention + 5 memory-bound
//     (+1 rotary, +2 dropout), backward 8 GEMMs + 1 attention + twice the memory-bound ones.
//   Recompute: full re-runs every layer's forward inside backward; selective re-runs the
//     attention core (standard attention only: FlashAttention's backward recomputes already).
//   Optimizer step: bytes per parameter x local parameters / (HBM x memory).
// Why: GEMM sizes grow with the micro_batch, so efficiency does; this is what trades
//      micro_batch against accumulation steps on a GPU.
// Units: Seconds, FLOPs, Bytes.
#pragma once

#include "core/plan.hpp"
#include "model/gpu_device.hpp"
#include "model/transformer.hpp"

namespace gaccum::model {

struct GemmShape {
  Count m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

// Time spent in one pass (forward, or backward with its recompute) by kind of kernel.
struct GpuPassTime {
  Seconds gemm = 0;        // GEMMs, their overhead included
  Seconds gemm_ideal = 0;  // the same FLOPs at the peak (efficiency = gemm_ideal / gemm)
  Seconds attention = 0;
  Seconds memory = 0;
  Seconds overhead = 0;    // per-kernel overhead of the non-GEMM kernels
  double flops = 0;        // executed FLOPs (GEMMs and attention)
  Seconds weight_grad = 0; // of `gemm`: the weight-gradient GEMMs (what zb-h1 defers)
  Seconds total() const { return gemm + attention + memory + overhead; }
  GpuPassTime& operator+=(const GpuPassTime& o);
  GpuPassTime scaled(double n) const;  // n times this pass (n layers)
};

// One micro-step cut where a pipeline cuts it: one layer (backward with its recompute), the
// embedding (first stage) and the head with the loss (last stage), on one rank of a layer split
// over tp (and sequence-parallel) and cp ranks. GEMM widths / tp: qkv (h + 2 h_kv) / tp, output
// projection K = h / tp, MLP in f / tp (gated 2 f / tp), MLP out K = f / tp, head V / tp; attention
// FLOPs / (tp cp); tokens T = b s / cp; the h-wide memory-bound kernels (norms, residuals,
// dropout, embedding) / tp with sequence parallelism only (else every tp rank runs them whole).
struct GpuParts {
  GpuPassTime layer_forward, layer_backward;
  GpuPassTime embedding_forward, embedding_backward;
  GpuPassTime head_forward, head_backward;
};

struct GpuMicroStep {
  GpuPassTime forward, backward;  // backward includes recomputation
  Seconds time() const { return forward.total() + backward.total(); }
  double gemm_efficiency() const;  // GEMM FLOP/s achieved over the peak, forward and backward
};

class GpuComputeModel {
 public:
  GpuComputeModel(const GpuDevice& device, const GpuEfficiency& efficiency);
  const GpuDevice& device() const { return device_; }
  const GpuEfficiency& efficiency() const { return eff_; }
  // Wave-quantisation factor of a GEMM's output tiles on this device's SMs, in (0, 1].
  double wave_efficiency(const GemmShape& g) const;
  // Seconds of one GEMM at `peak` FLOP/s (overhead included) with `elem_bytes` operands.
  Seconds gemm_time(const GemmShape& g, double peak, double elem_bytes) const;
  // The parts of one micro-step of `micro_batch` samples on one rank of `split`.
  GpuParts parts(const TransformerShape& t, Count micro_batch, Checkpointing ckpt, Precision p,
                 const LayerSplit& split) const;
  // One micro-step of `micro_batch` samples (Precision::fp8: the layers' GEMMs in fp8): L layers,
  // the embedding and the head of parts() without any split.
  GpuMicroStep micro_step(const TransformerShape& t, Count micro_batch, Checkpointing ckpt, Precision p) const;
  // One optimizer step over `params` local parameters at `bytes_per_param`.
  Seconds optimizer_step(double params, double bytes_per_param) const;
  // Seconds to stream `bytes` through HBM at the memory-bound efficiency.
  Seconds memory_time(double bytes) const;

 private:
  GpuPassTime gemm_pass(const GemmShape& g, double peak, double e, bool backward) const;
  GpuDevice device_;
  GpuEfficiency eff_;
};

}  // namespace gaccum::model
