// What: the LibTorch optimizers a training window ends with (adam, adamw, sgd with momentum 0.9;
//       names and state slots in core/optimizer.hpp) and a
//       zero_grad that keeps gradient storage allocated (same on LibTorch 1.13 and 2.x).
// Why: the profiler and the runner must allocate the same optimizer state (Adam: two moments =
//      2 x parameter bytes; SGD with momentum: 1 x) so measured and predicted memory agree.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "core/optimizer.hpp"

namespace gaccum::workloads {

// InputError naming --optimizer for one LibTorch lacks (lamb; callers run traits(o).profiled_as).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params, Optimizer optimizer,
                                                        double lr);
// Zeroes every existing .grad in place (allocating zero grads for those still undefined), so
// gradient memory is allocated once and stays allocated.
void zero_grad(const std::vector<torch::Tensor>& params);

}  // namespace gaccum::workloads
