// What/why: device_query.hpp for builds without the CUDA toolkit (GACCUM_WITH_CUDA=OFF or not
// found): reports that the probes were not compiled, so `version` can say why.
#include "gpu/device_query.hpp"

namespace gaccum::gpu {

CudaReport query_cuda() {
  CudaReport r;
  r.compiled = false;
  r.no_device_reason = "built without the CUDA toolkit (GACCUM_WITH_CUDA=OFF or nvcc/NCCL not found)";
  return r;
}

}  // namespace gaccum::gpu
