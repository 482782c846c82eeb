// What/why: see comparison.hpp.
#include "runner/comparison.hpp"

#include <cmath>
#include <string>

#include "runner/checks.hpp"

namespace gaccum::runner {

using nlohmann::json;

json compare_to_prediction(const json& measured, const model::Prediction& p, double tolerance_pct) {
  json rows = json::array();
  bool ok = true;
  auto add = [&](const std::string& figure, const std::string& unit, double m, double pred, const std::string& gate) {
    const double err = error_pct(m, pred);
    std::string status = "info";
    if (gate == "tolerance") status = std::fabs(err) <= tolerance_pct ? "pass" : "fail";
    if (gate == "exact") status = m == pred ? "pass" : "fail";
    if (status == "fail") ok = false;
    rows.push_back(json{{"figure", figure},
                        {"unit", unit},
                        {"measured", m},
                        {"predicted", pred},
                        {"error_pct", std::isfinite(err) ? json(err) : json(nullptr)},
                        {"gate", gate},
                        {"status", status}});
  };
  const auto& st = measured.at("step_time");
  add("step_time", "s", st.at("median").get<double>(), p.time.step_time, "tolerance");
  add("throughput", "samples/s", measured.at("throughput_samples_per_s").get<double>(), p.throughput, "tolerance");
  add("peak_memory", "bytes", measured.at("peak_memory").get<double>(), static_cast<double>(p.memory.peak),
      "tolerance");
  add("collectives_per_step", "count", measured.at("collectives_per_step").get<double>(),
      static_cast<double>(p.collectives_per_step), "exact");
  add("comm_buffer_bytes", "bytes", measured.at("comm_buffer_bytes").get<double>(),
      static_cast<double>(p.memory.comm_buffers), "exact");
  add("step_time_p90", "s", st.at("p90").get<double>(), p.step_time_hi > 0 ? p.step_time_hi : p.time.step_time,
      "info");
  add("compute", "s", measured.at("compute").get<double>(), p.time.compute, "info");
  add("comm_exposed", "s", measured.at("comm_exposed").get<double>(), p.time.comm_exposed, "info");
  add("comm_total", "s", measured.at("comm_total").get<double>(), p.time.comm_total, "info");
  add("optimizer", "s", measured.at("optimizer").get<double>(), p.time.optimizer, "info");
  if (p.tokens_per_s > 0) add("tokens_per_s", "tokens/s", measured.at("tokens_per_s").get<double>(), p.tokens_per_s, "info");
  return json{{"tolerance_pct", tolerance_pct}, {"ok", ok}, {"rows", rows}};
}

}  // namespace gaccum::runner
