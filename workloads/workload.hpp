// What: the networks being trained (docs/DESIGN.md, Workloads): a common interface over LibTorch
//       modules (mlp, gpt, cnn) and a user's TorchScript file, each with a deterministic
//       synthetic data stream and a loss that reports its own normaliser.
// Why: the profiler and the runner must execute exactly the same micro-step, and the runner's
//      gradient-equivalence check needs sample-exact data: sample i of the stream depends only on
//      (seed, i), so a window's micro-batches concatenated equal the one-pass reference batch.
//
// Shapes: mlp input [b, in], target [b] (int64 class); gpt input/target [b, seq_len] (int64
// tokens, target -100 on padding); cnn input [b, 3, H, W], target [b]; torchscript: the inputs
// and target of core/model_inputs.hpp (float, token and mask inputs; class, regression and
// token targets).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "core/model_inputs.hpp"
#include "core/profile.hpp"
#include "core/units.hpp"

namespace gaccum::workloads {

struct Batch {
  torch::Tensor input;
  std::vector<torch::Tensor> more_inputs;  // forward()'s further arguments (torchscript), in order
  torch::Tensor target;
  Count samples = 0;
  Count loss_terms = 0;  // what the loss sum is normalised by: samples, or real tokens (gpt)
  // Where the batch sits in its stream: a model with dropout seeds its masks from these, so the
  // same micro-batch draws the same masks in a rank and in the one-process reference.
  std::uint64_t seed = 0;
  Count first_sample = 0;
};

// Layers that make a sample's output depend on more than the sample itself (docs/DESIGN.md,
// "Batch-dependent layers"): batch statistics (BatchNorm normalises over the micro-batch) and
// dropout (a random mask per forward). Accumulating k micro-batches is then not one big batch;
// the runner compares against the same micro-batches computed in one process instead.
struct BatchDependence {
  std::vector<std::string> batch_statistics;  // module paths and types, e.g. "layer1.0.bn1 (BatchNorm2d)"
  std::vector<std::string> dropout;           // e.g. "encoder.layers.0.dropout (Dropout)"
  bool any() const { return !batch_statistics.empty() || !dropout.empty(); }
};

// How a user asks for a workload. `name` is a preset ("gpt-tiny"), a kind ("gpt") or
// "torchscript"; `overrides` replace preset hyper-parameters ({"layers": 4}).
// The override that turns on activation checkpointing ({"checkpoint": 1}; gpt only: each block's
// activations are recomputed in backward). Absent: none. profile --checkpointing full sets it.
using gaccum::kCheckpointKey;

struct WorkloadConfig {
  std::string name = "gpt-tiny";
  nlohmann::json overrides = nlohmann::json::object();
  std::string dtype = "float32";        // float32 | float64 | bfloat16 (profile --precision bf16)
  std::string device = "cpu";           // cpu | cuda | cuda:N (already resolved, not "auto")
  std::uint64_t init_seed = 1234;       // parameter initialisation (identical on all ranks)
  // TorchScript only:
  std::string torchscript_path;
  std::vector<ModelInput> inputs;       // forward()'s arguments, e.g. {float:3,32,32}
  ModelTarget target;                   // classes:10, regression:4 or tokens:V
};

// The collectives a tensor-parallel block issues, over its group (the runner implements them on
// the c10d seam; workloads/ does not link comm/). Sequence collectives run along dim 0 of
// contiguous tensors. `backward`: issued by a backward pass; `layer`: by a block (else at the
// sequence-parallel boundaries after the embedding and before the head).
class TensorParallelComm {
 public:
  virtual ~TensorParallelComm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void allreduce_sum(torch::Tensor& t, bool backward, bool layer) = 0;  // in place
  // out = the ranks' `in` concatenated along dim 0, in rank order.
  virtual void all_gather(const torch::Tensor& in, torch::Tensor& out, bool backward, bool layer) = 0;
  // out = chunk rank() of the sum over ranks of `in` (dim 0 cut in size() equal chunks).
  virtual void reduce_scatter_sum(const torch::Tensor& in, torch::Tensor& out, bool backward, bool layer) = 0;
};

// A model that runs as a sequence of units, so that a pipeline run can cut it into stages: the
// built-in gpt's units are the embedding (tokens and positions), each transformer block, and the
// head (final LayerNorm and the vocabulary projection); a TorchScript model's are the submodules
// its forward() provably calls one after the other (workloads/torchscript.cpp), the first and the
// last in the embedding's and the head's places. Model chunk j of P holds blocks
// [j L / P, (j + 1) L / P) of the L blocks, chunk 0 also the embedding and chunk P - 1 the head
// (model/parallel_plan.hpp stage_layers' even split).
class StagedModel {
 public:
  // Called around each unit of every forward that runs through forward_units (the FSDP-style
  // hooks of a sharded plan, and the profile's memory phases): before unit u computes, and with
  // its output once it has. A hook may register a gradient hook on `out` to act before the
  // unit's backward. Null: none (the default).
  class UnitHooks {
   public:
    virtual ~UnitHooks() = default;
    virtual void before_unit_forward(Count u) = 0;
    virtual void after_unit_forward(Count u, const torch::Tensor& out) = 0;
  };
  virtual void set_unit_hooks(UnitHooks* hooks) = 0;

  virtual ~StagedModel() = default;
  virtual Count units() const = 0;            // blocks() + 2
  virtual Count blocks() const = 0;           // the repeated blocks (transformer layers)
  // Trainable parameters of unit u, in registration order (the concatenation over units is
  // Workload::parameters()).
  virtual std::vector<torch::Tensor> unit_parameters(Count u) const = 0;
  // Units [first, end) applied to x: the tokens [b, s] (int64) when first == 0, else the hidden
  // state [b, s, d]; returns the hidden state, or the logits [b, s, V] when end == units().
  virtual torch::Tensor forward_units(Count first, Count end, const torch::Tensor& x) = 0;
  // The tensor that enters unit u (1 <= u < units()) for a micro-batch of `micro_batch` samples,
  // what a pipeline stage receives from the stage before it: the gpt's hidden state [b, s, d]
  // ([b, s / T, d] under sequence parallelism); a TorchScript chain's boundary as one no-grad
  // eval-mode forward measured it (call before releasing any unit's parameters).
  struct UnitInput {
    std::vector<std::int64_t> shape;
    torch::Dtype dtype = torch::kFloat32;
  };
  virtual UnitInput unit_input(Count micro_batch, Count u) = 0;
  // Units [first, end) of chunk j of P (InputError unless blocks() divides by P).
  std::pair<Count, Count> chunk_units(Count chunk, Count chunks) const;

  // Tensor parallelism (Megatron-LM): every block's qkv and fc1 become column-parallel (this
  // rank's heads / hidden slice), proj and fc2 row-parallel (their input slice; the bias added
  // once, after the reduction); an allreduce after each row-parallel matmul in forward and before
  // each column-parallel one in backward. With `sequence_parallel` the hidden state between
  // blocks is this rank's slice of the sequence [b, s / T, d]: the allreduces become an
  // all-gather (forward) / reduce-scatter (backward) before the column-parallel matmuls and a
  // reduce-scatter / all-gather after the row-parallel ones; the embedding's output is split and
  // the head's input gathered. The embedding and head stay whole on every rank. `comm` must
  // outlive the model. InputError (naming --tp) when the heads or the sequence do not divide.
  virtual void split_tensor_parallel(TensorParallelComm& comm, bool sequence_parallel) = 0;
  // Why --tp T cannot split this model, or "" (checked before any rank starts).
  virtual std::string tensor_parallel_rejection(Count tp, bool sequence_parallel) const = 0;
  // Per parameter of unit_parameters(u): the positions (int64, flattened) its elements hold in
  // the unsplit parameter, or an undefined tensor for a parameter every rank holds whole.
  virtual std::vector<torch::Tensor> unit_parameter_origins(Count u) const = 0;
  // The whole parameters whose gradient is partial on each tensor-parallel rank (sequence
  // parallelism: the blocks' norms and row-parallel biases see a slice of the sequence); their
  // gradients are summed over the group after the backward.
  virtual std::vector<torch::Tensor> partial_gradient_parameters() const = 0;
};

// Installs `hooks` on a staged model for a scope (nothing when either is null): the profile's
// memory phases, a sharded run's per-unit gathering.
class ScopedUnitHooks {
 public:
  ScopedUnitHooks(StagedModel* model, StagedModel::UnitHooks* hooks) : model_(model && hooks ? model : nullptr) {
    if (model_) model_->set_unit_hooks(hooks);
  }
  ~ScopedUnitHooks() {
    if (model_) model_->set_unit_hooks(nullptr);
  }
  ScopedUnitHooks(const ScopedUnitHooks&) = delete;
  ScopedUnitHooks& operator=(const ScopedUnitHooks&) = delete;

 private:
  StagedModel* model_;
};

class Workload {
 public:
  virtual ~Workload() = default;
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  const WorkloadIdentity& identity() const { return identity_; }
  torch::Device device() const { return device_; }
  torch::Dtype dtype() const { return dtype_; }

  // Trainable parameters in registration order (the order DDP buckets them in reverse).
  virtual std::vector<torch::Tensor> parameters() const = 0;
  virtual std::vector<std::string> parameter_names() const = 0;
  virtual torch::Tensor forward(const Batch& batch) = 0;
  // Sum (not mean) of the per-term losses of `output`, a 0-dim tensor; divide by the window's
  // loss_terms to normalise.
  virtual torch::Tensor loss_sum(const torch::Tensor& output, const Batch& batch) const = 0;
  // Samples [first_sample, first_sample + count) of the stream `seed`, on device(), in dtype().
  virtual Batch make_batch(std::uint64_t seed, Count first_sample, Count count) const = 0;
  // make_batch(seed, first_sample, count).loss_terms without building the batch (the runner
  // needs a window's token count before its first backward).
  virtual Count loss_terms(std::uint64_t seed, Count first_sample, Count count) const {
    return make_batch(seed, first_sample, count).loss_terms;
  }
  // The model's batch-dependent layers (none for the built-in workloads).
  virtual BatchDependence batch_dependence() const { return {}; }
  // The model as a sequence of units (pipeline runs, zero3's per-unit gathering), or null when
  // it cannot be cut; then staging_rejection() says why, as a clause after "is not a sequence of
  // blocks the runner can cut: ".
  virtual StagedModel* staged() { return nullptr; }
  virtual std::string staging_rejection() const;

 protected:
  Workload(WorkloadIdentity id, torch::Device device, torch::Dtype dtype)
      : identity_(std::move(id)), device_(device), dtype_(dtype) {}
  // The loss's view of a model output: reduced-precision (bf16/fp16) outputs upcast to fp32, as
  // autocast runs log_softmax / cross-entropy / MSE in fp32 (the upcast copy is part of the
  // measured activations).
  static torch::Tensor loss_precision(const torch::Tensor& output);
  // Fills param_count / param_bytes / param_tensor_bytes / hash from parameters(); call last
  // in a derived constructor. `extra_identity` joins the hash (e.g. a file's content hash).
  void finish_identity(const std::string& extra_identity = "");

  WorkloadIdentity identity_;
  torch::Device device_;
  torch::Dtype dtype_;
};

// Where sample indices come from in a distributed accumulation window (the runner's layout):
// window `step` covers global_batch = b*k*p samples; rank r, micro-step m reads
// [step*B + (r*k + m)*b, ... + b).
Count sample_offset(Count step, Count rank, Count micro, Count micro_batch, Count accum_steps, Count world_size);

std::unique_ptr<Workload> make_workload(const WorkloadConfig& cfg);

// InputError (exit 2) naming the model when `value` (its loss, or a gradient norm: `what`) is NaN
// or infinite at `micro_batch`: a profile of such a model would hold numbers no reader accepts.
void require_finite(const Workload& workload, double value, const char* what, Count micro_batch);

struct PresetInfo {
  std::string name;
  std::string kind;
  std::string description;
  nlohmann::json hyper;
};
const std::vector<PresetInfo>& presets();

// "cpu", "cuda", "cuda:1" or "auto" (cuda:0 when LibTorch has CUDA and a device answers, else
// cpu). InputError naming --device for anything else or for cuda without a device.
std::string resolve_device(const std::string& requested);

// Parses "gpt-tiny", "gpt-tiny:layers=4,seq_len=128" into name + overrides.
WorkloadConfig parse_workload_arg(const std::string& text);

torch::Dtype parse_dtype(const std::string& text);

// The TorchScript fields of a WorkloadConfig as JSON ({"inputs": [text...], "target": text}) and
// back, for the rank processes' argument files.
nlohmann::json torchscript_fields_to_json(const WorkloadConfig& cfg);
void torchscript_fields_from_json(const nlohmann::json& j, const std::string& where, WorkloadConfig& cfg);
Bytes dtype_size(torch::Dtype dt);
// bf16 or fp16: weights, gradients and activations in 2 bytes, stepped through fp32 masters.
bool is_reduced_precision(torch::Dtype dt);
// The config that measures a plan's precision and checkpointing (core/profile.hpp's record of
// them): bf16 sets the dtype, full sets the checkpoint override; fp32, fp16 and none change nothing
// (the profile then prices fp32 / no checkpointing and refuses the rest).
void measure_plan_as(WorkloadConfig& cfg, Precision precision, Checkpointing checkpointing);

}  // namespace gaccum::workloads
