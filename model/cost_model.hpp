// What: the cost model's interface: predict(Config) -> Prediction for any (micro_batch,
//       accum_steps, world_size, strategy), from a measured profile (optionally scaled to a
//       described cluster) or from an analytic transformer spec.
// Why: the tuner, `predict`, `check` and the runner's predicted-vs-measured all talk to this
//      interface and nothing else of model/; implementations are pure const functions of
//      their fitted parameters (astra-network-analytical style). No LibTorch here.
//
// Contract for implementations:
//   - predict() is const, allocation-free and thread-safe (the tuner calls it ~1e6 times/s).
//   - predict() throws InputError only for impossible inputs (micro_batch/accum_steps/
//     world_size < 1, world_size above info().max_world_size when that is non-zero). A
//     micro_batch above the measured range is predicted by the stated extrapolation rule and
//     flagged with Prediction::extrapolated; callers decide whether to accept it.
//   - Accumulation steps never change predicted activation memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/prediction.hpp"

namespace gaccum::model {

struct ModelInfo {
  std::string source;                 // "profile" or "spec"
  std::string workload_name;
  std::string workload_hash;
  std::string device_kind;            // "cpu" or "cuda"
  std::string device_name;
  Bytes device_memory = 0;            // memory of one device (the base of a "90%" cap)
  Count max_world_size = 0;           // 0: unlimited (no cluster given)
  std::string max_world_size_reason;  // why the limit exists (for the one-line error)
  Count measured_max_micro_batch = 0; // predictions above are extrapolated
  Count max_micro_batch_fitting = 0;  // largest micro_batch the profiler found within its cap
  int threads_per_rank = 0;           // CPU profiles: torch threads per rank
  double tokens_per_sample = 0;       // mean real tokens per sample; 0 if not a sequence model
  std::optional<double> noise_scale;  // B_noise (samples) when gradient statistics allow it
  std::vector<std::string> notes;     // rules used, fit quality, warnings (for reports)
  nlohmann::json fit = nlohmann::json::object();  // fitted parameters and residuals (JSON reports)
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual Prediction predict(const Config& config) const = 0;
  virtual const ModelInfo& info() const = 0;
};

}  // namespace gaccum::model
