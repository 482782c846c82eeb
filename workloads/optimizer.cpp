// What/why: see optimizer.hpp.
#include "workloads/optimizer.hpp"

#include <torch/torch.h>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::workloads {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params, Optimizer optimizer,
                                                        double lr) {
  switch (optimizer) {
    case Optimizer::adam: return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
    case Optimizer::adamw: return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr));
    case Optimizer::sgd: return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).momentum(0.9));
    case Optimizer::lamb: break;
  }
  throw InputError(fmt::format("--optimizer: unknown optimizer '{}': LibTorch has sgd, adam and adamw (run {} as {})",
                               to_string(optimizer), to_string(optimizer), to_string(traits(optimizer).profiled_as)));
}

void zero_grad(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params) {
    auto& g = p.mutable_grad();
    if (g.defined()) {
      g.zero_();
    } else {
      g = torch::zeros_like(p);
    }
  }
}

}  // namespace gaccum::workloads
