// What/why: the formulas of critical_batch.hpp.
#include "tuner/critical_batch.hpp"

#include <fmt/format.h>

namespace gaccum::tuner {

CriticalBatchAdvice critical_batch_advice(std::optional<double> noise_scale, Count global_batch) {
  CriticalBatchAdvice a;
  a.global_batch = global_batch;
  if (!noise_scale) {
    a.text =
        "critical batch size unknown: the model has no gradient noise scale (pass --noise-scale N or use a "
        "profile with gradient statistics)";
    return a;
  }
  a.available = true;
  a.noise_scale = *noise_scale;
  const double B = double(global_batch), Bn = *noise_scale;
  a.exceeds = B > Bn;
  a.steps_factor = 1.0 + Bn / B;
  a.samples_factor = 1.0 + B / Bn;
  a.extra_samples = B / Bn;
  if (a.exceeds) {
    a.text = fmt::format(
        "global_batch {} exceeds the critical batch size B_noise ~ {:.0f} (McCandlish et al. 2018): reaching the same "
        "loss takes E = E_min (1 + B/B_noise) = {:.2f} x E_min samples ({:.2f} x E_min extra) in S = S_min (1 + "
        "B_noise/B) = {:.2f} x S_min steps; beyond B_noise more batch buys few steps",
        global_batch, Bn, a.samples_factor, a.extra_samples, a.steps_factor);
  } else {
    a.text = fmt::format(
        "global_batch {} is within the critical batch size B_noise ~ {:.0f} (McCandlish et al. 2018): E = E_min (1 + "
        "B/B_noise) = {:.2f} x E_min samples, S = S_min (1 + B_noise/B) = {:.2f} x S_min steps; a larger B still "
        "cuts steps nearly proportionally",
        global_batch, Bn, a.samples_factor, a.steps_factor);
  }
  return a;
}

}  // namespace gaccum::tuner
