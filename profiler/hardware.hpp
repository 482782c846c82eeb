// What: what profile.json records about the machine and the libraries: host name, CPU model
//       and usable cores (the affinity mask, not the machine's total), GPU name/memory/SMs and
//       driver (gpu/device_query), and the versions of the tool, LibTorch, CUDA, NCCL and Gloo.
// Why: a profile is only meaningful for the hardware and software it was measured on; the
//      model and reports print these so a stale or foreign profile is visible.
#pragma once

#include <string>

#include "core/host.hpp"  // usable_cores
#include "core/profile.hpp"

namespace gaccum::profiler {

std::string cpu_model();
std::string host_name();
// Whether /proc/cpuinfo's first "flags" line lists `flag` (e.g. "avx512_bf16").
bool cpu_has_flag(const std::string& flag);
// `device`: "cpu" or "cuda:N" (resolved). device_memory: the CPU "device" size, or 0 to take the
// GPU's total memory.
HardwareInfo describe_hardware(const std::string& device, int threads_per_rank, Bytes device_memory);
LibraryVersions library_versions();
// The BLAS library this process has mapped (LibTorch's CPU matmuls run in it), resolved through
// symlinks, e.g. /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3; empty if none is found.
// Debian's default alternative is the netlib reference BLAS, several times slower than OpenBLAS.
std::string blas_library();
bool is_reference_blas(const std::string& path);

}  // namespace gaccum::profiler
