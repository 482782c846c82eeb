// What/why: see overlap.hpp.
#include "model/overlap.hpp"

namespace gaccum::model {

double overlap_efficiency(Seconds backward_alone, Seconds comm_alone, Seconds overlapped) {
  const Seconds smaller = std::min(backward_alone, comm_alone);
  if (!(smaller > 0)) return 1.0;  // nothing to hide
  const Seconds hidden = backward_alone + comm_alone - overlapped;
  return std::clamp(hidden / smaller, -1.0, 1.0);
}

std::vector<double> ready_fractions(const std::vector<Bytes>& bucket_bytes) {
  Bytes total = 0;
  for (Bytes b : bucket_bytes) total += b;
  std::vector<double> f;
  Bytes cum = 0;
  for (Bytes b : bucket_bytes) {
    cum += b;
    f.push_back(total > 0 ? double(cum) / double(total) : 1.0);
  }
  return f;
}

Exposure bucket_exposure_of(const std::vector<double>& ready_fraction, Seconds backward, double efficiency,
                         const std::vector<Seconds>& bucket_times) {
  return bucket_exposure(ready_fraction, backward, efficiency, [&](std::size_t i) { return bucket_times[i]; });
}

}  // namespace gaccum::model
