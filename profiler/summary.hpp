// What: the human summary `gaccum-tune profile` prints: a header (workload, device, threads,
//       cap, libraries), then one table per probe: memory per micro_batch, compute per
//       (micro_batch, concurrent ranks), optimizer step, allreduce per world_size in the
//       nccl-tests layout (size, count, type, tag, time, algbw, busbw, #wrong), gradient norms
//       with the B_simple estimate they imply, overlap, and the notes.
// Why: the profile.json is for machines; this is what a person reads to trust it.
#pragma once

#include <cstdio>

#include "core/profile.hpp"

namespace gaccum::profiler {

void print_summary(const Profile& p, std::FILE* out);

}  // namespace gaccum::profiler
