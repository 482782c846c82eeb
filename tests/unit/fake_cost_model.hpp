// What: a hand-built CostModel with closed forms, for the tuner/reports tests and the tuner
//       benchmark (no profile, no fitting):
//   micro-step   t(b) = overhead + per_sample b                     seconds
//   compute      k t(b)
//   allreduce    A(p) = comm_base + comm_per_rank (p - 1)           seconds, 0 at p = 1
//   hidden       h(b) = hide_fraction t(b)  (behind the last backward)
//   overlap      total A, exposed max(0, A - h), 2 calls
//   fused        total A, exposed A, 1 call
//   every-step   total k A, exposed k max(0, A - h), 2k calls
//   step_time    compute + exposed + optimizer;  band 0.95x .. 1.05x
//   memory       4 weight_bytes (weights, grads, Adam 2x) + buckets (p > 1; fused: fusion_bytes)
//                + act_per_sample b
// Why: tests assert the tuner's choices against numbers computed by hand from these forms.
#pragma once

#include <algorithm>
#include <stdexcept>

#include "model/cost_model.hpp"

namespace gaccum::test {

struct FakeParams {
  double overhead = 0.010, per_sample = 0.001;
  double comm_base = 0.020, comm_per_rank = 0.010;
  double hide_fraction = 0.5;
  double optimizer = 0.005;
  Bytes weight_bytes = 25'000'000;  // static = 100 MB
  Bytes bucket_bytes = 25'000'000;
  Bytes fusion_bytes = 25'000'000;
  Bytes act_per_sample = 10'000'000;
  Count measured_max = 64;
  Bytes device_memory = 1'000'000'000;
  Count max_world_size = 0;
  double tokens_per_sample = 0;
};

class FakeCostModel : public model::CostModel {
 public:
  explicit FakeCostModel(FakeParams p = {}, std::optional<double> noise = std::nullopt) : p_(p) {
    info_.source = "fake";
    info_.workload_name = "fake-workload";
    info_.workload_hash = "0123456789abcdef";
    info_.device_kind = "cpu";
    info_.device_name = "Fake CPU";
    info_.device_memory = p.device_memory;
    info_.max_world_size = p.max_world_size;
    info_.measured_max_micro_batch = p.measured_max;
    info_.max_micro_batch_fitting = p.measured_max;
    info_.threads_per_rank = 1;
    info_.tokens_per_sample = p.tokens_per_sample;
    info_.noise_scale = noise;
    info_.notes = {"fake closed-form model"};
  }

  model::Prediction predict(const model::Config& c) const override {
    if (c.micro_batch < 1 || c.accum_steps < 1 || c.world_size < 1) throw std::invalid_argument("bad config");
    model::Prediction r;
    r.config = c;
    const double b = double(c.micro_batch), k = double(c.accum_steps);
    const double t = p_.overhead + p_.per_sample * b;
    const double A = c.world_size > 1 ? p_.comm_base + p_.comm_per_rank * double(c.world_size - 1) : 0.0;
    const double exposed_one = std::max(0.0, A - p_.hide_fraction * t);
    r.time.compute = k * t;
    switch (c.strategy) {
      case Strategy::overlap:
        r.time.comm_total = A, r.time.comm_exposed = exposed_one, r.collectives_per_step = c.world_size > 1 ? 2 : 0;
        break;
      case Strategy::fused:
        r.time.comm_total = A, r.time.comm_exposed = A, r.collectives_per_step = c.world_size > 1 ? 1 : 0;
        break;
      case Strategy::every_step:
        r.time.comm_total = k * A, r.time.comm_exposed = k * exposed_one;
        r.collectives_per_step = c.world_size > 1 ? 2 * c.accum_steps : 0;
        break;
    }
    r.time.optimizer = p_.optimizer;
    r.time.step_time = r.time.compute + r.time.comm_exposed + r.time.optimizer;
    r.step_time_lo = 0.95 * r.time.step_time;
    r.step_time_hi = 1.05 * r.time.step_time;
    r.throughput = double(c.global_batch()) / r.time.step_time;
    r.tokens_per_s = r.throughput * p_.tokens_per_sample;
    r.memory.weights = p_.weight_bytes;
    r.memory.gradients = p_.weight_bytes;
    r.memory.optimizer_state = 2 * p_.weight_bytes;
    r.memory.comm_buffers = c.world_size > 1 ? (c.strategy == Strategy::fused ? p_.fusion_bytes : p_.bucket_bytes) : 0;
    r.memory.activations = p_.act_per_sample * Bytes(c.micro_batch);
    r.memory.peak = 4 * p_.weight_bytes + r.memory.comm_buffers + r.memory.activations;
    r.extrapolated = c.micro_batch > p_.measured_max;
    return r;
  }
  const model::ModelInfo& info() const override { return info_; }

 private:
  FakeParams p_;
  model::ModelInfo info_;
};

}  // namespace gaccum::test
