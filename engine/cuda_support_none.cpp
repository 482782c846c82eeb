// What/why: cuda_support.hpp for a CPU-only LibTorch (e.g. Debian's): CUDA pieces are absent and
// asking for them is an InputError naming --device; out-of-memory is recognised by LibTorch's
// c10::OutOfMemoryError alone (CPU allocations never raise it in practice).
#include <c10/util/Exception.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "engine/cuda_support.hpp"

namespace gaccum::engine {
namespace {

[[noreturn]] void no_cuda(const torch::Device& device) {
  throw InputError(fmt::format("--device: '{}' needs a CUDA LibTorch; this gaccum-tune was built against a "
                               "CPU-only LibTorch (rebuild with CMAKE_PREFIX_PATH pointing at a CUDA LibTorch)",
                               device.str()));
}

}  // namespace

bool cuda_support_compiled() { return false; }
std::unique_ptr<DeviceMemory> cuda_memory(const torch::Device& device) { no_cuda(device); }
std::unique_ptr<PhaseClock> cuda_clock(const torch::Device& device) { no_cuda(device); }
void cuda_release_cache() {}
Bytes cuda_total_memory(const torch::Device&) { return 0; }

bool is_out_of_memory(const std::exception& e) {
  return dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr || is_out_of_memory_message(e.what());
}

}  // namespace gaccum::engine
