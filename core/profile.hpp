// What: profile.json as value types: everything the profiler measured on real hardware, raw,
//       plus the identity of the hardware, libraries and workload it was measured with.
// Why: the cost model, tuner and check run on a laptop from this file alone (docs/DESIGN.md, Data
//      flow), so it carries raw measurements (not only fitted values) and is schema-versioned.
//      Loading a profile of another schema version or another workload is a ProfileError.
//
// Units: bytes are exact byte counts; times are seconds; bandwidths bytes/second.
// Contract: the profiler writes, the model reads. Add fields freely (with defaults when
// reading older files of the same schema); rename or re-purpose one only with a schema bump.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/optimizer.hpp"
#include "core/plan.hpp"
#include "core/host.hpp"
#include "core/backend.hpp"
#include "core/units.hpp"

namespace gaccum {

inline constexpr int kProfileSchemaVersion = 2;  // 2: reduce-scatter / all-gather (collectives[])
inline constexpr int kOldestProfileSchemaVersion = 1;  // still read: no collectives[]

// What is trained. `hash` is the workload's stable identity (name + hyper-parameters + dtype,
// plus the file content for TorchScript): 16 hex digits.
struct WorkloadIdentity {
  std::string name;                     // preset or user label, e.g. "gpt-tiny"
  std::string kind;                     // mlp | gpt | cnn | torchscript
  std::string hash;
  std::string dtype;                    // float32 | float64
  nlohmann::json hyper = nlohmann::json::object();  // hyper-parameters as configured
  Count param_count = 0;
  Bytes param_bytes = 0;                // param_count x dtype size, exact
  std::vector<Bytes> param_tensor_bytes;  // per parameter tensor, registration order
  // A model that runs as a sequence of units (workloads/workload.hpp StagedModel: the gpt's
  // embedding, blocks and head): parameter tensors per unit, in forward order (consecutive in
  // registration order). Empty: not staged. A zero3/hsdp run gathers one unit at a time.
  std::vector<Count> unit_tensors;
  Count tokens_per_sample = 0;          // padded sequence length; 0 for non-sequence workloads
  double mean_tokens_per_sample = 0;    // expected real (loss-bearing) tokens per sample; 0 if n/a
};

// How a workload identity records the plan it was measured under (profile --precision bf16,
// --checkpointing full): the dtype "bfloat16", and the hyper-parameter "checkpoint": 1.
inline constexpr const char* kBf16Dtype = "bfloat16";
inline constexpr const char* kCheckpointKey = "checkpoint";
Precision measured_precision(const WorkloadIdentity& w);          // bf16 or fp32 (fp64 counts as fp32)
Checkpointing measured_checkpointing(const WorkloadIdentity& w);  // full or none

struct HardwareInfo {
  std::string host;
  std::string device_kind;              // "cpu" or "cuda"
  std::string device_name;              // CPU model or GPU name
  int cpu_cores = 0;
  int threads_per_rank = 0;             // torch::set_num_threads in every rank process (CPU)
  Bytes device_memory = 0;              // GPU memory, or the size given to the CPU "device"
  int sm_count = 0;                     // GPU only
  std::string driver;                   // GPU only
};

struct LibraryVersions {
  std::string tool, libtorch, cuda, nccl, gloo;
};

struct ProfileSettings {
  int warmup = 0;
  int iters = 0;
  std::vector<Count> ranks;             // rank counts probed for allreduce/contention
  std::vector<Bytes> sizes;             // allreduce message sizes in the sweep
  Bytes memory_cap = 0;                 // the cap the sweep respected, bytes
  Count max_micro_batch = 0;            // upper bound given to the sweep (0 = none)
  double time_budget_s = 0;
  std::uint64_t seed = 0;
  Optimizer optimizer = Optimizer::adam;  // what optimizer_state was measured for (one LibTorch has)
  // Adaptive timing (engine/iteration_driver.hpp): repetitions continue until the median's 95%
  // interval is within +-ci_target of it, or max_iters, or the phase's time budget. 0: exactly
  // `iters` (older profiles).
  double ci_target = 0;
  int max_iters = 0;
  // How the ranks waited for their collectives (core/backend.hpp; "block" in profiles before
  // 2026-12-03) and the compute each timed collective followed (profiler/probe.hpp kCommGap; 0:
  // timed back to back, as before 2026-12-03). validate compares them with its own run.
  CollectiveWait collective_wait = CollectiveWait::block;
  Seconds comm_gap = 0;
};

// Spread of repeated timings of the same thing.
//   ci_lo/ci_hi: the distribution-free 95% confidence interval of the median (order statistics:
//   the sorted samples x_(l) and x_(n+1-l), l the largest rank with P(Binomial(n, 1/2) < l) <=
//   2.5%; fewer than 6 samples cannot reach 95% and give [min, max]). Where the median of a
//   repeat of the same measurement should land; p10/p90 say where one iteration lands.
struct TimingStats {
  Seconds median = 0, p10 = 0, p90 = 0, mean = 0, min = 0, max = 0;
  Seconds ci_lo = 0, ci_hi = 0;
  std::vector<Seconds> samples;         // raw, in measurement order
  static TimingStats from_samples(std::vector<Seconds> samples);
  // (ci_hi - ci_lo) / (2 median): the interval's half-width relative to the median (0 if none).
  double ci_half_width() const;
};

// 0-based indices {lo, hi} into n sorted samples of the 95% interval of the median (see above).
std::pair<std::size_t, std::size_t> median_interval_ranks(std::size_t n);

// Memory of one training window at one micro_batch (allocated bytes, byte-exact on CPU).
struct MemoryPoint {
  Count micro_batch = 0;
  Bytes weights = 0;
  Bytes gradients = 0;
  Bytes optimizer_state = 0;            // after the first optimizer step (Adam: 2 x params)
  Bytes peak = 0;                       // allocated high-water mark over the window
  Bytes activations = 0;                // peak - (weights + gradients + optimizer_state)
  Bytes reserved_peak = 0;              // CUDA caching allocator reserved high-water; 0 on CPU
  // Staged models (WorkloadIdentity::unit_tensors, n units): the activation high-water mark
  // (allocated above weights + gradients + optimizer_state) within each phase of the window, the
  // phases cut where a zero3 run gathers or frees a unit (comm/sharded_sync.hpp):
  //   [0]            outside the units: building the batch, after the backward, the optimizer step
  //   [1 + 2u]       unit u's forward          [2 + 2u]  after it, before unit u + 1's (u = n-1:
  //                                                       the loss, until the head's backward)
  //   [1 + 2n + u]   unit u's backward (from its output's gradient to unit u-1's; u = 0: to the
  //                  backward's end)
  // max over phases == activations. Empty: not measured (older profiles, unstaged models).
  std::vector<Bytes> phases;
};
// Phase indices of MemoryPoint::phases for a model of n units.
inline constexpr std::size_t kOutsidePhase = 0;
inline std::size_t forward_phase(Count u) { return static_cast<std::size_t>(1 + 2 * u); }
inline std::size_t after_forward_phase(Count u) { return static_cast<std::size_t>(2 + 2 * u); }
inline std::size_t backward_phase(Count u, Count n) { return static_cast<std::size_t>(1 + 2 * n + u); }
inline std::size_t phase_count(Count n) { return static_cast<std::size_t>(1 + 3 * n); }

// Time of one micro-step (batch generation + forward + loss + backward) at one micro_batch,
// with `concurrent_ranks` rank processes computing at the same time on this host.
struct ComputePoint {
  Count micro_batch = 0;
  Count concurrent_ranks = 1;
  TimingStats forward;
  TimingStats backward;
  TimingStats micro_step;
};

// zero_grad + optimizer.step over all parameters.
struct OptimizerPoint {
  Count concurrent_ranks = 1;
  TimingStats step;
};

// Which ranks a collective measurement ran over. `job`: the profile's own rank group (on one host
// the local group of world_size ranks; under a cluster launcher the whole job, across nodes).
// `intra_node`: the ranks of one node, every node's group running at once. `inter_node`: one rank
// per node (equal local rank), the groups of every local rank running at once, as the inter-node
// phase of a hierarchical allreduce runs (model/allreduce.hpp).
enum class CommLevel { job, intra_node, inter_node };
const char* to_string(CommLevel l);                       // "job", "intra_node", "inter_node"
std::optional<CommLevel> parse_comm_level(const std::string& s);

// One allreduce size/rank-count cell, reported as nccl-tests does:
// algbw = bytes / time, busbw = algbw * 2(p-1)/p.
struct AllreducePoint {
  std::string backend;                  // "gloo" or "nccl"
  Count world_size = 0;
  Bytes bytes = 0;
  Seconds time = 0;                     // mean over iterations of the max over ranks
  BytesPerSecond algbw = 0;
  BytesPerSecond busbw = 0;
  Count wrong = 0;                      // elements that failed the correctness check
  std::string tag = "sweep";            // "sweep" or "bucket" (the workload's own bucket sizes)
  CommLevel level = CommLevel::job;     // "level" (written when not job)
  std::vector<Seconds> samples;         // per-iteration max-over-ranks times
};

// Reduce-scatter or all-gather of a message of `bytes` (the full, unsharded tensor S) over
// world_size ranks, reported as nccl-tests does: time = mean over iterations of the max over
// ranks, algbw = S / time, busbw = algbw x (p-1)/p (both ops move (p-1)/p of S per rank).
struct CollectivePoint {
  std::string op;                       // "reduce_scatter" or "all_gather"
  std::string method;                   // how the backend ran it: "alltoall+local-sum", "alltoall-staged",
                                        // "nccl-reduce-scatter", "nccl-all-gather" ("native": older profiles)
  std::string backend;                  // "gloo" or "nccl"
  Count world_size = 0;
  Bytes bytes = 0;
  Seconds time = 0;
  BytesPerSecond algbw = 0;
  BytesPerSecond busbw = 0;
  Count wrong = 0;                      // elements that failed the correctness check
  std::string tag = "sweep";            // "sweep", "bucket" or "fused", as for allreduce
  CommLevel level = CommLevel::job;     // "level" (written when not job), as for allreduce
  std::vector<Seconds> samples;
};

// Squared L2 norms of the full gradient of independent micro-batches of one size
// (gradient noise scale, McCandlish et al. 2018, App. A.1).
struct GradNormPoint {
  Count micro_batch = 0;
  std::vector<double> sq_norms;
};

// Calibration of compute/communication overlap at one rank count: backward alone, the
// bucketed allreduce alone, and both overlapped as the `overlap` strategy runs them.
struct OverlapPoint {
  Count world_size = 0;
  Count micro_batch = 0;
  Seconds backward_alone = 0;
  Seconds comm_alone = 0;
  Seconds overlapped = 0;
};

// A micro_batch at which the model itself raised while profiled (BatchNorm given one value per
// channel at micro_batch 1, ...): recorded with the model's own message, and the sweep goes on.
struct FailedMicroBatch {
  Count micro_batch = 0;
  std::string message;  // the last line of the model's error
};

// What the profiler found out about the model beyond its sizes (profile.json "model", written
// only when something was found): the micro-batches it raised at, the smallest it ran at, and
// its batch-dependent layers (docs/DESIGN.md, "Batch-dependent layers").
struct ModelFindings {
  std::vector<FailedMicroBatch> failed_micro_batches;
  Count min_micro_batch = 1;                   // the model ran at every measured size >= this
  std::vector<std::string> batch_statistics;   // e.g. "layer1.0.bn1 (BatchNorm2d)"
  std::vector<std::string> dropout;            // e.g. "encoder.layers.0.dropout (Dropout)"
  bool empty() const {
    return failed_micro_batches.empty() && min_micro_batch == 1 && batch_statistics.empty() && dropout.empty();
  }
};

// Where the ranks of a profile ran. nodes 1: one host (the local rank groups of settings.ranks);
// `profile` under a cluster launcher (torchrun, Slurm, mpirun): `nodes` hosts of ranks_per_node
// ranks, compute measured with every rank of the job computing, collectives at the three levels.
struct ProfileTopology {
  Count nodes = 1;
  Count ranks_per_node = 0;             // 0: one host, rank groups of settings.ranks
  std::vector<std::string> hosts;       // one per node, node order
  std::string launcher;                 // torchrun | slurm | mpirun | env ("" one host)
  bool multi_node() const { return nodes > 1; }
};

// A measurement the profiler could not confirm: a rank group still disturbed after it was measured
// again, or a compute point whose two measurements disagree (profile.json "unconfirmed[]").
// world_size: the rank group it belongs to (the concurrency of its compute points, the world_size
// of its collectives), 0 = every group (a launched job measures all in one phase); micro_batch:
// the one compute point, 0 = every point of the group. Predictions priced from it say so
// (model/prediction.hpp Prediction::unconfirmed).
struct UnconfirmedMeasurement {
  std::string what;  // e.g. "world_size 2 group (compute, optimizer, allreduce, overlap): measured while ..."
  Count world_size = 0;
  Count micro_batch = 0;
  bool covers(Count concurrency, Count b) const {
    return (world_size == 0 || world_size == concurrency) && (micro_batch == 0 || micro_batch == b);
  }
};

// What one optimizer step allocates above the state it keeps, for one tensor of n elements
// stepped (Adam: the sqrt and division temporaries, 2 x 4 bytes per fp32 element, and a few
// scalars), measured on scratch tensors of E and 2E elements, linear in n. The runner's sharded
// plans step one flat shard per unit, so their step's peak is set by the largest shard; a DDP
// step's by the largest parameter (already inside the window's measured peak).
struct OptimizerTransient {
  Count elements = 0;  // E
  Bytes at_e = 0;      // bytes above the resident level while stepping E elements
  Bytes at_2e = 0;     // ... 2E elements
  // at_e + (at_2e - at_e) (n - E) / E, never below 0 (0 for n <= 0).
  Bytes at(Count n) const;
};

struct Profile {
  int schema_version = kProfileSchemaVersion;
  std::string created_utc;              // ISO 8601
  HardwareInfo hardware;
  LibraryVersions versions;
  WorkloadIdentity workload;
  ProfileSettings settings;
  std::vector<MemoryPoint> memory;
  std::optional<OptimizerTransient> optimizer_transient;  // "optimizer_transient" (absent: older profiles)
  std::vector<ComputePoint> compute;
  std::vector<OptimizerPoint> optimizer;
  std::vector<AllreducePoint> allreduce;
  std::vector<CollectivePoint> collectives;  // reduce-scatter / all-gather (schema 2)
  std::vector<GradNormPoint> grad_norms;
  std::vector<OverlapPoint> overlap;
  ProfileTopology topology;             // "topology" (written for profiles under a launcher)
  Count max_micro_batch_fitting = 0;    // largest micro_batch within the cap the sweep found
  ModelFindings model;                  // "model" (optional)
  // What the machine did during each timed phase (core/host.hpp), and the measurements the
  // profiler could not confirm (a phase still disturbed after its re-measurement, points that
  // disagreed with the physics): empty = every number was confirmed.
  std::vector<PhaseConditions> conditions;
  std::vector<UnconfirmedMeasurement> unconfirmed;
  bool confirmed() const { return unconfirmed.empty(); }
  std::vector<std::string> notes;       // e.g. "one GPU: allreduce probed at world_size 1 only"
};

nlohmann::json to_json(const Profile& p);
// `what` names the source in errors (usually the file path).
Profile profile_from_json(const nlohmann::json& j, const std::string& what);

// Reads and validates a profile file. If expected_workload_hash is given and differs, throws a
// ProfileError telling the user to re-profile.
Profile load_profile(const std::string& path, const std::string& expected_workload_hash = "");
// Atomic. The text is read back first: a profile this tool would refuse to read (e.g. a NaN
// that JSON writes as null) is never written; RuntimeFailure naming the field instead.
void save_profile(const Profile& p, const std::string& path);

}  // namespace gaccum
