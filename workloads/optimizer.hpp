// What: the LibTorch optimizers a training window ends with (adam, adamw, sgd with momentum 0.9;
//       names and state slots in core/optimizer.hpp) and a
//       zero_grad that keeps gradient storage allocated (same on LibTorch 1.13 and 2.x).
// Why: the profiler and the runner must allocate the same optimizer state (Adam: two moments =
//      2 x parameter bytes; SGD with momentum: 1 x) so measured and predicted memory agree.
//
// Mixed precision (bf16/fp16 parameters): the optimizer keeps an fp32 master copy of every
// parameter (4 bytes each, allocated when the optimizer is made) and fp32 state slots, as
// DeepSpeed's and FSDP's mixed-precision optimizers do (ZeRO's K = 12 for Adam). A step walks the
// tensors one at a time: upcast the 2-byte gradient (one tensor's fp32 copy, freed after), step the
// master with LibTorch's own optimizer, round the master back into the parameter. No fp32 copy
// of all gradients is ever held.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "core/optimizer.hpp"

namespace gaccum::workloads {

// InputError naming --optimizer for one LibTorch lacks (lamb; callers run traits(o).profiled_as).
// Parameters in bf16/fp16 get the master-weight optimizer described above.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params, Optimizer optimizer,
                                                        double lr);
// Zeroes every existing .grad in place (allocating zero grads for those still undefined), so
// gradient memory is allocated once and stays allocated.
void zero_grad(const std::vector<torch::Tensor>& params);

}  // namespace gaccum::workloads
