// What: a synthetic CPU profile with known closed forms, for the model's unit tests:
//   params      tensors {400000, 4000, 1200000, 8000, 600000} B (float32), 2 DDP buckets:
//               {600000 + 8000 + 1200000 = 1808000, 4000 + 400000 = 404000}
//   compute     t1(b) = 0.002 + 0.001 b s at concurrency 1, t2(b) = 1.2 t1(b) at 2; samples
//               {0.95 t, t, 1.05 t}; backward = 2/3 of the micro-step; b in {1,2,3,4,6,8,12,16}
//   memory      static 4 x param_bytes (Adam), activations 100000 + 50000 b bytes
//   optimizer   3 ms at concurrency 1, 3.5 ms at 2
//   allreduce   gloo, p = 2: sweep 8 B and 4 KiB..16 MiB x4 at t = 2 alpha + S / beta (alpha
//               50 us, beta 1 GB/s); bucket and fused sizes measured 10% above that line
//   tokens      a token workload: one 8-byte allreduce per step (t = line at 8 B) when p > 1
//   overlap     p = 2: backward 10 ms, comm 4 ms, overlapped 12 ms -> efficiency 0.5
//   grad norms  E|G_b|^2 = 2 + 64 / b at b = 4 and 32 -> B_simple = 32
// Why: tests compare the model against numbers computed by hand from these forms.
#pragma once

#include <vector>

#include "core/profile.hpp"

namespace gaccum::test {

inline constexpr double kAlpha = 50e-6, kBeta = 1e9;
inline double t1(double b) { return 0.002 + 0.001 * b; }
inline double t2(double b) { return 1.2 * t1(b); }
inline double line_ar(double bytes) { return 2 * kAlpha + bytes / kBeta; }  // p = 2: 2(p-1)/p = 1
inline constexpr Bytes kParamBytes = 2212000;
inline constexpr Bytes kBucket0 = 1808000, kBucket1 = 404000;
inline double activations(double b) { return 100000 + 50000 * b; }

inline TimingStats spread(double t) { return TimingStats::from_samples({0.95 * t, t, 1.05 * t}); }

inline Profile synthetic_profile(bool with_overlap = true, bool with_allreduce = true) {
  Profile p;
  p.created_utc = "2026-11-29T00:00:00Z";
  p.hardware.host = "test";
  p.hardware.device_kind = "cpu";
  p.hardware.device_name = "Synthetic CPU";
  p.hardware.cpu_cores = 2;
  p.hardware.threads_per_rank = 1;
  p.hardware.device_memory = 1 * GiB;
  p.workload.name = "synthetic";
  p.workload.kind = "gpt";
  p.workload.hash = "0123456789abcdef";
  p.workload.dtype = "float32";
  p.workload.param_count = kParamBytes / 4;
  p.workload.param_bytes = kParamBytes;
  p.workload.param_tensor_bytes = {400000, 4000, 1200000, 8000, 600000};
  p.workload.tokens_per_sample = 64;
  p.workload.mean_tokens_per_sample = 40;
  p.settings.ranks = {1, 2};
  p.settings.optimizer = Optimizer::adam;
  for (Count b : {1, 2, 3, 4, 6, 8, 12, 16}) {
    MemoryPoint m;
    m.micro_batch = b;
    m.weights = kParamBytes;
    m.gradients = kParamBytes;
    m.optimizer_state = 2 * kParamBytes;
    m.activations = static_cast<Bytes>(activations(double(b)));
    m.peak = 4 * kParamBytes + m.activations;
    p.memory.push_back(m);
    for (Count c : {1, 2}) {
      ComputePoint cp;
      cp.micro_batch = b;
      cp.concurrent_ranks = c;
      const double t = c == 1 ? t1(double(b)) : t2(double(b));
      cp.micro_step = spread(t);
      cp.backward = spread(t * 2.0 / 3.0);
      cp.forward = spread(t / 3.0);
      p.compute.push_back(cp);
    }
  }
  p.optimizer.push_back({1, spread(0.003)});
  p.optimizer.push_back({2, spread(0.0035)});
  if (with_allreduce) {
    std::vector<Bytes> sweep{8};
    for (Bytes s = 4 * KiB; s <= 16 * MiB; s *= 4) sweep.push_back(s);
    for (Bytes s : sweep) {
      AllreducePoint a;
      a.backend = "gloo";
      a.world_size = 2;
      a.bytes = s;
      a.time = line_ar(double(s));
      a.samples = {a.time};
      p.allreduce.push_back(a);
    }
    for (auto [bytes, tag] : {std::pair<Bytes, const char*>{kBucket0, "bucket"}, {kBucket1, "bucket"}, {kParamBytes, "fused"}}) {
      AllreducePoint a;
      a.backend = "gloo";
      a.world_size = 2;
      a.bytes = bytes;
      a.time = 1.1 * line_ar(double(bytes));
      a.tag = tag;
      a.samples = {0.9 * a.time, a.time, 1.1 * a.time};
      p.allreduce.push_back(a);
    }
  }
  if (with_overlap) p.overlap.push_back({2, 8, 0.010, 0.004, 0.012});
  p.grad_norms.push_back({4, {17, 19}});
  p.grad_norms.push_back({32, {3.5, 4.5}});
  p.max_micro_batch_fitting = 16;
  return p;
}

}  // namespace gaccum::test
