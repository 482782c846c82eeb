// Unit tests for the CPU tracking allocator: byte-exact counts for weights, gradients and Adam
// state, hand-computed. And the caching-allocator rules of the CUDA path, run on CPU against a
// fake allocator (FakeCachingAllocator below): the allocator initialised before its statistics
// are read, the cache emptied before a sweep point's peak is reset, the cap held against
// reserved bytes as well as allocated ones.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/error.hpp"
#include "engine/memory_tracker.hpp"
#include "profiler/memory_sweep.hpp"
#include "workloads/optimizer.hpp"
#include "workloads/workload.hpp"

using namespace gaccum;

namespace {

// A caching allocator as CUDA's behaves, over the CPU tracking allocator's byte counts: memory is
// reserved in segments of `segment` bytes, freed blocks stay reserved until empty_cache(), the
// reserved peak only moves with reset_peak(), and every statistic read before initialise()
// throws LibTorch's error. Calls are logged in order.
class FakeCachingAllocator final : public engine::CachingAllocatorApi {
 public:
  FakeCachingAllocator(Bytes segment, std::vector<std::string>* log)
      : cpu_(engine::memory_for(torch::Device("cpu"))), segment_(segment), log_(log) {}
  void initialise() override {
    log_->push_back("initialise");
    initialised_ = true;
  }
  engine::MemorySnapshot statistics() const override {
    if (!initialised_) throw std::runtime_error("Invalid device argument 0: did you call init?");
    update();
    auto s = cpu_->snapshot();
    s.reserved = held_;
    s.peak_reserved = peak_reserved_;
    return s;
  }
  void reset_peak() override {
    log_->push_back("reset_peak");
    update();
    cpu_->reset_peak();
    stale_peak_ = 0;
    peak_reserved_ = held_;
  }
  void empty_cache() override {
    log_->push_back("empty_cache");
    update();
    const auto s = cpu_->snapshot();
    held_ = round_up(s.allocated);
    stale_peak_ = s.peak_allocated;  // peaks up to here were before the release
  }

 private:
  Bytes round_up(Bytes b) const { return (b + segment_ - 1) / segment_ * segment_; }
  // The segments a new allocated peak needed stay reserved.
  void update() const {
    const Bytes peak = cpu_->snapshot().peak_allocated;
    if (peak > stale_peak_) held_ = std::max(held_, round_up(peak));
    peak_reserved_ = std::max(peak_reserved_, held_);
  }
  std::unique_ptr<engine::DeviceMemory> cpu_;
  Bytes segment_;
  std::vector<std::string>* log_;
  bool initialised_ = false;
  mutable Bytes held_ = 0, peak_reserved_ = 0;
  Bytes stale_peak_ = 0;
};

std::unique_ptr<engine::DeviceMemory> fake_cuda_memory(Bytes segment, std::vector<std::string>* log) {
  return std::make_unique<engine::CachingAllocatorMemory>(std::make_unique<FakeCachingAllocator>(segment, log));
}

workloads::WorkloadConfig gpt_tiny() {
  workloads::WorkloadConfig c;
  c.name = "gpt-tiny";
  c.device = "cpu";
  return c;
}

constexpr Bytes kMiB = 1024 * 1024;

}  // namespace

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

TEST_CASE("the caching allocator is initialised and emptied before its first statistic is read", "[memory][cuda]") {
  std::vector<std::string> log;
  FakeCachingAllocator raw(2 * kMiB, &log);
  CHECK_THROWS_WITH(raw.statistics(), Catch::Contains("did you call init?"));  // the fake is as strict as LibTorch

  log.clear();
  auto mem = fake_cuda_memory(2 * kMiB, &log);
  CHECK(log == std::vector<std::string>{"initialise", "empty_cache"});
  CHECK(mem->caches());
  const auto s = mem->snapshot();
  CHECK(s.reserved % (2 * kMiB) == 0);
  CHECK(s.reserved >= s.allocated);
  mem->release_cache();
  mem->reset_peak();
  CHECK(log == std::vector<std::string>{"initialise", "empty_cache", "empty_cache", "reset_peak"});
  // The CPU tracker caches nothing: release_cache is a no-op and reserved == allocated.
  auto cpu = engine::memory_for(torch::Device("cpu"));
  CHECK_FALSE(cpu->caches());
  cpu->release_cache();
  CHECK(cpu->snapshot().reserved == cpu->snapshot().allocated);
}

TEST_CASE("a sweep point's reserved peak is its own: the cache is emptied before the peak is reset", "[memory][cuda]") {
  torch::set_num_threads(1);
  std::vector<std::string> log;
  profiler::MemorySweep sweep(gpt_tiny(), Optimizer::adam, 1e-3, fake_cuda_memory(2 * kMiB, &log));
  log.clear();
  const auto small_first = sweep.measure(1, 1);
  const auto big = sweep.measure(64, 1);
  const auto small_after = sweep.measure(1, 1);
  REQUIRE(small_first);
  REQUIRE(big);
  REQUIRE(small_after);
  // Each point: cache released, then the peak reset, then the window (whose phase boundaries,
  // gpt being a staged model, reset the peak again: runs of reset_peak collapsed here).
  std::vector<std::string> collapsed;
  for (const auto& e : log)
    if (collapsed.empty() || e != "reset_peak" || collapsed.back() != "reset_peak") collapsed.push_back(e);
  CHECK(collapsed == std::vector<std::string>{"empty_cache", "reset_peak", "empty_cache", "reset_peak", "empty_cache",
                                              "reset_peak"});
  // gpt-tiny at micro_batch 64 holds tens of MiB of activations: more segments than at 1.
  CHECK(big->reserved_peak > small_first->reserved_peak + 4 * kMiB);
  // Without the release, micro_batch 1 after 64 would report 64's cached segments.
  CHECK(small_after->reserved_peak == small_first->reserved_peak);
  CHECK(small_after->peak == small_first->peak);
  for (const auto& p : {*small_first, *big, *small_after}) {
    CHECK(p.reserved_peak % (2 * kMiB) == 0);
    CHECK(p.reserved_peak >= p.peak);
  }
}

TEST_CASE("the cap holds reserved bytes too: allocated under it, the segments over it, does not fit", "[memory][cuda]") {
  torch::set_num_threads(1);
  std::vector<std::string> log;
  // 64 MiB segments: gpt-tiny at micro_batch 1 allocates ~10 MiB but reserves a whole segment.
  profiler::MemorySweep sweep(gpt_tiny(), Optimizer::adam, 1e-3, fake_cuda_memory(64 * kMiB, &log));
  const auto p = sweep.measure(1, 1);
  REQUIRE(p);
  REQUIRE(p->peak < 32 * kMiB);
  REQUIRE(p->reserved_peak >= 64 * kMiB);
  profiler::MemorySweepOptions o;
  o.cap = 48 * kMiB;
  o.micro_batches = {1};
  CHECK_THROWS_MATCHES(sweep.run(o), InfeasibleError,
                       Catch::Matchers::Predicate<InfeasibleError>([](const InfeasibleError& e) {
                         const std::string w = e.what();
                         return w.find("does not fit even at micro_batch 1") != std::string::npos &&
                                w.find("reserved by the caching allocator") != std::string::npos;
                       }));
  o.cap = 128 * kMiB;  // both within the cap
  const auto r = sweep.run(o);
  CHECK(r.max_fitting == 1);
}
