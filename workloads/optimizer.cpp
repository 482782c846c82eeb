// What/why: see optimizer.hpp.
#include "workloads/optimizer.hpp"

#include <torch/torch.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "workloads/workload.hpp"

namespace gaccum::workloads {
namespace {

std::unique_ptr<torch::optim::Optimizer> make_fp32_optimizer(const std::vector<torch::Tensor>& params,
                                                             Optimizer optimizer, double lr) {
  switch (optimizer) {
    case Optimizer::adam:
      return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr));
    case Optimizer::adamw:
      return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr));
    case Optimizer::sgd:
      return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr).momentum(0.9));
    case Optimizer::lamb:
      break;
  }
  throw InputError(fmt::format("--optimizer: unknown optimizer '{}': LibTorch has sgd, adam and adamw (run {} as {})",
                               to_string(optimizer), to_string(optimizer), to_string(traits(optimizer).profiled_as)));
}

// Mixed precision: fp32 masters, one LibTorch optimizer per master so a step needs the fp32
// gradient of one tensor at a time (see optimizer.hpp).
class MasterWeightOptimizer final : public torch::optim::Optimizer {
 public:
  MasterWeightOptimizer(const std::vector<torch::Tensor>& params, gaccum::Optimizer optimizer, double lr)
      : torch::optim::Optimizer(params, std::make_unique<torch::optim::SGDOptions>(lr)), params_(params) {
    torch::NoGradGuard no_grad;
    for (const auto& p : params_) {
      masters_.push_back(p.detach().to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true).requires_grad_(true));
      steppers_.push_back(make_fp32_optimizer({masters_.back()}, optimizer, lr));
    }
  }

  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::Tensor loss;
    if (closure) {
      torch::AutoGradMode enable(true);
      loss = closure();
    }
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const auto& g = params_[i].grad();
      if (!g.defined()) continue;
      masters_[i].mutable_grad() = g.to(torch::kFloat32);  // [numel] fp32, this tensor only
      steppers_[i]->step();
      masters_[i].mutable_grad() = torch::Tensor();
      params_[i].copy_(masters_[i]);
    }
    return loss;
  }

 private:
  std::vector<torch::Tensor> params_;   // the model's 2-byte parameters
  std::vector<torch::Tensor> masters_;  // fp32 copies, same shapes
  std::vector<std::unique_ptr<torch::optim::Optimizer>> steppers_;
};

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params, Optimizer optimizer,
                                                        double lr) {
  const bool reduced = std::any_of(params.begin(), params.end(),
                                   [](const torch::Tensor& p) { return is_reduced_precision(p.scalar_type()); });
  if (reduced) return std::make_unique<MasterWeightOptimizer>(params, optimizer, lr);
  return make_fp32_optimizer(params, optimizer, lr);
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
