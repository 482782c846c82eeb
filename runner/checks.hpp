// What: the arithmetic of the validation checks, free of LibTorch: element-wise gradient
//       comparison (allclose with counts), rank agreement on the run's identity, the gradient
//       noise scale B_simple, and measured-vs-predicted errors.
// Why: each check's verdict is a formula; keeping the formulas pure makes every one unit-tested
//      with hand-computed numbers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace gaccum::runner {

// got vs ref, element-wise, as torch.allclose: |got - ref| <= atol + rtol * |ref|; with the
// magnitudes of the terms ref sums (`magnitude`, sum over micro-batches of |g|), |got - ref| <=
// atol + rtol * max(|ref|, magnitude): a float32 sum of terms that cancel is exact only to a
// fraction of the terms' size, not of what is left (an ill-conditioned BatchNorm on a 1x1 map gives
// gradient terms of 1e12 that cancel to 1e4).
struct GradComparison {
  Count elements = 0;
  Count violations = 0;     // elements outside the tolerance
  double max_abs_diff = 0;  // max |got - ref|
  double max_excess = 0;    // max |got - ref| / (atol + rtol |ref|); <= 1 when within
  double rel_l2 = 0;        // ||got - ref||_2 / ||ref||_2 (0 when ref is 0 and got == ref)
  double ref_l2 = 0;        // ||ref||_2
  double rtol = 0, atol = 0;
  Count cancelling = 0;     // elements within only because their terms' magnitude sets the tolerance
  bool within() const { return violations == 0; }
  nlohmann::json to_json() const;
};
GradComparison compare_gradients(const std::vector<double>& got, const std::vector<double>& ref, double rtol,
                                 double atol, const std::vector<double>* magnitude = nullptr);

// Every rank's identity object (same keys); the ranks whose values differ from rank 0's.
struct Agreement {
  bool ok = true;
  std::vector<std::string> mismatches;  // "seed: rank 0=0, rank 1=1"
  std::string summary() const;          // one line
};
Agreement check_agreement(const std::vector<nlohmann::json>& per_rank);

// Gradient noise scale, McCandlish et al. 2018 ("An Empirical Model of Large-Batch Training"),
// App. A.1, from the mean squared gradient norms at two batch sizes (samples), computed by
// model::noise_scale_two_sizes (model/noise_scale.hpp, the one estimator):
//   |G|^2 = (B |G_B|^2 - b |G_b|^2) / (B - b)        (unbiased |true gradient|^2)
//   S     = (|G_b|^2 - |G_B|^2) / (1/b - 1/B)          (trace of the per-sample covariance)
//   B_simple = S / |G|^2                               (samples)
// valid=false when B <= b or |G|^2 <= 0 (too noisy an estimate; more steps help).
struct NoiseScale {
  double b_small = 0, b_big = 0;
  double g_small_sq = 0, g_big_sq = 0;  // mean |G_b|^2, mean |G_B|^2
  Count n_small = 0, n_big = 0;         // how many norms each mean averages
  double true_grad_sq = 0;
  double trace_cov = 0;
  double b_simple = 0;
  bool valid = false;
  std::string note;
  nlohmann::json to_json() const;
};
NoiseScale noise_scale(double b_small, const std::vector<double>& g_small_sq, double b_big,
                       const std::vector<double>& g_big_sq);

// 100 * (measured - predicted) / predicted; 0 when both are 0, +inf when only predicted is 0.
double error_pct(double measured, double predicted);

// Per step: the slowest rank's time. per_rank[r][s] -> out[s].
std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& per_rank);
// Per step: slowest minus fastest rank.
std::vector<double> spread_over_ranks(const std::vector<std::vector<double>>& per_rank);

// A step's exposed communication split in two (per step, seconds). A rank that finishes its
// backward early waits inside the final collective for the last rank to arrive, so the largest
// exposed time over ranks is mostly rank skew. What the collective itself adds to the step is
// the exposed time of the rank that arrived last (`last_rank`); `wait` is how much longer the
// longest-waiting rank stayed exposed (max over ranks minus last_rank, >= 0): the straggler wait,
// which no collective cost model prices. arrival[r][s]: rank r's time from the step's start to
// the end of its last backward; exposed[r][s]: its exposed communication.
struct ExposedSplit {
  std::vector<double> last_rank, wait;
};
ExposedSplit split_exposed(const std::vector<std::vector<double>>& exposed,
                           const std::vector<std::vector<double>>& arrival);

}  // namespace gaccum::runner
