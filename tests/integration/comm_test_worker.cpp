// A rank process for the comm integration tests: joins the job the launcher started, allreduces
// a known tensor and checks the sum, then misbehaves as GACCUM_TEST_MODE asks (exit1, abort,
// sigkill, hang, hang-before-join) so the tests can check the launcher's fault handling.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <torch/torch.h>

#include "comm/communicator.hpp"
#include "comm/launcher.hpp"
#include "core/error.hpp"
#include "comm/rank_env.hpp"

static int run();

int main() {
  try {
    return run();
  } catch (const gaccum::RuntimeFailure& e) {
    std::cerr << e.what() << "\n";
    return gaccum::comm::kExitPeerLost;
  }
}

static int run() {
  using namespace gaccum::comm;
  const char* m = std::getenv("GACCUM_TEST_MODE");
  const std::string mode = m ? m : "ok";
  const char* bad = std::getenv("GACCUM_TEST_BAD_RANK");
  auto ctx = detect_rank_context();
  const bool me = bad && std::atoi(bad) == ctx.rank;
  if (me && mode == "hang-before-join") std::this_thread::sleep_for(std::chrono::hours(1));
  ConnectOptions o;
  o.timeout = 5;
  auto comm = connect(ctx, o);
  auto t = torch::full({1000}, float(ctx.rank + 1));
  comm->allreduce_sum(t);
  const float expect = float(ctx.world_size * (ctx.world_size + 1) / 2);
  if (!torch::allclose(t, torch::full({1000}, expect))) {
    std::cerr << "rank " << ctx.rank << ": wrong allreduce result " << t[0].item<float>() << "\n";
    return 3;
  }
  // rank names "r<rank>" (fmt: GCC 12 at -O3 -std=c++20 flags "r" + std::to_string(r) with a
  // false -Wstringop-overflow).
  auto names = comm->allgather_strings(fmt::format("r{}", ctx.rank));
  for (int r = 0; r < ctx.world_size; ++r)
    if (names[r] != fmt::format("r{}", r)) return 4;
  if (me) {
    if (mode == "exit1") return 1;
    if (mode == "abort") std::abort();
    if (mode == "sigkill") ::kill(::getpid(), SIGKILL);
    if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
  }
  comm->barrier();  // the healthy ranks wait here for the bad one
  return 0;
}
