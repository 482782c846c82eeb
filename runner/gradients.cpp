// What/why: see gradients.hpp.
#include "runner/gradients.hpp"

#include <cmath>

#include "core/hash.hpp"

namespace gaccum::runner {
namespace {

// Gradient of loss_sum(samples [first, first+count)) / their loss terms, in one pass, without
// touching .grad.
std::vector<double> one_pass_gradient(workloads::Workload& wl, const std::vector<torch::Tensor>& params,
                                      std::uint64_t seed, Count first, Count count, Count* terms) {
  auto batch = wl.make_batch(seed, first, count);
  if (terms) *terms = batch.loss_terms;
  auto loss = wl.loss_sum(wl.forward(batch), batch) / static_cast<double>(batch.loss_terms);
  auto g = torch::autograd::grad({loss}, params, {}, false, false, true);
  return flat_double(g, params);
}

// The window's gradient as the sum of its micro-batches' (each loss over the window's terms), and
// per element the sum of those terms' magnitudes (what a float32 sum of them is exact to).
std::vector<double> micro_batch_gradient(workloads::Workload& wl, const std::vector<torch::Tensor>& params,
                                         const RunSpec& spec, std::uint64_t seed, Count w, Count* terms,
                                         std::vector<double>* magnitude, const std::function<void()>& progress) {
  Count total = 0;
  for (Count r = 0; r < spec.world_size; ++r)
    for (Count m = 0; m < spec.accum_steps; ++m) {
      auto [first, count] = spec.micro_range(w, r, m);
      if (count > 0) total += wl.loss_terms(seed, first, count);
    }
  std::vector<double> sum;
  for (Count r = 0; r < spec.world_size; ++r)
    for (Count m = 0; m < spec.accum_steps; ++m) {
      auto [first, count] = spec.micro_range(w, r, m);
      if (count == 0) continue;
      auto batch = wl.make_batch(seed, first, count);
      auto loss = wl.loss_sum(wl.forward(batch), batch) / static_cast<double>(total);
      auto g = flat_double(torch::autograd::grad({loss}, params, {}, false, false, true), params);
      if (sum.empty()) sum.assign(g.size(), 0.0), magnitude->assign(g.size(), 0.0);
      for (std::size_t i = 0; i < g.size(); ++i) sum[i] += g[i], (*magnitude)[i] += std::fabs(g[i]);
      progress();
    }
  *terms = total;
  return sum;
}

}  // namespace

std::vector<double> flat_double(const std::vector<torch::Tensor>& ts, const std::vector<torch::Tensor>& shapes) {
  std::vector<double> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto n = shapes[i].numel();
    if (!ts[i].defined()) {
      out.insert(out.end(), static_cast<std::size_t>(n), 0.0);
      continue;
    }
    auto c = ts[i].detach().to(torch::kCPU, torch::kFloat64).contiguous();
    const double* p = c.data_ptr<double>();
    out.insert(out.end(), p, p + n);
  }
  return out;
}

std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const auto& p : params) g.push_back(p.grad());
  return g;
}

Count nonzero_elements(const std::vector<torch::Tensor>& tensors) {
  Count n = 0;
  for (const auto& g : tensors) {
    if (!g.defined()) continue;
    if (g.is_cpu() && g.is_contiguous() && g.scalar_type() == torch::kFloat32) {
      const float* d = g.data_ptr<float>();
      for (std::int64_t i = 0; i < g.numel(); ++i) n += d[i] != 0.0f;
    } else if (g.is_cpu() && g.is_contiguous() && g.scalar_type() == torch::kFloat64) {
      const double* d = g.data_ptr<double>();
      for (std::int64_t i = 0; i < g.numel(); ++i) n += d[i] != 0.0;
    } else {
      n += (g != 0).sum().item<std::int64_t>();
    }
  }
  return n;
}

std::string hash_tensors(const std::vector<torch::Tensor>& ts) {
  std::uint64_t h = fnv1a64("");
  for (const auto& t : ts) {
    if (!t.defined()) {
      h = fnv1a64("undefined", h);
      continue;
    }
    auto c = t.detach().to(torch::kCPU).contiguous();
    h = fnv1a64(std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()), h);
  }
  return hex64(h);
}

WindowChecks check_window(workloads::Workload& wl, const std::vector<torch::Tensor>& params, const RunSpec& spec,
                          std::uint64_t seed, Count w, const std::vector<double>& got,
                          const std::vector<double>& before_last, bool with_by_k,
                          const std::function<void()>& progress) {
  WindowChecks c;
  c.window = w;
  c.samples = spec.window_samples(w);
  c.micro_reference = wl.batch_dependence().any();
  progress();
  std::vector<double> magnitude;
  auto ref = c.micro_reference ? micro_batch_gradient(wl, params, spec, seed, w, &c.terms, &magnitude, progress)
                               : one_pass_gradient(wl, params, seed, w * spec.global_batch(), c.samples, &c.terms);
  progress();
  const std::vector<double>* mag = magnitude.empty() ? nullptr : &magnitude;
  c.equivalence = compare_gradients(got, ref, spec.rtol, spec.atol, mag);
  c.negative = compare_gradients(before_last, ref, spec.rtol, spec.atol, mag);
  for (Count r = 0; r < spec.world_size; ++r) c.last_micro_samples += spec.micro_range(w, r, spec.accum_steps - 1).second;
  if (with_by_k) {
    // The common mistake: each micro-batch's mean loss divided by accum_steps (then DDP's
    // average over ranks): sum over r, m of grad(mean_rm) / (k p).
    std::vector<double> alt(ref.size(), 0.0);
    const double div = static_cast<double>(spec.accum_steps * spec.world_size);
    for (Count r = 0; r < spec.world_size; ++r) {
      c.micro_terms.emplace_back();
      for (Count m = 0; m < spec.accum_steps; ++m) {
        auto [first, count] = spec.micro_range(w, r, m);
        if (count == 0) continue;
        Count terms = 0;
        auto g = one_pass_gradient(wl, params, seed, first, count, &terms);
        c.micro_terms.back().push_back(terms);
        for (std::size_t i = 0; i < g.size(); ++i) alt[i] += g[i] / div;
        progress();
      }
    }
    c.by_k = compare_gradients(alt, ref, spec.rtol, spec.atol);
    c.got_vs_by_k = compare_gradients(got, alt, spec.rtol, spec.atol);
  }
  return c;
}

}  // namespace gaccum::runner
