// What: a raw NCCL allreduce probe in the style of nccl-tests (all_reduce_perf): one process per
//       GPU, cudaMalloc'd float32 buffers, a fill kernel, ncclAllReduce(sum), a check kernel that
//       counts wrong elements, and per-iteration cudaEvent timing on the probe's own stream.
// Why: on GPUs the profiler measures allreduce with NCCL itself, not through LibTorch's
//      ProcessGroupNCCL (which adds its own streams, events and work tracking), so the cost model
//      sees what the wire and NCCL cost (docs/DESIGN.md, Profiler: communication).
// The ncclUniqueId is exchanged through the caller's rendezvous store (IdExchange), so this file
// needs neither LibTorch nor MPI. Every CUDA/NCCL call is checked; a failure is a RuntimeFailure
// naming the call and file:line. Built from nccl_allreduce.cu when the CUDA toolkit and NCCL are
// found, otherwise from nccl_allreduce_none.cpp (whose probe throws "not built").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace gaccum::gpu {

// How rank 0 hands its ncclUniqueId (as text) to the other ranks.
struct IdExchange {
  std::function<void(const std::string& id)> publish;  // called on rank 0 only
  std::function<std::string()> fetch;                  // called on ranks != 0; blocks until published
};

struct NcclAllreduceSample {
  Bytes bytes = 0;                // message size (float32 elements x 4)
  Count wrong = 0;                // elements != the expected sum in the correctness pass
  std::vector<Seconds> samples;   // this rank's per-iteration times (cudaEventElapsedTime), seconds
};

// True when this build has the CUDA/NCCL probe (nccl_allreduce.cu).
bool nccl_probe_compiled();

class NcclAllreduceProbe {
 public:
  // Selects `device` (cudaSetDevice) and creates the communicator (ncclCommInitRank); what it
  // created is released when a later step throws. `timeout`: how long one size's collectives
  // may take before the probe aborts the communicator and throws (a dead peer does not hang it:
  // the wait polls ncclCommGetAsyncError).
  NcclAllreduceProbe(int rank, int world_size, int device, const IdExchange& exchange, Seconds timeout = 300);
  ~NcclAllreduceProbe();
  NcclAllreduceProbe(const NcclAllreduceProbe&) = delete;
  NcclAllreduceProbe& operator=(const NcclAllreduceProbe&) = delete;

  // One size: a correctness pass (fill with (rank+1) + i%13, allreduce, count elements that
  // differ from p(p+1)/2 + p*(i%13)), then `warmup` untimed and `iters` timed allreduces of a
  // zeroed buffer. Bytes are rounded down to whole float32 elements (at least one).
  NcclAllreduceSample run(Bytes bytes, int warmup, int iters);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gaccum::gpu
