// What/why: see optimizer.hpp.
#include "workloads/optimizer.hpp"

#include <torch/torch.h>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::workloads {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params,
                                                        const std::string& name, double lr) {
  if (name == "adam") return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
  if (name == "adamw") return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr));
  if (name == "sgd") return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).momentum(0.9));
  throw InputError(fmt::format("--optimizer: unknown optimizer '{}': expected adam, adamw or sgd", name));
}

int optimizer_state_slots(const std::string& name) {
  if (name == "adam" || name == "adamw") return 2;
  if (name == "sgd") return 1;
  throw InputError(fmt::format("--optimizer: unknown optimizer '{}': expected adam, adamw or sgd", name));
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
