// What: THE row schema of every report (llama-bench style): one Row per evaluated config, and
//       the ordered column table (name with its unit, description, typed getter) that the CSV,
//       JSON, Markdown, terminal and HTML printers all read.
// Why: one schema printed several ways cannot drift between formats; adding a column is one
//      line here. The column order is stable (CSV consumers index by position too): append new
//      columns at the end only.
// Units are in the names: _s seconds, _bytes bytes, _samples_s samples/s, _tokens_s tokens/s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"
#include "tuner/tuner.hpp"

namespace gaccum::reports {

struct Row {
  Count micro_batch = 0;
  Count accum_steps = 0;
  Count world_size = 0;
  Count global_batch = 0;
  std::string strategy;
  std::string sharding, precision, checkpointing;
  Seconds step_time_s = 0, step_time_lo_s = 0, step_time_hi_s = 0;
  Seconds compute_s = 0, comm_exposed_s = 0, comm_total_s = 0, optimizer_s = 0;
  double throughput_samples_s = 0;
  double throughput_tokens_s = 0;  // 0: not a sequence workload
  Bytes peak_memory_bytes = 0;
  std::int64_t headroom_bytes = 0;  // limit (cap x (1 - margin)) - peak; negative when over
  Count collectives_per_step = 0;
  bool feasible = false;
  std::string reason;                          // violated constraints, or why a feasible row is unranked
  Count rank = 0;                              // 1 = best; 0 = not ranked (printed empty)
  double gpu_s_per_sample = 0;                 // world_size x step_time / global_batch
  std::optional<double> cost_per_sample;       // gpu_s_per_sample x price per device-hour / 3600
  std::optional<double> time_to_target_rel_s;  // (1 + B_noise/B) x step_time: seconds per S_min step
  bool extrapolated = false;
  Bytes weights_bytes = 0, gradients_bytes = 0, optimizer_state_bytes = 0, comm_buffers_bytes = 0,
        activations_bytes = 0;
  std::string comm_source;  // none | measured | ring-fit | hierarchical | allreduce-derived
  Bytes gathered_bytes = 0;  // zero3/hsdp: all-gathered parameters of the units in use
  Count gradient_syncs = 0;  // micro-steps per optimizer step that reduce gradients
  std::string comm_links;    // "intra measured, inter described" (model::link_sources_text)
  double tokens_per_s_per_gpu = 0;          // throughput_tokens_s / world_size
  std::optional<double> model_tflops_per_gpu;  // GPU compute model only (model/prediction.hpp ComputeDetail)
  std::optional<double> mfu;                   // 〃
  std::string frameworks;    // "ddp fsdp megatron": the frameworks that run the plan (core/framework.hpp)
  // The layout (core/plan.hpp ParallelLayout): 1, 1, 1, 1 and no schedule for data-parallel plans.
  Count tp = 1, pp = 1, cp = 1, virtual_stages = 1;
  std::string schedule;        // "" without a pipeline
  bool sequence_parallel = false;
  double bubble_fraction = 0;  // the pipeline's idle share of its schedule
  std::optional<Count> peak_stage;  // the pipeline rank with the highest peak (pp >= 2)
};

// A typed cell value: printers format by kind (CSV text, JSON types).
struct Cell {
  enum class Kind { empty, integer, real, text, boolean };
  Kind kind = Kind::empty;
  std::int64_t i = 0;
  double d = 0;
  std::string s;
  bool b = false;
};

struct Column {
  const char* name;         // with its unit
  const char* description;  // one line, for the JSON "columns" list and the HTML table legend
  Cell (*get)(const Row&);
};

const std::vector<Column>& columns();

Row make_row(const tuner::TuneResult& result, std::size_t candidate_index);
// Every evaluated config, in search (enumeration) order.
std::vector<Row> make_rows(const tuner::TuneResult& result);
// Ranked configs, best first, at most n.
std::vector<Row> ranked_rows(const tuner::TuneResult& result, std::size_t n);

// Deterministic real formatting used by CSV/Markdown ("%.6g"-like, no locale).
std::string format_real(double v);

}  // namespace gaccum::reports
