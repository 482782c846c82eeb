// What: the allreduce times measured at one world_size on one backend, looked up by message
//       size: the measurement itself at a measured size (sweep, bucket or fused tag), linear
//       interpolation between measured sizes, and outside them the ring fit anchored at the
//       nearest measurement (ratio below the smallest size, added slope above the largest).
// Why: for the profiled setting the measured bucket/fused times are more accurate than any
//      fit (Gloo over TCP is not a clean alpha-beta link); the fit only fills gaps.
// Units: Bytes -> Seconds. lo/hi are the ends of the 95% interval of the median of the
//        per-iteration max-over-ranks samples.
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
  Bytes min_bytes() const { return entries_.front().bytes; }
  Bytes max_bytes() const { return entries_.back().bytes; }
  TimeBand time(Bytes size) const;
  nlohmann::json describe() const;

 private:
  Count world_size_;
  std::vector<Entry> entries_;  // sorted by bytes, unique
  RingFit fit_;
};

}  // namespace gaccum::model
