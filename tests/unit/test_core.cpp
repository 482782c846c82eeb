// Unit tests for core: JSON field readers, profile.json round trip and validation, atomic files.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.hpp"
#include "core/backend.hpp"
#include "core/canary.hpp"
#include "core/devices.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/json_fields.hpp"
#include "core/optimizer.hpp"
#include "core/profile.hpp"
#include "core/strategy.hpp"
#include "core/text_lines.hpp"

using namespace gaccum;
using nlohmann::json;

TEST_CASE("JsonFields names the field in every error", "[json]") {
  json j = {{"a", 3}, {"b", "x"}, {"c", 2.5}, {"d", -1}, {"e", "2GiB"}, {"big", 18446744073709551615ull}};
  JsonFields f(j, "job.json");
  CHECK(f.positive("a") == 3);
  CHECK(f.str("b") == "x");
  CHECK_THROWS_WITH(f.positive("c"), Catch::Contains("job.json.c") && Catch::Contains("integer"));
  CHECK_THROWS_WITH(f.positive("d"), Catch::Contains("job.json.d"));
  CHECK(f.bytes("e") == 2147483648ull);
  CHECK_THROWS_WITH(f.positive("big"), Catch::Contains("64 bits"));
  CHECK_THROWS_WITH(f.str("missing"), Catch::Contains("missing required field 'missing'"));
  CHECK_THROWS_WITH(f.str("a"), Catch::Contains("expected a string"));
  json k = {{"known", 1}, {"typo", 2}};
  JsonFields g(k, "x");
  (void)g.positive("known");
  CHECK(g.unknown_keys() == std::vector<std::string>{"typo"});
  CHECK_THROWS_AS(parse_json_text("{\"a\": ", "f.json"), InputError);
}

TEST_CASE("timing stats use linear-interpolated quantiles", "[profile]") {
  auto t = TimingStats::from_samples({5, 1, 3, 2, 4});
  CHECK(t.median == Approx(3));
  CHECK(t.min == 1);
  CHECK(t.max == 5);
  CHECK(t.mean == Approx(3));
  CHECK(t.p10 == Approx(1.4));  // pos 0.4 between 1 and 2
  CHECK(t.p90 == Approx(4.6));
  // Five samples cannot reach 95% (P(B <= 0) = 1/32 > 2.5%): the interval is [min, max].
  CHECK(t.ci_lo == 1);
  CHECK(t.ci_hi == 5);
  CHECK(t.ci_half_width() == Approx((5.0 - 1.0) / (2 * 3)));
}

TEST_CASE("the median's 95% interval comes from binomial order statistics", "[profile]") {
  // n = 6: P(B <= 0) = 1/64 = 1.6% <= 2.5%, P(B <= 1) = 7/64 = 10.9%: l = 1, [x_1, x_6].
  CHECK(median_interval_ranks(6) == std::pair<std::size_t, std::size_t>{0, 5});
  // n = 10: P(B <= 1) = 11/1024 = 1.07%, P(B <= 2) = 56/1024 = 5.5%: l = 2, [x_2, x_9].
  CHECK(median_interval_ranks(10) == std::pair<std::size_t, std::size_t>{1, 8});
  // n = 20: P(B <= 5) = 21700/2^20 = 2.07%, P(B <= 6) = 60460/2^20 = 5.8%: l = 6, [x_6, x_15].
  CHECK(median_interval_ranks(20) == std::pair<std::size_t, std::size_t>{5, 14});
  CHECK(median_interval_ranks(1) == std::pair<std::size_t, std::size_t>{0, 0});
  CHECK(median_interval_ranks(0) == std::pair<std::size_t, std::size_t>{0, 0});
  // 2000 samples stay finite (log space): the interval narrows around the middle, about
  // n/2 -+ 1.96 sqrt(n)/2 = 1000 -+ 43.8.
  const auto big = median_interval_ranks(2000);
  CHECK(big.first >= 954);
  CHECK(big.first <= 958);
  CHECK(big.second == 2000 - 1 - big.first);
  std::vector<Seconds> s;
  for (int i = 1; i <= 10; ++i) s.push_back(i);
  const auto t = TimingStats::from_samples(s);
  CHECK(t.ci_lo == 2);
  CHECK(t.ci_hi == 9);
  CHECK(t.ci_half_width() == Approx(7.0 / 11.0));  // (9 - 2) / (2 x 5.5)
}

TEST_CASE("one threads-per-rank rule for the profiler and the runner", "[core]") {
  CHECK(default_cpu_max_ranks(1) == 1);
  CHECK(default_cpu_max_ranks(2) == 2);
  CHECK(default_cpu_max_ranks(3) == 2);
  CHECK(default_cpu_max_ranks(16) == 4);
  CHECK(default_threads_per_rank(2, 2) == 1);   // this machine: profile ranks 1,2 -> 1 thread
  CHECK(default_threads_per_rank(16, 4) == 4);
  CHECK(default_threads_per_rank(3, 4) == 1);   // never below 1
  CHECK(default_threads_per_rank(8, 0) == 8);
}

TEST_CASE("machine conditions are judged and round-trip through JSON", "[core]") {
  PhaseConditions c;
  c.phase = "world_size 2 group";
  c.wall = 10;
  c.others_cores = 0.8;
  c.load_before = 1.5;
  c.load_after = 2.0;
  c.disturbed = true;
  const auto back = phase_conditions_from_json(to_json(c), "c");
  CHECK(back.phase == c.phase);
  CHECK(back.others_cores == Approx(0.8));
  CHECK(back.disturbed);
  CHECK(describe_disturbance(c) == "other processes kept 0.80 cores busy (load average 1.50 -> 2.00)");
  // A real phase of this process sleeping: it used no CPU itself.
  const MachineActivity watch;
  const auto now = watch.stop("idle");
  CHECK(now.phase == "idle");
  CHECK(now.others_cores >= 0);
  CHECK(now.steal >= 0);
  CHECK(now.steal <= 1);
  CHECK(now.canary_before > 0);  // the reference kernel ran at both ends
  CHECK(now.canary_after > 0);
  CHECK(now.canary_kernel == canary_kernel());
}

TEST_CASE("the reference kernel: readings, drift and the comparison with a reference", "[core]") {
  const auto r = run_canary();
  CHECK(r.min > 0);
  CHECK(r.min <= r.median);
  CHECK(canary_kernel().rfind("matmul 128x128 fp32 x2, 1 thread, ", 0) == 0);
  CHECK(canary_ratio(2e-3, 3e-3) == Approx(1.5));
  CHECK(canary_ratio(0, 3e-3) == 0);

  PhaseConditions c;
  c.load_before = 0.1;
  c.load_after = 0.2;
  CHECK(canary_drift(c) == 0);  // not measured: no verdict from the canary
  CHECK(canary_reading(c) == 0);
  CHECK_FALSE(is_disturbed(c));
  c.canary_before = 2e-3;
  c.canary_after = 2.8e-3;  // 1.4x: the machine's own mode switches at rest, not a disturbance
  CHECK(canary_drift(c) == Approx(1.4));
  CHECK(canary_reading(c) == Approx(2.4e-3));
  CHECK_FALSE(is_disturbed(c));
  c.canary_after = 1.25e-3;  // 2.0/1.25 = 1.6 > 1 + kDisturbedCanary: faster after counts too
  CHECK(canary_drift(c) == Approx(1.6));
  CHECK(is_disturbed(c));
  CHECK(describe_disturbance(c) ==
        "the reference kernel took 0.62x as long after the phase as before (2 ms -> 1.25 ms) (load average 0.10 -> "
        "0.20)");

  c.canary_after = 2e-3;  // steady during the phase, but 2x a quiet reference of 1 ms
  compare_canary(c, 1e-3);
  CHECK(c.canary_vs_reference == Approx(2.0));
  CHECK(c.disturbed);
  CHECK(describe_disturbance(c) ==
        "the reference kernel took 2.00x its reference time (2 ms vs 1 ms: one core ran slower) (load average 0.10 -> "
        "0.20)");
  compare_canary(c, 1.6e-3);  // 1.25x the reference: within the machine's own variation
  CHECK(c.canary_vs_reference == Approx(1.25));
  CHECK_FALSE(c.disturbed);
  compare_canary(c, 6e-3);  // a third of the reference: the reference was the disturbed one
  CHECK(c.disturbed);
  compare_canary(c, 0);  // no reference: not compared
  CHECK(c.canary_vs_reference == 0);
  CHECK_FALSE(c.disturbed);

  c.others_cores = 0.5;  // with other processes as well: both reasons, in order
  c.canary_after = 4e-3;
  c.disturbed = is_disturbed(c);
  CHECK(c.disturbed);
  CHECK(describe_disturbance(c).rfind("other processes kept 0.50 cores busy, the reference kernel took 2.00x as long", 0) == 0);

  const auto back = phase_conditions_from_json(to_json(c), "c");
  CHECK(back.canary_before == Approx(c.canary_before));
  CHECK(back.canary_after == Approx(c.canary_after));
  CHECK(back.canary_kernel == c.canary_kernel);
  CHECK(back.canary_vs_reference == 0);
  PhaseConditions old;  // a profile written before the canary: no "canary" object, reads as 0
  old.phase = "world_size 1 group";
  auto j = to_json(old);
  CHECK_FALSE(j.contains("canary"));
  CHECK(phase_conditions_from_json(j, "old").canary_before == 0);

  // A profile's reference: the fastest undisturbed reading of the same kernel.
  PhaseConditions a, b, d, e;
  a.canary_before = a.canary_after = 3e-3;
  a.canary_kernel = b.canary_kernel = d.canary_kernel = "k";
  b.canary_before = 2e-3;
  b.canary_after = 2.4e-3;  // reading 2.2 ms
  d.canary_before = d.canary_after = 1e-3;
  d.disturbed = true;  // not a reference while an undisturbed phase has one
  e.canary_before = e.canary_after = 0.5e-3;
  e.canary_kernel = "another compiler";
  CHECK(canary_reference({a, b, d, e}, "k") == Approx(2.2e-3));
  CHECK(canary_reference({d, e}, "k") == Approx(1e-3));  // every phase disturbed: the fastest of them
  CHECK(canary_reference({e}, "k") == 0);
}

static Profile sample_profile() {
  Profile p;
  p.created_utc = "2026-11-29T00:00:00Z";
  p.hardware = {"host", "cpu", "Test CPU", 2, 1, 2 * GiB, 0, ""};
  p.versions = {"0.1.0", "1.13.1", "", "", "0.5.0"};
  p.workload.name = "gpt-tiny";
  p.workload.kind = "gpt";
  p.workload.hash = "0123456789abcdef";
  p.workload.dtype = "float32";
  p.workload.param_count = 10;
  p.workload.param_bytes = 40;
  p.workload.param_tensor_bytes = {24, 16};
  p.workload.tokens_per_sample = 64;
  p.workload.mean_tokens_per_sample = 40;
  p.settings.ranks = {1, 2};
  p.memory.push_back({4, 40, 40, 80, 1000, 840, 0, {}});
  ComputePoint c;
  c.micro_batch = 4;
  c.micro_step = TimingStats::from_samples({0.01, 0.012, 0.011});
  p.compute.push_back(c);
  p.optimizer.push_back({1, TimingStats::from_samples({0.001})});
  p.allreduce.push_back({"gloo", 2, 4096, 1e-4, 4.096e7, 4.096e7, 0, "sweep", CommLevel::job, {1e-4}});
  p.grad_norms.push_back({4, {1.0, 2.0}});
  p.overlap.push_back({2, 4, 0.01, 0.005, 0.012});
  p.max_micro_batch_fitting = 64;
  p.notes = {"hello"};
  return p;
}

TEST_CASE("a staged model's units and memory phases round-trip, and a mismatch is named", "[core][profile]") {
  auto p = sample_profile();
  p.workload.unit_tensors = {1, 1};  // 2 units: 1 + 3 x 2 = 7 phases
  p.memory.front().phases = {10, 200, 300, 840, 400, 500, 100};
  const auto q = profile_from_json(to_json(p), "p.json");
  CHECK(q.workload.unit_tensors == p.workload.unit_tensors);
  CHECK(q.memory.front().phases == p.memory.front().phases);
  CHECK(forward_phase(1) == 3);
  CHECK(after_forward_phase(1) == 4);
  CHECK(backward_phase(0, 2) == 5);
  CHECK(phase_count(2) == 7);
  auto j = to_json(p);
  j["memory"][0]["phases"] = {10, 200, 840};
  CHECK_THROWS_WITH(profile_from_json(j, "p.json"), Catch::Contains("3 phases, but the workload's unit_tensors make 7"));
  j = to_json(p);
  j["memory"][0]["phases"] = {10, 200, 300, 900, 400, 500, 100};
  CHECK_THROWS_WITH(profile_from_json(j, "p.json"), Catch::Contains("the largest phase is not the point's activations"));
  j = to_json(p);
  j["workload"]["unit_tensors"] = {1, 2};
  CHECK_THROWS_WITH(profile_from_json(j, "p.json"), Catch::Contains("the units hold 3 parameter tensors but param_tensor_bytes lists 2"));
}

TEST_CASE("how ranks wait for collectives: one rule for the profiler and the runner", "[core]") {
  // Gloo polls while this host's ranks x threads fit its cores, blocks beyond (oversubscribed).
  CHECK(collective_wait_for(Backend::gloo, 2, 1, 2) == CollectiveWait::poll);   // this VM: 2 ranks, 2 cores
  CHECK(collective_wait_for(Backend::gloo, 1, 2, 2) == CollectiveWait::poll);
  CHECK(collective_wait_for(Backend::gloo, 4, 1, 2) == CollectiveWait::block);  // correctness runs, 4 ranks
  CHECK(collective_wait_for(Backend::gloo, 2, 2, 2) == CollectiveWait::block);  // 4 threads on 2 cores
  CHECK(collective_wait_for(Backend::gloo, 4, 4, 16) == CollectiveWait::poll);
  CHECK(collective_wait_for(Backend::nccl, 1, 1, 64) == CollectiveWait::block);  // NCCL: blocking wait
  CHECK(collective_wait_for(Backend::gloo, 0, 1, 2) == CollectiveWait::block);
  CHECK(to_string(CollectiveWait::poll) == "poll");
  CHECK(parse_collective_wait("block", "x") == CollectiveWait::block);
  CHECK_THROWS_WITH(parse_collective_wait("spin", "settings.collective_wait"),
                    "settings.collective_wait: unknown collective wait 'spin': expected block or poll");
}

TEST_CASE("busy_for keeps the core busy at least as long as asked, and not at all for 0", "[core]") {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  busy_for(3e-3);
  CHECK(std::chrono::duration<double>(Clock::now() - t0).count() >= 3e-3);
  busy_for(0);
  busy_for(-1);
}

TEST_CASE("profile.json round-trips and is validated", "[profile]") {
  auto p = sample_profile();
  auto j = to_json(p);
  auto q = profile_from_json(j, "p.json");
  CHECK(to_json(q) == j);

  SECTION("the collective conditions: written, read back, and absent in older profiles") {
    auto k = j;
    k["settings"]["collective_wait"] = "poll";
    k["settings"]["comm_gap_s"] = 0.002;
    const auto r = profile_from_json(k, "p.json");
    CHECK(r.settings.collective_wait == CollectiveWait::poll);
    CHECK(r.settings.comm_gap == 0.002);
    CHECK(to_json(r)["settings"]["collective_wait"] == "poll");
    k["settings"].erase("collective_wait");
    k["settings"].erase("comm_gap_s");
    const auto old = profile_from_json(k, "p.json");
    CHECK(old.settings.collective_wait == CollectiveWait::block);  // timed back to back, blocking
    CHECK(old.settings.comm_gap == 0);
    k["settings"]["collective_wait"] = "spin";
    CHECK_THROWS_AS(profile_from_json(k, "p.json"), ProfileError);
  }
  SECTION("another schema version is refused with advice") {
    auto k = j;
    k["schema_version"] = 99;
    CHECK_THROWS_WITH(profile_from_json(k, "p.json"), Catch::Contains("schema version 99") && Catch::Contains("re-run"));
  }
  SECTION("tensor sizes must add up") {
    auto k = j;
    k["workload"]["param_bytes"] = 41;
    CHECK_THROWS_AS(profile_from_json(k, "p.json"), ProfileError);
  }
  SECTION("a missing field is named") {
    auto k = j;
    k["hardware"].erase("device_kind");
    CHECK_THROWS_WITH(profile_from_json(k, "p.json"), Catch::Contains("hardware") && Catch::Contains("device_kind"));
  }
  SECTION("a profile of another workload is refused") {
    auto dir = std::filesystem::temp_directory_path() / "gaccum_test_profile";
    std::filesystem::create_directories(dir);
    auto path = (dir / "p.json").string();
    save_profile(p, path);
    CHECK(load_profile(path, p.workload.hash).workload.name == "gpt-tiny");
    CHECK_THROWS_WITH(load_profile(path, "ffffffffffffffff"), Catch::Contains("re-run `gaccum-tune profile`"));
  }
}

TEST_CASE("atomic writes leave no temp file and replace content", "[file]") {
  auto dir = std::filesystem::temp_directory_path() / "gaccum_test_atomic";
  std::filesystem::remove_all(dir);
  auto path = dir / "sub" / "out.txt";
  write_file_atomic(path, "first");
  write_file_atomic(path, "second");
  CHECK(read_file(path, "x") == "second");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path())) files += e.is_regular_file();
  CHECK(files == 1);
  CHECK_THROWS_AS(read_file(dir / "nope", "--profile"), InputError);
}

TEST_CASE("hash and strategy names are stable", "[core]") {
  CHECK(hex64(fnv1a64("")) == "cbf29ce484222325");
  CHECK(hex64(fnv1a64("a")) == "af63dc4c8601ec8c");
  CHECK(parse_strategy("every-step") == Strategy::every_step);
  CHECK(parse_strategy("every_step") == Strategy::every_step);
  CHECK(to_string(Strategy::overlap) == "overlap");
  CHECK_THROWS_AS(parse_strategy("ddp"), InputError);
}

#include "core/buckets.hpp"

TEST_CASE("DDP bucket assignment: reverse order, 1 MiB first cap, 25 MiB after", "[buckets]") {
  // Registration order sizes (MiB): a=10, b=10, c=0.5, d=0.75. Backward order: d, c, b, a.
  std::vector<Bytes> sizes{10 * MiB, 10 * MiB, MiB / 2, 3 * MiB / 4};
  auto b = assign_buckets(sizes);
  // d (0.75) + c (0.5) = 1.25 MiB >= 1 MiB closes bucket 0; b + a = 20 MiB < 25 MiB stays open.
  REQUIRE(b.size() == 2);
  CHECK(b[0].params == std::vector<std::size_t>{3, 2});
  CHECK(b[0].bytes == MiB + MiB / 4);
  CHECK(b[1].params == std::vector<std::size_t>{1, 0});
  CHECK(b[1].bytes == 20 * MiB);
  // A single huge tensor is its own bucket.
  auto big = assign_buckets({30 * MiB, 30 * MiB});
  REQUIRE(big.size() == 2);
  CHECK(big[0].bytes == 30 * MiB);
  CHECK(assign_buckets({}).empty());
}

TEST_CASE("format_rate: one decimal, or 3 significant digits where one decimal would print 0.0", "[units]") {
  CHECK(gaccum::format_rate(254.44) == "254.4");
  CHECK(gaccum::format_rate(4.8) == "4.8");
  CHECK(gaccum::format_rate(0.05) == "0.1");  // one decimal from 0.05 on (printf rounding)
  CHECK(gaccum::format_rate(1.0 / 61.1) == "0.0164");  // one 262144-token sample every 61.1 s
  CHECK(gaccum::format_rate(0) == "0.0");
}

TEST_CASE("format_seconds: units, and no rounding residue printed as a time", "[units]") {
  CHECK(gaccum::format_seconds(1.5) == "1.5 s");
  CHECK(gaccum::format_seconds(0.0123) == "12.3 ms");
  CHECK(gaccum::format_seconds(850e-6) == "850 us");
  CHECK(gaccum::format_seconds(-6.51e-13) == "0 us");
  CHECK(gaccum::format_seconds(-0.002) == "-2 ms");
}

#include "core/plan.hpp"

TEST_CASE("a pipeline layout: the default schedule and the stage split, one rule for flags and run files", "[core]") {
  using gaccum::ParallelLayout;
  using gaccum::Schedule;
  CHECK(gaccum::default_schedule(1) == Schedule::one_f_one_b);
  CHECK(gaccum::default_schedule(2) == Schedule::interleaved_1f1b);
  ParallelLayout l;
  l.pp = 4;
  gaccum::set_stage_layers(l, "7,8,8,7", "x");  // Llama 3 405B-like: only the ends differ
  CHECK(l.first_stage_layers == 7);
  CHECK(l.last_stage_layers == 7);
  ParallelLayout m;
  m.pp = 4;
  gaccum::set_stage_layers(m, "3,...,5", "x");
  CHECK(m.first_stage_layers == 3);
  CHECK(m.last_stage_layers == 5);
  // With virtual stages a list names every model stage (pp x v of them, rank 0's first chunk
  // first): torchtitan's 126 layers over pp 8 x v 2 are 7, 8 x 14, 7.
  ParallelLayout v;
  v.pp = 8;
  v.virtual_stages = 2;
  gaccum::set_stage_layers(v, "7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,7", "--stage-layers");
  CHECK(v.first_stage_layers == 7);
  CHECK(v.last_stage_layers == 7);
  ParallelLayout w = v;
  w.first_stage_layers = w.last_stage_layers = 0;
  gaccum::set_stage_layers(w, "7,...,7", "--stage-layers");
  CHECK(w == v);
  CHECK_THROWS_WITH(gaccum::set_stage_layers(w, "7,8,8,8,8,8,8,7", "--stage-layers"),
                    Catch::Contains("--stage-layers: 8 values for pp 8 x virtual stages 2 = 16 model stages"));
  CHECK_THROWS_WITH(gaccum::set_stage_layers(l, "7,8,7", "plan.stage_layers"),
                    Catch::Contains("plan.stage_layers: 3 values for pp 4"));
  // Middle stages of different sizes: kept stage by stage (torchtitan's 80 layers on pp 4).
  gaccum::set_stage_layers(l, "20,21,20,19", "x");
  CHECK(l.first_stage_layers == 0);
  CHECK(l.last_stage_layers == 0);
  CHECK(l.stage_layer_counts == std::vector<gaccum::Count>{20, 21, 20, 19});
  CHECK(gaccum::to_string(l) == "pp 4 1f1b (layers 20, 21, 20, 19)");
  CHECK(gaccum::short_string(l) == "pp4 L20-21-20-19");
  ParallelLayout folded;  // torchtitan's 80 layers on pp 2 x v 8: runs folded in the short form
  folded.pp = 2;
  folded.virtual_stages = 8;
  folded.schedule = Schedule::interleaved_1f1b;
  folded.stage_layer_counts = {5, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 4};
  CHECK(gaccum::short_string(folded) == "pp2 v8 L5-6-5x13-4");
  CHECK(gaccum::to_string(folded) == "pp 2 interleaved-1f1b v 8 (layers 5, 6, 5 x 13, 4)");
  gaccum::set_stage_layers(l, "7,8,8,7", "x");
  CHECK(l.stage_layer_counts.empty());
}

TEST_CASE("optimizer and backend names: one table each, parsed at the boundary", "[core]") {
  for (const auto& t : kOptimizerTraits) {
    CHECK(parse_optimizer(t.name) == t.optimizer);
    CHECK(to_string(t.optimizer) == t.name);
  }
  CHECK(traits(Optimizer::sgd).lr_rule == LrRule::linear);
  CHECK(traits(Optimizer::lamb).lr_rule == LrRule::square_root);
  CHECK(traits(Optimizer::lamb).profiled_as == Optimizer::adam);
  CHECK_FALSE(traits(Optimizer::lamb).in_libtorch);
  CHECK_THROWS_WITH(parse_optimizer("rmsprop", "--optimizer"),
                    "--optimizer: unknown optimizer 'rmsprop': expected sgd, adam, adamw or lamb");
  CHECK_THROWS_WITH(parse_libtorch_optimizer("lamb", "--optimizer"),
                    "--optimizer: unknown optimizer 'lamb': expected sgd, adam or adamw");
  CHECK_FALSE(find_optimizer("Adam"));
  CHECK(parse_backend("nccl") == Backend::nccl);
  CHECK(traits(Backend::gloo).device == DeviceKind::cpu);
  CHECK(backend_for(DeviceKind::cuda) == Backend::nccl);
  CHECK(device_kind_of("cuda:1") == DeviceKind::cuda);
  CHECK(device_kind_of("cpu") == DeviceKind::cpu);
  CHECK_THROWS_AS(parse_backend("mpi", "--backend"), InputError);
}

TEST_CASE("first and last lines of a message, and a collective failure is a RuntimeFailure", "[core]") {
  CHECK(first_line("c10d allreduce failed: x\n  at frame 1") == "c10d allreduce failed: x");
  CHECK(first_line("one line") == "one line");
  CHECK(first_line("") == "");
  CHECK(last_nonempty_line("Traceback\n  frame\nRuntimeError: bad \n\n") == "RuntimeError: bad");
  try {
    throw CollectiveFailure("c10d store.get failed (x:1): peer lost");
  } catch (const RuntimeFailure& e) {
    CHECK(dynamic_cast<const CollectiveFailure*>(&e) != nullptr);
    CHECK(std::string(e.what()) == "c10d store.get failed (x:1): peer lost");
  }
}

TEST_CASE("one process per GPU: ranks on a host against its visible GPUs", "[core]") {
  CHECK_NOTHROW(require_gpu_per_rank(1, 1, "--world-size", "fix"));
  CHECK_NOTHROW(require_gpu_per_rank(8, 8, "--world-size", "fix"));
  try {
    require_gpu_per_rank(2, 1, "--world-size", "use --world-size 1, or --device cpu");
    FAIL("2 ranks on 1 GPU were accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "--world-size: 2 rank(s) on this host need 2 GPU(s) (one process per GPU: NCCL refuses two ranks on one "
          "device); 1 visible: use --world-size 1, or --device cpu");
  }
  CHECK_THROWS_AS(require_gpu_per_rank(1, 0, "--ranks", "fix"), InputError);
}

#include <sys/stat.h>
#include <unistd.h>

TEST_CASE("the guarded open: FIFOs, devices, size limits and encodings are refused at once", "[core][files]") {
  const auto dir = std::filesystem::temp_directory_path() / ("gaccum_test_guarded_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A FIFO without a writer would block a plain read forever.
  CHECK_THROWS_WITH(read_file(fifo, "--job"), Catch::Contains("--job: '" + fifo.string() + "' is a FIFO, not a regular file"));
  CHECK_THROWS_WITH(read_file("/dev/zero", "--spec"), Catch::Contains("is a character device, not a regular file"));
  CHECK_THROWS_WITH(read_file(dir, "--profile"), Catch::Contains("is a directory, not a file"));
  const auto big = dir / "big.json";
  write_file_atomic(big, std::string(2048, ' '));
  CHECK_THROWS_WITH(read_file(big, "--cluster", 1024), Catch::Contains("is 2048 bytes, above the 1024-byte limit of this reader"));
  CHECK(read_file(big, "--cluster", 2048).size() == 2048);
  const auto u16 = dir / "u16.json";
  write_file_atomic(u16, std::string("\xff\xfe{\0}\0", 6));
  CHECK_THROWS_WITH(read_text_file(u16, "--deepspeed-config"), Catch::Contains("is UTF-16 (byte-order mark FF FE)"));
  const auto bad = dir / "bad.yaml";
  write_file_atomic(bad, "a: \xc3\x28");
  CHECK_THROWS_WITH(read_text_file(bad, "--job"), Catch::Contains("is not valid UTF-8 (byte 3 is 0xC3)"));
  const auto good = dir / "good.yaml";
  write_file_atomic(good, "name: \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(read_text_file(good, "--job").size() == 20);
  CHECK(read_file(u16, "--torchscript").size() == 6);  // binary readers take any bytes
  std::filesystem::remove_all(dir);
}

TEST_CASE("an output that is a device is written in place, never replaced", "[core][files]") {
  // /dev/null takes the bytes and stays a character device; /dev/full fails the write (exit 1).
  write_file_atomic("/dev/null", "{}\n");
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK_THROWS_AS(write_file_atomic("/dev/full", "{}\n"), RuntimeFailure);
  REQUIRE(::stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK_THROWS_WITH(write_file_atomic(std::filesystem::temp_directory_path(), "x"), Catch::Contains("is a directory"));
}
