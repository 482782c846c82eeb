// Integration tests for comm/: real rank processes over Gloo on loopback, and the launcher's
// handling of ranks that die, abort or hang (bounded time, rank named, nothing left behind).
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>

#include "comm/launcher.hpp"
#include "comm/rank_env.hpp"
#include "core/error.hpp"

using namespace gaccum;
using namespace gaccum::comm;

static LaunchOptions worker(int world, const std::string& mode = "ok", int bad_rank = -1) {
  LaunchOptions o;
  o.argv = {GACCUM_COMM_TEST_WORKER};
  o.world_size = world;
  o.deadline = 60;
  o.grace = 1;
  o.env["GACCUM_TEST_MODE"] = mode;
  o.env["GACCUM_TEST_BAD_RANK"] = std::to_string(bad_rank);
  return o;
}

static bool pid_alive(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST_CASE("2 and 4 Gloo ranks allreduce correctly", "[comm][integration]") {
  for (int world : {2, 4}) {
    auto r = launch_local(worker(world));
    INFO(r.failure);
    CHECK(r.ok);
    CHECK(r.ranks.size() == static_cast<size_t>(world));
  }
}

TEST_CASE("a failing rank ends the run and is named", "[comm][integration]") {
  struct Case {
    const char* mode;
    const char* expect;
  };
  for (auto c : {Case{"exit1", "exited with status 1"}, Case{"abort", "SIGABRT"}, Case{"sigkill", "SIGKILL"}}) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = launch_local(worker(2, c.mode, 1));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(c.mode << ": " << r.failure);
    CHECK_FALSE(r.ok);
    CHECK(r.failed_rank == 1);
    CHECK(r.failure.find("rank 1") != std::string::npos);
    CHECK(r.failure.find(c.expect) != std::string::npos);
    CHECK(secs < 5 + 10);  // collective timeout (5 s) + 10 s
    for (const auto& st : r.ranks) CHECK_FALSE(pid_alive(st.pid));
  }
}

TEST_CASE("a hung rank is ended by the collective timeout of its peers", "[comm][integration]") {
  auto t0 = std::chrono::steady_clock::now();
  auto r = launch_local(worker(2, "hang", 1));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.failure);
  CHECK_FALSE(r.ok);
  CHECK(secs < 5 + 10);
  for (const auto& st : r.ranks) CHECK_FALSE(pid_alive(st.pid));
}

TEST_CASE("a rank that never joins is ended by the deadline", "[comm][integration]") {
  auto o = worker(2, "hang-before-join", 1);
  o.deadline = 8;
  auto t0 = std::chrono::steady_clock::now();
  auto r = launch_local(o);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.failure);
  CHECK_FALSE(r.ok);
  CHECK(secs < 8 + 10);
  for (const auto& st : r.ranks) CHECK_FALSE(pid_alive(st.pid));
}

TEST_CASE("rank context comes from torchrun, Slurm and mpirun variables", "[comm]") {
  auto clear = [] {
    for (const char* k : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                          "GACCUM_STORE", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "SLURM_PROCID",
                          "SLURM_NTASKS", "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                          "PMI_SIZE"})
      ::unsetenv(k);
  };
  clear();
  CHECK_FALSE(detect_rank_context().distributed());
  ::setenv("RANK", "1", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::setenv("MASTER_ADDR", "node0", 1);
  ::setenv("MASTER_PORT", "29500", 1);
  ::setenv("TORCHELASTIC_RUN_ID", "x", 1);
  auto t = detect_rank_context();
  CHECK(t.launcher == "torchrun");
  CHECK(t.rank == 1);
  CHECK(t.world_size == 4);
  CHECK(t.master_addr == "node0");
  CHECK(t.master_port == 29500);
  ::setenv("RANK", "4", 1);
  CHECK_THROWS_AS(detect_rank_context(), InputError);
  clear();
  ::setenv("SLURM_PROCID", "3", 1);
  ::setenv("SLURM_NTASKS", "8", 1);
  ::setenv("MASTER_ADDR", "n1", 1);
  ::setenv("MASTER_PORT", "12345", 1);
  auto s = detect_rank_context();
  CHECK(s.launcher == "slurm");
  CHECK(s.rank == 3);
  CHECK(s.world_size == 8);
  ::unsetenv("MASTER_PORT");
  CHECK_THROWS_WITH(detect_rank_context(), Catch::Contains("MASTER_PORT"));
  clear();
  ::setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  CHECK(detect_rank_context().launcher == "mpirun");
  clear();
}
