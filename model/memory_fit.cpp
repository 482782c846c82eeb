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
  if (param_bytes > 0 && m.weights_ > param_bytes)
    notes.push_back(fmt::format("memory: the workload holds {} B beside its {} B of parameters (module buffers, a "
                                "TorchScript file's tensor constants); sharded plans keep them whole on every rank",
                                m.weights_ - param_bytes, param_bytes));
  else if (param_bytes > 0 && m.weights_ != param_bytes)
    notes.push_back(fmt::format("memory: measured weights {} B differ from the analytic parameter bytes {} B", m.weights_,
                                param_bytes));
  if (param_bytes > 0 && m.gradients_ != param_bytes)
    notes.push_back(fmt::format("memory: measured gradients {} B differ from the parameter bytes {} B", m.gradients_,
                                param_bytes));
  m.act_ = ByteSeries::fit(b, act, peak);
  const auto& a = m.act_;
  notes.push_back(a.use_line
                      ? fmt::format("memory: activations linear in micro_batch ({:.0f} + {:.0f} B x b, worst residual "
                                    "{:.4f}% of peak)",
                                    a.line.a0, a.line.a1, 100 * a.max_rel_residual)
                      : fmt::format("memory: activations not linear within {}% of peak (line's worst residual {:.3f}%); "
                                    "piecewise-linear between measured micro_batch sizes",
                                    100 * kLinearTolerance, 100 * a.max_rel_residual));
  // Phases (a staged model): each fitted by the same rule, when every point has the same count.
  const std::size_t n_phases = points.front().phases.size();
  bool phased = n_phases > 0;
  for (const auto& pt : points) phased = phased && pt.phases.size() == n_phases;
  if (phased)
    for (std::size_t i = 0; i < n_phases; ++i) {
      std::vector<double> y;
      for (const auto& pt : points) y.push_back(double(pt.phases[i]));
      m.phases_.push_back(ByteSeries::fit(b, y, peak));
    }
  return m;
}

ByteSeries ByteSeries::fit(const std::vector<double>& b, const std::vector<double>& y, const std::vector<double>& peak) {
  ByteSeries s;
  s.points = make_piecewise(b, y);
  s.line = fit_line(b, y);
  for (std::size_t i = 0; i < b.size(); ++i)
    s.max_rel_residual = std::max(s.max_rel_residual, std::fabs(s.line.residuals[i]) / peak[i]);
  s.use_line = s.points.x.size() >= 2 && s.line.a1 >= 0 && s.max_rel_residual <= kLinearTolerance;
  return s;
}

Bytes ByteSeries::at(Count micro_batch) const {
  const double b = double(micro_batch);
  double a = 0;
  if (use_line) {
    a = line(b);
  } else {
    const auto& c = points;
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

// With phases, the window's peak is the largest phase: a max of (per phase) linear functions,
// exact where one line through the overall peaks is not (the peak moves from one phase to another
// as micro_batch grows: gpt-tiny:layers=8's head backward at b = 1, the loss from b = 2).
Bytes MemoryModel::activations(Count micro_batch) const {
  if (phases_.empty()) return act_.at(micro_batch);
  Bytes a = 0;
  for (const auto& s : phases_) a = std::max(a, s.at(micro_batch));
  return a;
}

std::vector<Bytes> MemoryModel::phases(Count micro_batch) const {
  std::vector<Bytes> out;
  for (const auto& s : phases_) out.push_back(s.at(micro_batch));
  return out;
}

nlohmann::json MemoryModel::describe() const {
  nlohmann::json pts = nlohmann::json::array();
  const auto& p = act_.points;
  for (std::size_t i = 0; i < p.x.size(); ++i)
    pts.push_back({{"micro_batch", static_cast<Count>(p.x[i])}, {"activations", static_cast<Bytes>(p.y[i])}});
  const auto& l = act_.line;
  nlohmann::json j = {{"weights", weights_},
                      {"gradients", gradients_},
                      {"optimizer_state", optimizer_state_},
                      {"activations_rule", act_.use_line ? "linear" : "piecewise"},
                      {"line", {{"a0_bytes", l.a0}, {"a1_bytes_per_sample", l.a1}, {"rms_residual_bytes", l.rms_residual},
                                {"max_abs_residual_bytes", l.max_abs_residual}, {"max_rel_residual", act_.max_rel_residual}}},
                      {"measured", pts}};
  if (!phases_.empty()) j["phases"] = phases_.size();
  return j;
}

}  // namespace gaccum::model
