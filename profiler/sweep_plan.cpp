// What/why: see sweep_plan.hpp. Pure arithmetic, no LibTorch.
#include "profiler/sweep_plan.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/host.hpp"

namespace gaccum::profiler {

std::vector<Count> default_ranks(bool cuda, int cpu_cores, int gpus) {
  const Count limit = cuda ? std::max(1, gpus) : default_cpu_max_ranks(cpu_cores);
  std::vector<Count> out;
  for (Count p = 1; p <= limit; p *= 2) out.push_back(p);
  return out;
}

int default_threads_per_rank(int cpu_cores, const std::vector<Count>& ranks) {
  Count most = 1;
  for (Count p : ranks) most = std::max(most, p);
  return gaccum::default_threads_per_rank(cpu_cores, most);
}

std::vector<Bytes> default_allreduce_sizes(Bytes gradient_bytes) {
  const Bytes top = std::max<Bytes>(16 * MiB, gradient_bytes);
  std::vector<Bytes> out;
  Bytes s = 4 * KiB;
  out.push_back(s);
  while (s < top) {
    s *= 4;
    out.push_back(s);
  }
  return out;
}

namespace {

Bytes static_bytes(const MemoryPoint& m) { return m.weights + m.gradients + m.optimizer_state; }

}  // namespace

double predict_peak(const std::vector<MemoryPoint>& measured, Count micro_batch) {
  if (measured.empty()) return 0;
  std::vector<const MemoryPoint*> pts;
  for (const auto& m : measured) pts.push_back(&m);
  std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->micro_batch < b->micro_batch; });
  const MemoryPoint& hi = *pts.back();
  double x0 = 0, y0 = static_cast<double>(static_bytes(hi));
  if (pts.size() >= 2) {
    x0 = static_cast<double>(pts[pts.size() - 2]->micro_batch);
    y0 = static_cast<double>(pts[pts.size() - 2]->peak);
  }
  const double x1 = static_cast<double>(hi.micro_batch), y1 = static_cast<double>(hi.peak);
  const double slope = x1 > x0 ? (y1 - y0) / (x1 - x0) : 0;
  return y1 + slope * (static_cast<double>(micro_batch) - x1);
}

Count predicted_largest_fitting(const std::vector<MemoryPoint>& measured, Bytes cap, Count limit) {
  if (measured.empty() || limit < 1) return 0;
  const double p1 = predict_peak(measured, 1), p2 = predict_peak(measured, 2);
  const double slope = p2 - p1;
  if (p1 > static_cast<double>(cap)) return 0;
  if (slope <= 0) return limit;
  const double b = 1 + std::floor((static_cast<double>(cap) - p1) / slope);
  return static_cast<Count>(std::clamp(b, 1.0, static_cast<double>(limit)));
}

Count next_bisect_candidate(Count lo, Count hi, Count predicted) {
  if (hi - lo <= 1) return 0;
  if (predicted > lo && predicted < hi) return predicted;
  if (predicted + 1 > lo && predicted + 1 < hi) return predicted + 1;
  return lo + (hi - lo) / 2;
}

std::string describe(SweepStop s) {
  switch (s) {
    case SweepStop::memory_cap: return "memory cap";
    case SweepStop::out_of_memory: return "out of memory";
    case SweepStop::max_micro_batch: return "--max-micro-batch";
    case SweepStop::time_budget: return "time budget";
    case SweepStop::explicit_list: return "--micro-batches list";
    case SweepStop::model_error: return "model raising an error";
  }
  return "?";
}

ComputePointPlan plan_compute_points(Count max_fitting, Count min_b) {
  ComputePointPlan plan;
  min_b = std::max<Count>(1, min_b);
  if (max_fitting < min_b) return plan;
  plan.required.push_back(min_b);
  Count pow2 = 1;
  while (pow2 <= min_b) pow2 *= 2;
  for (Count b = pow2; b <= max_fitting; b *= 2) plan.required.push_back(b);
  if (plan.required.back() != max_fitting) plan.required.push_back(max_fitting);
  std::set<Count> have(plan.required.begin(), plan.required.end());
  for (int level = 0; level < 3; ++level) {
    std::vector<Count> sorted(have.begin(), have.end()), mids;
    for (size_t i = 0; i + 1 < sorted.size(); ++i)
      if (sorted[i + 1] - sorted[i] >= 2) mids.push_back((sorted[i] + sorted[i + 1]) / 2);
    if (mids.empty()) break;
    for (Count m : mids) have.insert(m);
    plan.levels.push_back(mids);
  }
  return plan;
}

std::vector<Count> choose_compute_points(const ComputePointPlan& plan, const std::function<Seconds(Count)>& cost,
                                         Seconds budget) {
  std::set<Count> chosen(plan.required.begin(), plan.required.end());
  Seconds spent = 0;
  for (const auto& level : plan.levels) {
    std::vector<Count> order = level;
    std::sort(order.begin(), order.end(), [&](Count a, Count b) { return cost(a) < cost(b); });
    bool complete = true;
    for (Count b : order) {
      const Seconds c = cost(b);
      if (spent + c > budget) {
        complete = false;
        continue;
      }
      spent += c;
      chosen.insert(b);
    }
    if (!complete) break;  // a finer level only makes sense once this one is whole
  }
  return {chosen.begin(), chosen.end()};
}

Seconds interpolate_time(const std::vector<std::pair<Count, Seconds>>& points, Count micro_batch) {
  if (points.empty()) return 0;
  auto pts = points;
  std::sort(pts.begin(), pts.end());
  if (pts.size() == 1) return pts[0].second * static_cast<double>(micro_batch) / static_cast<double>(pts[0].first);
  size_t i = 1;
  while (i + 1 < pts.size() && pts[i].first < micro_batch) ++i;
  const auto [x0, y0] = pts[i - 1];
  const auto [x1, y1] = pts[i];
  if (x1 == x0) return y1;
  const double t = y0 + (y1 - y0) * static_cast<double>(micro_batch - x0) / static_cast<double>(x1 - x0);
  return std::max(t, 0.0);
}

std::vector<SuspectPoint> find_suspect_points(const std::vector<ComputePoint>& points, double ci_target) {
  std::map<Count, std::vector<const ComputePoint*>> by_p;
  for (const auto& c : points) by_p[c.concurrent_ranks].push_back(&c);
  for (auto& [p, v] : by_p)
    std::sort(v.begin(), v.end(), [](const ComputePoint* a, const ComputePoint* b) { return a->micro_batch < b->micro_batch; });
  std::vector<SuspectPoint> out;
  std::set<std::pair<Count, Count>> seen;
  auto add = [&](Count b, Count p, std::string why) {
    if (seen.insert({b, p}).second) out.push_back({b, p, std::move(why)});
  };
  for (const auto& [p, v] : by_p)
    for (size_t i = 1; i + 1 < v.size(); ++i) {
      const double b0 = double(v[i - 1]->micro_batch), b1 = double(v[i]->micro_batch), b2 = double(v[i + 1]->micro_batch);
      const double t0 = v[i - 1]->micro_step.median, t1 = v[i]->micro_step.median, t2 = v[i + 1]->micro_step.median;
      const double line = t0 + (t2 - t0) * (b1 - b0) / (b2 - b0);
      const double tol = std::max({kNeighbourTolerance, 3 * v[i]->micro_step.ci_half_width(), ci_target});
      if (line > 0 && std::abs(t1 / line - 1) > tol)
        add(v[i]->micro_batch, p,
            fmt::format("{:+.0f}% from the line through micro_batch {} and {}", 100 * (t1 / line - 1),
                        v[i - 1]->micro_batch, v[i + 1]->micro_batch));
    }
  const auto one = by_p.find(1);
  if (one == by_p.end()) return out;
  std::map<Count, double> t1;
  for (const auto* c : one->second) t1[c->micro_batch] = c->micro_step.median;
  for (const auto& [p, v] : by_p) {
    if (p < 2) continue;
    std::vector<std::pair<Count, double>> ratio;
    for (const auto* c : v)
      if (auto it = t1.find(c->micro_batch); it != t1.end() && it->second > 0)
        ratio.push_back({c->micro_batch, c->micro_step.median / it->second});
    if (ratio.size() < 3) continue;
    std::vector<double> rs;
    for (const auto& r : ratio) rs.push_back(r.second);
    std::nth_element(rs.begin(), rs.begin() + static_cast<long>(rs.size() / 2), rs.end());
    const double med = rs[rs.size() / 2];
    for (const auto& [b, r] : ratio)
      if (r < 0.8 || std::abs(r / med - 1) > kContentionTolerance) {
        const auto why = fmt::format("concurrency {} reads {:.2f}x concurrency 1, the sweep's median ratio is {:.2f}x",
                                     p, r, med);
        add(b, p, why);
        add(b, 1, why);
      }
  }
  return out;
}

}  // namespace gaccum::profiler
