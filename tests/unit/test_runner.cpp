// Unit tests for the pure parts of runner/: the check arithmetic (hand-computed), the run
// layout (which samples each rank reads, the partial window), RunSpec validation and JSON, the
// tune-result reader, measured vs predicted, the printed table (golden), and the fault
// variables' parsing.
#include <catch2/catch.hpp>

#include <ATen/Context.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/grad_sync.hpp"
#include "core/error.hpp"
#include "engine/cuda_support.hpp"
#include "engine/exact_math.hpp"
#include "runner/accumulation_loop.hpp"
#include "runner/checks.hpp"
#include "runner/comparison.hpp"
#include "runner/faults.hpp"
#include "runner/pipeline_run.hpp"
#include "runner/record_checks.hpp"
#include "runner/report.hpp"
#include "runner/run_record.hpp"
#include "runner/run_spec.hpp"
#include "runner/validate.hpp"

using namespace gaccum;
using namespace gaccum::runner;
using nlohmann::json;

TEST_CASE("compare_gradients counts elements outside atol + rtol |ref|", "[runner][unit]") {
  // |diff| = 0, 1e-6, 0.1; tolerances 0.001, 0.002, 0.003 -> only the last is outside.
  auto c = compare_gradients({1.0, 2.0 + 1e-6, 3.1}, {1.0, 2.0, 3.0}, 1e-3, 0.0);
  CHECK(c.elements == 3);
  CHECK(c.violations == 1);
  CHECK_FALSE(c.within());
  CHECK(c.max_abs_diff == Approx(0.1));
  CHECK(c.max_excess == Approx(0.1 / 0.003));
  CHECK(c.ref_l2 == Approx(std::sqrt(14.0)));
  CHECK(c.rel_l2 == Approx(std::sqrt(1e-12 + 0.01) / std::sqrt(14.0)));
  auto same = compare_gradients({1.0, -2.0}, {1.0, -2.0}, 0.0, 0.0);
  CHECK(same.within());
  CHECK(same.rel_l2 == 0.0);
  // NaN never passes; sizes must match.
  CHECK(compare_gradients({std::nan("")}, {0.0}, 1.0, 1.0).violations == 1);
  CHECK_THROWS_AS(compare_gradients({1.0}, {1.0, 2.0}, 0, 0), RuntimeFailure);
}

// A sum of micro-batch terms that cancel is exact to a fraction of the terms, not of the sum: ref
// 1.0 summed from terms of magnitude 1e4 (e.g. 5000.5 and -4999.5), got 1.0 + 1e-3. Against |ref|:
// tol 1e-5 + 1.3e-6 x 1 = 1.13e-5, a violation; against the magnitude: 1e-5 + 1.3e-6 x 1e4 =
// 0.01301, within, and counted as cancelling. An element off by more than that still fails.
TEST_CASE("compare_gradients judges cancelling terms against their summed magnitude", "[runner][unit]") {
  CHECK(compare_gradients({1.0 + 1e-3}, {1.0}, 1.3e-6, 1e-5).violations == 1);
  const std::vector<double> magnitude{1e4, 1e4, 2.0};
  auto c = compare_gradients({1.0 + 1e-3, 1.0 + 0.02, 2.0 + 1e-6}, {1.0, 1.0, 2.0}, 1.3e-6, 1e-5, &magnitude);
  CHECK(c.violations == 1);  // 0.02 > 0.01301
  CHECK(c.cancelling == 1);  // the first: within only by the magnitude
  CHECK(c.max_excess == Approx(0.02 / (1e-5 + 1.3e-2)));
  CHECK(c.to_json()["cancelling"] == 1);
  CHECK_THROWS_AS(compare_gradients({1.0}, {1.0}, 0, 0, &magnitude), RuntimeFailure);
}

TEST_CASE("rank agreement names the field, the ranks and their values", "[runner][unit]") {
  json a{{"seed", 0}, {"micro_batch", 4}}, b{{"seed", 1}, {"micro_batch", 4}};
  auto ok = check_agreement({a, a, a});
  CHECK(ok.ok);
  auto bad = check_agreement({a, b, a});
  CHECK_FALSE(bad.ok);
  REQUIRE(bad.mismatches.size() == 1);
  CHECK(bad.mismatches[0] == "seed: rank 0=0, rank 1=1");
  CHECK(bad.summary() == "ranks disagree: seed: rank 0=0, rank 1=1");
  // A key only one rank has is a mismatch too.
  json c = a;
  c["extra"] = true;
  CHECK_FALSE(check_agreement({a, c}).ok);
}

TEST_CASE("gradient noise scale B_simple (McCandlish et al. App. A.1) by hand", "[runner][unit]") {
  // b = 4, B = 32, mean |G_b|^2 = 1.0, mean |G_B|^2 = 0.3:
  // |G|^2 = (32*0.3 - 4*1.0) / 28 = 0.2;  S = (1.0 - 0.3) / (1/4 - 1/32) = 0.7 / 0.21875 = 3.2;
  // B_simple = 3.2 / 0.2 = 16.
  auto n = noise_scale(4, {0.5, 1.5}, 32, {0.3});
  CHECK(n.valid);
  CHECK(n.g_small_sq == Approx(1.0));
  CHECK(n.n_small == 2);
  CHECK(n.true_grad_sq == Approx(0.2));
  CHECK(n.trace_cov == Approx(3.2));
  CHECK(n.b_simple == Approx(16.0));
  CHECK_FALSE(noise_scale(4, {1.0}, 4, {0.3}).valid);  // one batch size only
  auto noisy = noise_scale(4, {1.0}, 32, {0.1});       // (3.2 - 4) / 28 < 0
  CHECK_FALSE(noisy.valid);
  CHECK(noisy.note.find("|G|^2") != std::string::npos);
  CHECK_FALSE(noise_scale(4, {}, 32, {0.1}).valid);
}

TEST_CASE("error_pct, max and spread over ranks", "[runner][unit]") {
  CHECK(error_pct(110, 100) == Approx(10));
  CHECK(error_pct(90, 100) == Approx(-10));
  CHECK(error_pct(0, 0) == 0);
  CHECK(std::isinf(error_pct(1, 0)));
  CHECK(max_over_ranks({{1, 5}, {3, 2}}) == std::vector<double>{3, 5});
  CHECK(spread_over_ranks({{1, 5}, {3, 2}}) == std::vector<double>{2, 3});
  CHECK_THROWS_AS(max_over_ranks({{1, 2}, {1}}), RuntimeFailure);
}

TEST_CASE("exposed communication split into the last rank's and the straggler wait", "[runner][unit]") {
  // Step 0: rank 1 arrives last (5 > 1): its exposed 3 is the collective's; rank 0 waited 10 - 3 = 7
  // more. Step 1: rank 0 arrives last (8 > 2): exposed 2, wait 9 - 2 = 7. Step 2: the last rank
  // (rank 1, arrival 4) shows the most exposed time itself: wait 0.
  const ExposedSplit s = split_exposed({{10, 2, 1}, {3, 9, 6}}, {{1, 8, 3}, {5, 2, 4}});
  CHECK(s.last_rank == std::vector<double>{3, 2, 6});
  CHECK(s.wait == std::vector<double>{7, 7, 0});
  // One rank: nobody to wait for.
  const ExposedSplit one = split_exposed({{0.5}}, {{2.0}});
  CHECK(one.last_rank == std::vector<double>{0.5});
  CHECK(one.wait == std::vector<double>{0});
  CHECK_THROWS_AS(split_exposed({{1, 2}}, {{1}}), RuntimeFailure);
  CHECK_THROWS_AS(split_exposed({{1}, {2}}, {{1}}), RuntimeFailure);
}

TEST_CASE("union of collective intervals", "[runner][unit]") {
  using C = std::chrono::steady_clock;
  const auto t = C::time_point{};
  auto s = [&](double x) { return t + std::chrono::duration_cast<C::duration>(std::chrono::duration<double>(x)); };
  // [0,2] u [1,3] u [5,6] = 3 + 1 = 4 s; order does not matter.
  CHECK(comm::union_length({{s(5), s(6)}, {s(0), s(2)}, {s(1), s(3)}}) == Approx(4.0));
  CHECK(comm::union_length({}) == 0.0);
}

TEST_CASE("run layout: windows, ranks, micro-steps and the partial window", "[runner][unit]") {
  RunSpec s;
  s.micro_batch = 2;
  s.accum_steps = 2;
  s.world_size = 2;
  s.warmup = 1;
  s.steps = 3;
  CHECK(s.global_batch() == 8);
  CHECK(s.effective_dataset_size() == 32);  // (1 + 3) * 8
  CHECK(s.partial_samples() == 0);
  CHECK(s.total_windows() == 4);
  // rank 1, micro 1 of window 1: 8 + (1*2 + 1)*2 = 14.
  CHECK(s.micro_range(1, 1, 1) == std::pair<Count, Count>{14, 2});
  s.dataset_size = 19;  // 2 full windows + 3 samples
  CHECK(s.full_windows() == 2);
  CHECK(s.partial_samples() == 3);
  CHECK(s.total_windows() == 3);
  CHECK(s.timed_steps() == 1);
  CHECK(s.window_samples(2) == 3);
  CHECK(s.micro_range(2, 0, 0) == std::pair<Count, Count>{16, 2});
  CHECK(s.micro_range(2, 0, 1) == std::pair<Count, Count>{18, 1});
  CHECK(s.micro_range(2, 1, 0).second == 0);
  s.partial_window = PartialWindow::drop;
  CHECK(s.total_windows() == 2);
  s.validate();
}

TEST_CASE("RunSpec rejects unusable values naming the flag, and round-trips through JSON", "[runner][unit]") {
  RunSpec s;
  s.warmup = 0;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("--warmup"));
  s.warmup = 3;
  s.dataset_size = 100;  // 1 full window of 64 < warmup + 1
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("--dataset-size"));
  s.dataset_size = 0;
  CHECK_THROWS_WITH(parse_partial_window("keep"), Catch::Contains("--partial-window"));
  CHECK(parse_partial_window("drop") == PartialWindow::drop);
  s.micro_batch = 3;
  s.strategy = Strategy::every_step;
  s.seed = 7;
  auto back = run_spec_from_json(to_json(s), "args");
  CHECK(back.micro_batch == 3);
  CHECK(back.strategy == Strategy::every_step);
  CHECK(back.seed == 7);
  CHECK(to_json(back) == to_json(s));
  CHECK(default_tolerances("float32") == std::pair<double, double>{1.3e-6, 1e-5});
  CHECK(default_tolerances("float64") == std::pair<double, double>{1e-10, 1e-10});
}

TEST_CASE("tune result picks are read from the tune schema, in order, up to --top", "[runner][unit]") {
  json r{{"schema", "gaccum-tune/tune-result"},
         {"schema_version", 2},
         {"model", {{"workload_name", "mlp-small"}}},
         {"picks",
          {{{"config", {{"micro_batch", 8}, {"accum_steps", 2}, {"world_size", 2}, {"strategy", "overlap"}}}},
           {{"config", {{"micro_batch", 4}, {"accum_steps", 4}, {"world_size", 2}, {"strategy", "every-step"}}}}}}};
  auto p = read_tune_picks(r, 3, "r.json");
  REQUIRE(p.size() == 2);
  CHECK(p[0].micro_batch == 8);
  CHECK(p[1].strategy == Strategy::every_step);
  CHECK(read_tune_picks(r, 1, "r.json").size() == 1);
  CHECK(tune_workload_name(r) == "mlp-small");
  CHECK(tune_workload_name(json{{"x", 1}}).empty());
  CHECK(tune_profile_path(json{{"source", {{"kind", "profile"}, {"path", "/abs/p.json"}}}}, "out/result.json") ==
        "/abs/p.json");
  CHECK(tune_profile_path(json{{"source", {{"kind", "spec"}, {"path", "s.json"}}}}, "out/result.json").empty());
  // Not a tune result, a newer schema, a pick without its config: one line naming the file.
  CHECK_THROWS_WITH(read_tune_picks(json{{"picks", json::array()}}, 3, "r.json"),
                    Catch::Contains("--from-tune: r.json is not a tune result"));
  json newer = r;
  newer["schema_version"] = 99;
  CHECK_THROWS_WITH(read_tune_picks(newer, 3, "r.json"), Catch::Contains("newer"));
  json flat = r;
  flat["picks"][0] = json{{"micro_batch", 8}, {"accum_steps", 2}, {"world_size", 2}, {"strategy", "overlap"}};
  CHECK_THROWS_WITH(read_tune_picks(flat, 3, "r.json"), Catch::Contains("picks[0]") && Catch::Contains("config"));
  json bad = r;
  bad["picks"][0]["config"]["micro_batch"] = 0;
  CHECK_THROWS_AS(read_tune_picks(bad, 3, "r.json"), InputError);
  // A sharded fp32 pick is run with its sharding; a bf16 one is refused with the reason.
  json sharded = r;
  sharded["picks"][0]["config"]["sharding"] = "hsdp:2";
  sharded["picks"][0]["config"]["precision"] = "fp32";
  const auto sp = read_tune_picks(sharded, 1, "r.json");
  CHECK(sp[0].sharding.sharding == Sharding::hsdp);
  CHECK(sp[0].sharding.group == 2);
  sharded["picks"][0]["config"]["precision"] = "bf16";
  CHECK_THROWS_WITH(read_tune_picks(sharded, 1, "r.json"), Catch::Contains("is a hsdp:2 bf16 plan"));
}

static Measured measured_fixture() {
  Measured m;
  m.step_time.median = 1.05;
  m.step_time.p90 = 1.2;
  m.step_time.p10 = 1.0;
  m.step_time.ci_lo = 1.0;
  m.step_time.ci_hi = 1.1;
  m.step_time.mean = 1.07;
  m.step_time.min = 1.0;
  m.step_time.max = 1.3;
  m.throughput_samples_per_s = 60.0;
  m.peak_memory = 150;
  m.peak_memory_per_rank = {150, 140};
  m.comm_exposed = 0.01;
  m.straggler_wait = 0.003;
  m.comm_total = 0.02;
  m.compute = 1.0;
  m.optimizer = 0.04;
  m.rank_skew = 0.001;
  m.collectives_per_step = 2;
  m.collectives_per_micro_step = {0, 2};
  m.collectives_launched_in_backward = 2;
  m.comm_buffer_bytes = 64;
  m.timed_steps = 3;
  m.noise_scale.valid = true;
  m.noise_scale.b_simple = 16.0;
  m.noise_scale.g_small_sq = 1.0;
  m.noise_scale.g_big_sq = 0.3;
  return m;
}

TEST_CASE("measured vs predicted: error in percent and a verdict per gated figure", "[runner][unit]") {
  model::Prediction p;
  p.time.step_time = 1.0;  // measured 1.05: +5%
  p.throughput = 64.0;     // measured 60: -6.25%
  p.memory.peak = 100;     // measured 150: +50% -> fail
  p.memory.comm_buffers = 64;
  p.collectives_per_step = 2;
  p.time.compute = 0.9;
  auto c = compare_to_prediction(measured_fixture(), p, 10.0);
  CHECK_FALSE(c.ok);
  auto row = [&](const std::string& name) {
    for (const auto& r : c.rows)
      if (r.figure == name) return r;
    FAIL("no row " << name);
    return ComparisonRow{};
  };
  CHECK(*row("step_time").error_pct == Approx(5.0));
  CHECK(row("step_time").status == Status::pass);
  CHECK(*row("throughput").error_pct == Approx(-6.25));
  CHECK(row("peak_memory").status == Status::fail);
  CHECK(row("collectives_per_step").status == Status::pass);
  CHECK(row("comm_buffer_bytes").status == Status::pass);
  CHECK_FALSE(row("compute").status.has_value());          // informational
  CHECK_FALSE(row("comm_exposed").error_pct.has_value());  // predicted 0
  p.memory.peak = 145;
  CHECK(compare_to_prediction(measured_fixture(), p, 10.0).ok);
  p.collectives_per_step = 3;
  CHECK_FALSE(compare_to_prediction(measured_fixture(), p, 10.0).ok);
}

static RunRecord run_fixture() {
  RunRecord run;
  run.spec.workload.name = "mlp-small";
  run.spec.micro_batch = 2;
  run.spec.accum_steps = 4;
  run.spec.world_size = 2;
  run.spec.strategy = Strategy::overlap;
  Environment env;
  env.backend = "gloo";
  env.device = "cpu";
  env.world_size = 2;
  env.threads_per_rank = 1;
  env.launcher = "local";
  run.environment = env;
  run.checks = {{"rank_agreement", Status::pass, "2 rank(s) agree"},
                {"token_normalisation", Status::skip, "samples"},
                {"parameters_identical", Status::fail, "ranks diverged"}};
  run.measured = measured_fixture();
  run.ok = false;
  return run;
}

TEST_CASE("the printed table of a run (golden)", "[runner][unit]") {
  const RunRecord run = run_fixture();
  const std::string expected =
      "validate mlp-small  micro_batch 2  accum_steps 4  world_size 2  (global_batch 16)  strategy overlap  float32\n"
      "  gloo on cpu, 2 rank(s) x 1 thread(s), launcher local\n"
      "checks\n"
      "  PASS  rank_agreement              2 rank(s) agree\n"
      "  n/a   token_normalisation         samples\n"
      "  FAIL  parameters_identical        ranks diverged\n"
      "measured (3 timed steps, step time = slowest rank per step)\n"
      "  step_time     median 1.05 s (95% interval 1 s to 1.1 s)  p90 1.2 s  (min 1 s, max 1.3 s)\n"
      "  throughput    60 samples/s\n"
      "  peak_memory   150 B per rank (max; ranks: 150 B, 140 B), resident 0 B, comm buffers 64 B\n"
      "  breakdown     compute 1 s, exposed comm 10 ms (last rank to arrive; the others waited 3 ms more for it), "
      "comm in flight 20 ms, optimizer 40 ms, rank skew 1 ms\n"
      "  collectives   2 per step, per micro-step [0,2]\n"
      "  noise scale   B_simple 16 samples (|G_b|^2 1 at b=2, |G_B|^2 0.3 at B=16)\n"
      "accumulation: INCORRECT (parameters_identical)\n"
      "prediction:   not checked (no profile to predict from: pass --profile profile.json, or validate "
      "--from-tune)\n"
      "result: FAIL (parameters_identical)\n";
  CHECK(format_run(run) == expected);
  // The two verdicts apart: checks decide the accumulation (exit 1), the comparison the
  // prediction (exit 3 when only it missed).
  CHECK_FALSE(run_verdicts(run).accumulation_correct());
  CHECK(run_verdicts(run).accumulation == Accumulation::incorrect);
  CHECK_FALSE(run_verdicts(run).prediction_held.has_value());
  CHECK(runs_exit_code({run}) == 1);
  RunRecord good = run;
  good.checks[2].status = Status::pass;
  CHECK(run_verdicts(good).accumulation_correct());
  CHECK(runs_exit_code({good}) == 0);
  Comparison cmp;
  cmp.tolerance_pct = 10.0;
  cmp.rows.push_back(ComparisonRow{"step_time", "s", 1.0, 1.5, 50.0, Gate::tolerance, Status::fail});
  good.comparison = cmp;
  CHECK(run_verdicts(good).prediction_held == false);
  CHECK(runs_exit_code({good}) == kExitPredictionMissed);
  CHECK_THAT(format_run(good), Catch::Contains("accumulation: CORRECT (2 checks pass, 1 n/a)") &&
                                   Catch::Contains("prediction:   MISSED (step_time +50.0%; tolerance 10%)"));
  CHECK(runs_exit_code({good, run}) == 1);  // an incorrect accumulation outranks a missed prediction
  {
    // A prediction from the cached profile is informational: it fails neither the exit code nor the result line.
    RunRecord info = good;
    info.comparison->verdict = false;
    CHECK(runs_exit_code({info}) == 0);
    CHECK(failed_items(info).empty());
    CHECK_THAT(format_run(info), Catch::Contains("(informational: the cached profile; not in the exit code)") &&
                                     Catch::Contains("result: PASS"));
  }
  good.comparison->rows[0].status = Status::pass;
  CHECK(run_verdicts(good).prediction_held == true);
  CHECK(runs_exit_code({good}) == 0);
  CHECK(failed_items(run) == std::vector<std::string>{"parameters_identical"});
  RunRecord failed;
  failed.spec = run.spec;
  failed.failure = "rank 1 (pid 7) was killed by SIGKILL (9)";
  add_not_run_checks(failed.checks, "not run: the run did not finish (" + *failed.failure + ")");
  CHECK(format_run(failed) ==
        "validate mlp-small  micro_batch 2  accum_steps 4  world_size 2  (global_batch 16)  strategy overlap  float32\n"
        "  FAILED: rank 1 (pid 7) was killed by SIGKILL (9)\n"
        "accumulation: NOT RUN (the run did not finish, so its checks never ran)\n"
        "prediction:   not checked (the run did not finish)\n"
        "result: FAIL (run)\n");
  // A run that did not finish is neither correct nor incorrect: its checks never ran.
  CHECK(run_verdicts(failed).accumulation == Accumulation::not_run);
  CHECK(runs_exit_code({failed}) == 1);
  auto doc = validation_document({run, failed}, 1);
  CHECK(doc.at("schema_version") == kValidationSchemaVersion);
  CHECK(doc.at("ok") == false);
  CHECK(doc.at("runs").size() == 2);
  CHECK(doc.at("accumulation") == "incorrect");  // a FAILed check outranks a run not run
  CHECK_FALSE(doc.contains("accumulation_reason"));
  auto after_good = validation_document({good, failed}, 86);
  CHECK(after_good.at("accumulation") == "not_run");
  CHECK(after_good.at("accumulation_reason") ==
        "the run did not finish, so its checks never ran: rank 1 (pid 7) was killed by SIGKILL (9)");
  const auto& checks = after_good.at("runs").at(1).at("checks");
  REQUIRE(checks.size() == 8);  // the data-parallel checks; pipeline runs add their three
  std::vector<CheckRecord> pipeline_checks;
  add_not_run_checks(pipeline_checks, "not run", true);
  CHECK(pipeline_checks.size() == std::size(kRunCheckTraits));
  for (const auto& c : checks) {
    CHECK(c.at("status") == "n/a");
    CHECK(c.at("detail") == "not run: the run did not finish (rank 1 (pid 7) was killed by SIGKILL (9))");
  }
  CHECK(validation_document({good}, 0).at("accumulation") == "correct");
}

namespace {

// The checks of a hand-made run: 1 rank, b=2 k=2 overlap, one window, the ranks' records clean
// (zeroed gradients, the expected collectives, one parameter hash), so only the window's
// comparisons decide.
struct CheckBench {
  RunFacts facts;
  RankRecord rank;
  WindowChecks c0;
  CheckBench() {
    facts.spec.workload.name = "lm";
    facts.spec.micro_batch = 2;
    facts.spec.accum_steps = 2;
    facts.spec.world_size = 1;
    facts.spec.steps = 1;
    facts.spec.warmup = 1;
    facts.spec.strategy = Strategy::overlap;
    facts.spec.rtol = 1e-5;
    facts.spec.atol = 1e-7;
    facts.token_workload = true;
    facts.expected_collectives = 0;
    facts.expected_per_micro = {0, 0};
    rank.params_hash_final = rank.grads_hash_step0 = "ff";
    for (int w = 0; w < 2; ++w) {
      rank.steps.nonzero_at_start.push_back(0);
      rank.steps.collectives.push_back(0);
      rank.steps.launched_in_backward.push_back(0);
      rank.steps.collectives_per_micro.push_back({0, 0});
    }
    const std::vector<double> ref{1.0, 2.0, 3.0};
    c0.samples = 4;
    c0.terms = 64;
    c0.last_micro_samples = 2;
    c0.equivalence = compare_gradients(ref, ref, 1e-5, 1e-7);
    c0.negative = compare_gradients({0.5, 1.0, 1.5}, ref, 1e-5, 1e-7);
  }
  // The alternative normalisation's gradient `alt` (vs the reference) and the run's `got`.
  void token(const std::vector<double>& alt, const std::vector<double>& got, std::vector<std::vector<Count>> terms) {
    const std::vector<double> ref{1.0, 2.0, 3.0};
    c0.by_k = compare_gradients(alt, ref, 1e-5, 1e-7);
    c0.equivalence = compare_gradients(got, ref, 1e-5, 1e-7);
    c0.got_vs_by_k = compare_gradients(got, alt, 1e-5, 1e-7);
    c0.micro_terms = std::move(terms);
  }
  RunRecord run() const {
    std::vector<CheckRecord> checks;
    add_record_checks(checks, facts, {rank}, c0, std::nullopt);
    RunRecord r;
    r.spec = facts.spec;
    r.checks = checks;
    return r;
  }
};

const CheckRecord& named(const RunRecord& r, RunCheck c) {
  for (const auto& x : r.checks)
    if (x.name == to_string(c)) return x;
  FAIL("no check " << to_string(c));
  return r.checks.front();
}

}  // namespace

TEST_CASE("token_normalisation: n/a where the two normalisations coincide, PASS or FAIL where they differ",
          "[runner][unit]") {
  CheckBench b;
  // No padding: every micro-batch 32 real tokens, the alternative equals the reference.
  b.token({1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}, {{32, 32}});
  RunRecord run = b.run();
  const auto& na = named(run, RunCheck::token_normalisation);
  CHECK(na.status == Status::skip);
  CHECK_THAT(na.detail, Catch::StartsWith("cannot discriminate on this input: every micro-batch has the same 32 real "
                                          "tokens") &&
                            Catch::Contains("rel L2 0 between them"));
  CHECK(run_verdicts(run).accumulation == Accumulation::correct);
  CHECK_THAT(format_run(run), Catch::Contains("  n/a   token_normalisation         cannot discriminate") &&
                                  Catch::Contains("accumulation: CORRECT (5 checks pass, 2 n/a)"));
  // Padding that differs too little for the tolerance: n/a too, with the token range.
  b.token({1.0, 2.0, 3.0 + 1e-9}, {1.0, 2.0, 3.0}, {{30, 32}});
  CHECK_THAT(named(b.run(), RunCheck::token_normalisation).detail, Catch::Contains("real tokens (30 to 32) differ too little"));
  // Padding: the alternative differs; the run's gradient is the reference: PASS.
  b.token({1.1, 2.0, 3.0}, {1.0, 2.0, 3.0}, {{20, 32}});
  CHECK(named(b.run(), RunCheck::token_normalisation).status == Status::pass);
  // The run made the mistake: its gradient is the alternative: FAIL, saying so.
  b.token({1.1, 2.0, 3.0}, {1.1, 2.0, 3.0}, {{20, 32}});
  run = b.run();
  const auto& bad = named(run, RunCheck::token_normalisation);
  CHECK(bad.status == Status::fail);
  CHECK_THAT(bad.detail, Catch::Contains("is the one dividing each micro-batch's mean loss by accum_steps"));
  CHECK(named(run, RunCheck::gradient_equivalence).status == Status::fail);
  CHECK(run_verdicts(run).accumulation == Accumulation::incorrect);
  // Neither: FAIL, pointing at gradient_equivalence.
  b.token({1.1, 2.0, 3.0}, {1.0, 2.5, 3.0}, {{20, 32}});
  CHECK_THAT(named(b.run(), RunCheck::token_normalisation).detail, Catch::Contains("see gradient_equivalence"));
  // Not a token workload: n/a with its reason.
  b.c0.by_k.reset();
  b.facts.token_workload = false;
  CHECK_THAT(named(b.run(), RunCheck::token_normalisation).detail, Catch::Contains("the loss terms are samples"));
}

TEST_CASE("the negative control and the gradient check: PASS, FAIL, or n/a when they cannot discriminate",
          "[runner][unit]") {
  CheckBench b;
  CHECK(named(b.run(), RunCheck::negative_control).status == Status::pass);
  CHECK(named(b.run(), RunCheck::gradient_equivalence).status == Status::pass);
  // The gradient before the last micro-step already equals the reference although that
  // micro-step had samples: FAIL.
  b.c0.negative = b.c0.equivalence;
  CHECK(named(b.run(), RunCheck::negative_control).status == Status::fail);
  // ... with no sample in the last micro-step anywhere it cannot be otherwise: n/a.
  b.c0.last_micro_samples = 0;
  const auto na = named(b.run(), RunCheck::negative_control);
  CHECK(na.status == Status::skip);
  CHECK_THAT(na.detail, Catch::Contains("the window's last micro-step has no samples on any rank"));
  // A reference gradient of exactly 0: no comparison with it discriminates.
  b.c0.last_micro_samples = 2;
  b.c0.equivalence = compare_gradients({0.0, 0.0}, {0.0, 0.0}, 1e-5, 1e-7);
  b.c0.negative = b.c0.equivalence;
  CHECK(named(b.run(), RunCheck::gradient_equivalence).status == Status::skip);
  CHECK(named(b.run(), RunCheck::negative_control).status == Status::skip);
  // A wrong gradient fails.
  b.c0.equivalence = compare_gradients({1.0, 2.5, 3.0}, {1.0, 2.0, 3.0}, 1e-5, 1e-7);
  CHECK(named(b.run(), RunCheck::gradient_equivalence).status == Status::fail);
}

TEST_CASE("the record checks FAIL what a broken run records", "[runner][unit]") {
  CheckBench b;
  CHECK(run_verdicts(b.run()).accumulation == Accumulation::correct);
  {
    CheckBench x;  // an allreduce the overlap plan at world_size 1 does not issue
    x.rank.steps.collectives[1] = 1;
    CHECK(named(x.run(), RunCheck::collectives_match_strategy).status == Status::fail);
  }
  {
    CheckBench x;  // gradients left over at a window start
    x.rank.steps.nonzero_at_start[1] = 5;
    CHECK(named(x.run(), RunCheck::zero_grad_at_window_start).status == Status::fail);
  }
  {
    CheckBench x;  // ranks that diverged
    RankRecord other = x.rank;
    other.rank = 1;
    other.params_hash_final = "fe";
    std::vector<CheckRecord> checks;
    add_record_checks(checks, x.facts, {x.rank, other}, x.c0, std::nullopt);
    RunRecord r;
    r.checks = checks;
    CHECK(named(r, RunCheck::parameters_identical).status == Status::fail);
  }
  // Every check has its name from one table, in the order a run records them.
  std::vector<std::string> names;
  for (const auto& c : b.run().checks) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"gradient_equivalence", "negative_control", "zero_grad_at_window_start",
                                          "parameters_identical", "token_normalisation", "partial_window",
                                          "collectives_match_strategy"});
}

TEST_CASE("the run record's JSON reads back what it wrote", "[runner][unit]") {
  RunRecord run = run_fixture();
  run.spec.validate();
  run.facts = WorkloadFacts{"abc123", "mlp", 10, 40};
  run.warnings = {"oversubscribed"};
  run.environment->launch["launcher_wall_s"] = 1.5;
  run.environment->ranks.push_back(RankEnvironment{0, 0, "h", 12, 1, 1, 2, CollectiveWait::poll});
  run.steps.push_back(WindowRow{0, false, false, 16, 16, 2.5, 0.1, 0.01, 0.002, 0.001, json{{"step_time", {0.1, 0.09}}}});
  Comparison cmp;
  cmp.tolerance_pct = 10.0;
  cmp.rows.push_back(ComparisonRow{"step_time", "s", 1.0, 1.5, 50.0, Gate::tolerance, Status::fail});
  cmp.rows.push_back(ComparisonRow{"comm_exposed", "s", 0.1, 0.0, std::nullopt, Gate::info, std::nullopt});
  cmp.ok = false;
  run.comparison = cmp;
  run.prediction = json{{"step_time", 1.5}};
  const json j = to_json(run);
  CHECK(j.at("checks").at(1).at("status") == "n/a");
  CHECK(j.at("config").at("workload").at("hash") == "abc123");
  CHECK(j.at("config").at("global_batch") == 16);
  CHECK(j.at("environment").at("launcher_wall_s") == 1.5);
  CHECK(j.at("comparison").at("rows").at(1).at("error_pct").is_null());
  CHECK(j.at("comparison").at("rows").at(1).at("status") == "info");
  const RunRecord back = run_record_from_json(j, "run");
  CHECK(to_json(back) == j);
  CHECK(back.checks[1].status == Status::skip);
  CHECK(format_run(back).find("  n/a   token_normalisation") != std::string::npos);
  CHECK(back.environment->launch.at("launcher_wall_s") == 1.5);
  // A field of the wrong type is named.
  json bad = j;
  bad["measured"]["peak_memory"] = "lots";
  CHECK_THROWS_WITH(run_record_from_json(bad, "run"), Catch::Contains("run.measured.peak_memory"));
  // A record written before the straggler wait was split off still loads (wait 0).
  CHECK(j.at("measured").at("straggler_wait") == 0.003);
  json old = j;
  old["measured"].erase("straggler_wait");
  CHECK(run_record_from_json(old, "run").measured->straggler_wait == 0);
  // How the ranks waited for collectives: recorded per rank; "block" in older records.
  CHECK(j.at("environment").at("ranks").at(0).at("collective_wait") == "poll");
  old["environment"]["ranks"][0].erase("collective_wait");
  CHECK(run_record_from_json(old, "run").environment->ranks[0].collective_wait == CollectiveWait::block);
  // A failed launch keeps only the spec and the line.
  RunRecord failed;
  failed.spec = run.spec;
  failed.failure = "rank 1 died";
  failed.launcher_wall_s = 2.0;
  add_not_run_checks(failed.checks, "not run: the run did not finish (rank 1 died)");
  const json fj = to_json(failed);
  CHECK(fj.size() == 5);  // config, ok, checks (all not run), failure, launcher_wall_s
  CHECK(to_json(run_record_from_json(fj, "failed")) == fj);
  // Written before failed runs listed their checks: none.
  json older = fj;
  older.erase("checks");
  CHECK(run_record_from_json(older, "failed").checks.empty());
}

TEST_CASE("a rank's record round-trips between ranks", "[runner][unit]") {
  // Aggregate-initialised: GCC 12 at -O3 -std=c++20 warns (maybe-uninitialized, a false positive)
  // on assigning short literals to the strings of a default-constructed record.
  RankRecord r{1, 0, std::string("n1"), 0, 0, 0, 0, 1000, 0, 0, std::string(), std::string("ff"), RankSteps{}};
  r.steps.step_time = {0.1, 0.2};
  r.steps.collectives_per_micro = {{0, 1}, {0, 1}};
  r.steps.g_small_sq = {-1, 2.5};
  r.collective_wait = CollectiveWait::poll;
  const json j = to_json(r);
  const RankRecord back = rank_record_from_json(j, "rank 1 record");
  CHECK(to_json(back) == j);
  CHECK(back.collective_wait == CollectiveWait::poll);
  CHECK(back.steps.collectives_per_micro[1][1] == 1);
  CHECK_THROWS_WITH(rank_record_from_json(json{{"rank", 1}}, "rank 1 record"), Catch::Contains("rank 1 record"));
}

TEST_CASE("test-only fault variables", "[runner][unit]") {
  ::setenv("GACCUM_TEST_FAULT", "rank:1:hang:2:3", 1);
  ::setenv("GACCUM_TEST_PERTURB", "rank:0:seed", 1);
  ::setenv("GACCUM_TEST_BREAK", "rank:1:param", 1);
  auto r1 = Faults::from_env(1);
  CHECK(r1.kind == "hang");
  CHECK(r1.step == 2);
  CHECK(r1.micro == 3);
  CHECK_FALSE(r1.perturb_seed);
  CHECK(r1.perturb_param);
  auto r0 = Faults::from_env(0);
  CHECK(r0.kind.empty());
  CHECK(r0.perturb_seed);
  CHECK_FALSE(r0.perturb_param);
  r0.maybe_trigger(2, 3);  // no fault on rank 0: returns
  ::setenv("GACCUM_TEST_FAULT", "rank:1:explode", 1);
  CHECK_THROWS_AS(Faults::from_env(1), InputError);
  ::setenv("GACCUM_TEST_FAULT", "rank:0:oom:0:1", 1);
  auto oom = Faults::from_env(0);
  oom.maybe_trigger(0, 0);
  CHECK_THROWS_AS(oom.maybe_trigger(0, 1), std::bad_alloc);
  ::unsetenv("GACCUM_TEST_FAULT");
  ::unsetenv("GACCUM_TEST_PERTURB");
  ::unsetenv("GACCUM_TEST_BREAK");
  CHECK(Faults::from_env(1).kind.empty());
}

TEST_CASE("ranks compute fp32 as fp32: no TF32 in cuBLAS or cuDNN (engine/exact_math.hpp)", "[runner][unit]") {
  // PyTorch's default lets cuDNN use TF32 (the flag exists on CPU builds too); set it so here,
  // whatever ran before in this process.
  at::globalContext().setAllowTF32CuDNN(true);
  CHECK_FALSE(gaccum::engine::exact_fp32_in_use());
  gaccum::engine::use_exact_fp32();
  CHECK(gaccum::engine::exact_fp32_in_use());
}

TEST_CASE("NCCL failure semantics: blocking wait and clean-up-only error handling, the user's own kept",
          "[runner][unit]") {
  using Env = std::map<std::string, std::string>;
  auto lookup = [](const Env& e) {
    return [e](const char* k) -> const char* {
      auto it = e.find(k);
      return it == e.end() ? nullptr : it->second.c_str();
    };
  };
  const auto all = gaccum::comm::nccl_env_defaults(lookup({}));
  CHECK(all == std::vector<std::pair<std::string, std::string>>{{"TORCH_NCCL_BLOCKING_WAIT", "1"},
                                                                {"NCCL_BLOCKING_WAIT", "1"},
                                                                {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "2"},
                                                                {"NCCL_ASYNC_ERROR_HANDLING", "2"}});
  // A user who chose one name of a setting keeps it, under both names (neither is overridden).
  const auto kept = gaccum::comm::nccl_env_defaults(lookup({{"NCCL_ASYNC_ERROR_HANDLING", "1"}}));
  CHECK(kept == std::vector<std::pair<std::string, std::string>>{{"TORCH_NCCL_BLOCKING_WAIT", "1"},
                                                                 {"NCCL_BLOCKING_WAIT", "1"}});
  CHECK(gaccum::comm::nccl_env_defaults(
            lookup({{"TORCH_NCCL_BLOCKING_WAIT", "0"}, {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}}))
            .empty());
}

TEST_CASE("out-of-memory messages that mark the sweep's boundary (engine/cuda_support.hpp)", "[runner][unit]") {
  using gaccum::engine::is_out_of_memory_message;
  CHECK(is_out_of_memory_message("CUDA out of memory. Tried to allocate 2.00 GiB"));
  CHECK(is_out_of_memory_message("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported"));
  CHECK(is_out_of_memory_message("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"));
  CHECK_FALSE(is_out_of_memory_message("CUDA error: an illegal memory access was encountered"));
  CHECK_FALSE(is_out_of_memory_message("shape mismatch"));
  CHECK(gaccum::engine::is_out_of_memory(std::runtime_error("CUDA error: out of memory")));
}

namespace {

// A phase clock that reports interval i of a window as (i + 1) ms, whatever really elapsed: the
// loop's figures must then be the hand sums below and nothing else (no host clock of its own).
class ScriptedClock final : public engine::PhaseClock {
 public:
  void begin() override { marks_ = 1; }
  void mark() override { ++marks_; }
  std::vector<Seconds> intervals() override {
    std::vector<Seconds> out;
    for (int i = 0; i + 1 < marks_; ++i) out.push_back((i + 1) * 1e-3);
    windows_.push_back(static_cast<int>(out.size()));
    return out;
  }
  std::vector<int> windows_;  // intervals per window read

 private:
  int marks_ = 0;
};

}  // namespace

TEST_CASE("the accumulation loop takes every time it reports from its phase clock", "[runner][unit]") {
  torch::set_num_threads(1);
  RunSpec spec;
  spec.micro_batch = 2;
  spec.accum_steps = 2;
  spec.world_size = 1;
  spec.warmup = 0;
  spec.steps = 2;
  workloads::WorkloadConfig cfg;
  cfg.name = "mlp-small";
  cfg.device = "cpu";
  auto workload = workloads::make_workload(cfg);
  auto params = workload->parameters();
  comm::GradSync sync(nullptr, params, Strategy::overlap);
  auto optimizer = workloads::make_optimizer(params, Optimizer::sgd, 1e-2);
  ScriptedClock clock;
  runner::LoopContext c{spec, *workload, params, nullptr, sync, *optimizer, 0, 1, &clock};
  runner::LoopObserver observer;
  const auto rec = runner::run_windows(c, observer);
  // k = 2, one rank: 23 intervals per window (accumulation_loop.cpp; recount if a mark is added):
  //   0 start | 1 obs zero_gradients | 2 zero_grad | 3 obs after_zero_grad |
  //   m=0: 4 terms | 5 obs micro_begin | 6 batch | 7 obs loss_scale | 8 fwd+bwd | 9 obs after_backward |
  //   m=1: 10 sync | 11 obs | 12 batch | 13 obs | 14 fwd+bwd | 15 obs | 16 arrival mark |
  //   17 sync | 18 obs after_sync | 19 - | 20 window checks | 21 optimizer step | 22 after-step gather
  // Interval i is (i + 1) ms: all 276, observer 2+4+6+8+10+12+14+16+19 = 91, checks 21:
  //   step = 276 - 21 - 91 = 164, optimizer = 22, compute = 164 - 0 exposed - 22 = 142,
  //   arrival (intervals 0..16) = 153.
  CHECK(clock.windows_ == std::vector<int>{23, 23});
  REQUIRE(rec.step_time.size() == 2);
  for (std::size_t w = 0; w < 2; ++w) {
    CHECK(rec.step_time[w] == Approx(0.164).margin(1e-12));
    CHECK(rec.optimizer[w] == Approx(0.022).margin(1e-12));
    CHECK(rec.instrumentation[w] == Approx(0.091).margin(1e-12));
    CHECK(rec.arrival[w] == Approx(0.153).margin(1e-12));
    CHECK(rec.exposed[w] == 0);
    CHECK(rec.compute[w] == Approx(0.142).margin(1e-12));
    CHECK(rec.local_samples[w] == 4);
  }
}

TEST_CASE("pipeline memory replay and bubble: hand-computed", "[runner][pipeline]") {
  using gaccum::model::PipeOp;
  using gaccum::model::PipeOpKind;
  const auto F = [](Count i) { return PipeOp{PipeOpKind::forward, i, 0}; };
  const auto B = [](Count i) { return PipeOp{PipeOpKind::backward, i, 0}; };
  // 1F1B rank 0 of p 2, m 3: F0 F1 B0 F2 B1 B2. Level from 100: F peaks +15 and holds 10, B peaks
  // +7 and leaves the 2-byte input gradient until the window's end.
  //   F0 115 (level 110), F1 125 (120), B0 127 (112), F2 127 (122), B1 129 (114), B2 121 (106).
  const std::vector<PipeOp> ops{F(0), F(1), B(0), F(2), B(1), B(2)};
  const std::vector<ChunkMemory> parts{ChunkMemory{15, 10, 7, 2}};
  CHECK(replay_stage_memory(ops, parts, 100, 20) == 129);
  CHECK(replay_stage_memory(ops, parts, 100, 40) == 140);  // the optimizer step's peak is higher
  // GPipe's order holds all three: F2 peaks at 100 + 2 x 10 + 15.
  CHECK(replay_stage_memory({F(0), F(1), F(2), B(0), B(1), B(2)}, parts, 100, 0) == 137);
  CHECK(closed_form_bubble(8, 1, 32) == Approx(7.0 / 39.0));
  CHECK(closed_form_bubble(4, 2, 8) == Approx(3.0 / 19.0));
  CHECK(op_name(PipeOp{PipeOpKind::backward, 3, 1}) == "B3.1");
}

TEST_CASE("a pipeline run spec: layout validation and the data-parallel view", "[runner][pipeline]") {
  RunSpec s;
  s.workload.name = "gpt-tiny";
  s.world_size = 4;
  s.pp = 2;
  s.micro_batch = 2;
  s.accum_steps = 4;
  s.strategy = gaccum::Strategy::fused;
  s.warmup = 2;
  CHECK(s.data_parallel() == 2);
  CHECK(s.global_batch() == 16);  // b k dp
  // Replica 1, microbatch 3 of window 1: 16 + (1 x 4 + 3) x 2.
  CHECK(s.micro_range(1, 1, 3) == std::pair<Count, Count>{30, 2});
  const RunSpec dp = s.data_parallel_view();
  CHECK(dp.world_size == 2);
  CHECK(dp.pp == 1);
  CHECK(dp.micro_range(1, 1, 3) == s.micro_range(1, 1, 3));
  REQUIRE_NOTHROW(s.validate());
  CHECK(run_spec_from_json(to_json(s), "spec").pp == 2);
  s.world_size = 3;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("do not split into 2 pipeline stage(s)"));
  s.world_size = 4;
  s.accum_steps = 1;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("--schedule 1f1b with --pp 2"));
  s.accum_steps = 4;
  s.strategy = gaccum::Strategy::overlap;
  CHECK_THROWS_WITH(s.validate(), Catch::Contains("use --strategy fused"));
}
