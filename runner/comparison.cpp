// What/why: see comparison.hpp.
#include "runner/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "runner/checks.hpp"

namespace gaccum::runner {

Comparison compare_to_prediction(const Measured& m, const model::Prediction& p, double tolerance_pct) {
  Comparison c;
  c.tolerance_pct = tolerance_pct;
  auto add = [&](const char* figure, const char* unit, double measured, double predicted, Gate gate) {
    ComparisonRow row{figure, unit, measured, predicted, std::nullopt, gate, std::nullopt};
    const double err = error_pct(measured, predicted);
    if (std::isfinite(err)) row.error_pct = err;
    if (gate == Gate::tolerance) row.status = std::fabs(err) <= tolerance_pct ? Status::pass : Status::fail;
    if (gate == Gate::exact) row.status = measured == predicted ? Status::pass : Status::fail;
    if (row.status == Status::fail) c.ok = false;
    c.rows.push_back(std::move(row));
  };
  add("step_time", "s", m.step_time.median, p.time.step_time, Gate::tolerance);
  add("throughput", "samples/s", m.throughput_samples_per_s, p.throughput, Gate::tolerance);
  add("peak_memory", "bytes", static_cast<double>(m.peak_memory), static_cast<double>(p.memory.peak), Gate::tolerance);
  // Model states + buffers held between steps (zero3's gathered parameters are freed by then).
  const Bytes resident = p.memory.weights + p.memory.gradients + p.memory.optimizer_state + p.memory.comm_buffers;
  add("resident_memory", "bytes", static_cast<double>(m.resident_memory), static_cast<double>(resident), Gate::info);
  add("collectives_per_step", "count", static_cast<double>(m.collectives_per_step),
      static_cast<double>(p.collectives_per_step), Gate::exact);
  add("comm_buffer_bytes", "bytes", static_cast<double>(m.comm_buffer_bytes), static_cast<double>(p.memory.comm_buffers),
      Gate::exact);
  add("compute", "s", m.compute, p.time.compute, Gate::info);
  add("comm_exposed", "s", m.comm_exposed, p.time.comm_exposed, Gate::info);
  add("comm_total", "s", m.comm_total, p.time.comm_total, Gate::info);
  add("optimizer", "s", m.optimizer, p.time.optimizer, Gate::info);
  if (p.tokens_per_s > 0) add("tokens_per_s", "tokens/s", m.tokens_per_s, p.tokens_per_s, Gate::info);
  if (p.step_time_hi > 0) {
    BandCheck b;
    b.predicted_lo = std::min(p.step_time_lo, p.time.step_time);
    b.predicted_hi = std::max(p.step_time_hi, p.time.step_time);
    b.measured = m.step_time.median;
    b.measured_lo = std::min(m.step_time.ci_lo, b.measured);
    b.measured_hi = std::max(m.step_time.ci_hi, b.measured);
    b.inside = b.measured_lo <= b.predicted_hi && b.measured_hi >= b.predicted_lo;
    c.band = b;
  }
  return c;
}

}  // namespace gaccum::runner
