// Unit tests for the CPU tracking allocator: byte-exact counts for weights, gradients and Adam
// state, hand-computed.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "engine/memory_tracker.hpp"
#include "workloads/optimizer.hpp"
#include "workloads/workload.hpp"

using namespace gaccum;

TEST_CASE("tracking allocator counts a Linear(1024,1024) exactly", "[memory]") {
  auto mem = engine::memory_for(torch::Device("cpu"));
  auto before = mem->snapshot().allocated;
  torch::nn::Linear lin(1024, 1024);
  // (1024*1024 + 1024) floats = 4,198,400 bytes (docs/DESIGN.md, facts checked).
  CHECK(mem->snapshot().allocated - before == 4198400);
  mem->reset_peak();
  { auto t = torch::empty({1000}, torch::kFloat32); CHECK(mem->snapshot().peak_allocated - mem->snapshot().allocated == 0); }
  CHECK(mem->snapshot().peak_allocated - mem->snapshot().allocated == 4000);
  auto empty = torch::empty({0});
  CHECK(empty.numel() == 0);
}

TEST_CASE("weights, gradients and Adam state are exact multiples of the parameter bytes", "[memory]") {
  auto mem = engine::memory_for(torch::Device("cpu"));
  auto base = mem->snapshot().allocated;
  workloads::WorkloadConfig cfg;
  cfg.name = "gpt-tiny";
  auto w = workloads::make_workload(cfg);
  const Bytes P = w->identity().param_bytes;
  const auto weights = mem->snapshot().allocated - base;
  CHECK(weights == P);  // gpt has no buffers: live bytes after construction are the parameters
  auto params = w->parameters();
  auto before_grads = mem->snapshot().allocated;
  workloads::zero_grad(params);
  CHECK(mem->snapshot().allocated - before_grads == P);
  auto opt = workloads::make_optimizer(params, Optimizer::adam, 1e-3);
  auto b = w->make_batch(1, 0, 2);
  auto loss = w->loss_sum(w->forward(b), b);
  loss.backward();
  b = {};
  loss = torch::Tensor();
  auto before_step = mem->snapshot().allocated;
  opt->step();
  CHECK(mem->snapshot().allocated - before_step == 2 * P);  // exp_avg + exp_avg_sq
}
