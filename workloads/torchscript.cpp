// What: `torchscript`, a user's own model saved with torch.jit.script/trace + save, trained on a
//       synthetic stream: input [b, *input_shape] ~ N(0, 1); target "classes:N" (uniform labels,
//       cross-entropy on [b, N] outputs) or "regression:D" (N(0,1) targets, squared error on
//       [b, D] outputs).
// Identity: the file's content hash joins the workload hash, so a changed model file never
//       matches a stale profile.
#include <torch/script.h>
#include <torch/torch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/parse.hpp"
#include "workloads/synthetic_rng.hpp"
#include "workloads/module_workload.hpp"

namespace gaccum::workloads {
namespace {

class TorchScriptWorkload final : public Workload {
 public:
  TorchScriptWorkload(WorkloadIdentity id, const WorkloadConfig& cfg)
      : Workload(std::move(id), torch::Device(cfg.device), parse_dtype(cfg.dtype)), shape_(cfg.input_shape) {
    if (cfg.torchscript_path.empty()) throw InputError("--torchscript: a TorchScript file is required for workload 'torchscript'");
    if (shape_.empty()) throw InputError("--input-shape: required with --torchscript, e.g. --input-shape 3,32,32");
    auto colon = cfg.target.find(':');
    if (colon == std::string::npos) throw InputError(fmt::format("--target: invalid value '{}': expected classes:N or regression:D", cfg.target));
    kind_ = cfg.target.substr(0, colon);
    width_ = parse_positive_count(cfg.target.substr(colon + 1), "--target");
    if (kind_ != "classes" && kind_ != "regression")
      throw InputError(fmt::format("--target: invalid value '{}': expected classes:N or regression:D", cfg.target));
    std::string content = read_file(cfg.torchscript_path, "--torchscript");
    try {
      module_ = torch::jit::load(cfg.torchscript_path, device_);
    } catch (const c10::Error& e) {
      std::string msg = e.what_without_backtrace();
      auto nl = msg.find('\n');
      if (nl != std::string::npos) msg = msg.substr(0, nl);
      throw InputError(fmt::format("--torchscript: '{}' is not a loadable TorchScript file ({}); save one with "
                                   "torch.jit.script(model).save(path)", cfg.torchscript_path, msg));
    }
    module_.to(dtype_);
    module_.train();
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      if (!p.value.requires_grad()) continue;
      params_.push_back(p.value);
      names_.push_back(p.name);
    }
    if (params_.empty()) throw InputError(fmt::format("--torchscript: '{}' has no trainable parameters", cfg.torchscript_path));
    identity_.hyper["input_shape"] = shape_;
    identity_.hyper["target"] = cfg.target;
    identity_.hyper["file"] = cfg.torchscript_path;
    finish_identity(hex64(fnv1a64(content)));
  }

  std::vector<torch::Tensor> parameters() const override { return params_; }
  std::vector<std::string> parameter_names() const override { return names_; }

  torch::Tensor forward(const Batch& b) override {
    auto out = module_.forward({b.input});
    if (!out.isTensor()) throw InputError("--torchscript: the model's forward() must return one tensor");
    return out.toTensor();
  }

  torch::Tensor loss_sum(const torch::Tensor& out, const Batch& b) const override {
    if (out.dim() != 2 || out.size(0) != b.samples || out.size(1) != width_)
      throw InputError(fmt::format("--target: the model returned shape {} but {}:{} needs [{}, {}]",
                                   fmt::join(out.sizes().vec(), "x"), kind_, width_, b.samples, width_));
    if (kind_ == "classes")
      return torch::nn::functional::cross_entropy(out, b.target,
                                                  torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    return (out - b.target).pow(2).sum();
  }

  Batch make_batch(std::uint64_t seed, Count first, Count count) const override {
    Count per = 1;
    for (auto d : shape_) per *= d;
    std::vector<std::int64_t> dims{count};
    for (auto d : shape_) dims.push_back(d);
    auto x = torch::empty(dims, torch::kFloat64);
    auto* xp = x.data_ptr<double>();
    torch::Tensor y;
    if (kind_ == "classes") {
      y = torch::empty({count}, torch::kInt64);
    } else {
      y = torch::empty({count, width_}, torch::kFloat64);
    }
    for (Count s = 0; s < count; ++s) {
      SampleRng rng(seed, static_cast<std::uint64_t>(first + s), 5);
      for (Count j = 0; j < per; ++j) xp[s * per + j] = rng.normal(static_cast<std::uint64_t>(j + 1));
      if (kind_ == "classes") {
        y.data_ptr<std::int64_t>()[s] = static_cast<std::int64_t>(rng.below(0, static_cast<std::uint64_t>(width_)));
      } else {
        SampleRng trng(seed, static_cast<std::uint64_t>(first + s), 6);
        for (Count j = 0; j < width_; ++j) y.data_ptr<double>()[s * width_ + j] = trng.normal(static_cast<std::uint64_t>(j));
      }
    }
    Batch b;
    b.input = x.to(device_, dtype_);
    b.target = kind_ == "classes" ? y.to(device_) : y.to(device_, dtype_);
    b.samples = count;
    b.loss_terms = count;
    return b;
  }

 private:
  std::vector<Count> shape_;
  std::string kind_;
  Count width_ = 0;
  torch::jit::script::Module module_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> names_;
};

}  // namespace

std::unique_ptr<Workload> make_torchscript(WorkloadIdentity id, const WorkloadConfig& cfg) {
  return std::make_unique<TorchScriptWorkload>(std::move(id), cfg);
}

}  // namespace gaccum::workloads
