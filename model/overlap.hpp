// What: how much gradient communication a backward pass hides.
//   overlap efficiency (from an OverlapPoint: the bucket allreduces issued at the start of a
//   backward while it runs, against each alone):
//       hidden = backward_alone + comm_alone - overlapped
//       e      = clamp(hidden / min(backward_alone, comm_alone), -1, 1)
//     so that overlapped = backward + (1 - e) comm when comm <= backward.
//     e = 1: the two run fully in parallel (GPU: NCCL on its own stream); 0 <= e < 1: they
//     compete (CPU: Gloo's threads and the backward share the cores); e < 0: overlapping costs
//     more than running one after the other (measured on the 2-core VM: backward 3.41 ms, bucket
//     allreduces 1.35 ms, both at once 5.11 ms, e = -0.26), bounded at -1 (twice the time).
//   bucket schedule (the `overlap` strategy's last backward, and every backward of
//   `every-step`): bucket i becomes ready at r_i = T_b * f_i, f_i = gradient bytes produced up to
//   and including bucket i / all gradient bytes (backward produces gradients in reverse
//   registration order at a uniform rate per byte, an approximation); buckets are reduced one
//   after another on one communication stream:
//       start_i = max(r_i, end_{i-1}),  end_i = start_i + c_i
//       exposed_ideal = max(0, end_last - T_b)          (at least the last bucket's c)
//       hidden_ideal  = sum c_i - exposed_ideal
//       exposed       = exposed_ideal + (1 - e) * hidden_ideal   (e < 0: more than the comm itself)
// Why: the exposed part is what the step pays for synchronising gradients with `overlap`.
// Units: Seconds; f_i dimensionless in (0, 1].
#pragma once

#include <algorithm>
#include <vector>

#include "core/profile.hpp"
#include "core/units.hpp"

namespace gaccum::model {

double overlap_efficiency(Seconds backward_alone, Seconds comm_alone, Seconds overlapped);
inline double overlap_efficiency(const OverlapPoint& p) {
  return overlap_efficiency(p.backward_alone, p.comm_alone, p.overlapped);
}

struct Exposure {
  Seconds comm_total = 0;  // sum of the bucket allreduce times
  Seconds exposed = 0;     // not hidden behind the backward
};

// Ready fractions f_i of buckets with the given sizes, in launch order.
std::vector<double> ready_fractions(const std::vector<Bytes>& bucket_bytes);

// `comm_time(i)` gives bucket i's allreduce time; allocation-free (the tuner's inner loop).
template <class CommTime>
Exposure bucket_exposure(const std::vector<double>& ready_fraction, Seconds backward, double efficiency,
                         CommTime&& comm_time) {
  Exposure x;
  Seconds end = 0;
  for (std::size_t i = 0; i < ready_fraction.size(); ++i) {
    const Seconds c = comm_time(i);
    end = std::max(end, backward * ready_fraction[i]) + c;
    x.comm_total += c;
  }
  const Seconds exposed_ideal = std::max<Seconds>(0, end - backward);
  const Seconds hidden_ideal = std::max<Seconds>(0, x.comm_total - exposed_ideal);
  x.exposed = exposed_ideal + (1.0 - std::clamp(efficiency, -1.0, 1.0)) * hidden_ideal;
  return x;
}

// Convenience for tests and reports: explicit per-bucket times.
Exposure bucket_exposure_of(const std::vector<double>& ready_fraction, Seconds backward, double efficiency,
                         const std::vector<Seconds>& bucket_times);

}  // namespace gaccum::model
