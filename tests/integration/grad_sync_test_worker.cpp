// A rank process for the gradient-synchroniser integration tests: a three-layer network with
// small bucket caps (first 256 B, then 1 KiB: three buckets), k micro-steps per window with
// per-rank data, two windows. Checks on every rank: the synced gradient equals the average over
// ranks of the sum over micro-steps (computed locally with torch::autograd::grad), collectives
// per micro-step and launched from the hooks as the strategy defines them, buffers = gradient
// bytes, gradients bitwise identical across ranks. Exit 0 when all hold.
// Environment: GACCUM_TEST_STRATEGY (overlap|fused|every-step), GACCUM_TEST_K.
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "comm/communicator.hpp"
#include "comm/grad_sync.hpp"
#include "comm/launcher.hpp"
#include "comm/rank_env.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"

using namespace gaccum;

namespace {

struct Net : torch::nn::Module {
  Net() {
    l1 = register_module("l1", torch::nn::Linear(8, 16));   // 512 + 64 bytes
    l2 = register_module("l2", torch::nn::Linear(16, 16));  // 1024 + 64
    l3 = register_module("l3", torch::nn::Linear(16, 4));   // 256 + 16
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return l3->forward(torch::tanh(l2->forward(torch::tanh(l1->forward(x)))));
  }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
};

torch::Tensor data(int step, int rank, int micro) {
  auto gen = at::detail::createCPUGenerator(static_cast<std::uint64_t>(1000 + 100 * step + 10 * rank + micro));
  return torch::randn({3, 8}, gen);
}

int fail(int rank, const std::string& what, int code) {
  std::cerr << "rank " << rank << ": " << what << "\n";
  return code;
}

int run() {
  const Strategy strategy = parse_strategy(std::getenv("GACCUM_TEST_STRATEGY"));
  const int k = std::atoi(std::getenv("GACCUM_TEST_K"));
  auto ctx = comm::detect_rank_context();
  const int p = ctx.world_size, rank = ctx.rank;
  comm::ConnectOptions o;
  o.timeout = 20;
  auto comm = comm::connect(ctx, o);
  torch::set_num_threads(1);
  torch::manual_seed(42);
  auto net = std::make_shared<Net>();
  auto params = net->parameters();
  comm::GradSync sync(comm.get(), params, strategy, 256, 1024);
  const Count n_buckets = strategy == Strategy::fused ? 1 : 3;
  if (static_cast<Count>(sync.buckets().size()) != n_buckets) return fail(rank, "wrong bucket count", 3);
  if (sync.buffer_bytes() != 1936) return fail(rank, "buffers are not the gradient bytes (1936)", 3);

  for (int step = 0; step < 2; ++step) {
    for (auto& q : params) q.mutable_grad() = torch::zeros_like(q);
    sync.begin_step(k);
    for (int m = 0; m < k; ++m) {
      sync.before_backward(m);
      net->forward(data(step, rank, m)).pow(2).sum().backward();
      sync.after_backward(m);
    }
    // Expected: (1/p) sum_r sum_m grad(loss_rm).
    std::vector<torch::Tensor> expected;
    for (auto& q : params) expected.push_back(torch::zeros_like(q));
    for (int r = 0; r < p; ++r)
      for (int m = 0; m < k; ++m) {
        auto g = torch::autograd::grad({net->forward(data(step, r, m)).pow(2).sum()}, params);
        for (std::size_t i = 0; i < g.size(); ++i) expected[i] += g[i] / double(p);
      }
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!torch::allclose(params[i].grad(), expected[i], 1e-5, 1e-6))
        return fail(rank, "synced gradient differs from the expected average", 4);
    const auto& st = sync.stats();
    std::vector<Count> want(static_cast<std::size_t>(k), 0);
    Count hooked = 0;
    if (strategy == Strategy::overlap) want.back() = n_buckets, hooked = n_buckets;
    if (strategy == Strategy::fused) want.back() = 1;
    if (strategy == Strategy::every_step) want.assign(static_cast<std::size_t>(k), n_buckets), hooked = n_buckets * k;
    if (st.collectives_per_micro != want) return fail(rank, "collectives per micro-step differ from the strategy", 5);
    if (st.launched_in_backward != hooked) return fail(rank, "collectives launched from hooks differ", 5);
    if (st.collectives != sync.expected_collectives(k)) return fail(rank, "expected_collectives mismatch", 5);
    if (!(st.comm_total > 0) || !(st.exposed > 0)) return fail(rank, "no communication time recorded", 5);
    std::uint64_t h = fnv1a64("");
    for (auto& q : params) {
      auto c = q.grad().contiguous();
      h = fnv1a64(std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()), h);
    }
    for (const auto& other : comm->allgather_strings(hex64(h)))
      if (other != hex64(h)) return fail(rank, "gradients differ between ranks", 6);
  }
  comm->barrier();
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const RuntimeFailure& e) {
    std::cerr << e.what() << "\n";
    return comm::kExitPeerLost;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 7;
  }
}
