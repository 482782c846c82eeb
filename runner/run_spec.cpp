// What/why: see run_spec.hpp.
#include "runner/run_spec.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "model/pipeline.hpp"
#include "model/plan_cost.hpp"

namespace gaccum::runner {

using nlohmann::json;

std::string_view to_string(PartialWindow w) { return w == PartialWindow::drop ? "drop" : "run"; }

PartialWindow parse_partial_window(std::string_view text, std::string_view flag) {
  if (text == "run") return PartialWindow::run;
  if (text == "drop") return PartialWindow::drop;
  throw InputError(fmt::format("{}: unknown policy '{}': expected run or drop", flag, text));
}

void to_json(json& j, PartialWindow w) { j = std::string(to_string(w)); }

Count RunSpec::effective_dataset_size() const {
  return dataset_size > 0 ? dataset_size : (warmup + steps) * global_batch();
}

Count RunSpec::full_windows() const { return effective_dataset_size() / global_batch(); }

Count RunSpec::partial_samples() const { return effective_dataset_size() % global_batch(); }

std::pair<Count, Count> RunSpec::micro_range(Count window, Count rank, Count micro) const {
  const Count first = workloads::sample_offset(window, rank, micro, micro_batch, accum_steps, data_parallel());
  const Count end = std::min(first + micro_batch, effective_dataset_size());
  return {first, std::max<Count>(0, end - first)};
}

Count RunSpec::window_samples(Count window) const {
  const Count first = window * global_batch();
  return std::max<Count>(0, std::min(first + global_batch(), effective_dataset_size()) - first);
}

RunSpec RunSpec::data_parallel_view() const {
  RunSpec s = *this;
  s.world_size = data_parallel();
  s.pp = 1;
  s.virtual_stages = 1;
  s.tp = 1;
  s.sequence_parallel = false;
  return s;
}

void RunSpec::validate() const {
  if (micro_batch < 1) throw InputError("--micro-batch: must be at least 1");
  if (accum_steps < 1) throw InputError("--accum-steps: must be at least 1");
  if (world_size < 1) throw InputError("--world-size: must be at least 1");
  if (warmup < 1)
    throw InputError("--warmup: must be at least 1 (step 0 carries the gradient checks and is never timed)");
  if (steps < 1) throw InputError("--steps: must be at least 1");
  if (workload.overrides.contains(workloads::kCheckpointKey))
    throw InputError(fmt::format("--workload {}:{}=1: validate does not run activation checkpointing (the block recompute "
                                 "is a reentrant backward whose gradients reach the sync hooks after the outer "
                                 "backward has moved on: gradient_equivalence fails); checkpointed plans are measured "
                                 "by `gaccum-tune profile --checkpointing full`",
                                 workload.name, workloads::kCheckpointKey));
  if (workloads::is_reduced_precision(workloads::parse_dtype(workload.dtype)))
    throw InputError(fmt::format("--dtype {}: validate runs float32 or float64 only (Gloo has no bf16 sum and the "
                                 "gradient checks have no bf16 tolerances); bf16 plans are measured by `gaccum-tune "
                                 "profile --precision bf16`",
                                 workload.dtype));
  if (threads_per_rank < 1) throw InputError("--threads-per-rank: must be at least 1");
  if (!(timeout > 0)) throw InputError("--timeout: must be positive, e.g. 60s");
  if (!(lr > 0)) throw InputError("--lr: must be positive");
  if (dataset_size > 0 && full_windows() < warmup + 1)
    throw InputError(fmt::format("--dataset-size: {} samples make {} full window(s) of global_batch {} (b*k*p); "
                                 "need at least warmup + 1 = {}: raise --dataset-size or lower --warmup",
                                 dataset_size, full_windows(), global_batch(), warmup + 1));
  if (!traits(optimizer).in_libtorch)
    throw InputError(fmt::format("--optimizer: LibTorch has no {} optimizer: expected sgd, adam or adamw",
                                 to_string(optimizer)));
  if (!(rtol >= 0) || !(atol >= 0)) throw InputError("gradient tolerances must be non-negative");
  if (pp < 1) throw InputError("--pp: must be at least 1");
  if (tp < 1) throw InputError("--tp: must be at least 1");
  if (sequence_parallel && tp < 2) throw InputError("--sequence-parallel: needs --tp 2 or more");
  if (virtual_stages != 1 && pp < 2) throw InputError("--virtual-stages: needs --pp 2 or more");
  if (model_parallel()) {
    if (world_size % (pp * tp) != 0)
      throw InputError(fmt::format("--world-size: {} ranks do not split into {} pipeline stage(s) of {} tensor-parallel "
                                   "rank(s): use a multiple of --pp x --tp (world_size = pp x tp x dp)",
                                   world_size, pp, tp));
    if (auto why = model::schedule_rejection(pp > 1 ? schedule : Schedule::one_f_one_b, pp, virtual_stages, accum_steps))
      throw InputError(fmt::format("--schedule {} with --pp {} --virtual-stages {} --accum-steps {}: {}",
                                   to_string(schedule), pp, virtual_stages, accum_steps, *why));
    if (traits(schedule).splits_weight_grad)
      throw InputError(fmt::format("--schedule {}: validate runs gpipe, 1f1b and interleaved-1f1b (the split weight "
                                   "gradient is priced by predict, not run)",
                                   to_string(schedule)));
    if (sharding.sharding != Sharding::none && sharding.sharding != Sharding::zero1)
      throw InputError(fmt::format("--sharding {}: tensor/pipeline-parallel runs reduce each stage's gradients over its "
                                   "dp replicas with DDP (--sharding none) or shard their optimizer state (zero1); "
                                   "zero2/zero3/hsdp stages are not run yet",
                                   to_string(sharding)));
    if (sharding.sharding == Sharding::zero1 && world_size / (pp * tp) < 2)
      throw InputError(fmt::format("--sharding zero1: each stage needs at least 2 dp replicas to shard over (world_size "
                                   "{} = pp {} x tp {} x dp {}): raise --world-size",
                                   world_size, pp, tp, world_size / (pp * tp)));
    if (strategy != Strategy::fused)
      throw InputError(fmt::format("--strategy {}: a pipeline stage reduces its gradients once, after its last "
                                   "backward (its chunks' backwards are spread over the schedule): use --strategy fused "
                                   "(the default with --pp/--tp)",
                                   to_string(strategy)));
    if (dataset_size > 0 && partial_samples() > 0)
      throw InputError(fmt::format("--dataset-size: pipeline runs train full windows only: use a multiple of the "
                                   "global batch {}",
                                   global_batch()));
    if (warmup < 2)
      throw InputError("--warmup: a pipeline run needs at least 2 untimed steps (step 0 carries the gradient checks, "
                       "step 1 measures each chunk's bytes for the memory prediction)");
  }
  model::Config c;
  c.world_size = data_parallel();
  c.strategy = strategy;
  c.sharding = sharding;
  if (auto why = model::plan_rejection(c)) throw InputError(fmt::format("--sharding: {}", *why));
}

std::pair<double, double> default_tolerances(const std::string& dtype) {
  if (workloads::parse_dtype(dtype) == torch::kFloat64) return {1e-10, 1e-10};
  return {1.3e-6, 1e-5};
}

json to_json(const RunSpec& s) {
  json w = {{"name", s.workload.name},
            {"overrides", s.workload.overrides},
            {"dtype", s.workload.dtype},
            {"device", s.workload.device},
            {"init_seed", s.workload.init_seed},
            {"torchscript", workloads::torchscript_fields_to_json(s.workload)}};
  json j{{"workload", w},
              {"micro_batch", s.micro_batch},
              {"accum_steps", s.accum_steps},
              {"world_size", s.world_size},
              {"strategy", std::string(to_string(s.strategy))},
              {"sharding", to_string(s.sharding)},
              {"steps", s.steps},
              {"warmup", s.warmup},
              {"seed", s.seed},
              {"optimizer", std::string(to_string(s.optimizer))},
              {"lr", s.lr},
              {"dataset_size", s.dataset_size},
              {"partial_window", std::string(to_string(s.partial_window))},
              {"threads_per_rank", s.threads_per_rank},
              {"timeout_s", s.timeout},
              {"backend", std::string(to_string(s.backend))},
              {"rtol", s.rtol},
              {"atol", s.atol}};
  if (s.pp > 1) {
    j["pp"] = s.pp;
    j["virtual_stages"] = s.virtual_stages;
    j["schedule"] = std::string(to_string(s.schedule));
  }
  if (s.tp > 1) {
    j["tp"] = s.tp;
    j["sequence_parallel"] = s.sequence_parallel;
  }
  return j;
}

RunSpec run_spec_from_json(const json& j, const std::string& what) {
  JsonFields f(j, what);
  RunSpec s;
  JsonFields w(f.object("workload"), f.child("workload"));
  s.workload.name = w.str("name");
  s.workload.overrides = w.object("overrides");
  s.workload.dtype = w.str("dtype");
  s.workload.device = w.str("device");
  s.workload.init_seed = static_cast<std::uint64_t>(w.count("init_seed"));
  workloads::torchscript_fields_from_json(w.object("torchscript"), w.child("torchscript"), s.workload);
  s.micro_batch = f.positive("micro_batch");
  s.accum_steps = f.positive("accum_steps");
  s.world_size = f.positive("world_size");
  s.strategy = parse_strategy(f.str("strategy"), "--strategy");
  s.sharding = parse_sharding(f.opt_str("sharding").value_or("none"), "--sharding");  // absent before sharded runs
  s.steps = f.positive("steps");
  s.warmup = f.count("warmup");
  s.seed = static_cast<std::uint64_t>(f.count("seed"));
  s.optimizer = parse_libtorch_optimizer(f.str("optimizer"), "--optimizer");
  s.lr = f.num("lr");
  s.dataset_size = f.count("dataset_size");
  s.partial_window = parse_partial_window(f.str("partial_window"), "--partial-window");
  s.threads_per_rank = static_cast<int>(f.positive("threads_per_rank"));
  s.timeout = f.num("timeout_s");
  s.backend = parse_backend(f.str("backend"), "--backend");
  s.rtol = f.num("rtol");
  s.atol = f.num("atol");
  s.pp = f.opt_positive("pp").value_or(1);  // absent before pipeline runs
  s.virtual_stages = f.opt_positive("virtual_stages").value_or(1);
  if (auto sched = f.opt_str("schedule")) s.schedule = parse_schedule(*sched, "--schedule");
  s.tp = f.opt_positive("tp").value_or(1);
  s.sequence_parallel = f.opt_boolean("sequence_parallel").value_or(false);
  s.validate();
  return s;
}

}  // namespace gaccum::runner
