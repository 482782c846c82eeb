// What: the eight checks of check/checks.hpp, the rank agreement and the verdict's exit codes,
//       against numbers computed by hand from the closed-form fake cost model
//       (unit/fake_cost_model.hpp: t(b) = 0.010 + 0.001 b s, A(p) = 0.020 + 0.010 (p - 1) s,
//       hidden 0.5 t(b), optimizer 0.005 s; peak = 100e6 + 25e6 (p > 1) + 10e6 b bytes,
//       device 1e9 bytes, measured micro_batch up to 64).
// Why: every reason and fix of `gaccum-tune check` carries numbers; these pin them down.
#include <catch2/catch.hpp>

#include "check/check_inputs.hpp"
#include "check/checks.hpp"
#include "check/rank_agreement.hpp"
#include "check/verdict.hpp"
#include "core/error.hpp"
#include "tests/unit/fake_cost_model.hpp"

using namespace gaccum;
using namespace gaccum::check;
using Catch::Matchers::Contains;

namespace {

check::ResolvedJob job(Count b, Count k, Count p, std::optional<Count> B = std::nullopt) {
  CheckInputs in = default_inputs();
  in.micro_batch.set(b, "test");
  in.accum_steps.set(k, "test");
  in.world_size.set(p, "test");
  if (B) in.global_batch.set(*B, "test --global-batch");
  return resolve(in);
}

}  // namespace

// ---- 1 batch arithmetic -------------------------------------------------------------------------

TEST_CASE("check 1: b k p equal to B passes, naming the product") {
  auto r = check_batch_arithmetic(job(4, 8, 2, 64));
  CHECK(r.status == Status::pass);
  CHECK(r.reason == "micro_batch 4 x accum_steps 8 x world_size 2 = global_batch 64");
  CHECK(r.data["product"] == 64);
}

TEST_CASE("check 1: b k p != B fails with settings that keep B") {
  // 4 x 8 x 2 = 64 != 96; per rank 48 = 4 x 12 = 6 x 8.
  auto r = check_batch_arithmetic(job(4, 8, 2, 96));
  CHECK(r.status == Status::fail);
  CHECK_THAT(r.reason, Contains("= 64 != global_batch 96 (test --global-batch)"));
  CHECK(r.fix == "to keep global_batch 96 on 2 ranks use accum_steps 12 or micro_batch 6; or set global_batch 64 (= b x k x p)");
  REQUIRE(r.data["suggestions"].size() == 3);
  CHECK(r.data["suggestions"][0]["accum_steps"] == 12);
  CHECK(r.data["suggestions"][1]["micro_batch"] == 6);
}

TEST_CASE("check 1: B not a multiple of world_size") {
  auto r = check_batch_arithmetic(job(4, 8, 2, 63));
  CHECK(r.status == Status::fail);
  CHECK_THAT(r.fix, Contains("global_batch 63 is not a multiple of world_size 2: set global_batch 64"));
}

TEST_CASE("check 1: a derivation that does not divide fails (k = 100 / (3 x 4))") {
  CheckInputs in = default_inputs();
  in.micro_batch.set(3, "test");
  in.world_size.set(4, "test");
  in.global_batch.set(100, "test");
  auto j = resolve(in);
  CHECK(j.accum_steps == 8);  // floor(100 / 12)
  CHECK(j.inexact);
  CHECK(j.product == 96);
  auto r = check_batch_arithmetic(j);
  CHECK(r.status == Status::fail);
  CHECK_THAT(r.reason, Contains("accum_steps = global_batch / (micro_batch x world_size) = 100 / 12, not an integer"));
  // per rank 25: neither 3 nor 8 divides it; the largest divisor of 25 at most 3 is 1.
  CHECK_THAT(r.fix, Contains("use micro_batch 1 and accum_steps 25; or set global_batch 96"));
}

// ---- 2 memory -----------------------------------------------------------------------------------

TEST_CASE("check 2: peak within cap x (1 - margin) passes with the largest micro_batch") {
  test::FakeCostModel m;
  auto r = check_memory(job(32, 1, 2), &m);
  CHECK(r.status == Status::pass);
  CHECK(r.data["peak_memory"] == 445'000'000u);  // 100e6 + 25e6 + 32 x 10e6
  CHECK(r.data["limit"] == 900'000'000u);        // 1e9 x 0.9
  CHECK(r.data["max_micro_batch_fitting"] == 64);  // 77 fit, searched up to the measured 64
  CHECK_THAT(r.reason, Contains("micro_batch 64 or more fits"));
}

TEST_CASE("check 2: inside the margin warns, above the device fails, each with a micro_batch that fits") {
  test::FakeCostModel m;
  // b = 80: 125e6 + 800e6 = 925e6 > 900e6 limit, <= 1e9 device.
  auto w = check_memory(job(80, 2, 2), &m);
  CHECK(w.status == Status::warn);
  CHECK(w.data["peak_memory"] == 925'000'000u);
  CHECK(w.data["max_micro_batch_fitting"] == 77);  // 125e6 + 10e6 b <= 900e6
  // global 320 -> 160 per rank: largest divisor <= 77 is 40, accum 4.
  CHECK(w.data["suggestion"]["micro_batch"] == 40);
  CHECK(w.data["suggestion"]["accum_steps"] == 4);
  CHECK_THAT(w.fix, Contains("use micro_batch 40 with accum_steps 4 (keeps global_batch 320"));

  // b = 88: 1005e6 > 1e9 device memory.
  auto f = check_memory(job(88, 1, 2), &m);
  CHECK(f.status == Status::fail);
  CHECK_THAT(f.reason, Contains("out of memory"));
  CHECK(f.data["suggestion"]["micro_batch"] == 44);  // 88 per rank: divisors <= 77 -> 44
  CHECK(f.data["suggestion"]["accum_steps"] == 2);
}

TEST_CASE("check 2: an absolute cap below the device binds, nothing fits even at micro_batch 1") {
  test::FakeCostModel m;
  CheckInputs in = default_inputs();
  in.micro_batch.set(1, "t");
  in.world_size.set(2, "t");
  MemoryCap cap;
  cap.absolute = 120'000'000;  // 125e6 + 10e6 > 120e6
  in.memory_cap.set(cap, "t");
  auto r = check_memory(resolve(in), &m);
  CHECK(r.status == Status::fail);
  CHECK(r.data["memory_cap"] == 120'000'000u);
  CHECK(r.data["max_micro_batch_fitting"] == 0);
  CHECK_THAT(r.fix, Contains("even micro_batch 1 needs"));
}

TEST_CASE("checks without a cost model skip with the reason") {
  auto j = job(4, 8, 2);
  CHECK(check_memory(j, nullptr).status == Status::skip);
  CHECK(check_efficiency(j, nullptr).status == Status::skip);
  CHECK_THAT(check_memory(j, nullptr).reason, Contains("--profile"));
}

// ---- 4 epoch remainder --------------------------------------------------------------------------

TEST_CASE("check 4: leftover samples of the last window with sizes and accum_steps that divide") {
  auto j = job(4, 8, 2);
  j.dataset_size = 10000;  // 156 x 64 + 16
  auto r = check_epoch_remainder(j);
  CHECK(r.status == Status::warn);
  CHECK(r.data["full_steps"] == 156);
  CHECK(r.data["leftover_samples"] == 16);
  CHECK(r.data["last_window_micro_steps"] == 2);  // ceil(16 / (4 x 2))
  CHECK(r.data["dataset_size_down"] == 9984);
  CHECK(r.data["dataset_size_up"] == 10048);
  // 10000 / 8 = 1250: accum_steps dividing 1250 nearest to 8 are 5 and 10.
  REQUIRE(r.data["accum_steps_dividing"].size() == 2);
  CHECK(r.data["accum_steps_dividing"][0]["accum_steps"] == 5);
  CHECK(r.data["accum_steps_dividing"][1]["global_batch"] == 80);
  CHECK_THAT(r.reason, Contains("partial accumulation window of 16 samples (2 of 8 micro-steps"));
  CHECK_THAT(r.fix, Contains("use dataset_size 9984 or 10048"));
}

TEST_CASE("check 4: divisible passes, drop_last removes a remainder smaller than one micro-step of all ranks") {
  auto j = job(4, 8, 2);
  j.dataset_size = 9984;
  CHECK(check_epoch_remainder(j).status == Status::pass);
  j.dataset_size = 9990;  // remainder 6 < b x p = 8
  CHECK(check_epoch_remainder(j).status == Status::warn);
  j.drop_last = true;
  auto r = check_epoch_remainder(j);
  CHECK(r.status == Status::pass);
  CHECK_THAT(r.reason, Contains("drop_last drops the 6 leftover samples"));
  j.dataset_size = 10000;  // remainder 16: drop_last keeps 2 full micro-steps
  CHECK(check_epoch_remainder(j).status == Status::warn);
}

TEST_CASE("check 4: a dataset smaller than one global batch fails, none given skips") {
  auto j = job(4, 8, 2);
  CHECK(check_epoch_remainder(j).status == Status::skip);
  j.dataset_size = 50;
  auto r = check_epoch_remainder(j);
  CHECK(r.status == Status::fail);
  CHECK_THAT(r.fix, Contains("use accum_steps 6 (global_batch 48)"));
}

// ---- 5 efficiency -------------------------------------------------------------------------------

TEST_CASE("check 5: a slower setting for the same B and p warns naming the best and the speed-up") {
  // B = 64, p = 2: b=32 k=1 overlap: 0.042 + max(0, 0.030 - 0.021) + 0.005 = 0.056 s (best);
  // b=16 k=2 overlap: 0.052 + 0.017 + 0.005 = 0.074 s -> gap 1 - 0.056/0.074 = 0.243243.
  test::FakeCostModel m;
  auto r = check_efficiency(job(16, 2, 2), &m);
  CHECK(r.status == Status::warn);
  CHECK(r.data["best"]["micro_batch"] == 32);
  CHECK(r.data["best"]["accum_steps"] == 1);
  CHECK(r.data["best"]["strategy"] == "overlap");
  CHECK(r.data["gap"].get<double>() == Approx(1 - 0.056 / 0.074).epsilon(1e-9));
  CHECK(r.data["speedup"].get<double>() == Approx(0.074 / 0.056).epsilon(1e-9));
  CHECK(r.fix == "use micro_batch 32, accum_steps 1, strategy overlap");
  CHECK_THAT(r.reason, Contains("1.32x faster"));
}

TEST_CASE("check 5: the best setting passes, a gap within --tolerance passes") {
  test::FakeCostModel m;
  CHECK(check_efficiency(job(32, 1, 2), &m).status == Status::pass);
  auto j = job(16, 2, 2);
  j.tolerance = 0.25;
  CHECK(check_efficiency(j, &m).status == Status::pass);
}

// ---- 6 strategy ---------------------------------------------------------------------------------

TEST_CASE("check 6: every-step priced against overlap fails beyond the tolerance") {
  // b=8 k=4 p=2: t = 0.018, exposed per sync 0.030 - 0.009 = 0.021;
  // overlap 0.072 + 0.021 + 0.005 = 0.098; every-step 0.072 + 4 x 0.021 + 0.005 = 0.161.
  test::FakeCostModel m;
  CheckInputs in = default_inputs();
  in.micro_batch.set(8, "t");
  in.accum_steps.set(4, "t");
  in.world_size.set(2, "t");
  in.strategy.set(Strategy::every_step, "t");
  auto j = resolve(in);
  auto r = check_strategy(j, &m);
  CHECK(r.status == Status::fail);
  CHECK(r.data["overlap_step_time"].get<double>() == Approx(0.098));
  CHECK(r.data["every_step_step_time"].get<double>() == Approx(0.161));
  CHECK(r.data["extra_seconds_per_step"].get<double>() == Approx(0.063));
  CHECK(r.data["throughput_lost"].get<double>() == Approx(1 - 0.098 / 0.161));
  CHECK(r.data["every_step_collectives"] == 8);
  CHECK(r.data["overlap_collectives"] == 2);
  CHECK_THAT(r.fix, Contains("no_sync"));
  j.tolerance = 0.5;  // 39.1% lost is within 50%
  CHECK(check_strategy(j, &m).status == Status::warn);
}

TEST_CASE("check 6: overlap passes, world_size 1 and accum_steps 1 pass without pricing") {
  test::FakeCostModel m;
  CHECK(check_strategy(job(8, 4, 2), &m).status == Status::pass);
  CHECK_THAT(check_strategy(job(8, 4, 1), &m).reason, Contains("world_size 1"));
  CHECK_THAT(check_strategy(job(8, 1, 2), &m).reason, Contains("accum_steps 1"));
}

// ---- 7 learning rate ----------------------------------------------------------------------------

namespace {
check::ResolvedJob lr_job(const std::string& opt, double lr, double ref_lr, Count ref_b, Count b, Count k, Count p) {
  auto j = job(b, k, p);
  j.optimizer = opt;
  j.lr = lr;
  j.lr_ref = tuner::LrReference{ref_lr, ref_b};
  return j;
}
}  // namespace

TEST_CASE("check 7: SGD scales linearly") {
  // 0.1 @ 256 -> B = 1024: 0.4.
  CHECK(check_learning_rate(lr_job("sgd", 0.4, 0.1, 256, 32, 4, 8)).status == Status::pass);
  auto w = check_learning_rate(lr_job("sgd", 0.35, 0.1, 256, 32, 4, 8));  // 0.875x
  CHECK(w.status == Status::warn);
  CHECK(w.data["recommended_lr"].get<double>() == Approx(0.4));
  CHECK(w.fix == "set lr 0.4");
  auto f = check_learning_rate(lr_job("sgd", 0.1, 0.1, 256, 32, 4, 8));  // 0.25x: not scaled
  CHECK(f.status == Status::fail);
  CHECK_THAT(f.reason, Contains("not scaled"));
}

TEST_CASE("check 7: Adam scales by the square root, a linear scaling is named") {
  // 1e-3 @ 256 -> B = 4096: sqrt(16) = 4 -> 4e-3; linear would be 16e-3 (4x: FAIL).
  auto f = check_learning_rate(lr_job("adamw", 16e-3, 1e-3, 256, 16, 32, 8));
  CHECK(f.status == Status::fail);
  CHECK(f.data["rule"] == "square-root");
  CHECK(f.data["recommended_lr"].get<double>() == Approx(4e-3));
  CHECK(f.data["ratio"].get<double>() == Approx(4.0));
  CHECK_THAT(f.reason, Contains("linearly scaled"));
  // B grows 16x > 8x: warm-up; with a dataset size in steps: ceil(5 x 1e6 / 4096) = 1221.
  auto j = lr_job("adam", 16e-3, 1e-3, 256, 16, 32, 8);
  j.dataset_size = 1'000'000;
  auto r = check_learning_rate(j);
  CHECK(r.data["warmup_steps"] == 1221);
  CHECK_THAT(r.fix, Contains("warm-up over ~1221 steps"));
  // Just under 2x is a warning, not a failure.
  CHECK(check_learning_rate(lr_job("adam", 7.9e-3, 1e-3, 256, 16, 32, 8)).status == Status::warn);
}

TEST_CASE("check 7: skips without lr, reference or a rule") {
  auto j = job(4, 8, 2);
  CHECK(check_learning_rate(j).status == Status::skip);
  j.lr = 1e-3;
  CHECK_THAT(check_learning_rate(j).reason, Contains("--lr-ref"));
  j.lr_ref = tuner::LrReference{1e-3, 64};
  j.optimizer = "adagrad";
  CHECK_THAT(check_learning_rate(j).reason, Contains("no scaling rule"));
}

// ---- 8 critical batch ---------------------------------------------------------------------------

TEST_CASE("check 8: above B_noise warns with the extra-samples factor, below passes") {
  test::FakeCostModel m({}, 100.0);
  auto w = check_critical_batch(job(50, 4, 2), &m);  // B = 400
  CHECK(w.status == Status::warn);
  CHECK(w.data["extra_samples"].get<double>() == Approx(4.0));    // B / B_noise
  CHECK(w.data["samples_factor"].get<double>() == Approx(5.0));   // 1 + B / B_noise
  CHECK(w.data["steps_factor"].get<double>() == Approx(1.25));    // 1 + B_noise / B
  CHECK(w.data["suggestion"]["accum_steps"] == 1);                // floor(100 / (50 x 2))
  CHECK(check_critical_batch(job(4, 8, 2), &m).status == Status::pass);  // 64 <= 100
  test::FakeCostModel none;
  CHECK(check_critical_batch(job(50, 4, 2), &none).status == Status::skip);
  auto j = job(50, 4, 2);
  j.noise_scale = 1000;  // an explicit value overrides the model's
  CHECK(check_critical_batch(j, &m).status == Status::pass);
}

// ---- 3 rank agreement ---------------------------------------------------------------------------

TEST_CASE("check 3: settings round-trip and a differing accum_steps names the ranks") {
  auto a = job(4, 8, 2);
  auto b = job(4, 4, 2);
  RankSettings r0 = rank_settings(a, 0, config_hash(a, "x"));
  RankSettings r1 = decode_rank_settings(encode(rank_settings(b, 1, config_hash(b, "x"))), 1);
  CHECK(r1.accum_steps == 4);
  CHECK(r1.error.empty());
  auto r = check_rank_agreement({r0, r1}, 2, "torchrun");
  CHECK(r.status == Status::fail);
  CHECK_THAT(r.reason, Contains("accum_steps differs: 8 on rank 0, 4 on rank 1"));
  CHECK_THAT(r.reason, Contains("global_batch differs: 64 on rank 0, 32 on rank 1"));
  CHECK(r.data["mismatches"][0]["field"] == "accum_steps");
}

TEST_CASE("check 3: agreement passes, world_size vs launched ranks, bad input on a rank, config hash") {
  auto a = job(4, 8, 2);
  const std::string h = config_hash(a, "job=1");
  std::vector<RankSettings> all = {rank_settings(a, 0, h), rank_settings(a, 1, h)};
  CHECK(check_rank_agreement(all, 2, "slurm").status == Status::pass);
  auto wrong = check_rank_agreement(all, 4, "slurm");
  CHECK(wrong.status == Status::fail);
  CHECK_THAT(wrong.reason, Contains("world_size 2 on ranks 0-1 but slurm started 4 ranks"));
  all[1].config_hash = config_hash(a, "job=2");
  CHECK(check_rank_agreement(all, 2, "slurm").status == Status::warn);
  all[1] = failed_rank_settings(1, "--job: cannot read 'job.yaml'");
  auto bad = check_rank_agreement(all, 2, "slurm");
  CHECK(bad.status == Status::fail);
  CHECK_THAT(bad.reason, Contains("rank 1 could not check its job: --job: cannot read"));
  CHECK(decode_rank_settings("not json", 3).error.size() > 0);
  // A float where a count belongs is an unreadable line, not a conversion (found by tests/fuzz).
  CHECK_THAT(decode_rank_settings(R"({"micro_batch": 4e41})", 2).error, Contains("rank 2 settings.micro_batch"));
  CHECK(rank_list({0, 1, 2, 3, 5, 7, 8}) == "0-3, 5, 7-8");
}

// ---- verdict ------------------------------------------------------------------------------------

TEST_CASE("verdict: a drifted link probe warns (exit 1 with --strict), printed in the JSON and the table") {
  test::FakeCostModel m;
  VerdictContext ctx;
  model::LinkDrift d;
  d.cluster_path = "fitted.json";
  d.tolerance = 0.25;
  d.nodes = 2;
  d.ranks_per_node = 2;
  model::LinkDriftPoint p;
  p.level = CommLevel::inter_node;
  p.ranks = 2;
  p.bytes = 1 << 20;
  p.measured = 2e-3;
  p.predicted = 1e-3;
  p.ratio = 2;
  d.points = {p};
  ctx.link_probe = d;
  auto calm = run_checks(job(32, 1, 2), &m, rank_agreement_skipped(), ctx);
  CHECK(calm.overall() == Status::pass);  // no point drifted
  d.points[0].drifted = true;
  d.drifted_levels = {"inter_node"};
  ctx.link_probe = d;
  auto drift = run_checks(job(32, 1, 2), &m, rank_agreement_skipped(), ctx);
  CHECK(drift.overall() == Status::warn);
  CHECK(drift.exit_code() == 0);
  ctx.strict = true;
  CHECK(run_checks(job(32, 1, 2), &m, rank_agreement_skipped(), ctx).exit_code() == 1);
  const auto j = to_json(drift);
  CHECK(j["verdict"] == "warn");
  CHECK(j["link_probe"]["drifted"].dump() == R"(["inter_node"])");
  CHECK(j["link_probe"]["points"][0]["level"] == "inter_node");
  CHECK(j["link_probe"]["points"][0]["ratio"] == 2.0);
  CHECK(j["link_probe"]["points"][0]["bytes"] == 1048576);
  const std::string t = print_table(drift);
  CHECK_THAT(t, Catch::Contains("link probe: the job's allreduce (2 node(s) x 2 ranks) against fitted.json, tolerance +-25%"));
  CHECK_THAT(t, Catch::Contains("inter_node") && Catch::Contains("2.00  DRIFT"));
  CHECK(to_json(calm).contains("link_probe"));
  VerdictContext none;
  CHECK_FALSE(to_json(run_checks(job(32, 1, 2), &m, rank_agreement_skipped(), none)).contains("link_probe"));
}

TEST_CASE("verdict: exit code 0 with passes and warnings, 1 on a failure or a warning with --strict") {
  test::FakeCostModel m;
  VerdictContext ctx;
  auto pass = run_checks(job(32, 1, 2), &m, rank_agreement_skipped(), ctx);
  CHECK(pass.overall() == Status::pass);
  CHECK(pass.exit_code() == 0);
  auto warn = run_checks(job(16, 2, 2), &m, rank_agreement_skipped(), ctx);  // efficiency warns
  CHECK(warn.overall() == Status::warn);
  CHECK(warn.exit_code() == 0);
  ctx.strict = true;
  auto strict = run_checks(job(16, 2, 2), &m, rank_agreement_skipped(), ctx);
  CHECK(strict.exit_code() == 1);
  ctx.strict = false;
  auto fail = run_checks(job(4, 8, 2, 96), &m, rank_agreement_skipped(), ctx);
  CHECK(fail.overall() == Status::fail);
  CHECK(fail.exit_code() == 1);
  auto j = to_json(fail);
  CHECK(j["schema"] == "gaccum-tune/check");
  CHECK(j["schema_version"] == 2);
  CHECK(j["verdict"] == "fail");
  CHECK(j["exit_code"] == 1);
  CHECK(j["checks"].size() == 8);
  CHECK(j["checks"][0]["status"] == "FAIL");
  CHECK(j["inputs"]["global_batch"]["source"] == "test --global-batch");
  CHECK(print_table(fail).find("verdict: FAIL (1 fail") != std::string::npos);
}
