// What: the gradient noise scale B_simple (McCandlish et al. 2018, "An Empirical Model of
//       Large-Batch Training", App. A.1) from squared gradient norms |G_b|^2 of independent
//       batches at two sizes b_small < b_big:
//         E|G_b|^2 = |G|^2 + tr(Sigma) / b
//         |G|^2    ~= (b_big E|G_big|^2 - b_small E|G_small|^2) / (b_big - b_small)
//         tr(Sigma) ~= (E|G_small|^2 - E|G_big|^2) / (1/b_small - 1/b_big)
//         B_simple = tr(Sigma) / |G|^2           (samples)
//       With more than two sizes: the weighted least-squares line E|G_b|^2 = |G|^2 + tr(Sigma) x
//       (1/b), weights = samples per size (identical to the formulas above for two sizes).
//       Steps to a target loss scale as S_min (1 + B_noise / B): steps_factor.
// Why: a larger global batch is not free; time-to-target = steps_factor(B) x step_time(B).
// Units: |G|^2 and tr(Sigma) in (loss/parameter)^2, B_simple in samples.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/profile.hpp"

namespace gaccum::model {

struct NoiseScale {
  double grad_sq_norm = 0;  // |G|^2
  double trace_sigma = 0;   // tr(Sigma), per-sample gradient covariance trace
  double b_simple = 0;      // tr(Sigma) / |G|^2
  Count b_small = 0, b_big = 0;
};

// The two-size estimator from the means of the squared norms.
NoiseScale noise_scale_two_sizes(Count b_small, double mean_sq_small, Count b_big, double mean_sq_big);

// From the profile's grad_norms; nullopt (with a note saying why) when fewer than two sizes
// with samples exist or the estimate is not positive (noise dominates the measurement).
std::optional<NoiseScale> estimate_noise_scale(const std::vector<GradNormPoint>& points, std::vector<std::string>& notes);

// Relative number of optimizer steps to a target at global batch B: 1 + B_noise / B.
inline double steps_factor(double noise_scale, double global_batch) { return 1.0 + noise_scale / global_batch; }

}  // namespace gaccum::model
