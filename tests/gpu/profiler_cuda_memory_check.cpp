// GPU check (label gpu), built only against a CUDA LibTorch: the profiler's CUDA memory tracker
// (engine::memory_for(cuda)) reports exactly the c10::cuda caching allocator's counters, and a
// known allocation moves them by its (512-byte rounded) size. Exits 77 (CTest: skipped) with a
// message when no CUDA device answers.
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/torch.h>

#include <cstdio>

#include "engine/memory_tracker.hpp"

int main() {
  if (!torch::cuda::is_available() || torch::cuda::device_count() == 0) {
    std::printf("SKIP: no CUDA device answers (torch::cuda::is_available() is false)\n");
    return 77;
  }
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    failures += ok ? 0 : 1;
  };
  const torch::Device dev("cuda:0");
  auto mem = gaccum::engine::memory_for(dev);
  mem->reset_peak();
  const auto before = mem->snapshot();
  auto t = torch::empty({1 << 20}, torch::TensorOptions().dtype(torch::kFloat32).device(dev));  // 4 MiB
  const auto after = mem->snapshot();
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  check(after.allocated == static_cast<gaccum::Bytes>(stats.allocated_bytes[0].current), "allocated == c10 counter");
  check(after.peak_allocated == static_cast<gaccum::Bytes>(stats.allocated_bytes[0].peak), "peak == c10 counter");
  check(after.reserved == static_cast<gaccum::Bytes>(stats.reserved_bytes[0].current), "reserved == c10 counter");
  check(after.allocated - before.allocated == 4u << 20, "a 4 MiB tensor adds 4 MiB allocated");
  t = torch::Tensor();
  mem->reset_peak();
  check(mem->snapshot().peak_allocated == before.allocated, "reset_peak restarts at the current level");
  std::printf("%s\n", failures ? "FAIL" : "OK");
  return failures ? 1 : 0;
}
