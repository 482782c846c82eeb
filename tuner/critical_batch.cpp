// What/why: the formulas of critical_batch.hpp.
#include "tuner/critical_batch.hpp"

#include <fmt/format.h>

namespace gaccum::tuner {

std::string noise_scale_command(const std::string& validate_command, Count micro_batch, Count accum_steps,
                                Count world_size) {
  const Count k = accum_steps * world_size > 1 ? accum_steps : 2;
  return fmt::format("{} -b {} -k {} -p {}", validate_command, micro_batch, k, world_size);
}

CriticalBatchAdvice critical_batch_advice(std::optional<double> noise_scale, Count global_batch,
                                          const std::string& source, const std::string& hint) {
  CriticalBatchAdvice a;
  a.global_batch = global_batch;
  if (!noise_scale) {
    a.text = hint.empty()
                 ? std::string("critical batch size unknown: the model has no gradient noise scale (pass --noise-scale N "
                               "or use a profile with gradient statistics)")
                 : fmt::format("critical batch size unknown: no gradient noise scale for this workload; measure it with "
                               "`{}` (tune and check on this workload then use it) or pass --noise-scale N",
                               hint);
    return a;
  }
  a.available = true;
  a.source = source;
  const std::string from = source.empty() ? std::string() : fmt::format("; B_noise from {}", source);
  a.noise_scale = *noise_scale;
  const double B = double(global_batch), Bn = *noise_scale;
  a.exceeds = B > Bn;
  a.steps_factor = 1.0 + Bn / B;
  a.samples_factor = 1.0 + B / Bn;
  a.extra_samples = B / Bn;
  if (a.exceeds) {
    a.text = fmt::format(
        "global_batch {} exceeds the critical batch size B_noise ~ {:.0f} (McCandlish et al. 2018{}): reaching the same "
        "loss takes E = E_min (1 + B/B_noise) = {:.2f} x E_min samples ({:.2f} x E_min extra) in S = S_min (1 + "
        "B_noise/B) = {:.2f} x S_min steps; beyond B_noise more batch buys few steps",
        global_batch, Bn, from, a.samples_factor, a.extra_samples, a.steps_factor);
  } else {
    a.text = fmt::format(
        "global_batch {} is within the critical batch size B_noise ~ {:.0f} (McCandlish et al. 2018{}): E = E_min (1 + "
        "B/B_noise) = {:.2f} x E_min samples, S = S_min (1 + B_noise/B) = {:.2f} x S_min steps; a larger B still "
        "cuts steps nearly proportionally",
        global_batch, Bn, from, a.samples_factor, a.steps_factor);
  }
  return a;
}

}  // namespace gaccum::tuner
