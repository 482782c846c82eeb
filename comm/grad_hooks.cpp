// What/why: see grad_hooks.hpp. A FunctionPostHook on each parameter's AccumulateGrad node runs
// after the node added the incoming gradient into .grad. We keep the nodes alive (a parameter
// only holds a weak reference to its accumulator; a new one would be created otherwise, without
// our hook), and remove the hooks by key on destruction.
// Versions: FunctionPostHook::operator()(outputs, inputs), Node::add_post_hook/del_post_hook
// have the same signatures in LibTorch 1.13 and 2.x; impl::grad_accumulator() returns a
// shared_ptr<Node> in 1.13 and an intrusive_ptr<Node> in 2.x (we keep whichever it is); 2.x adds a
// virtual compiled_args() with a default, which we do not need (no compiled autograd).
#include "comm/grad_hooks.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::comm {
namespace {

class ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(std::size_t index, std::function<void(std::size_t)>* fn) : index_(index), fn_(fn) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    (*fn_)(index_);
    return outputs;
  }

 private:
  std::size_t index_;
  std::function<void(std::size_t)>* fn_;
};

}  // namespace

struct GradReadyHooks::Impl {
  std::function<void(std::size_t)> fn;
  // shared_ptr<Node> in LibTorch 1.13, c10::intrusive_ptr<Node> in 2.x.
  std::vector<decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()))> nodes;
  std::vector<std::uintptr_t> keys;
};

GradReadyHooks::GradReadyHooks(const std::vector<torch::Tensor>& params, std::function<void(std::size_t)> on_ready)
    : impl_(std::make_unique<Impl>()) {
  impl_->fn = std::move(on_ready);
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!params[i].requires_grad() || !params[i].is_leaf())
      throw RuntimeFailure(fmt::format("gradient hooks ({}:{}): parameter {} is not a leaf that requires grad",
                                       __FILE__, __LINE__, i));
    auto node = torch::autograd::impl::grad_accumulator(params[i]);
    if (!node)
      throw RuntimeFailure(fmt::format("gradient hooks ({}:{}): parameter {} has no gradient accumulator", __FILE__,
                                       __LINE__, i));
    impl_->keys.push_back(node->add_post_hook(std::make_unique<ReadyHook>(i, &impl_->fn)));
    impl_->nodes.push_back(std::move(node));
  }
}

GradReadyHooks::~GradReadyHooks() {
  for (std::size_t i = 0; i < impl_->nodes.size(); ++i) impl_->nodes[i]->del_post_hook(impl_->keys[i]);
}

}  // namespace gaccum::comm
