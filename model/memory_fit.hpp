// What: peak memory per rank from the profile's MemoryPoints:
//   peak(b, k, p, strategy) = weights + gradients + optimizer_state + comm_buffers(p) + activations(b)
//   - weights, gradients, optimizer_state: measured (exact byte counts), checked against the
//     workload's analytic parameter bytes;
//   - comm_buffers(p): gradient bytes (= param_bytes) when p > 1 for every strategy (the runner's
//     persistent bucket buffers / fusion buffer), 0 when p == 1; not in the profile's peak;
//   - activations(b) = peak - static, fitted over the sweep:
//       "linear"    a0 + a1 b by least squares (Eigen), used when its largest residual is within
//                   kLinearTolerance of the peak at every point (allocations are linear in b);
//       "piecewise" otherwise: linear interpolation between measured points (the peak is a max
//                   of linear functions, convex piecewise-linear: chords over-estimate slightly,
//                   never under), the line through the last two points above the largest b.
//     The line's coefficients and residuals are kept either way (reports).
//     A staged model's profile gives the peak per phase of the window (core/profile.hpp
//     MemoryPoint::phases): each phase is fitted by the same rule and activations(b) is the
//     largest phase at b.
//   Never a function of accum_steps.
// Units: Bytes per rank.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "model/curve.hpp"

namespace gaccum::model {

inline constexpr double kLinearTolerance = 0.001;  // 0.1% of the measured peak

// One byte count as a function of micro_batch, fitted by the rule above (line within tolerance,
// else piecewise-linear between the measured sizes), rounded up.
struct ByteSeries {
  PiecewiseLinear points;  // micro_batch -> bytes
  LineFit line;
  bool use_line = false;
  double max_rel_residual = 0;  // line residual / peak, worst point
  // b: measured micro_batch sizes; y: bytes; peak: each point's peak (the tolerance's scale).
  static ByteSeries fit(const std::vector<double>& b, const std::vector<double>& y, const std::vector<double>& peak);
  Bytes at(Count micro_batch) const;
};

class MemoryModel {
 public:
  // Throws ProfileError when `points` is empty. Appends notes (cross-checks, fit choice).
  static MemoryModel fit(const std::vector<MemoryPoint>& points, Bytes param_bytes, std::vector<std::string>& notes);

  Bytes weights() const { return weights_; }
  Bytes gradients() const { return gradients_; }
  Bytes optimizer_state() const { return optimizer_state_; }
  Bytes activations(Count micro_batch) const;
  // A staged model's activations per phase of the window (core/profile.hpp MemoryPoint::phases),
  // when every point has them; else empty.
  std::vector<Bytes> phases(Count micro_batch) const;
  bool has_phases() const { return !phases_.empty(); }
  Count measured_max_micro_batch() const { return max_b_; }
  bool linear() const { return act_.use_line; }
  nlohmann::json describe() const;

 private:
  Bytes weights_ = 0, gradients_ = 0, optimizer_state_ = 0;
  ByteSeries act_;                  // micro_batch -> activation bytes
  std::vector<ByteSeries> phases_;  // per phase, when measured
  Count max_b_ = 0;
};

}  // namespace gaccum::model
