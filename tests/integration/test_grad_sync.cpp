// Integration tests for comm/grad_sync: real Gloo rank processes run each strategy with three
// buckets and check the synced gradients, the collectives and the buffers (see
// grad_sync_test_worker.cpp).
#include <catch2/catch.hpp>

#include "comm/launcher.hpp"

using namespace gaccum;

static comm::LaunchResult run_sync(const char* strategy, int world, int k) {
  comm::LaunchOptions o;
  o.argv = {GACCUM_GRAD_SYNC_WORKER};
  o.world_size = world;
  o.deadline = 120;
  o.grace = 1;
  o.env["GACCUM_TEST_STRATEGY"] = strategy;
  o.env["GACCUM_TEST_K"] = std::to_string(k);
  return comm::launch_local(o);
}

TEST_CASE("gradient sync strategies over 2 and 3 Gloo ranks", "[comm][integration]") {
  for (const char* s : {"overlap", "fused", "every-step"})
    for (int world : {2, 3}) {
      auto r = run_sync(s, world, 3);
      INFO(s << " world " << world << ": " << r.failure);
      CHECK(r.ok);
    }
}

TEST_CASE("gradient sync with one micro-step per window", "[comm][integration]") {
  for (const char* s : {"overlap", "fused", "every-step"}) {
    auto r = run_sync(s, 2, 1);
    INFO(s << ": " << r.failure);
    CHECK(r.ok);
  }
}
