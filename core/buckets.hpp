// What: DDP's gradient bucket assignment: parameters in reverse registration order (the order
//       backward produces their gradients), packed into buckets; a bucket closes as soon as it
//       reaches its cap (so it may exceed the cap by its last tensor); the first bucket's cap is
//       1 MiB, every later one 25 MiB (torch.nn.parallel.DistributedDataParallel defaults).
// Why: the runner's `overlap`/`every-step` strategies, the profiler's bucket-size allreduce probe
//      and the cost model must agree on the exact messages a step sends.
#pragma once

#include <cstddef>
#include <vector>

#include "core/units.hpp"

namespace gaccum {

inline constexpr Bytes kFirstBucketCap = 1 * MiB;
inline constexpr Bytes kBucketCap = 25 * MiB;

struct Bucket {
  Bytes bytes = 0;
  std::vector<std::size_t> params;  // indices into registration order, in backward order
};

// Buckets in launch order (the first bucket holds the last-registered parameters).
std::vector<Bucket> assign_buckets(const std::vector<Bytes>& param_tensor_bytes, Bytes first_cap = kFirstBucketCap,
                                   Bytes cap = kBucketCap);

}  // namespace gaccum
