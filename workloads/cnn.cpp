// What: `cnn`, a small residual CNN classifier on image-shaped input [3, image, image]:
//       stem conv3x3(3->c0) + ReLU; per stage i: a residual block (two conv3x3(ci->ci), ReLU)
//       followed, between stages, by a stride-2 conv3x3(ci->c(i+1)); global average pool; Linear.
//       No batch norm: per-micro-batch statistics would make accumulation differ from one pass.
// Data: per-class fixed template images; sample = 0.5 * template[label] + N(0, 1) noise.
// Parameters (channels c0..cn, C classes): stem 27 c0 + c0; each stage 2 (9 ci^2 + ci);
//       each transition 9 ci c(i+1) + c(i+1); head cn C + C.
#include <torch/torch.h>

#include "workloads/module_workload.hpp"
#include "workloads/synthetic_rng.hpp"

namespace gaccum::workloads {
namespace {

torch::nn::Conv2d conv3(Count in, Count out, Count stride = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1));
}

struct ResBlock : torch::nn::Module {
  explicit ResBlock(Count c) {
    c1 = register_module("c1", conv3(c, c));
    c2 = register_module("c2", conv3(c, c));
  }
  torch::Tensor forward(const torch::Tensor& x) { return torch::relu(x + c2->forward(torch::relu(c1->forward(x)))); }
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
};

struct CnnNet : torch::nn::Module {
  CnnNet(const std::vector<Count>& ch, Count classes) {
    stem = register_module("stem", conv3(3, ch[0]));
    for (size_t i = 0; i < ch.size(); ++i) {
      blocks.push_back(register_module("stage" + std::to_string(i), std::make_shared<ResBlock>(ch[i])));
      if (i + 1 < ch.size()) downs.push_back(register_module("down" + std::to_string(i), conv3(ch[i], ch[i + 1], 2)));
    }
    fc = register_module("fc", torch::nn::Linear(ch.back(), classes));
  }
  torch::Tensor forward(const torch::Tensor& img) {  // [b, 3, H, W] -> [b, classes]
    auto x = torch::relu(stem->forward(img));
    for (size_t i = 0; i < blocks.size(); ++i) {
      x = blocks[i]->forward(x);
      if (i < downs.size()) x = torch::relu(downs[i]->forward(x));
    }
    return fc->forward(x.mean({2, 3}));
  }
  torch::nn::Conv2d stem{nullptr};
  std::vector<std::shared_ptr<ResBlock>> blocks;
  std::vector<torch::nn::Conv2d> downs;
  torch::nn::Linear fc{nullptr};
};

class Cnn final : public ModuleWorkload {
 public:
  Cnn(WorkloadIdentity id, const WorkloadConfig& cfg) : ModuleWorkload(std::move(id), cfg) {
    const auto& h = identity_.hyper;
    image_ = hyper_int(h, identity_.name, "image");
    classes_ = hyper_int(h, identity_.name, "classes");
    auto ch = hyper_int_list(h, identity_.name, "channels");
    net_ = std::make_shared<CnnNet>(ch, classes_);
    adopt(net_);
  }

  torch::Tensor forward(const Batch& b) override { return net_->forward(b.input); }

  torch::Tensor loss_sum(const torch::Tensor& out, const Batch& b) const override {
    return torch::nn::functional::cross_entropy(
        loss_precision(out), b.target, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  }

  Batch make_batch(std::uint64_t seed, Count first, Count count) const override {
    const Count pix = 3 * image_ * image_;
    auto x = torch::empty({count, 3, image_, image_}, torch::kFloat64);
    auto y = torch::empty({count}, torch::kInt64);
    auto* xp = x.data_ptr<double>();
    auto* yp = y.data_ptr<std::int64_t>();
    SampleRng templ(0xc22, 0, 0);
    for (Count s = 0; s < count; ++s) {
      SampleRng rng(seed, static_cast<std::uint64_t>(first + s), 4);
      auto label = static_cast<Count>(rng.below(0, static_cast<std::uint64_t>(classes_)));
      yp[s] = label;
      for (Count j = 0; j < pix; ++j)
        xp[s * pix + j] = 0.5 * templ.normal(static_cast<std::uint64_t>(label * pix + j)) + rng.normal(static_cast<std::uint64_t>(j + 1));
    }
    Batch b;
    b.input = x.to(device_, dtype_);
    b.target = y.to(device_);
    b.samples = count;
    b.loss_terms = count;
    return b;
  }

 private:
  Count image_ = 0, classes_ = 0;
  std::shared_ptr<CnnNet> net_;
};

}  // namespace

std::unique_ptr<Workload> make_cnn(WorkloadIdentity id, const WorkloadConfig& cfg) {
  return std::make_unique<Cnn>(std::move(id), cfg);
}

}  // namespace gaccum::workloads
