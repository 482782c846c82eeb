// What: the optimizers a training window ends with ("adam" or "sgd" with momentum 0.9) and a
//       zero_grad that keeps gradient storage allocated (same on LibTorch 1.13 and 2.x).
// Why: the profiler and the runner must allocate the same optimizer state (Adam: two moments =
//      2 x parameter bytes; SGD with momentum: 1 x) so measured and predicted memory agree.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

namespace gaccum::workloads {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params,
                                                        const std::string& name, double lr);
// Optimizer state slots per parameter element: adam 2, sgd 1.
int optimizer_state_slots(const std::string& name);
// Zeroes every existing .grad in place (allocating zero grads for those still undefined), so
// gradient memory is allocated once and stays allocated.
void zero_grad(const std::vector<torch::Tensor>& params);

}  // namespace gaccum::workloads
