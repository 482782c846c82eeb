// What: a callback per parameter that fires when autograd has accumulated that parameter's
//       gradient of the current backward pass into its .grad (the moment DDP's Reducer marks a
//       gradient ready).
// Why: the `overlap` and `every-step` strategies launch a bucket's allreduce as soon as all of
//      its gradients are final, while backward is still running. The autograd internals this
//      needs (the parameter's AccumulateGrad node and its post hooks) are not public API; they
//      are the same in LibTorch 1.13 and 2.x (c10d's Reducer uses them in both), and live in
//      grad_hooks.cpp only.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

namespace gaccum::comm {

class GradReadyHooks {
 public:
  // on_ready(i) runs on the autograd thread that accumulated params[i]'s gradient, after
  // params[i].grad() holds it. Hooks stay registered until destruction.
  GradReadyHooks(const std::vector<torch::Tensor>& params, std::function<void(std::size_t)> on_ready);
  ~GradReadyHooks();
  GradReadyHooks(const GradReadyHooks&) = delete;
  GradReadyHooks& operator=(const GradReadyHooks&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gaccum::comm
