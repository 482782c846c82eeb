// What/why: see memory_fit.hpp.
#include "model/memory_fit.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::model {

MemoryModel MemoryModel::fit(const std::vector<MemoryPoint>& points, Bytes param_bytes, std::vector<std::string>& notes) {
  if (points.empty()) throw ProfileError("profile: no memory measurements (memory[] is empty); re-run `gaccum-tune profile`");
  MemoryModel m;
  std::vector<double> b, act, peak;
  for (const auto& pt : points) {
    m.weights_ = std::max(m.weights_, pt.weights);
    m.gradients_ = std::max(m.gradients_, pt.gradients);
    m.optimizer_state_ = std::max(m.optimizer_state_, pt.optimizer_state);
  }
  for (const auto& pt : points) {
    if (pt.weights != m.weights_ || pt.gradients != m.gradients_ || pt.optimizer_state != m.optimizer_state_)
      notes.push_back(fmt::format("memory: static bytes differ at micro_batch {}; using the largest", pt.micro_batch));
    const Bytes stat = pt.weights + pt.gradients + pt.optimizer_state;
    const Bytes a = pt.peak > stat ? pt.peak - stat : 0;
    if (a != pt.activations)
      notes.push_back(fmt::format("memory: activations at micro_batch {} recomputed as peak - static ({} B, file says {} B)",
                                  pt.micro_batch, a, pt.activations));
    b.push_back(double(pt.micro_batch));
    act.push_back(double(a));
    peak.push_back(double(std::max<Bytes>(pt.peak, 1)));
    m.max_b_ = std::max(m.max_b_, pt.micro_batch);
  }
  if (param_bytes > 0 && m.weights_ != param_bytes)
    notes.push_back(fmt::format("memory: measured weights {} B differ from the analytic parameter bytes {} B", m.weights_,
                                param_bytes));
  if (param_bytes > 0 && m.gradients_ != param_bytes)
    notes.push_back(fmt::format("memory: measured gradients {} B differ from the parameter bytes {} B", m.gradients_,
                                param_bytes));
  m.points_ = make_piecewise(b, act);
  m.line_ = fit_line(b, act);
  for (std::size_t i = 0; i < b.size(); ++i)
    m.max_rel_residual_ = std::max(m.max_rel_residual_, std::fabs(m.line_.residuals[i]) / peak[i]);
  m.use_line_ = m.points_.x.size() >= 2 && m.line_.a1 >= 0 && m.max_rel_residual_ <= kLinearTolerance;
  notes.push_back(m.use_line_
                      ? fmt::format("memory: activations linear in micro_batch ({:.0f} + {:.0f} B x b, worst residual "
                                    "{:.4f}% of peak)",
                                    m.line_.a0, m.line_.a1, 100 * m.max_rel_residual_)
                      : fmt::format("memory: activations not linear within {}% of peak (line's worst residual {:.3f}%); "
                                    "piecewise-linear between measured micro_batch sizes",
                                    100 * kLinearTolerance, 100 * m.max_rel_residual_));
  return m;
}

Bytes MemoryModel::activations(Count micro_batch) const {
  const double b = double(micro_batch);
  double a = 0;
  if (use_line_) {
    a = line_(b);
  } else {
    const auto& c = points_;
    const std::size_t n = c.x.size();
    if (n == 1)
      a = c.y[0] * b / c.x[0];
    else if (b < c.x.front())  // below the sweep: never more than the smallest measurement
      a = std::min(c(b), c.y[0]);
    else
      a = c(b);
  }
  // Round up (a cap must not be under-estimated), ignoring floating-point dust below 1e-3 B.
  return a > 0 ? static_cast<Bytes>(std::ceil(a - 1e-3)) : 0;
}

nlohmann::json MemoryModel::describe() const {
  nlohmann::json pts = nlohmann::json::array();
  for (std::size_t i = 0; i < points_.x.size(); ++i)
    pts.push_back({{"micro_batch", static_cast<Count>(points_.x[i])}, {"activations", static_cast<Bytes>(points_.y[i])}});
  return {{"weights", weights_},
          {"gradients", gradients_},
          {"optimizer_state", optimizer_state_},
          {"activations_rule", use_line_ ? "linear" : "piecewise"},
          {"line", {{"a0_bytes", line_.a0}, {"a1_bytes_per_sample", line_.a1}, {"rms_residual_bytes", line_.rms_residual},
                    {"max_abs_residual_bytes", line_.max_abs_residual}, {"max_rel_residual", max_rel_residual_}}},
          {"measured", pts}};
}

}  // namespace gaccum::model
