// What: per-process memory accounting for a device: allocated bytes now, their high-water
//       mark (resettable), and reserved bytes where an allocator caches (CUDA).
//   CPU : a tracking allocator installed as LibTorch's CPU allocator (c10::SetCPUAllocator), so
//         every CPU tensor allocation is counted byte-exactly (not an RSS guess).
//   CUDA: the caching allocator's own statistics (allocated and reserved high-water marks).
// Why: the profiler's memory sweep and the runner's peak_memory must be measured the same way,
//      and CPU figures must be exact so they can be checked against parameter/optimizer sizes.
// Limits: memory allocated outside LibTorch's allocator (e.g. oneDNN scratch, Gloo buffers) is
//         not counted on CPU; tensors allocated before install are never counted.
#pragma once

#include <memory>

#include <torch/types.h>

#include "core/units.hpp"

namespace gaccum::engine {

struct MemorySnapshot {
  Bytes allocated = 0;       // live bytes now
  Bytes peak_allocated = 0;  // high-water mark since the last reset_peak()
  Bytes reserved = 0;        // bytes held by a caching allocator (CUDA); == allocated on CPU
  Bytes peak_reserved = 0;
};

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual MemorySnapshot snapshot() const = 0;
  // Starts a new high-water mark at the current level.
  virtual void reset_peak() = 0;
};

// The tracker for `device`. For CPU this installs the tracking allocator on first use (call it
// before creating the model so weights are counted). For CUDA it needs a CUDA LibTorch;
// otherwise InputError.
std::unique_ptr<DeviceMemory> memory_for(const torch::Device& device);

// Installs the CPU tracking allocator (idempotent). Returns false if another allocator with a
// higher priority is already installed.
bool install_cpu_tracking_allocator();

}  // namespace gaccum::engine
