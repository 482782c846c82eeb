// What: `mlp`, a multi-layer perceptron classifier: Linear+ReLU blocks, cross-entropy loss.
// Data: x ~ N(0, I) of size `in`; label = argmax of a fixed random linear "teacher" applied to x,
//       replaced by a uniform label with probability 0.1 (a learnable task with label noise, so
//       the gradient noise scale is meaningful).
// Parameters: sum over layers of (fan_in * fan_out + fan_out), widths in -> hidden... -> classes.
#include <torch/torch.h>

#include "workloads/module_workload.hpp"
#include "workloads/synthetic_rng.hpp"

namespace gaccum::workloads {
namespace {

struct MlpNet : torch::nn::Module {
  explicit MlpNet(const std::vector<Count>& widths) {
    for (size_t i = 0; i + 1 < widths.size(); ++i)
      layers.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(widths[i], widths[i + 1])));
  }
  torch::Tensor forward(torch::Tensor x) {
    for (size_t i = 0; i < layers.size(); ++i) {
      x = layers[i]->forward(x);
      if (i + 1 < layers.size()) x = torch::relu(x);
    }
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};

class Mlp final : public ModuleWorkload {
 public:
  Mlp(WorkloadIdentity id, const WorkloadConfig& cfg) : ModuleWorkload(std::move(id), cfg) {
    const auto& h = identity_.hyper;
    in_ = hyper_int(h, identity_.name, "in");
    classes_ = hyper_int(h, identity_.name, "classes");
    std::vector<Count> widths{in_};
    for (auto w : hyper_int_list(h, identity_.name, "hidden")) widths.push_back(w);
    widths.push_back(classes_);
    net_ = std::make_shared<MlpNet>(widths);
    adopt(net_);
    // Fixed teacher [classes, in], N(0,1)/sqrt(in); part of the data stream, not trained.
    teacher_ = torch::empty({classes_, in_}, torch::kFloat64);
    auto* t = teacher_.data_ptr<double>();
    SampleRng rng(0x7eac4e5, 0, 0);
    for (Count i = 0; i < classes_ * in_; ++i) t[i] = rng.normal(static_cast<std::uint64_t>(i)) / std::sqrt(double(in_));
  }

  torch::Tensor forward(const Batch& b) override { return net_->forward(b.input); }

  torch::Tensor loss_sum(const torch::Tensor& out, const Batch& b) const override {
    return torch::nn::functional::cross_entropy(
        loss_precision(out), b.target, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  }

  Batch make_batch(std::uint64_t seed, Count first, Count count) const override {
    auto x = torch::empty({count, in_}, torch::kFloat64);
    auto y = torch::empty({count}, torch::kInt64);
    auto* xp = x.data_ptr<double>();
    auto* yp = y.data_ptr<std::int64_t>();
    const auto* tp = teacher_.data_ptr<double>();
    for (Count s = 0; s < count; ++s) {
      SampleRng rng(seed, static_cast<std::uint64_t>(first + s), 1);
      double* row = xp + s * in_;
      for (Count j = 0; j < in_; ++j) row[j] = rng.normal(static_cast<std::uint64_t>(j));
      Count best = 0;
      double best_v = -1e300;
      for (Count c = 0; c < classes_; ++c) {
        double v = 0;
        for (Count j = 0; j < in_; ++j) v += tp[c * in_ + j] * row[j];
        if (v > best_v) best_v = v, best = c;
      }
      SampleRng noise(seed, static_cast<std::uint64_t>(first + s), 2);
      if (noise.uniform(0) < 0.1) best = static_cast<Count>(noise.below(1, static_cast<std::uint64_t>(classes_)));
      yp[s] = best;
    }
    Batch b;
    b.input = x.to(device_, dtype_);
    b.target = y.to(device_);
    b.samples = count;
    b.loss_terms = count;
    return b;
  }

 private:
  Count in_ = 0, classes_ = 0;
  std::shared_ptr<MlpNet> net_;
  torch::Tensor teacher_;
};

}  // namespace

std::unique_ptr<Workload> make_mlp(WorkloadIdentity id, const WorkloadConfig& cfg) {
  return std::make_unique<Mlp>(std::move(id), cfg);
}

}  // namespace gaccum::workloads
