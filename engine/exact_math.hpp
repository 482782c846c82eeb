// What: the math mode of every rank process and of the profiler's own process: fp32 is computed
//       as fp32, without TF32 in cuBLAS matmuls (setFloat32MatmulPrecision "highest") or cuDNN
//       convolutions (setAllowTF32CuDNN false). PyTorch turns cuDNN TF32 on by default, which on
//       Ampere/Hopper changes a CNN's gradients by ~1e-3 relative: validate's gradient checks
//       compare against fp32 tolerances, and the profile must time what validate runs.
//       On CPU the flags exist and do nothing, so the call is made (and tested) everywhere.
// Why: the same conditions in the profile and the run; a gradient check that means fp32.
#pragma once

namespace gaccum::engine {

void use_exact_fp32();
// True when neither cuBLAS nor cuDNN may use TF32 (what use_exact_fp32 sets).
bool exact_fp32_in_use();

}  // namespace gaccum::engine
