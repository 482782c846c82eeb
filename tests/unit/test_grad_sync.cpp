// Unit tests for comm/grad_hooks and the world_size-1 path of comm/grad_sync: the hook fires
// once per parameter per backward, after .grad holds that backward's contribution (also when
// gradients accumulate), stops after destruction, and does not fire for torch::autograd::grad;
// at world_size 1 the synchroniser holds no buffers and issues nothing.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <map>

#include "comm/grad_hooks.hpp"
#include "comm/grad_sync.hpp"
#include "core/error.hpp"

using namespace gaccum;

namespace {

struct Net : torch::nn::Module {
  Net() {
    a = register_module("a", torch::nn::Linear(3, 4));
    b = register_module("b", torch::nn::Linear(4, 2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return b->forward(torch::tanh(a->forward(x))); }
  torch::nn::Linear a{nullptr}, b{nullptr};
};

}  // namespace

TEST_CASE("gradient-ready hooks fire once per parameter with the accumulated gradient", "[comm][unit]") {
  torch::manual_seed(0);
  auto net = std::make_shared<Net>();
  auto params = net->parameters();
  REQUIRE(params.size() == 4);
  std::map<std::size_t, std::vector<torch::Tensor>> seen;  // index -> .grad copies at hook time
  auto hooks = std::make_unique<comm::GradReadyHooks>(
      params, [&](std::size_t i) { seen[i].push_back(params[i].grad().clone()); });
  auto x1 = torch::randn({5, 3}), x2 = torch::randn({5, 3});
  net->forward(x1).sum().backward();
  REQUIRE(seen.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(seen[i].size() == 1);
    CHECK(torch::equal(seen[i][0], params[i].grad()));
  }
  // Accumulation: the second backward's hook sees the sum of both contributions.
  net->forward(x2).sum().backward();
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(seen[i].size() == 2);
    CHECK(torch::equal(seen[i][1], params[i].grad()));
    CHECK_FALSE(torch::equal(seen[i][1], seen[i][0]));
  }
  // torch::autograd::grad does not run the accumulators: no hook, .grad unchanged.
  auto before = params[0].grad().clone();
  auto g = torch::autograd::grad({net->forward(x1).sum()}, params);
  CHECK(seen[0].size() == 2);
  CHECK(torch::equal(before, params[0].grad()));
  hooks.reset();
  net->forward(x1).sum().backward();
  CHECK(seen[0].size() == 2);
}

TEST_CASE("world_size 1: no buffers, no collectives, gradients untouched", "[comm][unit]") {
  torch::manual_seed(1);
  auto net = std::make_shared<Net>();
  auto params = net->parameters();
  for (auto s : {Strategy::overlap, Strategy::fused, Strategy::every_step}) {
    comm::GradSync sync(nullptr, params, s);
    CHECK(sync.world_size() == 1);
    CHECK(sync.buffer_bytes() == 0);
    CHECK(sync.buckets().empty());
    CHECK(sync.expected_collectives(4) == 0);
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    sync.begin_step(2);
    for (Count m = 0; m < 2; ++m) {
      sync.before_backward(m);
      net->forward(torch::ones({2, 3})).sum().backward();
      sync.after_backward(m);
    }
    auto g = params[0].grad().clone();
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    net->forward(torch::ones({2, 3})).sum().backward();
    CHECK(torch::allclose(g, 2 * params[0].grad()));
    CHECK(sync.stats().collectives == 0);
    CHECK(sync.stats().collectives_per_micro == std::vector<Count>{0, 0});
    CHECK(sync.stats().exposed == 0);
  }
  comm::GradSync sync(nullptr, params, Strategy::overlap);
  sync.begin_step(2);
  CHECK_THROWS_AS(sync.before_backward(2), InputError);
  CHECK_THROWS_AS(sync.begin_step(0), InputError);
}

TEST_CASE("device timer: queued compute before the section is not counted, work queued inside it is", "[comm][unit]") {
  // A device with queued work, on a fake clock: the first sync drains 30 ms of compute queued
  // before the section, the section's host part takes 10 ms, the second sync drains 5 ms of
  // averaging and copies queued inside it. Exposed = 10 + 5 = 15 ms (not 45, not 10).
  using Clock = comm::DeviceTimer::Clock;
  Clock::time_point now{};
  int syncs = 0;
  comm::DeviceTimer timer([&] { now += std::chrono::milliseconds(++syncs == 1 ? 30 : 5); }, [&] { return now; });
  const auto t0 = timer.start();
  CHECK(syncs == 1);
  now += std::chrono::milliseconds(10);
  CHECK(timer.seconds_since(t0) == Approx(0.015).margin(1e-12));
  CHECK(syncs == 2);
  // On the CPU the syncs do nothing and the clock is steady.
  comm::DeviceTimer cpu(torch::Device(torch::kCPU));
  const auto c0 = cpu.start();
  CHECK(cpu.seconds_since(c0) >= 0);
}
