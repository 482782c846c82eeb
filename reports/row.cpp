// What/why: the column table and Row construction of row.hpp.
#include "reports/row.hpp"

#include <cmath>

#include <fmt/format.h>

namespace gaccum::reports {
namespace {

// Cell fields: kind, i, d, s, b.
Cell integer(std::int64_t v) { return Cell{Cell::Kind::integer, v, 0.0, {}, false}; }
Cell real(double v) { return Cell{Cell::Kind::real, 0, v, {}, false}; }
Cell opt_real(const std::optional<double>& v) { return v ? real(*v) : Cell{}; }
Cell text(const std::string& v) { return Cell{Cell::Kind::text, 0, 0.0, v, false}; }
Cell boolean(bool v) { return Cell{Cell::Kind::boolean, 0, 0.0, {}, v}; }

}  // namespace

std::string format_real(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  return fmt::format("{:.6g}", v);
}

const std::vector<Column>& columns() {
  static const std::vector<Column> cols = {
      {"micro_batch", "b: samples per forward/backward on one rank",
       [](const Row& r) { return integer(r.micro_batch); }},
      {"accum_steps", "k: micro-batches per optimizer step on one rank",
       [](const Row& r) { return integer(r.accum_steps); }},
      {"world_size", "p: data-parallel ranks", [](const Row& r) { return integer(r.world_size); }},
      {"global_batch", "B = b k p, samples per optimizer step", [](const Row& r) { return integer(r.global_batch); }},
      {"strategy", "gradient synchronisation: overlap, fused or every-step",
       [](const Row& r) { return text(r.strategy); }},
      {"sharding", "what is sharded across ranks: none (DDP), zero1, zero2, zero3 or hsdp:G",
       [](const Row& r) { return text(r.sharding); }},
      {"precision", "fp32, or bf16/fp16 mixed precision with fp32 master weights and optimizer state",
       [](const Row& r) { return text(r.precision); }},
      {"checkpointing", "activation checkpointing: none, selective or full",
       [](const Row& r) { return text(r.checkpointing); }},
      {"step_time_s", "predicted seconds per optimizer step", [](const Row& r) { return real(r.step_time_s); }},
      {"step_time_lo_s", "low end of the step-time band (the measured medians' 95% intervals)",
       [](const Row& r) { return real(r.step_time_lo_s); }},
      {"step_time_hi_s", "high end of the step-time band (the measured medians' 95% intervals)", [](const Row& r) { return real(r.step_time_hi_s); }},
      {"compute_s", "k x forward+backward time per step", [](const Row& r) { return real(r.compute_s); }},
      {"comm_exposed_s", "allreduce time not hidden behind backward, per step",
       [](const Row& r) { return real(r.comm_exposed_s); }},
      {"comm_total_s", "all allreduce time issued per step", [](const Row& r) { return real(r.comm_total_s); }},
      {"optimizer_s", "zero_grad + optimizer step", [](const Row& r) { return real(r.optimizer_s); }},
      {"throughput_samples_s", "global_batch / step_time", [](const Row& r) { return real(r.throughput_samples_s); }},
      {"throughput_tokens_s", "real tokens per second (sequence workloads; 0 otherwise)",
       [](const Row& r) { return real(r.throughput_tokens_s); }},
      {"peak_memory_bytes", "predicted peak memory per rank",
       [](const Row& r) { return integer(std::int64_t(r.peak_memory_bytes)); }},
      {"headroom_bytes", "memory limit (cap x (1 - margin)) minus peak; negative when over",
       [](const Row& r) { return integer(r.headroom_bytes); }},
      {"collectives_per_step", "allreduce calls per optimizer step per rank",
       [](const Row& r) { return integer(r.collectives_per_step); }},
      {"feasible", "within every constraint", [](const Row& r) { return boolean(r.feasible); }},
      {"reason", "violated constraints, or why a feasible config is not ranked",
       [](const Row& r) { return text(r.reason); }},
      {"rank", "1 = best by the objective; empty = not ranked",
       [](const Row& r) { return r.rank > 0 ? integer(r.rank) : Cell{}; }},
      {"gpu_s_per_sample", "world_size x step_time / global_batch (device-seconds per sample)",
       [](const Row& r) { return real(r.gpu_s_per_sample); }},
      {"cost_per_sample", "gpu_s_per_sample x price per device-hour / 3600 (with --cost-per-device-hour)",
       [](const Row& r) { return opt_real(r.cost_per_sample); }},
      {"time_to_target_rel_s", "(1 + B_noise/B) x step_time: seconds per S_min steps to a target loss",
       [](const Row& r) { return opt_real(r.time_to_target_rel_s); }},
      {"extrapolated", "micro_batch or world_size beyond the measured range",
       [](const Row& r) { return boolean(r.extrapolated); }},
      {"weights_bytes", "parameters per rank", [](const Row& r) { return integer(std::int64_t(r.weights_bytes)); }},
      {"gradients_bytes", "gradients per rank", [](const Row& r) { return integer(std::int64_t(r.gradients_bytes)); }},
      {"optimizer_state_bytes", "optimizer state per rank",
       [](const Row& r) { return integer(std::int64_t(r.optimizer_state_bytes)); }},
      {"comm_buffers_bytes", "gradient buckets / fusion buffer per rank",
       [](const Row& r) { return integer(std::int64_t(r.comm_buffers_bytes)); }},
      {"activations_bytes", "activation peak above the static part",
       [](const Row& r) { return integer(std::int64_t(r.activations_bytes)); }},
      {"comm_source", "where collective times come from: none, measured, ring-fit, hierarchical or allreduce-derived",
       [](const Row& r) { return text(r.comm_source); }},
      {"gathered_bytes", "zero3/hsdp: all-gathered parameters of the units in use (prefetch included)",
       [](const Row& r) { return integer(std::int64_t(r.gathered_bytes)); }},
      {"gradient_syncs", "micro-steps per optimizer step that reduce gradients",
       [](const Row& r) { return integer(r.gradient_syncs); }},
      {"comm_links", "where each link level of the communication comes from: intra/inter measured or described",
       [](const Row& r) { return text(r.comm_links); }},
      {"tokens_per_s_per_gpu", "throughput_tokens_s / world_size (sequence workloads; 0 otherwise)",
       [](const Row& r) { return real(r.tokens_per_s_per_gpu); }},
      {"model_tflops_per_gpu", "model FLOPs (6 N + 12 L s h per token, no recompute) per second per GPU; GPU compute model only",
       [](const Row& r) { return opt_real(r.model_tflops_per_gpu); }},
      {"mfu", "model FLOPs utilisation: model_tflops_per_gpu over the device's peak; GPU compute model only",
       [](const Row& r) { return opt_real(r.mfu); }},
      {"frameworks", "the frameworks that run this plan: ddp fsdp fsdp2 deepspeed megatron torchtitan horovod",
       [](const Row& r) { return text(r.frameworks); }},
      {"tp", "tensor-parallel ranks per layer (1: none)", [](const Row& r) { return integer(r.tp); }},
      {"pp", "pipeline stages (1: none); accum_steps is then the pipeline's microbatch count",
       [](const Row& r) { return integer(r.pp); }},
      {"cp", "context-parallel ranks (1: none)", [](const Row& r) { return integer(r.cp); }},
      {"virtual_stages", "chunks of layers per pipeline rank (interleaved-1f1b)",
       [](const Row& r) { return integer(r.virtual_stages); }},
      {"schedule", "pipeline schedule: gpipe | 1f1b | interleaved-1f1b | zb-h1 (empty without a pipeline)",
       [](const Row& r) { return text(r.schedule); }},
      {"sequence_parallel", "norms and dropout split over the tp ranks", [](const Row& r) { return boolean(r.sequence_parallel); }},
      {"bubble_fraction", "the pipeline schedule's idle share, averaged over its ranks (0 without a pipeline)",
       [](const Row& r) { return real(r.bubble_fraction); }},
      {"peak_stage", "the pipeline rank whose peak memory is peak_memory_bytes (empty without a pipeline)",
       [](const Row& r) { return r.peak_stage ? integer(*r.peak_stage) : Cell{}; }},
  };
  return cols;
}

Row make_row(const tuner::TuneResult& result, std::size_t i) {
  const auto& s = result.search;
  const auto& c = s.candidates[i];
  const auto& p = c.prediction;
  Row r;
  r.micro_batch = p.config.micro_batch;
  r.accum_steps = p.config.accum_steps;
  r.world_size = p.config.world_size;
  r.global_batch = p.config.global_batch();
  r.strategy = std::string(to_string(p.config.strategy));
  r.sharding = to_string(p.config.sharding);
  r.precision = p.config.precision ? std::string(to_string(*p.config.precision)) : std::string();
  r.checkpointing = p.config.checkpointing ? std::string(to_string(*p.config.checkpointing)) : std::string();
  r.step_time_s = p.time.step_time;
  r.step_time_lo_s = p.step_time_lo;
  r.step_time_hi_s = p.step_time_hi;
  r.compute_s = p.time.compute;
  r.comm_exposed_s = p.time.comm_exposed;
  r.comm_total_s = p.time.comm_total;
  r.optimizer_s = p.time.optimizer;
  r.throughput_samples_s = p.throughput;
  r.throughput_tokens_s = p.tokens_per_s;
  r.peak_memory_bytes = p.memory.peak;
  r.headroom_bytes = std::int64_t(s.limits.limit) - std::int64_t(p.memory.peak);
  r.collectives_per_step = p.collectives_per_step;
  r.feasible = c.feasible();
  r.reason = tuner::reason_text(c, s.limits);
  r.rank = c.rank;
  r.gpu_s_per_sample = tuner::objective_value(tuner::Objective::cost, p, std::nullopt);
  if (result.request.cost_per_device_hour > 0)
    r.cost_per_sample = r.gpu_s_per_sample * result.request.cost_per_device_hour / 3600.0;
  if (s.limits.noise_scale)
    r.time_to_target_rel_s = tuner::objective_value(tuner::Objective::time_to_target, p, s.limits.noise_scale);
  r.extrapolated = p.extrapolated;
  r.weights_bytes = p.memory.weights;
  r.gradients_bytes = p.memory.gradients;
  r.optimizer_state_bytes = p.memory.optimizer_state;
  r.comm_buffers_bytes = p.memory.comm_buffers;
  r.activations_bytes = p.memory.activations;
  r.comm_source = model::to_string(p.comm_source);
  r.gathered_bytes = p.memory.gathered;
  r.gradient_syncs = p.gradient_syncs;
  r.comm_links = model::link_sources_text(p.intra_link, p.inter_link);
  r.tokens_per_s_per_gpu = p.config.world_size > 0 ? p.tokens_per_s / double(p.config.world_size) : 0;
  if (p.compute.gpu_model) {
    r.model_tflops_per_gpu = p.compute.model_flops_per_s / 1e12;
    r.mfu = p.compute.mfu;
  }
  r.frameworks = framework_names(frameworks_running(model::framework_plan(p)));
  const ParallelLayout& l = p.config.layout;
  r.tp = l.tp;
  r.pp = l.pp;
  r.cp = l.cp;
  r.virtual_stages = l.virtual_stages;
  if (l.pp > 1) {
    r.schedule = std::string(to_string(l.schedule));
    r.peak_stage = p.parallel.peak_stage;
  }
  r.sequence_parallel = l.sequence_parallel;
  r.bubble_fraction = p.parallel.bubble_fraction;
  return r;
}

std::vector<Row> make_rows(const tuner::TuneResult& result) {
  std::vector<Row> rows;
  rows.reserve(result.search.candidates.size());
  for (std::size_t i = 0; i < result.search.candidates.size(); ++i) rows.push_back(make_row(result, i));
  return rows;
}

std::vector<Row> ranked_rows(const tuner::TuneResult& result, std::size_t n) {
  std::vector<Row> rows;
  const auto& rk = result.search.ranking;
  for (std::size_t i = 0; i < rk.size() && i < n; ++i) rows.push_back(make_row(result, rk[i]));
  return rows;
}

}  // namespace gaccum::reports
