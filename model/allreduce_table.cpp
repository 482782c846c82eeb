// What/why: see allreduce_table.hpp.
#include "model/allreduce_table.hpp"

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace gaccum::model {

MeasuredAllreduce::MeasuredAllreduce(Count p, const std::vector<AllreducePoint>& points) : world_size_(p) {
  if (points.empty()) throw Error("MeasuredAllreduce: no points");
  struct Acc {
    double sum = 0;
    int n = 0;
    std::vector<Seconds> samples;
    std::vector<std::string> tags;
  };
  std::map<Bytes, Acc> by_size;
  for (const auto& pt : points) {
    auto& a = by_size[pt.bytes];
    a.sum += pt.time;
    a.n += 1;
    a.samples.insert(a.samples.end(), pt.samples.begin(), pt.samples.end());
    if (std::find(a.tags.begin(), a.tags.end(), pt.tag) == a.tags.end()) a.tags.push_back(pt.tag);
  }
  // The pooled excess of the samples over their size's median.
  double excess_sum = 0;
  std::size_t excess_n = 0;
  for (auto& [bytes, a] : by_size) {
    if (a.samples.empty()) continue;
    const Seconds median = TimingStats::from_samples(a.samples).median;
    for (Seconds x : a.samples) excess_sum += x - median;
    excess_n += a.samples.size();
  }
  excess_ = excess_n > 0 ? std::max(0.0, excess_sum / static_cast<double>(excess_n)) : 0.0;
  std::vector<std::pair<Bytes, Seconds>> fit_points;
  for (auto& [bytes, a] : by_size) {
    Entry e;
    e.bytes = bytes;
    if (!a.samples.empty()) {
      auto st = TimingStats::from_samples(a.samples);
      e.time.mid = st.median + excess_;
      e.time.lo = st.ci_lo + excess_;  // the 95% interval of the median, moved by the excess
      e.time.hi = st.ci_hi + excess_;
    } else {
      e.time.mid = a.sum / a.n;
      e.time.lo = e.time.hi = e.time.mid;
    }
    std::sort(a.tags.begin(), a.tags.end());
    for (const auto& t : a.tags) e.tags += (e.tags.empty() ? "" : "+") + t;
    entries_.push_back(e);
    if (bytes > 0 && e.time.mid > 0) fit_points.emplace_back(bytes, e.time.mid);
  }
  if (fit_points.empty()) fit_points.emplace_back(entries_.back().bytes, std::max(entries_.back().time.mid, 1e-9));
  fit_ = fit_ring(p, fit_points);
}

TimeBand MeasuredAllreduce::time(Bytes s) const {
  const auto cost = ring_allreduce(world_size_, fit_.link);
  auto it = std::lower_bound(entries_.begin(), entries_.end(), s, [](const Entry& e, Bytes b) { return e.bytes < b; });
  if (it != entries_.end() && it->bytes == s) return it->time;
  if (it == entries_.begin()) {  // below the smallest measured size: the fit, scaled to meet it
    const Entry& e = entries_.front();
    const double at_e = cost.at(e.bytes);
    const double ratio = at_e > 0 ? cost.at(s) / at_e : 1.0;
    return {e.time.mid * ratio, e.time.lo * ratio, e.time.hi * ratio};
  }
  if (it == entries_.end()) {  // above the largest: the fit's slope from the last measurement
    const Entry& e = entries_.back();
    const double extra = cost.at(s) - cost.at(e.bytes);
    return {e.time.mid + extra, e.time.lo + extra, e.time.hi + extra};
  }
  const Entry& a = *(it - 1);
  const Entry& b = *it;
  const double f = double(s - a.bytes) / double(b.bytes - a.bytes);
  auto lerp = [f](double x, double y) { return x + (y - x) * f; };
  return {lerp(a.time.mid, b.time.mid), lerp(a.time.lo, b.time.lo), lerp(a.time.hi, b.time.hi)};
}

nlohmann::json MeasuredAllreduce::describe() const {
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& e : entries_)
    sizes.push_back({{"bytes", e.bytes}, {"time", e.time.mid}, {"lo", e.time.lo}, {"hi", e.time.hi}, {"tags", e.tags}});
  return {{"world_size", world_size_},
          {"excess_s", excess_},
          {"ring_fit",
           {{"alpha_s", fit_.link.latency},
            {"beta_Bps", fit_.link.bandwidth},
            {"points", fit_.points},
            {"max_rel_residual", fit_.max_rel_residual},
            {"rms_rel_residual", fit_.rms_rel_residual}}},
          {"measured", sizes}};
}

}  // namespace gaccum::model
