// What: predictions per second of the cost model on one core (Google Benchmark), for the
//       profile model (tests/data/small-profile.json, measured and cluster-scaled world sizes)
//       and the spec model (examples/specs/gpt-1.3b.json on the 16-node InfiniBand cluster).
// Why: the tuner evaluates every (b, k, p, strategy) of its search space; model/cost_model.hpp
//      promises allocation-free predictions at >= 1e6 per second.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "core/profile.hpp"
#include "model/cluster.hpp"
#include "model/profile_model.hpp"
#include "model/spec_model.hpp"

namespace {

using namespace gaccum;
using namespace gaccum::model;

const std::string kSource = GACCUM_SOURCE_DIR;

// A spread of configurations like a tuner's search space.
std::vector<Config> configs(const std::vector<Count>& world_sizes) {
  std::vector<Config> out;
  for (Count b : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32})
    for (Count k : {1, 2, 4, 8, 16})
      for (Count p : world_sizes)
        for (Strategy s : kAllStrategies) {
          Config c;
          c.micro_batch = b;
          c.accum_steps = k;
          c.world_size = p;
          c.strategy = s;
          out.push_back(c);
        }
  return out;
}

void run(benchmark::State& state, const CostModel& m, const std::vector<Config>& cs) {
  std::size_t i = 0;
  for (auto _ : state) {
    Prediction p = m.predict(cs[i]);
    benchmark::DoNotOptimize(p);
    if (++i == cs.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_ProfileModel(benchmark::State& state) {
  static const Profile prof = load_profile(kSource + "/tests/data/small-profile.json");
  static const auto m = make_profile_model(prof);
  static const auto cs = configs({1, 2});
  run(state, *m, cs);
}
BENCHMARK(BM_ProfileModel);

void BM_ProfileModelOnCluster(benchmark::State& state) {
  static const Profile prof = load_profile(kSource + "/tests/data/small-profile.json");
  static const Cluster cluster = load_cluster(kSource + "/examples/clusters/ib-cluster-16node.json");
  static const auto m = make_profile_model(prof, &cluster);
  static const auto cs = configs({1, 2, 8, 16, 64, 128});
  run(state, *m, cs);
}
BENCHMARK(BM_ProfileModelOnCluster);

void BM_SpecModel(benchmark::State& state) {
  static const Cluster cluster = load_cluster(kSource + "/examples/clusters/ib-cluster-16node.json");
  static const auto m = make_spec_model(load_spec(kSource + "/examples/specs/gpt-1.3b.json"), cluster, 0.4);
  static const auto cs = configs({1, 8, 16, 64, 128});
  run(state, *m, cs);
}
BENCHMARK(BM_SpecModel);

}  // namespace

BENCHMARK_MAIN();
