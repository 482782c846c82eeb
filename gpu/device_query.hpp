// What: what the CUDA runtime and NCCL say about this machine: devices (name, memory, SMs,
//       capability), runtime/driver versions, NCCL's version from ncclGetVersion.
// Why: `gaccum-tune version` and profile.json record the hardware; the answer "no device" (for
//      example "driver version is insufficient" on a machine with the toolkit but no GPU) is a
//      normal answer, not an error. Built from device_query.cu when the CUDA toolkit is found,
//      otherwise from device_query_none.cpp.
#pragma once

#include <string>
#include <vector>

#include "core/units.hpp"

namespace gaccum::gpu {

struct DeviceInfo {
  int index = 0;
  std::string name;
  Bytes total_memory = 0;
  int sm_count = 0;
  int capability_major = 0, capability_minor = 0;
};

struct CudaReport {
  bool compiled = false;           // built with the CUDA toolkit and NCCL
  std::string runtime_version;     // e.g. "13.0"
  std::string driver_version;      // e.g. "13.0", empty when no driver
  std::string nccl_version;        // from ncclGetVersion, e.g. "2.28.9"
  std::vector<DeviceInfo> devices;
  std::string no_device_reason;    // why devices is empty (runtime's error string)
};

CudaReport query_cuda();

}  // namespace gaccum::gpu
