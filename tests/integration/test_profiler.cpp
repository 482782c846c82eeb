// Integration tests for the profiler: real rank processes (gaccum-tune `_worker --role
// profile-rank`) over Gloo on loopback, and a full short `gaccum-tune profile` run whose
// profile.json loads back. Kept short for CI (2 cores): tiny iteration counts and sizes.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "comm/launcher.hpp"
#include "core/atomic_file.hpp"
#include "core/buckets.hpp"
#include "core/json_fields.hpp"
#include "core/profile.hpp"
#include "engine/rank_job.hpp"
#include "profiler/rank_worker.hpp"

using namespace gaccum;
using namespace gaccum::profiler;
namespace fs = std::filesystem;

static fs::path fresh_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / fmt::format("gaccum_test_{}_{}", name, ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST_CASE("2 Gloo ranks allreduce the sweep, buckets and fused gradient correctly", "[profiler][integration]") {
  RankPlan plan;
  plan.workload.name = "mlp-small";
  plan.workload.device = "cpu";
  plan.threads_per_rank = 1;
  plan.warmup = 0;
  plan.iters = 2;
  plan.comm_warmup = 1;
  plan.comm_iters = 4;
  plan.micro_batches = {2};
  plan.sizes = {4 * KiB, 64 * KiB, 1 * MiB};
  // mlp-small's DDP buckets (reverse order, 1 MiB first cap).
  std::vector<Bytes> tensors{256 * 512 * 4, 512 * 4, 512 * 512 * 4, 512 * 4, 512 * 10 * 4, 10 * 4};
  for (const auto& b : assign_buckets(tensors)) plan.buckets.push_back(b.bytes);
  plan.fused = 399370 * 4;
  plan.timeout = 30;
  // The rank group as profile launches it: one engine::RankJob (scratch dir, args, error files).
  engine::RankJob job;
  job.role = kProfileRankRole;
  job.args = plan.to_json();
  job.world_size = 2;
  job.deadline = 120;
  job.executable = GACCUM_TUNE_BIN;
  std::vector<RankFile> files;
  std::string log0;
  auto res = engine::run_rank_job(job, [&](const std::string& d, const engine::RankJobOutcome& o) {
    log0 = read_file(rank_log_path(d, 0), "log");
    if (o.ok)
      for (int r = 0; r < 2; ++r) files.push_back(read_rank_file(engine::rank_result_path(d, r)));
  });
  INFO(res.failure << " | rank 0 log: " << log0);
  REQUIRE(res.ok);
  CHECK(res.exit_code == 0);
  REQUIRE(files.size() == 2);
  auto r0 = files[0];
  auto r1 = files[1];
  CHECK(r0.world_size == 2);
  CHECK(r1.rank == 1);
  CHECK(r0.threads == 1);
  const auto& ar = r0.results.allreduce;
  // 3 sweep sizes + distinct bucket sizes + 1 fused.
  std::set<Bytes> distinct(plan.buckets.begin(), plan.buckets.end());
  REQUIRE(ar.size() == 3 + distinct.size() + 1);
  for (const auto& a : ar) {
    INFO(a.tag << " " << a.bytes);
    CHECK(a.backend == "gloo");
    CHECK(a.world_size == 2);
    CHECK(a.wrong == 0);
    CHECK(a.samples.size() == 4);
    CHECK(a.time > 0);
    CHECK(a.algbw == Approx(double(a.bytes) / a.time));
    CHECK(a.busbw == Approx(a.algbw));  // 2(p-1)/p = 1 at p = 2
  }
  CHECK(ar.front().tag == "sweep");
  CHECK(ar.back().tag == "fused");
  CHECK(ar.back().bytes == plan.fused);
  // Reduce-scatter and all-gather over the same messages, correct, busbw = algbw (p-1)/p.
  const auto& co = r0.results.collectives;
  REQUIRE(co.size() == 2 * ar.size());
  for (const auto& c : co) {
    INFO(c.op << " " << c.tag << " " << c.bytes);
    CHECK((c.op == "reduce_scatter" || c.op == "all_gather"));
    CHECK(c.backend == "gloo");
    CHECK(c.wrong == 0);
    CHECK(c.bytes % 8 == 0);  // a multiple of 4 bytes x 2 ranks
    CHECK(c.samples.size() == 4);
    CHECK(c.time > 0);
    CHECK(c.busbw == Approx(c.algbw / 2));  // (p-1)/p = 1/2 at p = 2
  }
  CHECK(co.front().method == "alltoall+local-sum");
  CHECK(co.back().op == "all_gather");
  CHECK(co.back().method == "alltoall-staged");  // as the runner's sharded plans run it
  // Both ranks hold the same cross-rank reduced numbers.
  REQUIRE(r1.results.allreduce.size() == ar.size());
  for (size_t i = 0; i < ar.size(); ++i) CHECK(r1.results.allreduce[i].samples == ar[i].samples);
  // Compute at 2 concurrent ranks, optimizer, overlap.
  REQUIRE(r0.results.compute.size() == 1);
  CHECK(r0.results.compute[0].concurrent_ranks == 2);
  CHECK(r0.results.compute[0].micro_step.samples.size() == 2);
  CHECK(r0.results.compute[0].micro_step.median >= r0.results.compute[0].backward.median);
  REQUIRE(r0.results.optimizer.size() == 1);
  REQUIRE(r0.results.overlap.size() == 1);
  CHECK(r0.results.overlap[0].micro_batch == 2);
  CHECK(r0.results.overlap[0].overlapped > 0);
}

TEST_CASE("a short gaccum-tune profile run writes a complete, loadable profile.json", "[profiler][integration]") {
  auto dir = fresh_dir("profile_cli");
  const auto out = (dir / "p.json").string();
  const auto log = (dir / "log.txt").string();
  const std::string cmd = fmt::format(
      "{} profile --workload mlp-small --device cpu --micro-batches 1,4 --ranks 1,2 --warmup 1 --iters 2 "
      "--comm-warmup 1 --comm-iters 3 --sizes 4K-64K*4 --grad-norm-batches 3 -o {} > {} 2>&1",
      GACCUM_TUNE_BIN, out, log);
  const int rc = std::system(cmd.c_str());
  INFO(read_file(log, "log"));
  REQUIRE(rc == 0);
  auto p = load_profile(out);
  CHECK(p.schema_version == kProfileSchemaVersion);
  CHECK(p.workload.name == "mlp-small");
  CHECK(p.workload.param_bytes == 399370 * 4);
  CHECK(p.hardware.device_kind == "cpu");
  CHECK(p.hardware.threads_per_rank == 1);
  CHECK(p.hardware.device_memory == 96 * MiB);
  CHECK(p.versions.libtorch.size() > 0);
  CHECK(p.settings.ranks == std::vector<Count>{1, 2});
  REQUIRE(p.memory.size() == 2);
  CHECK(p.memory[0].weights == 399370 * 4 + 10 * 256 * 8);  // + the data stream's teacher
  CHECK(p.memory[0].optimizer_state == 2 * 399370 * 4);
  // An MLP's window peak at small micro_batch is set by Adam's step temporaries (flat in b);
  // growth with micro_batch is checked on gpt-tiny in unit_profiler.
  CHECK(p.memory[1].activations >= p.memory[0].activations);
  CHECK(p.memory[1].peak == p.memory[1].weights + p.memory[1].gradients + p.memory[1].optimizer_state +
                               p.memory[1].activations);
  CHECK(p.max_micro_batch_fitting == 4);
  // compute: 2 sizes x 2 rank counts; optimizer per rank count.
  CHECK(p.compute.size() == 4);
  CHECK(p.optimizer.size() == 2);
  // allreduce only at world_size 2: 4K 16K 64K + buckets + fused, all correct.
  REQUIRE(p.allreduce.size() >= 4);
  for (const auto& a : p.allreduce) {
    CHECK(a.world_size == 2);
    CHECK(a.wrong == 0);
  }
  REQUIRE(p.collectives.size() == 2 * p.allreduce.size());
  for (const auto& c : p.collectives) CHECK(c.wrong == 0);
  CHECK(p.schema_version == 2);
  CHECK(p.overlap.size() == 1);
  REQUIRE(p.grad_norms.size() == 2);
  CHECK(p.grad_norms[0].sq_norms.size() == 3);
  // Adaptive timing (default --ci-target 2%, --max-iters 200): at least --iters samples per point,
  // never more than --max-iters, and each median inside its own 95% interval.
  CHECK(p.settings.ci_target == Approx(0.02));
  CHECK(p.settings.max_iters == 200);
  for (const auto& c : p.compute) {
    CHECK(c.micro_step.samples.size() >= 2);
    CHECK(c.micro_step.samples.size() <= 200);
    CHECK(c.micro_step.ci_lo <= c.micro_step.median);
    CHECK(c.micro_step.ci_hi >= c.micro_step.median);
  }
  for (const auto& o : p.optimizer) CHECK(o.step.samples.size() >= 2);
  // The machine was watched during both rank groups (others_cores is whatever this host did).
  REQUIRE(p.conditions.size() >= 2);
  CHECK(p.conditions[0].phase == "world_size 1 group");
  for (const auto& c : p.conditions) {
    CHECK(c.wall > 0);
    CHECK(c.others_cores >= 0);
    CHECK(c.disturbed == (c.others_cores > kDisturbedOthersCores || c.steal > kDisturbedSteal));
  }
  // The summary went to stdout.
  const auto text = read_file(log, "log");
  CHECK(text.find("# Memory per micro_batch") != std::string::npos);
  CHECK(text.find("busbw") != std::string::npos);
  CHECK(text.find("#wrong") != std::string::npos);
  CHECK(text.find("# Reduce-scatter, gloo world_size 2 (alltoall+local-sum)") != std::string::npos);
  CHECK(text.find("# The machine while measuring") != std::string::npos);
  CHECK(text.find("95% ci") != std::string::npos);
  // A round trip keeps every field.
  CHECK(to_json(profile_from_json(to_json(p), "again")) == to_json(p));
  fs::remove_all(dir);
}
