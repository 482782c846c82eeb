// What: tuner speed (Google Benchmark): the exhaustive search (enumerate, predict, check, score,
//       rank) over ~1e6 candidates, on the closed-form fake model (tuner cost alone) and on the
//       real profile model fitted on tests/data/small-profile.json; plus a full `tune` (search,
//       explanations, Pareto, memory curve) at the CLI's default size.
// Why: the speed target: 1e6 candidates in under a second. Counters report
//      candidates/s; run: build/bench/bench_tuner --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include "core/profile.hpp"
#include "model/profile_model.hpp"
#include "tests/unit/fake_cost_model.hpp"
#include "tuner/tuner.hpp"

using namespace gaccum;

namespace {

// Global batches 1..n on world sizes {1, 2, 4, 8}, every strategy, no memory pressure:
// sum over p | B of d(B/p) x strategies candidates (n = 28600 gives 1.0e6).
tuner::TuneRequest wide_request(Count n) {
  tuner::TuneRequest r;
  r.global_batch_min = 1;
  r.global_batch_max = n;
  r.world_sizes = {1, 2, 4, 8};
  r.memory_cap = MemoryCap{Bytes(1) << 40, std::nullopt};
  r.allow_cap_above_device = true;  // a synthetic cap over the fake device: the search, not the cap, is timed
  r.margin = 0.1;
  r.max_accum_steps = 64;
  r.allow_extrapolation = true;
  return r;
}

void run_search(benchmark::State& state, const model::CostModel& m) {
  auto req = wide_request(state.range(0));
  tuner::validate(req);
  const auto limits = tuner::resolve_limits(m.info(), req);
  std::size_t n = 0;
  for (auto _ : state) {
    auto res = tuner::search(m, req, limits);
    n = res.candidates.size();
    benchmark::DoNotOptimize(res.ranking.data());
  }
  state.counters["candidates"] = double(n);
  state.counters["candidates/s"] =
      benchmark::Counter(double(n) * double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_SearchFakeModel(benchmark::State& state) {
  test::FakeCostModel m;
  run_search(state, m);
}
BENCHMARK(BM_SearchFakeModel)->Arg(28600)->Unit(benchmark::kMillisecond);

void BM_SearchProfileModel(benchmark::State& state) {
  Profile p = load_profile(std::string(GACCUM_SOURCE_DIR) + "/tests/data/small-profile.json");
  auto m = model::make_profile_model(p);
  run_search(state, *m);
}
BENCHMARK(BM_SearchProfileModel)->Arg(28600)->Unit(benchmark::kMillisecond);

// The CLI's default: one global batch, world sizes 1..8, with explanations of the top 10.
void BM_TuneDefault(benchmark::State& state) {
  Profile p = load_profile(std::string(GACCUM_SOURCE_DIR) + "/tests/data/small-profile.json");
  auto m = model::make_profile_model(p);
  tuner::TuneRequest r;
  r.global_batch_min = r.global_batch_max = 512;
  r.world_sizes = tuner::world_sizes_up_to(8);
  r.memory_cap = MemoryCap{Bytes(16) << 20, std::nullopt};
  r.allow_extrapolation = true;
  for (auto _ : state) {
    auto res = tuner::tune(*m, r);
    benchmark::DoNotOptimize(res.picks.data());
  }
}
BENCHMARK(BM_TuneDefault)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
