// What/why: see recompute_mix.hpp.
#include "model/recompute_mix.hpp"

#include <cmath>
#include <cstddef>

namespace gaccum::model {

Prediction mix_recompute(Prediction p, const Prediction& none, double f) {
  auto mix = [f](double kept, double all) { return kept + f * (all - kept); };
  auto mix_bytes = [&](Bytes kept, Bytes all) { return Bytes(std::llround(mix(double(kept), double(all)))); };
  const Seconds full_step = p.time.step_time;
  p.memory.activations = mix_bytes(none.memory.activations, p.memory.activations);
  p.memory.peak = mix_bytes(none.memory.peak, p.memory.peak);
  for (std::size_t i = 0; i < p.parallel.stages.size() && i < none.parallel.stages.size(); ++i) {
    auto& st = p.parallel.stages[i].memory;
    st.activations = mix_bytes(none.parallel.stages[i].memory.activations, st.activations);
    st.peak = mix_bytes(none.parallel.stages[i].memory.peak, st.peak);
  }
  if (!p.parallel.stages.empty()) {
    // The heaviest stage of the mix (it can differ from full recompute's).
    for (std::size_t i = 0; i < p.parallel.stages.size(); ++i)
      if (p.parallel.stages[i].memory.peak > p.parallel.stages[static_cast<std::size_t>(p.parallel.peak_stage)].memory.peak)
        p.parallel.peak_stage = static_cast<decltype(p.parallel.peak_stage)>(i);
    const auto& heaviest = p.parallel.stages[static_cast<std::size_t>(p.parallel.peak_stage)].memory;
    p.memory.activations = heaviest.activations;
    p.memory.peak = heaviest.peak;
  }
  p.time.compute = mix(none.time.compute, p.time.compute);
  p.time.bubble = mix(none.time.bubble, p.time.bubble);
  p.time.step_time = mix(none.time.step_time, p.time.step_time);
  p.step_time_lo = mix(none.step_time_lo, p.step_time_lo);
  p.step_time_hi = mix(none.step_time_hi, p.step_time_hi);
  // The same samples and model FLOPs per step in the step's new length.
  const double faster = p.time.step_time > 0 ? full_step / p.time.step_time : 1.0;
  p.throughput *= faster;
  p.tokens_per_s *= faster;
  p.compute.model_flops_per_s *= faster;
  p.compute.mfu *= faster;
  return p;
}

}  // namespace gaccum::model
