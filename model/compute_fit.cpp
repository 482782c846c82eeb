// What/why: see compute_fit.hpp.
#include "model/compute_fit.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::model {

double extend_time_curve(const PiecewiseLinear& c, double b) {
  const std::size_t n = c.x.size();
  if (n == 0) return 0;
  if (n == 1) return c.y[0] * b / c.x[0];
  if (b > c.x.back()) {
    const double slope = (c.y[n - 1] - c.y[n - 2]) / (c.x[n - 1] - c.x[n - 2]);
    if (slope <= 0) return c.y[n - 1] * b / c.x[n - 1];
    return c.y[n - 1] + slope * (b - c.x[n - 1]);
  }
  if (b < c.x.front()) {
    const double t1 = c.y[0], b1 = c.x[0];
    return std::clamp(c(b), t1 * b / b1, t1);
  }
  return c(b);
}

double ComputeModel::Curve::eval(const PiecewiseLinear& c, double b) const { return extend_time_curve(c, b); }

ComputeModel ComputeModel::fit(const std::vector<ComputePoint>& points, std::vector<std::string>& notes) {
  if (points.empty()) throw ProfileError("profile: no compute measurements (compute[] is empty); re-run `gaccum-tune profile`");
  std::map<Count, std::vector<const ComputePoint*>> by_p;
  for (const auto& pt : points) by_p[pt.concurrent_ranks].push_back(&pt);
  ComputeModel m;
  for (auto& [p, pts] : by_p) {
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->micro_batch < b->micro_batch; });
    std::vector<double> b, med, lo, hi, bwd;
    bool all_bwd = true;
    for (const auto* pt : pts) {
      if (!b.empty() && b.back() == double(pt->micro_batch)) {
        notes.push_back(fmt::format("compute: duplicate micro_batch {} at concurrency {}: kept the first", pt->micro_batch, p));
        continue;
      }
      b.push_back(double(pt->micro_batch));
      med.push_back(pt->micro_step.median);
      lo.push_back(pt->micro_step.ci_lo);
      hi.push_back(pt->micro_step.ci_hi);
      bwd.push_back(pt->backward.median);
      if (!(pt->backward.median > 0)) all_bwd = false;
    }
    auto smooth = isotonic_increasing(med);
    if (smooth != med)
      notes.push_back(fmt::format("compute: median micro-step times at concurrency {} were not increasing in "
                                  "micro_batch (noise); pooled by isotonic regression",
                                  p));
    Curve c;
    c.concurrency = p;
    c.min_b = static_cast<Count>(b.front());
    c.max_b = static_cast<Count>(b.back());
    c.median = make_piecewise(b, smooth);
    for (std::size_t i = 0; i < b.size(); ++i) {
      lo[i] = std::min(lo[i], smooth[i]);
      hi[i] = std::max(hi[i], smooth[i]);
    }
    c.lo = make_piecewise(b, lo);
    c.hi = make_piecewise(b, hi);
    c.backward_measured = all_bwd;
    if (all_bwd) c.backward = make_piecewise(b, isotonic_increasing(bwd));
    m.curves_.push_back(std::move(c));
  }
  if (!std::all_of(m.curves_.begin(), m.curves_.end(), [](const Curve& c) { return c.backward_measured; }))
    notes.push_back("compute: no backward timing for some concurrencies; backward taken as 2/3 of the micro-step");
  return m;
}

TimeBand ComputeModel::at_curve(const Curve& c, double b) const {
  TimeBand t{c.eval(c.median, b), c.eval(c.lo, b), c.eval(c.hi, b)};
  t.lo = std::min(t.lo, t.mid);
  t.hi = std::max(t.hi, t.mid);
  return t;
}

TimeBand ComputeModel::micro_step(Count micro_batch, Count p) const {
  const double b = double(micro_batch);
  TimeBand t;
  if (p >= curves_.back().concurrency) {
    t = at_curve(curves_.back(), b);
  } else if (p <= curves_.front().concurrency) {
    t = at_curve(curves_.front(), b);
  } else {
    auto hi = std::lower_bound(curves_.begin(), curves_.end(), p, [](const Curve& c, Count q) { return c.concurrency < q; });
    if (hi->concurrency == p) {
      t = at_curve(*hi, b);
    } else {
      const Curve& lo_c = *(hi - 1);
      const double f = double(p - lo_c.concurrency) / double(hi->concurrency - lo_c.concurrency);
      TimeBand a = at_curve(lo_c, b), z = at_curve(*hi, b);
      t = {a.mid + (z.mid - a.mid) * f, a.lo + (z.lo - a.lo) * f, a.hi + (z.hi - a.hi) * f};
    }
  }
  if (curves_.front().concurrency == 1 && p > 1) {
    const Seconds single = curves_.front().eval(curves_.front().median, b);
    t.mid = std::max(t.mid, single);
    t.hi = std::max(t.hi, t.mid);
  }
  return t;
}

std::vector<std::pair<Count, Count>> ComputeModel::sources(Count micro_batch, Count p) const {
  std::vector<const Curve*> used;
  if (p >= curves_.back().concurrency) {
    used.push_back(&curves_.back());
  } else if (p <= curves_.front().concurrency) {
    used.push_back(&curves_.front());
  } else {
    auto hi = std::lower_bound(curves_.begin(), curves_.end(), p, [](const Curve& c, Count q) { return c.concurrency < q; });
    used.push_back(&*hi);
    if (hi->concurrency != p) used.push_back(&*(hi - 1));
  }
  if (curves_.front().concurrency == 1 && p > 1 && used.front() != &curves_.front()) used.push_back(&curves_.front());
  std::vector<std::pair<Count, Count>> out;
  const double b = double(micro_batch);
  for (const Curve* c : used) {
    const auto& x = c->median.x;
    // The knots the piecewise-linear rule reads at b (extend_time_curve): b itself when measured,
    // else the two around it, or the last (first) two beyond the range.
    std::size_t i = std::size_t(std::lower_bound(x.begin(), x.end(), b) - x.begin());
    if (i < x.size() && x[i] == b) {
      out.emplace_back(c->concurrency, Count(x[i]));
      continue;
    }
    std::size_t lo = i == 0 ? 0 : (i >= x.size() ? x.size() - std::min<std::size_t>(2, x.size()) : i - 1);
    for (std::size_t k = lo; k < std::min(x.size(), lo + 2); ++k) out.emplace_back(c->concurrency, Count(x[k]));
  }
  return out;
}

Seconds ComputeModel::backward(Count micro_batch, Count p) const {
  const Curve* c = &curves_.back();
  for (const auto& cur : curves_)
    if (cur.concurrency >= p) {
      c = &cur;
      break;
    }
  const Seconds step = micro_step(micro_batch, p).mid;
  if (!c->backward_measured) return step * (2.0 / 3.0);
  // The measured backward share of the micro-step at this concurrency, applied to the
  // (interpolated, clamped) micro-step: keeps backward <= micro-step under every rule.
  const double b = double(micro_batch);
  const double share = c->eval(c->backward, b) / std::max(c->eval(c->median, b), 1e-12);
  return step * std::clamp(share, 0.0, 1.0);
}

Count ComputeModel::measured_max_micro_batch(Count p) const {
  for (const auto& c : curves_)
    if (c.concurrency >= p) return c.max_b;
  return curves_.back().max_b;
}

Count ComputeModel::measured_max_micro_batch() const {
  Count m = curves_.front().max_b;
  for (const auto& c : curves_) m = std::min(m, c.max_b);
  return m;
}

nlohmann::json ComputeModel::describe() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : curves_) {
    nlohmann::json pts = nlohmann::json::array();
    for (std::size_t i = 0; i < c.median.x.size(); ++i)
      pts.push_back({{"micro_batch", static_cast<Count>(c.median.x[i])}, {"micro_step", c.median.y[i]}, {"ci_lo", c.lo.y[i]}, {"ci_hi", c.hi.y[i]}});
    out.push_back({{"concurrency", c.concurrency},
                   {"rule", "piecewise-linear through medians; linear from the last two points above"},
                   {"backward_measured", c.backward_measured},
                   {"points", pts}});
  }
  return out;
}

}  // namespace gaccum::model
