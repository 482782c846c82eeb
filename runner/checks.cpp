// What/why: see checks.hpp.
#include "runner/checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "model/noise_scale.hpp"

namespace gaccum::runner {

using nlohmann::json;

GradComparison compare_gradients(const std::vector<double>& got, const std::vector<double>& ref, double rtol,
                                 double atol, const std::vector<double>* magnitude) {
  if (got.size() != ref.size() || (magnitude && magnitude->size() != ref.size()))
    throw RuntimeFailure(
        fmt::format("gradient comparison: {} elements vs {} in the reference", got.size(), ref.size()));
  GradComparison c;
  c.elements = static_cast<Count>(got.size());
  c.rtol = rtol;
  c.atol = atol;
  double diff_sq = 0, ref_sq = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(got[i] - ref[i]);
    const double own = atol + rtol * std::fabs(ref[i]);
    const double tol = magnitude ? std::max(own, atol + rtol * (*magnitude)[i]) : own;
    // NaN never passes.
    if (!(d <= tol)) c.violations += 1;
    else if (!(d <= own)) c.cancelling += 1;
    if (!(d <= c.max_abs_diff)) c.max_abs_diff = d;
    const double excess = tol > 0 ? d / tol : (d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    if (!(excess <= c.max_excess)) c.max_excess = excess;
    diff_sq += d * d;
    ref_sq += ref[i] * ref[i];
  }
  c.ref_l2 = std::sqrt(ref_sq);
  c.rel_l2 = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : (diff_sq > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  return c;
}

json GradComparison::to_json() const {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  return json{{"elements", elements},
              {"violations", violations},
              {"max_abs_diff", num(max_abs_diff)},
              {"max_excess", num(max_excess)},
              {"rel_l2", num(rel_l2)},
              {"ref_l2", num(ref_l2)},
              {"rtol", rtol},
              {"atol", atol},
              {"cancelling", cancelling}};
}

std::string Agreement::summary() const {
  if (ok) return "all ranks agree";
  return fmt::format("ranks disagree: {}", fmt::join(mismatches, "; "));
}

Agreement check_agreement(const std::vector<json>& per_rank) {
  Agreement a;
  if (per_rank.empty()) return a;
  const auto& base = per_rank.front();
  std::vector<std::string> keys;
  for (const auto& r : per_rank)
    for (auto it = r.begin(); it != r.end(); ++it)
      if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
  for (const auto& k : keys) {
    std::vector<std::string> differing;
    for (std::size_t r = 1; r < per_rank.size(); ++r) {
      const json& v = per_rank[r].contains(k) ? per_rank[r].at(k) : json(nullptr);
      const json& b = base.contains(k) ? base.at(k) : json(nullptr);
      if (v != b) differing.push_back(fmt::format("rank {}={}", r, v.dump()));
    }
    if (!differing.empty()) {
      a.ok = false;
      a.mismatches.push_back(fmt::format("{}: rank 0={}, {}", k, base.contains(k) ? base.at(k).dump() : "null",
                                         fmt::join(differing, ", ")));
    }
  }
  return a;
}

NoiseScale noise_scale(double b_small, const std::vector<double>& g_small_sq, double b_big,
                       const std::vector<double>& g_big_sq) {
  NoiseScale n;
  n.b_small = b_small;
  n.b_big = b_big;
  n.n_small = static_cast<Count>(g_small_sq.size());
  n.n_big = static_cast<Count>(g_big_sq.size());
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0.0 : s / double(v.size());
  };
  n.g_small_sq = mean(g_small_sq);
  n.g_big_sq = mean(g_big_sq);
  if (g_small_sq.empty() || g_big_sq.empty()) {
    n.note = "no gradient norms measured";
    return n;
  }
  if (!(b_small >= 1 && b_big > b_small)) {
    n.note = "global batch equals micro_batch (accum_steps x world_size = 1): two batch sizes are needed";
    return n;
  }
  // The one estimator (model/noise_scale.hpp); the batch sizes are whole samples.
  const model::NoiseScale m =
      model::noise_scale_two_sizes(static_cast<Count>(b_small), n.g_small_sq, static_cast<Count>(b_big), n.g_big_sq);
  n.true_grad_sq = m.grad_sq_norm;
  n.trace_cov = m.trace_sigma;
  if (!(n.true_grad_sq > 0)) {
    n.note = "estimated |G|^2 <= 0: gradient noise dominates at these batch sizes; run more steps";
    return n;
  }
  n.b_simple = m.b_simple;
  n.valid = true;
  return n;
}

json NoiseScale::to_json() const {
  json j{{"b_small", b_small},           {"b_big", b_big},         {"mean_sq_norm_small", g_small_sq},
         {"mean_sq_norm_big", g_big_sq}, {"n_small", n_small},     {"n_big", n_big},
         {"true_grad_sq", true_grad_sq}, {"trace_cov", trace_cov}, {"valid", valid}};
  j["b_simple"] = valid ? json(b_simple) : json(nullptr);
  if (!note.empty()) j["note"] = note;
  return j;
}

double error_pct(double measured, double predicted) {
  if (predicted == 0) return measured == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return 100.0 * (measured - predicted) / predicted;
}

std::vector<double> max_over_ranks(const std::vector<std::vector<double>>& per_rank) {
  std::vector<double> out;
  for (const auto& r : per_rank) {
    if (out.empty()) out.assign(r.size(), -std::numeric_limits<double>::infinity());
    if (r.size() != out.size()) throw RuntimeFailure("per-rank step records differ in length");
    for (std::size_t s = 0; s < r.size(); ++s) out[s] = std::max(out[s], r[s]);
  }
  return out;
}

std::vector<double> spread_over_ranks(const std::vector<std::vector<double>>& per_rank) {
  std::vector<double> hi = max_over_ranks(per_rank), lo;
  for (const auto& r : per_rank) {
    if (lo.empty()) lo.assign(r.size(), std::numeric_limits<double>::infinity());
    for (std::size_t s = 0; s < r.size(); ++s) lo[s] = std::min(lo[s], r[s]);
  }
  for (std::size_t s = 0; s < hi.size(); ++s) hi[s] -= lo[s];
  return hi;
}

ExposedSplit split_exposed(const std::vector<std::vector<double>>& exposed,
                           const std::vector<std::vector<double>>& arrival) {
  if (exposed.size() != arrival.size() || exposed.empty())
    throw RuntimeFailure("exposed and arrival records differ in rank count");
  const std::vector<double> most = max_over_ranks(exposed);
  for (const auto& r : arrival)
    if (r.size() != most.size()) throw RuntimeFailure("per-rank step records differ in length");
  ExposedSplit out;
  for (std::size_t s = 0; s < most.size(); ++s) {
    std::size_t last = 0;
    for (std::size_t r = 1; r < arrival.size(); ++r)
      if (arrival[r][s] > arrival[last][s]) last = r;
    out.last_rank.push_back(exposed[last][s]);
    out.wait.push_back(std::max(0.0, most[s] - exposed[last][s]));
  }
  return out;
}

}  // namespace gaccum::runner
