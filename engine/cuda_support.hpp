// What: the profiler's few CUDA-LibTorch dependent pieces: caching-allocator memory statistics,
//       CUDA-event phase clocks, out-of-memory detection and cache release. Implemented in
//       cuda_support.cpp, compiled only when LibTorch has CUDA (GACCUM_TORCH_HAS_CUDA, set by
//       CMake); Debian's CPU-only LibTorch has no <c10/cuda/...> headers, so everything that
//       needs them lives in that one file.
// Why: keep the CUDA-only code small and isolated so the rest compiles on any LibTorch.
// Used by profiler/ and runner/ through engine/.
#pragma once

#include <exception>
#include <memory>
#include <string_view>

#include <torch/types.h>

#include "engine/memory_tracker.hpp"
#include "engine/phase_clock.hpp"

namespace gaccum::engine {

// True in builds against a CUDA LibTorch.
bool cuda_support_compiled();

// Only callable when cuda_support_compiled(); otherwise they throw InputError.
std::unique_ptr<DeviceMemory> cuda_memory(const torch::Device& device);
std::unique_ptr<PhaseClock> cuda_clock(const torch::Device& device);
// Returns cached blocks to the driver (after an out-of-memory error).
void cuda_release_cache();
// The device's total memory (cudaDeviceProp::totalGlobalMem); 0 without CUDA support.
Bytes cuda_total_memory(const torch::Device& device);

// True when `e` is LibTorch's out-of-memory error (c10::OutOfMemoryError, or an older
// c10::Error whose message says "out of memory").
bool is_out_of_memory(const std::exception& e);
// The messages that mean the device ran out of memory when no c10::OutOfMemoryError is thrown:
// the caching allocator's "CUDA out of memory", a raw "CUDA error: out of memory" (e.g. from a
// kernel launch or cudaMalloc outside the allocator) and cuBLAS's CUBLAS_STATUS_ALLOC_FAILED
// (its workspace): core/error.hpp's is_device_out_of_memory_message. Shared by both builds
// (memory_tracker.cpp). The memory sweep takes them as its boundary; a host out of memory is not one.
bool is_out_of_memory_message(std::string_view what);

}  // namespace gaccum::engine
