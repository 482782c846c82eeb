// What/why: see device_query.hpp. The project's first CUDA/NCCL translation unit; every runtime
// call is checked and a failure becomes "no device" with the runtime's own reason.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "gpu/device_query.hpp"

namespace gaccum::gpu {
namespace {

std::string version_string(int v) {
  // CUDA encodes 1000*major + 10*minor.
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

CudaReport query_cuda() {
  CudaReport r;
  r.compiled = true;
  int rt = 0;
  if (cudaRuntimeGetVersion(&rt) == cudaSuccess) r.runtime_version = version_string(rt);
  int drv = 0;
  if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0) r.driver_version = version_string(drv);
  int nv = 0;
  if (ncclGetVersion(&nv) == ncclSuccess) {
    // NCCL >= 2.9: code = major*10000 + minor*100 + patch.
    r.nccl_version = std::to_string(nv / 10000) + "." + std::to_string((nv % 10000) / 100) + "." +
                     std::to_string(nv % 100);
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    r.no_device_reason = cudaGetErrorString(err);
    (void)cudaGetLastError();  // clear the sticky error
    return r;
  }
  if (count == 0) {
    r.no_device_reason = "the CUDA runtime reports 0 devices";
    return r;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    err = cudaGetDeviceProperties(&prop, i);
    if (err != cudaSuccess) {
      r.no_device_reason = std::string("cudaGetDeviceProperties(") + std::to_string(i) + "): " + cudaGetErrorString(err);
      continue;
    }
    DeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.total_memory = prop.totalGlobalMem;
    d.sm_count = prop.multiProcessorCount;
    d.capability_major = prop.major;
    d.capability_minor = prop.minor;
    r.devices.push_back(d);
  }
  return r;
}

}  // namespace gaccum::gpu
