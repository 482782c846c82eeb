// What: speed of `gaccum-tune check` without process start-up (Google Benchmark): reading a job
//       file, reading and fitting tests/data/small-profile.json, merging and resolving the inputs,
//       running the eight checks (check 5 runs a tune) and printing the JSON verdict; and the
//       checks alone on an already fitted model.
// Why: the target: well under a second with a cached profile. What the process adds on
//      top is start-up (dynamic loading; LibTorch costs ~0.5 s in the engine binary, nothing in
//      the light one). Run: build/bench/bench_check
#include <benchmark/benchmark.h>

#include "check/check_inputs.hpp"
#include "check/job.hpp"
#include "check/rank_agreement.hpp"
#include "check/verdict.hpp"
#include "core/profile.hpp"
#include "model/profile_model.hpp"

using namespace gaccum;

namespace {

const std::string kData = std::string(GACCUM_SOURCE_DIR) + "/tests/data";

check::ResolvedJob resolved_job() {
  const check::JobFile job = check::load_job(kData + "/check/job-small.yaml");
  check::CheckInputs merged = check::default_inputs();
  check::overlay(merged, check::inputs_from_job(job));
  return check::resolve(merged);
}

// Everything `check --job job-small.yaml --json` does after start-up.
void BM_check_end_to_end(benchmark::State& state) {
  std::size_t bytes = 0;
  for (auto _ : state) {
    const check::ResolvedJob job = resolved_job();
    const Profile p = load_profile(*job.inputs.profile);
    const auto m = model::make_profile_model(p);
    const auto v = check::run_checks(job, m.get(), check::rank_agreement_skipped(), check::VerdictContext{});
    bytes = check::print_json(v).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["json_bytes"] = double(bytes);
}
BENCHMARK(BM_check_end_to_end)->Unit(benchmark::kMillisecond);

// The eight checks on a fitted model.
void BM_checks_only(benchmark::State& state) {
  const check::ResolvedJob job = resolved_job();
  const Profile p = load_profile(kData + "/small-profile.json");
  const auto m = model::make_profile_model(p);
  for (auto _ : state) {
    auto v = check::run_checks(job, m.get(), check::rank_agreement_skipped(), check::VerdictContext{});
    benchmark::DoNotOptimize(v.checks.data());
  }
}
BENCHMARK(BM_checks_only)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
