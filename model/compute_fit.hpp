// What: compute time of one micro-step t(b, p) and of its backward, from the profile's
//       ComputePoints (micro_step = make_batch + forward + loss + backward, measured with p rank
//       processes computing concurrently on the host).
// Rules:
//   - per profiled concurrency, a piecewise-linear curve through the median micro-step times
//     (made non-decreasing in b by pool-adjacent-violators when noise breaks that), and the same
//     through the ends of each median's 95% interval (TimingStats ci_lo/ci_hi: the band);
//   - beyond the largest measured b: the line through the last two points (the marginal time
//     per sample no longer improves); if that slope is not positive, t grows in proportion to b.
//     Below the smallest: the line through the first two, kept within [t1 b/b1, t1];
//   - a world_size between profiled concurrencies: linear in p between them; beyond the largest
//     profiled concurrency (a cluster: GPUs do not share compute): the largest;
//   - contention never makes a rank faster: t(b, p) >= t(b, 1) when concurrency 1 was profiled;
//   - backward(b, p): the same rules on the measured backward medians, or 2/3 of the
//     micro-step when the profile has no backward timing (forward:backward = 1:2).
// Units: Seconds per micro-step.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "model/allreduce_table.hpp"
#include "model/curve.hpp"

namespace gaccum::model {

class ComputeModel {
 public:
  // Throws ProfileError when `points` is empty. Appends notes about the rules it applied.
  static ComputeModel fit(const std::vector<ComputePoint>& points, std::vector<std::string>& notes);

  TimeBand micro_step(Count micro_batch, Count world_size) const;
  Seconds backward(Count micro_batch, Count world_size) const;
  // Largest micro_batch measured at the concurrency used for world_size.
  Count measured_max_micro_batch(Count world_size) const;
  Count measured_max_micro_batch() const;  // at every concurrency (the smallest of the maxima)
  Count max_concurrency() const { return curves_.back().concurrency; }
  // The measured points (concurrency, micro_batch) whose medians t(b, p) is computed from, by the
  // rules above: the knots around b (the last or first two beyond the range) on the curves used
  // for p, and concurrency 1's when it bounds t from below. What a prediction depends on when a
  // profile could not confirm some of its points.
  std::vector<std::pair<Count, Count>> sources(Count micro_batch, Count world_size) const;
  nlohmann::json describe() const;

 private:
  struct Curve {
    Count concurrency = 1;
    PiecewiseLinear median, lo, hi, backward;  // lo/hi: the medians' 95% intervals
    bool backward_measured = false;
    Count min_b = 0, max_b = 0;
    double eval(const PiecewiseLinear& c, double b) const;
  };
  TimeBand at_curve(const Curve& c, double b) const;
  std::vector<Curve> curves_;  // by increasing concurrency
};

// Extrapolation rules above as a pure function of one curve (exposed for tests).
double extend_time_curve(const PiecewiseLinear& c, double b);

}  // namespace gaccum::model
