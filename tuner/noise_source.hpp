// What: gradient noise scales measured by `validate`, kept per workload so that `tune` and
//       `check` on the same workload use them, and the choice between one of them and the
//       profile's own estimate.
//   record file   {"schema": "gaccum-tune/noise-scale", "schema_version": 1, "workload_hash",
//                  "measurements": [{b_small, mean_sq_norm_small, n_small, b_big,
//                  mean_sq_norm_big, n_big, origin}]}  (validate's run record: runner/checks.hpp
//                  NoiseScale, b_small = micro_batch, b_big = global_batch)
//   estimator     B_simple from the two means with model::noise_scale_two_sizes (the one in
//                  model/noise_scale.hpp; nothing here re-derives it)
//   strength      a two-size estimate's variance falls as the sizes spread apart, so the
//                  stronger estimate has the larger b_big / b_small, then more squared-norm
//                  samples. The profile's (model::estimate_noise_scale over its micro_batch
//                  sweep) is replaced only by a stronger measurement, or when it has none.
// Why: docs/DESIGN.md, Convergence: the critical-batch verdict of tune and check needs B_noise;
//      validate measures it at the real global batch, often with a wider spread than the
//      profile's micro-batch sweep.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "core/units.hpp"

namespace gaccum::tuner {

inline constexpr const char* kNoiseScaleSchema = "gaccum-tune/noise-scale";
inline constexpr int kNoiseScaleSchemaVersion = 1;

struct MeasuredNoiseScale {
  Count b_small = 0, b_big = 0;
  double mean_sq_small = 0, mean_sq_big = 0;
  Count n_small = 0, n_big = 0;  // squared-norm samples behind each mean
  std::string origin;            // e.g. "validate -b 4 -k 8 -p 2"
  double b_simple() const;       // model::noise_scale_two_sizes
};

struct NoiseStrength {
  double spread = 0;  // b_big / b_small
  Count samples = 0;
};
bool stronger(const NoiseStrength& a, const NoiseStrength& b);  // a beats b
NoiseStrength strength(const MeasuredNoiseScale& m);
// The profile's estimate's strength; nullopt when the profile gives no positive estimate.
std::optional<NoiseStrength> profile_noise_strength(const std::vector<GradNormPoint>& points);

// From one run of validate's validation.json: nullopt unless its accumulation checks all passed
// (none "fail") and its measured noise_scale is valid with b_big > b_small.
std::optional<MeasuredNoiseScale> measurement_from_validation_run(const nlohmann::json& run);

// The record file's content, and its reading (InputError naming `what` and the field on a
// malformed file, or on a record of another workload).
nlohmann::json noise_record_json(const std::string& workload_hash, const std::vector<MeasuredNoiseScale>& ms);
std::vector<MeasuredNoiseScale> read_noise_record(const nlohmann::json& doc, const std::string& what,
                                                  const std::string& workload_hash);
// `existing` with `m` added: a measurement at the same (b_small, b_big) is replaced; at most
// 16 kept, the strongest.
std::vector<MeasuredNoiseScale> merge_measurement(std::vector<MeasuredNoiseScale> existing, const MeasuredNoiseScale& m);

struct NoiseChoice {
  double noise_scale = 0;
  std::string source;  // "validate -b 4 -k 8 -p 2, <path>"
};
// The strongest recorded measurement when it beats the profile's estimate (or the profile has
// none); nullopt otherwise. `where` (the record's path) joins the source text.
std::optional<NoiseChoice> choose_recorded_noise_scale(const std::vector<MeasuredNoiseScale>& recorded,
                                                       const std::optional<NoiseStrength>& profile,
                                                       const std::string& where);

}  // namespace gaccum::tuner
