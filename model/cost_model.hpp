// What: the cost model's interface: predict(Config) -> Prediction for any (micro_batch,
//       accum_steps, world_size, strategy), from a measured profile (optionally scaled to a
//       described cluster) or from an analytic transformer spec.
// Why: the tuner, `predict`, `check` and the runner's predicted-vs-measured all talk to this
//      interface and nothing else of model/; implementations are pure const functions of
//      their fitted parameters (astra-network-analytical style). No LibTorch here.
//
// Plans: a model states which precisions and checkpointing modes it can price (PlanSupport);
// Config::precision/checkpointing left empty mean the first of each list (the model's own), and
// predict() returns the resolved values in Prediction::config. Sharding is priced by every model
// (model/plan_cost.hpp); `auto_shardings` is what `tune`/`check` search when not pinned.
//
// Contract for implementations:
//   - predict() is const, allocation-free and thread-safe (the tuner calls it ~1e6 times/s).
//   - predict() throws InputError only for impossible inputs (micro_batch/accum_steps/
//     world_size < 1, world_size above info().max_world_size when that is non-zero, a plan
//     plan_rejection() refuses, a precision or checkpointing mode the model does not support). A
//     micro_batch above the measured range is predicted by the stated extrapolation rule and
//     flagged with Prediction::extrapolated; callers decide whether to accept it.
//   - Accumulation steps never change predicted activation memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/optimizer.hpp"
#include "model/prediction.hpp"

namespace gaccum::model {

struct PlanSupport {
  std::vector<Precision> precisions{Precision::fp32};  // first: the model's own
  std::vector<Checkpointing> checkpointings{Checkpointing::none};
  std::vector<Precision> auto_precisions{Precision::fp32};              // searched when --precision is not given
  std::vector<Checkpointing> auto_checkpointings{Checkpointing::none};  // searched when --checkpointing is not given
  std::vector<ShardingChoice> auto_shardings{{Sharding::none, 0}};      // searched when --sharding is not given
  Count gpus_per_node = 0;       // the default hsdp group (0: unknown, hsdp needs hsdp:G)
  bool layouts = false;          // prices tensor/pipeline/context-parallel layouts (a --spec)
  Count layers = 0;              // transformer layers (a --spec): what partial recompute counts; 0: none
  // A module of the user's own (a profiled TorchScript file, MLP or CNN; not the built-in GPT,
  // whose shape Megatron-LM and torchtitan build): the frameworks table's model_refusal.
  bool own_module = false;
  // The layouts `tune --tp auto --pp auto` chooses from (model/parallel_plan.hpp
  // candidate_layouts): tp a power of two within a node dividing the heads, kv heads and
  // ffn_hidden; pp up to 64 dividing the layers (1f1b, and interleaved-1f1b with v = 2..8 where
  // pp v divides them), or not dividing them (1f1b with ceil(L / pp) layers on the middle stages
  // and the rest split evenly between the first and last); sequence parallel with tp.
  std::vector<ParallelLayout> layout_candidates;
  std::string limits;            // why precisions/checkpointings are limited (for the error), "" if not
  std::string sharded_comm;      // where reduce-scatter / all-gather times come from (one line)
  Precision own_precision() const { return precisions.front(); }
  Checkpointing own_checkpointing() const { return checkpointings.front(); }
};

struct ModelInfo {
  std::string source;                 // "profile" or "spec"
  std::string workload_name;
  std::string model_name;             // what report titles call it: the preset, the spec's name, or the
                                      // TorchScript file's name (workload_name is "torchscript" there)
  std::string workload_hash;
  std::string device_kind;            // "cpu" or "cuda"
  std::string device_name;
  Bytes device_memory = 0;            // memory of one device (the base of a "90%" cap)
  Count max_world_size = 0;           // 0: unlimited (no cluster given)
  std::string max_world_size_reason;  // why the limit exists (for the one-line error)
  Count measured_max_micro_batch = 0; // predictions above are extrapolated
  Count max_micro_batch_fitting = 0;  // largest micro_batch the profiler found within its cap
  Count min_micro_batch = 1;          // the model raised below this when profiled (BatchNorm at 1)
  std::string min_micro_batch_reason; // the model's own message at the largest size below it
  // Batch-dependent layers of the model (profile "model"): BatchNorm-like and dropout layers.
  std::vector<std::string> batch_statistics, dropout;
  int threads_per_rank = 0;           // CPU profiles: torch threads per rank
  double tokens_per_sample = 0;       // mean real tokens per sample; 0 if not a sequence model
  std::optional<double> noise_scale;  // B_noise (samples) when gradient statistics allow it
  Optimizer optimizer = Optimizer::adam;  // whose state is priced: the spec's, or the one the profile measured
  PlanSupport plans;
  std::vector<std::string> notes;     // rules used, fit quality, warnings (for reports)
  nlohmann::json fit = nlohmann::json::object();  // fitted parameters and residuals (JSON reports)
  const std::string& title_name() const { return model_name.empty() ? workload_name : model_name; }
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual Prediction predict(const Config& config) const = 0;
  virtual const ModelInfo& info() const = 0;
};

}  // namespace gaccum::model
