// What/why: see gpu_compute.hpp.
#include "model/gpu_compute.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace gaccum::model {

GpuPassTime& GpuPassTime::operator+=(const GpuPassTime& o) {
  gemm += o.gemm;
  gemm_ideal += o.gemm_ideal;
  attention += o.attention;
  memory += o.memory;
  overhead += o.overhead;
  flops += o.flops;
  weight_grad += o.weight_grad;
  return *this;
}

GpuPassTime GpuPassTime::scaled(double n) const {
  GpuPassTime p = *this;
  p.gemm *= n;
  p.gemm_ideal *= n;
  p.attention *= n;
  p.memory *= n;
  p.overhead *= n;
  p.flops *= n;
  p.weight_grad *= n;
  return p;
}

double GpuMicroStep::gemm_efficiency() const {
  const Seconds t = forward.gemm + backward.gemm;
  return t > 0 ? (forward.gemm_ideal + backward.gemm_ideal) / t : 0;
}

GpuComputeModel::GpuComputeModel(const GpuDevice& device, const GpuEfficiency& efficiency)
    : device_(device), eff_(efficiency) {
  if (!(device.bf16_flops > 0 && device.hbm_bandwidth > 0 && device.sms > 0))
    throw InputError("GPU compute model: the device needs a bf16 peak, an HBM bandwidth and an SM count");
}

double GpuComputeModel::wave_efficiency(const GemmShape& g) const {
  const auto& tr = traits(device_.generation);
  const double tiles = std::ceil(double(g.m) / double(tr.tile_m)) * std::ceil(double(g.n) / double(tr.tile_n));
  const double sms = double(device_.sms);
  const double waves = std::ceil(tiles / sms);
  return waves > 0 ? tiles / (waves * sms) : 1;
}

Seconds GpuComputeModel::memory_time(double bytes) const { return bytes / (device_.hbm_bandwidth * eff_.memory); }

Seconds GpuComputeModel::gemm_time(const GemmShape& g, double peak, double e) const {
  const double bytes = e * (double(g.m) * double(g.k) + double(g.k) * double(g.n) + double(g.m) * double(g.n));
  return std::max(g.flops() / (peak * eff_.gemm * wave_efficiency(g)), memory_time(bytes)) + eff_.overhead;
}

// One GEMM forward, or its two backward GEMMs (data and weight gradients).
GpuPassTime GpuComputeModel::gemm_pass(const GemmShape& g, double peak, double e, bool backward) const {
  GpuPassTime p;
  if (!backward) {
    p.gemm = gemm_time(g, peak, e);
    p.flops = g.flops();
  } else {
    const GemmShape dgrad{g.m, g.k, g.n}, wgrad{g.n, g.k, g.m};
    p.weight_grad = gemm_time(wgrad, peak, e);
    p.gemm = gemm_time(dgrad, peak, e) + p.weight_grad;
    p.flops = dgrad.flops() + wgrad.flops();
  }
  p.gemm_ideal = p.flops / peak;
  return p;
}

GpuParts GpuComputeModel::parts(const TransformerShape& t, Count micro_batch, Checkpointing ckpt, Precision prec,
                                const LayerSplit& split) const {
  const bool fp8 = prec == Precision::fp8;
  const double e = traits(prec).element_bytes;
  const double peak = prec == Precision::fp32 ? device_.tf32_flops : device_.bf16_flops;
  if (fp8 && !(device_.fp8_flops > 0)) throw InputError(device_.name + " has no fp8 tensor cores");
  const double layer_peak = fp8 ? device_.fp8_flops * eff_.fp8 : peak;
  const double layer_e = fp8 ? 1.0 : e;
  const Count tp = split.tp, cp = split.cp;
  // This rank's tokens (the sequence split over cp) and matrix widths (split over tp).
  const Count T = micro_batch * t.seq_len / cp, h = t.hidden, hq = t.q_hidden(), hkv = t.kv_hidden(), f = t.ffn();
  const double s = double(t.seq_len), b = double(micro_batch), V = double(t.vocab);
  const double sp = split.sequence_parallel ? double(tp) : 1.0;  // replicated work split by SP

  // One layer, forward and backward (without recompute).
  GpuPassTime lf, lb;
  auto add = [&](const GemmShape& g, double times) {
    lf += gemm_pass(g, layer_peak, layer_e, false).scaled(times);
    lb += gemm_pass(g, layer_peak, layer_e, true).scaled(times);
  };
  auto mlp = [&](Count tokens, Count width, double times) {
    add({tokens, (t.gated_mlp ? 2 * width : width) / tp, h}, times);
    add({tokens, h, width / tp}, times);
  };
  add({T, (hq + 2 * hkv) / tp, h}, 1);
  add({T, h, hq / tp}, 1);
  if (t.experts > 0) {
    // The router, then each expert's GEMMs on its share of the routed tokens (balanced routing:
    // T top-k / experts each); the shared expert on every token.
    add({T, t.experts, h}, 1);
    mlp((T * t.active_experts + t.experts - 1) / t.experts, f, double(t.experts));
    if (t.shared_ffn > 0) mlp(T, t.shared_ffn, 1);
  } else {
    mlp(T, f, 1);
  }
  const double share = double(tp) * double(cp);  // heads over tp, queries over cp
  // FlashAttention computes the causal (and windowed) pairs only; standard attention the whole
  // s x s score matrix, masked.
  const double attn_fwd_flops =
      (t.flash_attention ? 4.0 * b * s * t.causal_attended_keys() * double(hq) : 4.0 * b * s * s * double(hq)) / share;
  const double attn_bwd_flops = t.flash_attention ? 2.5 * attn_fwd_flops : 2.0 * attn_fwd_flops;
  const double attn_rate = t.flash_attention ? peak * eff_.attention : peak * eff_.gemm;
  GpuPassTime af, ab;
  af.attention = attn_fwd_flops / attn_rate + eff_.overhead;
  ab.attention = attn_bwd_flops / attn_rate + eff_.overhead;
  af.flops = attn_fwd_flops;
  ab.flops = attn_bwd_flops;
  if (!t.flash_attention) {
    const double score_bytes = 3.0 * e * double(t.heads) * s * s * b / share;
    af.memory += memory_time(score_bytes);
    ab.memory += memory_time(2 * score_bytes);
  }
  lf += af;
  lb += ab;
  // Memory-bound kernels of the layer: norms and residuals over h (split by SP), the
  // activation over f (split by tp), rotary over q and k (split by tp), dropout over h.
  double bytes = (4.0 * double(h) * e + 6.0 * double(h) * e) / sp +
                 (t.gated_mlp ? 3.0 : 2.0) * double(t.active_ffn()) * e / double(tp);
  double kernels = 5;
  if (!t.learned_positions) {
    bytes += 2.0 * double(hq + hkv) * e / double(tp);
    kernels += 1;
  }
  if (t.qk_norm != QkNorm::none) {
    bytes += 2.0 * double(hq + hkv) * e / double(tp);
    kernels += 2;
  }
  if (t.dropout) {
    bytes += 2.0 * (2.0 * double(h) * e + double(h)) / sp;
    kernels += 2;
  }
  lf.memory += memory_time(bytes * double(T));
  lb.memory += memory_time(2 * bytes * double(T));
  lf.overhead += kernels * eff_.overhead;
  lb.overhead += 2 * kernels * eff_.overhead;

  GpuParts out;
  out.layer_forward = lf;
  out.layer_backward = lb;
  if (ckpt == Checkpointing::full) out.layer_backward += lf;
  if (ckpt == Checkpointing::selective && !t.flash_attention) out.layer_backward += af;
  if (ckpt == Checkpointing::selective_op) {
    // torchtitan's per-op policy keeps attention and the odd matmuls (transformer.hpp); backward
    // runs the even ones again (wk, wo, and w3 or fc2) and every memory-bound kernel.
    GpuPassTime r;
    r += gemm_pass({T, hkv / tp, h}, layer_peak, layer_e, false);
    r += gemm_pass({T, h, hq / tp}, layer_peak, layer_e, false);
    r += t.gated_mlp ? gemm_pass({T, t.active_ffn() / tp, h}, layer_peak, layer_e, false)
                     : gemm_pass({T, h, t.active_ffn() / tp}, layer_peak, layer_e, false);
    r.memory += memory_time(bytes * double(T));
    r.overhead += kernels * eff_.overhead;
    out.layer_backward += r;
  }
  // Outside the layers: the embedding lookup; the head (bf16 even under fp8, as
  // TransformerEngine; vocabulary split over tp) and the loss over the vocabulary.
  out.embedding_forward.memory = memory_time(double(T) * double(h) * e / sp);
  out.embedding_backward.memory = out.embedding_forward.memory;
  out.embedding_forward.overhead = out.embedding_backward.overhead = eff_.overhead;
  const GemmShape head{T, t.vocab / tp, h};
  out.head_forward = gemm_pass(head, peak, e, false);
  out.head_backward = gemm_pass(head, peak, e, true);
  // The loss over the vocabulary: each pass reads the logits and writes and reads 4-byte
  // log-probabilities (e + 8 bytes per logit). A fused loss (LossKind::fused) moves fewer bytes (e
  // forward, 2 e backward) but is priced the same: the calibration absorbs this term, and a refit
  // with the fused bytes made the never-fitted Megatron rows worse (docs/DESIGN.md, Calibration).
  const double loss_bytes = double(T) * (double(h) * e / sp + V / double(tp) * (e + 8));
  out.head_forward.memory += memory_time(loss_bytes);
  out.head_backward.memory += memory_time(loss_bytes);
  out.head_forward.overhead += 2 * eff_.overhead;
  out.head_backward.overhead += 2 * eff_.overhead;
  return out;
}

GpuMicroStep GpuComputeModel::micro_step(const TransformerShape& t, Count micro_batch, Checkpointing ckpt,
                                         Precision prec) const {
  const GpuParts parts_ = parts(t, micro_batch, ckpt, prec, LayerSplit{});
  const double L = double(t.layers);
  GpuMicroStep m;
  m.forward = parts_.layer_forward.scaled(L);
  m.backward = parts_.layer_backward.scaled(L);
  m.forward += parts_.embedding_forward;
  m.forward += parts_.head_forward;
  m.backward += parts_.embedding_backward;
  m.backward += parts_.head_backward;
  return m;
}

Seconds GpuComputeModel::optimizer_step(double params, double bytes_per_param) const {
  return memory_time(params * bytes_per_param);
}

}  // namespace gaccum::model
