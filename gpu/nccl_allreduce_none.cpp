// What/why: nccl_allreduce.hpp for builds without the CUDA toolkit/NCCL: the probe reports that
// it was not compiled, so the profiler falls back to c10d (or says why it cannot measure).
#include "gpu/nccl_allreduce.hpp"

#include "core/error.hpp"

namespace gaccum::gpu {

struct NcclAllreduceProbe::Impl {};

bool nccl_probe_compiled() { return false; }

NcclAllreduceProbe::NcclAllreduceProbe(int, int, int, const IdExchange&, Seconds) {
  throw RuntimeFailure("nccl probe: this gaccum-tune was built without the CUDA toolkit/NCCL "
                       "(configure with -DGACCUM_WITH_CUDA=ON where nvcc and NCCL are installed)");
}

NcclAllreduceProbe::~NcclAllreduceProbe() = default;

NcclAllreduceSample NcclAllreduceProbe::run(Bytes, int, int) { return {}; }

}  // namespace gaccum::gpu
