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
  std::string source;         // where B_noise came from ("" when unknown)
  std::string text;
};

// `source` is quoted beside B_noise; `hint`, when there is no noise scale, is the command that
// measures one (e.g. "gaccum-tune validate --workload gpt-tiny -b 8 -k 4 -p 2").
CriticalBatchAdvice critical_batch_advice(std::optional<double> noise_scale, Count global_batch,
                                          const std::string& source = "", const std::string& hint = "");

// The command that measures B_noise for a setting: `validate_command` (no -b/-k/-p) with the
// setting's b, k, p; k is raised to 2 when k x p = 1 (validate needs two batch sizes).
std::string noise_scale_command(const std::string& validate_command, Count micro_batch, Count accum_steps,
                                Count world_size);

}  // namespace gaccum::tuner
