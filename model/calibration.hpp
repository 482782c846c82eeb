// What: fitting the GPU compute model's efficiencies (model/gpu_device.hpp GpuEfficiency) to
//       measured training runs, and judging the fit on runs it did not see
//       (docs/DESIGN.md, Calibration).
//   runs files   read_runs() accepts
//     - published rows in llm-foundry's schema (bench/data/published/llm-foundry-mpt.json: an
//       array of {"id", "model": {d_model, n_heads, n_layers, expansion_ratio, vocab_size,
//       seq_len}, "hardware": {gpu, num_gpus}, "plan": {sharding, micro_batch, grad_accum,
//       precision, activation_checkpointing}, "measured": {tokens_per_s_per_gpu}});
//     - rows with tensor or pipeline parallelism (Megatron's table, "parallelism": {tp, pp, dp,
//       global_batch_seqs, vpp}, "model": {layers, hidden, heads, ffn_hidden, vocab, seq_len}):
//       priced with their layout, never fitted (held out: they test the fit); a row without a
//       micro_batch gets the best predicted micro_batch (1..16) and virtual stage count that
//       fits the device (predict_run), as a tuned run would;
//     - the user's own runs: {"schema": "gaccum-tune/runs", "runs": [{"id": "r1",
//       "model": {a gaccum-tune/spec object} or {a HuggingFace config.json} or a path to either
//                (relative to the runs file's folder), "seq_len": 4096 (a config.json's only:
//                required with one, refused with a spec), "device": "h100-sxm-80gb", "gpus": 8,
//       "gpus_per_node": 8 (optional, default min(8, gpus)),
//       "plan": {"micro_batch": 4, "accum_steps": 8, "sharding": "zero3", "precision": "bf16",
//                "checkpointing": "full", "strategy": "every-step", optional "tp", "pp", "cp",
//                "virtual_stages", "schedule", "stage_layers" ("15,...,15" as --stage-layers),
//                "sequence_parallel": a layout's run is priced with
//                it and never fitted, as Megatron's rows; accum_steps is then the microbatch count},
//       "measured": {"tokens_per_s_per_gpu": 3500} or {"step_time_s": 1.25},
//                   optional "peak_memory": "82.4GiB" (what the run reports, e.g.
//                   torch.cuda.max_memory_reserved: compared, never fitted)}]}
//   Each run is priced exactly as `predict --spec --cluster` prices it: a TransformerSpec, a
//   cluster of the run's GPUs (the catalogue device; links from the run's network, else the
//   generation's default: A100 NVLink 230 GB/s busbw and 1600 Gb/s per node of RoCE; H100 NVLink
//   370 GB/s and one 400 Gb/s NIC per GPU (46 GB/s)), a Config; its error is
//   predicted / published tokens/s/GPU - 1.
//   fit           per generation, the parameters that minimise sum rho(log(pred/published)),
//                 rho the soft-L1 loss with a 5% scale (robust to a few odd rows), by Nelder-Mead
//                 in a bounded (logit) parametrisation from 4 starts; parameters a generation's
//                 rows cannot inform (fp8 without fp8 rows) stay at their start values.
//   cross-validation  hold out one key (a model size, or a GPU part) at a time, fit on the rest
//                 of its generation, predict the held-out rows; a generation left with no rows
//                 borrows the other generations' fit (and says so).
// Why: the shipped efficiencies must be a fit to published runs, judged on runs it did not see,
//      and users must be able to fit their own fleet the same way.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/cluster.hpp"
#include "model/gpu_device.hpp"
#include "model/prediction.hpp"
#include "model/spec_model.hpp"

namespace gaccum::model {

struct CalibrationRun {
  std::string id;
  std::string file;
  std::string model;            // model size label: the cross-validation key
  std::string gpu_id;           // catalogue id ("" when unknown)
  GpuGeneration generation = GpuGeneration::hopper;
  TransformerSpec spec;
  Cluster cluster;
  Config config;
  double published = 0;         // tokens/s per GPU
  Bytes published_memory = 0;   // peak memory per GPU the run reports (0: not reported)
  std::string group;            // runs equal in everything but micro_batch and accum_steps share it
  std::string not_priced;       // "" when priced, else why not (counted, never dropped)
  bool held_out = false;        // priced, never fitted (tensor/pipeline rows: a test of the fit)
  bool choose_layout = false;   // micro_batch (and v) not published: predict_run picks the best that fits
  bool interleaved = false;     // the run used the interleaved schedule (v searched from 2)
};

// Reads a runs file (any of the schemas above); InputError naming the field on any problem.
std::vector<CalibrationRun> read_runs(const std::string& path);

// Predicted tokens/s per GPU of a run with `efficiency` (the run's generation), as `predict`
// would print it; InputError when the run's plan is refused.
Prediction predict_run(const CalibrationRun& run, const GpuEfficiency& efficiency);
double predicted_tokens_per_gpu(const Prediction& p, const CalibrationRun& run);

struct FitOptions {
  int starts = 4;
  int max_evaluations = 2500;   // per start
  double loss_scale = 0.05;     // soft-L1 scale of log errors
};

// Fits the runs of one generation (all priced runs given must be of `g`); `from` is the
// provenance text stored with the result. InputError when no run is given.
GpuCalibration fit_generation(const std::vector<const CalibrationRun*>& runs, GpuGeneration g, const std::string& from,
                              const FitOptions& options = {});

struct RunResult {
  const CalibrationRun* run = nullptr;
  double predicted = 0;         // with the fit that saw every run
  double cross_validated = 0;   // with the fit that did not see the run's held-out key (0: not done)
  double gemm_efficiency = 0;
  double mfu = 0;
  Bytes peak_memory = 0;        // predicted peak (allocated + the caching allocator's reserve)
  Config config;                // the configuration priced (a chosen micro_batch / v included)
  double bubble_fraction = 0;   // pipeline plans
  std::string note;             // e.g. the parameters a held-out generation borrowed
};

enum class HoldOut { none, model, gpu };
struct CalibrationReport {
  std::vector<GpuCalibration> calibrations;  // one per generation with priced runs
  std::vector<RunResult> results;            // priced runs, in file order
  HoldOut hold_out = HoldOut::none;
};

// Fits every generation present; with hold_out != none also predicts each run from a fit that
// did not see its key. `progress` (may be empty) is told each fit's label.
CalibrationReport calibrate(const std::vector<CalibrationRun>& runs, HoldOut hold_out, const FitOptions& options,
                            const std::function<void(const std::string&)>& progress = {});
// Why a fitted calibration should not be trusted as is: fewer runs than 2 x the parameters (the
// fit is under-determined), and parameters fitted onto a bound of their range (the data pushed
// them out of it: a term the runs cannot see, or a missing effect). Empty when neither.
std::vector<std::string> fit_warnings(const GpuCalibration& c);
// Predicts every priced run with given calibrations (no fit): `calibrate --evaluate`.
CalibrationReport evaluate(const std::vector<CalibrationRun>& runs, const std::vector<GpuCalibration>& calibrations);

}  // namespace gaccum::model
