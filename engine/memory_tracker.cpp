// What/why: see memory_tracker.hpp. The CPU tracking allocator keeps the requested size in a
// 64-byte header in front of the data; the DataPtr's context is the data pointer itself (oneDNN
// asserts dptr.get() == dptr.get_context()), and the deleter accepts nullptr (zero-size
// allocations). Allocator API differences between LibTorch 1.13 and 2.x are handled here.
#include "engine/memory_tracker.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "core/error.hpp"
#include "engine/cuda_support.hpp"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define GACCUM_ALLOCATOR_CONST
#define GACCUM_ALLOCATOR_HAS_COPY_DATA 1
#else
#define GACCUM_ALLOCATOR_CONST const
#define GACCUM_ALLOCATOR_HAS_COPY_DATA 0
#endif

namespace gaccum::engine {
namespace {

constexpr std::size_t kAlign = 64;  // LibTorch's CPU alignment; also the header size

std::atomic<std::int64_t> g_current{0};
std::atomic<std::int64_t> g_peak{0};

void raise_peak(std::int64_t now) {
  auto p = g_peak.load(std::memory_order_relaxed);
  while (now > p && !g_peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
}

void tracking_delete(void* data) {
  if (!data) return;
  auto* base = static_cast<char*>(data) - kAlign;
  std::size_t n;
  std::memcpy(&n, base, sizeof(n));
  g_current.fetch_sub(static_cast<std::int64_t>(n), std::memory_order_relaxed);
  std::free(base);
}

class TrackingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) GACCUM_ALLOCATOR_CONST override {
    if (n == 0) return {nullptr, nullptr, &tracking_delete, c10::Device(c10::DeviceType::CPU)};
    void* base = nullptr;
    if (posix_memalign(&base, kAlign, n + kAlign) != 0 || !base) throw std::bad_alloc();
    std::memcpy(base, &n, sizeof(n));
    void* data = static_cast<char*>(base) + kAlign;
    raise_peak(g_current.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed) +
               static_cast<std::int64_t>(n));
    return {data, data, &tracking_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &tracking_delete; }
#if GACCUM_ALLOCATOR_HAS_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif
};

TrackingCpuAllocator g_allocator;

class CpuMemory final : public DeviceMemory {
 public:
  MemorySnapshot snapshot() const override {
    MemorySnapshot s;
    s.allocated = static_cast<Bytes>(std::max<std::int64_t>(0, g_current.load()));
    s.peak_allocated = static_cast<Bytes>(std::max<std::int64_t>(0, g_peak.load()));
    s.reserved = s.allocated;
    s.peak_reserved = s.peak_allocated;
    return s;
  }
  void reset_peak() override { g_peak.store(g_current.load()); }
};

}  // namespace

bool install_cpu_tracking_allocator() {
  static const bool installed = [] {
    // Freed blocks stay in the heap instead of going back to the kernel, and blocks up to
    // 32 MiB come from it (not from fresh mmap pages), as a GPU's caching allocator keeps its
    // blocks: otherwise every iteration page-faults its activations in again, and how often
    // glibc trims decides the time (measured: gpt-tiny micro_batch 16 took 56.7 ms with the
    // defaults, 48.8 ms with the heap kept). The profiler and the runner both install this
    // allocator, so they measure under the same rule. Byte counts are unaffected.
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    c10::SetCPUAllocator(&g_allocator, /*priority=*/100);
    return c10::GetCPUAllocator() == &g_allocator;
  }();
  return installed;
}

CachingAllocatorMemory::CachingAllocatorMemory(std::unique_ptr<CachingAllocatorApi> api) : api_(std::move(api)) {
  api_->initialise();
  api_->empty_cache();  // the initialising tensor's block: the baseline starts with nothing cached
}

std::unique_ptr<DeviceMemory> memory_for(const torch::Device& device) {
  if (device.is_cpu()) {
    if (!install_cpu_tracking_allocator())
      throw RuntimeFailure("memory: could not install the CPU tracking allocator (another allocator has priority)");
    return std::make_unique<CpuMemory>();
  }
  if (device.is_cuda()) return cuda_memory(device);  // InputError on a CPU-only LibTorch
  throw InputError(fmt::format("--device: no memory accounting for device '{}'", device.str()));
}

bool is_out_of_memory_message(std::string_view what) {
  return is_device_out_of_memory_message(what);  // core/error.hpp: the one list
}

}  // namespace gaccum::engine
