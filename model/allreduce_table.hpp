// What: the allreduce times measured at one world_size on one backend, looked up by message
//       size: the measurement itself at a measured size (sweep, bucket or fused tag), linear
//       interpolation between measured sizes, and outside them the ring fit anchored at the
//       nearest measurement (ratio below the smallest size, added slope above the largest).
//       A measured size's time is what a step pays on average for one such collective:
//         time(S) = median(S) + excess,  excess = sum over every sample x_i of the table
//                   (x_i - median of its size) / number of samples
//       the median of the size's per-iteration max-over-ranks samples, plus the table's pooled
//       mean excess over the median. A collective's samples on a CPU host have a heavy tail of
//       a few milliseconds that does not grow with the message (a sleeping thread or a halted
//       core woken late; docs/DESIGN.md, "Waiting for collectives on CPU"): measured on the
//       reference VM, 0 to 8 of one size's 20 samples were 2-5 ms late, in bursts, so one size's
//       mean moved by 2x between profiles while the pooled excess over ~200 samples did not. A
//       step pays the sum of its collectives, so the mean (not the median) is the price; the
//       median plus the pooled excess is that mean with the variance of the pooled estimate.
//       Points without samples (older or hand-written profiles) keep their recorded time and
//       add nothing to the excess.
// Why: for the profiled setting the measured bucket/fused times are more accurate than any
//      fit (Gloo over TCP is not a clean alpha-beta link); the fit only fills gaps.
// Units: Bytes -> Seconds. lo/hi are the ends of the 95% interval of the median of the
//        per-iteration max-over-ranks samples, plus the same excess.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "model/allreduce.hpp"

namespace gaccum::model {

// A time with its measurement spread.
struct TimeBand {
  Seconds mid = 0, lo = 0, hi = 0;
};

class MeasuredAllreduce {
 public:
  struct Entry {
    Bytes bytes = 0;
    TimeBand time;
    std::string tags;  // "sweep", "bucket", "fused" or several joined by '+'
  };

  // `points`: all measurements of one backend at one world_size >= 2 (any tag, non-empty).
  MeasuredAllreduce(Count world_size, const std::vector<AllreducePoint>& points);

  Count world_size() const { return world_size_; }
  const RingFit& fit() const { return fit_; }
  const std::vector<Entry>& entries() const { return entries_; }
  Seconds excess() const { return excess_; }
  Bytes min_bytes() const { return entries_.front().bytes; }
  Bytes max_bytes() const { return entries_.back().bytes; }
  TimeBand time(Bytes size) const;
  nlohmann::json describe() const;

 private:
  Count world_size_;
  std::vector<Entry> entries_;  // sorted by bytes, unique
  RingFit fit_;
  Seconds excess_ = 0;          // pooled mean excess over the median (above)
};

}  // namespace gaccum::model
