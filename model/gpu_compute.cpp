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
  return *this;
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
    p.gemm = gemm_time(dgrad, peak, e) + gemm_time(wgrad, peak, e);
    p.flops = dgrad.flops() + wgrad.flops();
  }
  p.gemm_ideal = p.flops / peak;
  return p;
}

GpuMicroStep GpuComputeModel::micro_step(const TransformerShape& t, Count micro_batch, Checkpointing ckpt,
                                         Precision prec) const {
  const bool fp8 = prec == Precision::fp8;
  const double e = traits(prec).element_bytes;
  const double peak = prec == Precision::fp32 ? device_.tf32_flops : device_.bf16_flops;
  if (fp8 && !(device_.fp8_flops > 0)) throw InputError(device_.name + " has no fp8 tensor cores");
  const double layer_peak = fp8 ? device_.fp8_flops * eff_.fp8 : peak;
  const double layer_e = fp8 ? 1.0 : e;
  const Count T = micro_batch * t.seq_len, h = t.hidden, hkv = t.kv_hidden(), f = t.ffn();
  const double s = double(t.seq_len), b = double(micro_batch), V = double(t.vocab);

  // One layer, forward and backward (without recompute).
  const GemmShape gemms[] = {{T, h + 2 * hkv, h}, {T, h, h}, {T, t.gated_mlp ? 2 * f : f, h}, {T, h, f}};
  GpuPassTime lf, lb;
  for (const auto& g : gemms) {
    lf += gemm_pass(g, layer_peak, layer_e, false);
    lb += gemm_pass(g, layer_peak, layer_e, true);
  }
  const double attn_fwd_flops = t.flash_attention ? 2.0 * b * s * s * double(h) : 4.0 * b * s * s * double(h);
  const double attn_bwd_flops = t.flash_attention ? 2.5 * attn_fwd_flops : 2.0 * attn_fwd_flops;
  const double attn_rate = t.flash_attention ? peak * eff_.attention : peak * eff_.gemm;
  GpuPassTime af, ab;
  af.attention = attn_fwd_flops / attn_rate + eff_.overhead;
  ab.attention = attn_bwd_flops / attn_rate + eff_.overhead;
  af.flops = attn_fwd_flops;
  ab.flops = attn_bwd_flops;
  if (!t.flash_attention) {
    const double score_bytes = 3.0 * e * double(t.heads) * s * s * b;
    af.memory += memory_time(score_bytes);
    ab.memory += memory_time(2 * score_bytes);
  }
  lf += af;
  lb += ab;
  // Memory-bound kernels of the layer.
  double bytes = 4.0 * double(h) * e + 6.0 * double(h) * e + (t.gated_mlp ? 3.0 : 2.0) * double(f) * e;
  double kernels = 5;
  if (!t.learned_positions) {
    bytes += 2.0 * double(h + hkv) * e;
    kernels += 1;
  }
  if (t.dropout) {
    bytes += 2.0 * (2.0 * double(h) * e + double(h));
    kernels += 2;
  }
  lf.memory += memory_time(bytes * double(T));
  lb.memory += memory_time(2 * bytes * double(T));
  lf.overhead += kernels * eff_.overhead;
  lb.overhead += 2 * kernels * eff_.overhead;

  GpuMicroStep m;
  const double L = double(t.layers);
  auto scaled = [L](GpuPassTime p) {
    p.gemm *= L;
    p.gemm_ideal *= L;
    p.attention *= L;
    p.memory *= L;
    p.overhead *= L;
    p.flops *= L;
    return p;
  };
  m.forward = scaled(lf);
  m.backward = scaled(lb);
  if (ckpt == Checkpointing::full) m.backward += scaled(lf);
  if (ckpt == Checkpointing::selective && !t.flash_attention) m.backward += scaled(af);
  // Outside the layers: embedding, head (bf16 even under fp8) and the loss over the vocabulary.
  const GemmShape head{T, t.vocab, h};
  m.forward += gemm_pass(head, peak, e, false);
  m.backward += gemm_pass(head, peak, e, true);
  m.forward.memory += memory_time(double(T) * (2.0 * double(h) * e + V * (e + 8)));
  m.backward.memory += memory_time(double(T) * (2.0 * double(h) * e + V * (e + 8)));
  m.forward.overhead += 3 * eff_.overhead;
  m.backward.overhead += 3 * eff_.overhead;
  return m;
}

Seconds GpuComputeModel::optimizer_step(double params, double bytes_per_param) const {
  return memory_time(params * bytes_per_param);
}

}  // namespace gaccum::model
