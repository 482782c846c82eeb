// What: where the global batch B stands against the critical batch size, estimated by the
//       gradient noise scale B_noise (McCandlish et al. 2018, "An Empirical Model of Large-Batch
//       Training"). To reach the same loss:
//         optimizer steps   S(B) = S_min (1 + B_noise / B)
//         training samples  E(B) = E_min (1 + B / B_noise),   E_min = S_min B_noise
//       so B above B_noise costs B / B_noise x E_min extra samples (beyond E_min) while saving
//       ever fewer steps; at B = B_noise both factors are 2 (the knee).
// Why: accumulation makes large B cheap to configure but not free to train; the report says so
//      with numbers.
#pragma once

#include <optional>
#include <string>

#include "core/units.hpp"

namespace gaccum::tuner {

struct CriticalBatchAdvice {
  bool available = false;  // false without a noise scale
  double noise_scale = 0;  // B_noise, samples
  Count global_batch = 0;
  bool exceeds = false;       // B > B_noise
  double steps_factor = 0;    // S(B) / S_min = 1 + B_noise / B
  double samples_factor = 0;  // E(B) / E_min = 1 + B / B_noise
  double extra_samples = 0;   // (E(B) - E_min) / E_min = B / B_noise
  std::string text;
};

CriticalBatchAdvice critical_batch_advice(std::optional<double> noise_scale, Count global_batch);

}  // namespace gaccum::tuner
