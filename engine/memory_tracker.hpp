// What: per-process memory accounting for a device: allocated bytes now, their high-water
//       mark (resettable), and reserved bytes where an allocator caches (CUDA).
//   CPU : a tracking allocator installed as LibTorch's CPU allocator (c10::SetCPUAllocator), so
//         every CPU tensor allocation is counted byte-exactly (not an RSS guess).
//   CUDA: the caching allocator's own statistics (allocated and reserved high-water marks),
//         through CachingAllocatorMemory below: its rules are written against a four-call
//         interface, so they are tested on CPU with a fake allocator
//         (tests/unit/test_memory_tracker.cpp); the CUDA calls are in cuda_support.cpp.
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
  // True when freed blocks stay reserved until release_cache() (a caching allocator).
  virtual bool caches() const { return false; }
  // Hands the cached, unused blocks back (CUDA: emptyCache). Call it before reset_peak() when a
  // measurement's reserved peak must be its own, not the previous one's cache. Nothing on CPU.
  virtual void release_cache() {}
};

// The four calls of a caching allocator that CachingAllocatorMemory needs, for one device.
class CachingAllocatorApi {
 public:
  virtual ~CachingAllocatorApi() = default;
  // Creates the device's context and the allocator (CUDA: set the device, allocate a first tensor).
  virtual void initialise() = 0;
  // The aggregate pool's allocated and reserved bytes, current and peak. LibTorch throws before
  // initialise() ("Invalid device argument 0: did you call init?").
  virtual MemorySnapshot statistics() const = 0;
  virtual void reset_peak() = 0;
  virtual void empty_cache() = 0;
};

// DeviceMemory over a caching allocator. The constructor initialises the allocator and empties
// its cache before any statistic is read, so the first snapshot is a clean baseline.
class CachingAllocatorMemory final : public DeviceMemory {
 public:
  explicit CachingAllocatorMemory(std::unique_ptr<CachingAllocatorApi> api);
  MemorySnapshot snapshot() const override { return api_->statistics(); }
  void reset_peak() override { api_->reset_peak(); }
  bool caches() const override { return true; }
  void release_cache() override { api_->empty_cache(); }

 private:
  std::unique_ptr<CachingAllocatorApi> api_;
};

// The tracker for `device`. For CPU this installs the tracking allocator on first use (call it
// before creating the model so weights are counted). For CUDA it needs a CUDA LibTorch;
// otherwise InputError.
std::unique_ptr<DeviceMemory> memory_for(const torch::Device& device);

// Installs the CPU tracking allocator (idempotent). Returns false if another allocator with a
// higher priority is already installed.
bool install_cpu_tracking_allocator();

}  // namespace gaccum::engine
