// What/why: see cuda_support.hpp. Compiled only against a CUDA LibTorch (GACCUM_TORCH_HAS_CUDA).
//   memory: c10::cuda::CUDACachingAllocator's calls behind engine/memory_tracker.hpp's
//           CachingAllocatorApi: device statistics of the aggregate pool (StatType 0),
//           allocated_bytes and reserved_bytes current/peak; resetPeakStats; emptyCache.
//   clock : at::cuda::CUDAEvent pairs recorded on the current stream, elapsed_time in ms.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>
#include <c10/util/Exception.h>

#include <string>

#include "engine/cuda_support.hpp"

namespace gaccum::engine {
namespace {

constexpr size_t kAggregate = 0;  // StatType::AGGREGATE in every LibTorch version

// The caching allocator's calls for one device (engine/memory_tracker.hpp holds the rules).
class CudaAllocatorApi final : public CachingAllocatorApi {
 public:
  explicit CudaAllocatorApi(c10::DeviceIndex index) : index_(index) {}
  // The caching allocator is initialised lazily, by the first CUDA tensor: before that
  // getDeviceStats throws ("Invalid device argument 0: did you call init?"). One tiny tensor on
  // the device initialises CUDA and the allocator on every LibTorch version (the context calls
  // are named differently across them).
  void initialise() override {
    c10::cuda::set_device(index_);
    (void)torch::empty({1}, torch::TensorOptions().device(torch::kCUDA, index_));
  }
  MemorySnapshot statistics() const override {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_);
    MemorySnapshot s;
    s.allocated = static_cast<Bytes>(stats.allocated_bytes[kAggregate].current);
    s.peak_allocated = static_cast<Bytes>(stats.allocated_bytes[kAggregate].peak);
    s.reserved = static_cast<Bytes>(stats.reserved_bytes[kAggregate].current);
    s.peak_reserved = static_cast<Bytes>(stats.reserved_bytes[kAggregate].peak);
    return s;
  }
  void reset_peak() override { c10::cuda::CUDACachingAllocator::resetPeakStats(index_); }
  void empty_cache() override { c10::cuda::CUDACachingAllocator::emptyCache(); }

 private:
  c10::DeviceIndex index_;
};

class CudaEventClock final : public PhaseClock {
 public:
  explicit CudaEventClock(c10::DeviceIndex index) : index_(index) {}
  void begin() override {
    used_ = 0;
    mark();
  }
  void mark() override {
    c10::cuda::CUDAGuard guard(index_);
    if (used_ == events_.size()) events_.emplace_back(cudaEventDefault);
    events_[used_++].record();
  }
  std::vector<Seconds> intervals() override {
    std::vector<Seconds> out;
    if (used_ == 0) return out;
    events_[used_ - 1].synchronize();
    for (size_t i = 1; i < used_; ++i) out.push_back(static_cast<Seconds>(events_[i - 1].elapsed_time(events_[i])) * 1e-3);
    return out;
  }

 private:
  c10::DeviceIndex index_;
  std::vector<at::cuda::CUDAEvent> events_;
  size_t used_ = 0;
};

}  // namespace

bool cuda_support_compiled() { return true; }

std::unique_ptr<DeviceMemory> cuda_memory(const torch::Device& device) {
  const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
  return std::make_unique<CachingAllocatorMemory>(std::make_unique<CudaAllocatorApi>(index));
}

std::unique_ptr<PhaseClock> cuda_clock(const torch::Device& device) {
  return std::make_unique<CudaEventClock>(device.has_index() ? device.index() : 0);
}

void cuda_release_cache() { c10::cuda::CUDACachingAllocator::emptyCache(); }

Bytes cuda_total_memory(const torch::Device& device) {
  return static_cast<Bytes>(at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0)->totalGlobalMem);
}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  return is_out_of_memory_message(e.what());
}

}  // namespace gaccum::engine
