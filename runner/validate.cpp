// What/why: see validate.hpp.
#include "runner/validate.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <torch/cuda.h>

#include "comm/rank_env.hpp"
#include "core/atomic_file.hpp"
#include "core/devices.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/profile.hpp"
#include "engine/rank_error.hpp"
#include "engine/rank_job.hpp"
#include "model/prediction_json.hpp"
#include "model/profile_model.hpp"
#include "reports/json_printer.hpp"
#include "runner/comparison.hpp"
#include "runner/rank_run.hpp"
#include "runner/report.hpp"
#include "core/host.hpp"
#include "workloads/workload.hpp"

namespace gaccum::runner {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Without a profile, the threads a default `profile` of this host would have measured with (its
// largest rank count, core/host.hpp), or fewer when more ranks share the host: the run is then
// comparable with a profile taken later.
// (CUDA: one process per GPU, cores / ranks, as `profile` on the GPUs.)
int default_threads(int ranks_on_host, bool cuda) {
  const int cores = usable_cores();
  const Count most = cuda ? std::max(1, ranks_on_host)
                          : std::max<Count>(default_cpu_max_ranks(cores), std::max(1, ranks_on_host));
  return default_threads_per_rank(cores, most);
}

void add_prediction(RunRecord& run, const model::CostModel* model, const Profile* profile, double tolerance_pct,
                    bool verdict) {
  if (!model || !run.measured || run.spec.model_parallel()) return;  // pipelines: their schedule's simulation
  model::Config mc;
  mc.micro_batch = run.spec.micro_batch;
  mc.accum_steps = run.spec.accum_steps;
  mc.world_size = run.spec.world_size;
  mc.strategy = run.spec.strategy;
  mc.sharding = run.spec.sharding;
  const auto pred = model->predict(mc);
  run.prediction = model::to_json(pred);
  run.comparison = compare_to_prediction(*run.measured, pred, tolerance_pct);
  run.comparison->verdict = verdict;
  const int threads = run.environment ? run.environment->threads_per_rank : run.spec.threads_per_rank;
  if (profile && profile->hardware.threads_per_rank > 0 && profile->hardware.threads_per_rank != threads)
    run.warnings.push_back(fmt::format("the profile was measured with {} thread(s) per rank, this run used {}",
                                       profile->hardware.threads_per_rank, threads));
  if (profile && run.environment && run.spec.world_size > 1 && !run.environment->ranks.empty()) {
    // The conditions of the profile's collective timings against this run's (core/backend.hpp,
    // profiler/probe.hpp kCommGap): on CPU they decide the price of every collective.
    const auto& st = profile->settings;
    const CollectiveWait ran = run.environment->ranks.front().collective_wait;
    const bool cpu = device_kind_of(run.environment->device) == DeviceKind::cpu;
    if (st.collective_wait != ran || (cpu && !(st.comm_gap > 0)))
      run.warnings.push_back(fmt::format(
          "the profile timed its collectives {} with {} waits, this run waited by {}: the predicted communication was "
          "measured under other conditions (profile again with this gaccum-tune, on a host where the ranks fit the "
          "cores)",
          st.comm_gap > 0 ? fmt::format("after {} of compute", format_seconds(st.comm_gap)) : std::string("back to back"),
          to_string(st.collective_wait), ran == CollectiveWait::poll ? "polling" : "blocking"));
  }
  if (profile && !profile->unconfirmed.empty())
    run.warnings.push_back(fmt::format("the profile lists {} measurement(s) it could not confirm (e.g. {}): the "
                                       "prediction carries that noise",
                                       profile->unconfirmed.size(), profile->unconfirmed.front().what));
  if (verdict) run.ok = run.ok && run.comparison->ok;
}

}  // namespace

namespace {

// The tune result's document (reports/json_printer.hpp): schema and version checked.
JsonFields tune_document(const json& result, const std::string& what) {
  if (!result.is_object()) throw InputError(fmt::format("--from-tune: {}: expected a JSON object", what));
  JsonFields f(result, what);
  const auto schema = f.opt_str("schema");
  if (schema != std::string(reports::kTuneResultSchema))
    throw InputError(fmt::format("--from-tune: {} is not a tune result (\"schema\": \"{}\" expected): pass the "
                                 "result.json that `gaccum-tune tune --out DIR` wrote",
                                 what, reports::kTuneResultSchema));
  const Count version = f.positive("schema_version");
  if (version > reports::kTuneResultSchemaVersion)
    throw InputError(fmt::format("--from-tune: {}: schema_version {} is newer than this gaccum-tune reads ({}): "
                                 "upgrade gaccum-tune",
                                 what, version, reports::kTuneResultSchemaVersion));
  return f;
}

}  // namespace

std::string tune_workload_name(const json& result) {
  if (!result.is_object()) return "";
  JsonFields f(result, "tune result");
  const json* model = f.opt_object("model");
  if (!model) return "";
  JsonFields m(*model, "tune result: model");
  return m.opt_str("workload_name").value_or("");
}

std::string tune_profile_path(const json& result, const std::string& result_path) {
  if (!result.is_object()) return "";
  JsonFields f(result, "tune result");
  const json* src = f.opt_object("source");
  if (!src) return "";
  JsonFields s(*src, "tune result: source");
  if (s.opt_str("kind").value_or("") != "profile") return "";
  const auto path = s.opt_str("path");
  if (!path) return "";
  const fs::path p = *path;
  if (p.is_absolute() || fs::exists(p)) return p.string();
  // Relative to where `tune` ran: try next to the result's output directory.
  const fs::path beside = fs::path(result_path).parent_path().parent_path() / p;
  return fs::exists(beside) ? beside.string() : p.string();
}

std::vector<TunePick> read_tune_picks(const json& result, Count top, const std::string& what) {
  JsonFields doc = tune_document(result, what);
  const json& list = doc.array("picks");
  if (list.empty())
    throw InputError(fmt::format("--from-tune: {} has no picks (no configuration fit the tune's limits)", what));
  std::vector<TunePick> picks;
  for (std::size_t i = 0; i < list.size() && static_cast<Count>(picks.size()) < top; ++i) {
    const std::string where = fmt::format("{}: picks[{}]", what, i);
    if (!list[i].is_object()) throw InputError(fmt::format("--from-tune: {}: expected an object", where));
    JsonFields item(list[i], "--from-tune: " + where);
    JsonFields f(item.object("config"), "--from-tune: " + where + ".config");
    TunePick p;
    p.micro_batch = f.positive("micro_batch");
    p.accum_steps = f.positive("accum_steps");
    p.world_size = f.positive("world_size");
    p.strategy = parse_strategy(f.str("strategy"), "--from-tune: " + where + ".strategy");
    // Schema 2 carries the plan; the runner runs DDP and zero1-3 in the workload's fp32 without
    // checkpointing.
    const std::string sharding = f.opt_str("sharding").value_or("none");
    const std::string precision = f.opt_str("precision").value_or("fp32");
    const std::string checkpointing = f.opt_str("checkpointing").value_or("none");
    p.sharding = parse_sharding(sharding, fmt::format("--from-tune: {}.sharding", where));
    if (precision != "fp32" || checkpointing != "none")
      throw InputError(fmt::format("--from-tune: {} is a {} {} plan with {} checkpointing; validate runs every sharding "
                                   "in fp32 without checkpointing: re-tune with --precision fp32 --checkpointing none, "
                                   "or pass the setting with --micro-batch/--accum-steps/--world-size/--sharding",
                                   where, sharding, precision, checkpointing));
    picks.push_back(p);
  }
  return picks;
}

namespace {

// The configurations to run: one from the flags, or the top picks of a tune result (whose
// profile then gives the predictions unless --profile is given).
std::vector<RunSpec> configurations(ValidateOptions& o) {
  if (o.from_tune.empty()) return {o.spec};
  const auto result = parse_json_text(read_text_file(o.from_tune, "--from-tune"), o.from_tune);
  if (o.profile_path.empty()) o.profile_path = tune_profile_path(result, o.from_tune);
  std::vector<RunSpec> specs;
  for (const auto& pick : read_tune_picks(result, o.top, o.from_tune)) {
    RunSpec s = o.spec;
    s.micro_batch = pick.micro_batch;
    s.accum_steps = pick.accum_steps;
    s.world_size = pick.world_size;
    s.strategy = pick.strategy;
    s.sharding = pick.sharding;
    specs.push_back(s);
  }
  return specs;
}

// Device, backend, tolerances, world size, steps and threads of each run (bad flags fail here,
// before any launch).
void complete_specs(std::vector<RunSpec>& specs, const ValidateOptions& o, const comm::RankContext& ctx,
                    const Profile* profile) {
  const bool joined = ctx.distributed();
  const std::string device = workloads::resolve_device(o.spec.workload.device);
  for (auto& s : specs) {
    s.workload.device = device;
    s.backend = backend_for(device_kind_of(device));
    if (!o.tolerances_given) std::tie(s.rtol, s.atol) = default_tolerances(s.workload.dtype);
    if (joined) {
      if (!o.world_size_given && o.from_tune.empty()) s.world_size = ctx.world_size;
      if (s.world_size != ctx.world_size && o.from_tune.empty())
        throw InputError(fmt::format("--world-size: {} but this job has {} ranks ({} launcher): drop --world-size or "
                                     "match it",
                                     s.world_size, ctx.world_size, ctx.launcher));
    }
    if (s.dataset_size > 0) s.steps = std::max<Count>(1, s.full_windows() - s.warmup);  // one epoch
    if (s.threads_per_rank == 0) {
      if (profile && profile->hardware.threads_per_rank > 0)
        s.threads_per_rank = profile->hardware.threads_per_rank;
      else
        s.threads_per_rank = default_threads(joined ? ctx.local_world_size : static_cast<int>(s.world_size),
                                             device_kind_of(device) == DeviceKind::cuda);
    }
    s.validate();
  }
  // CUDA: one process per GPU (core/devices.hpp), checked before any launch.
  if (device_kind_of(device) == DeviceKind::cuda) {
    const int gpus = static_cast<int>(torch::cuda::device_count());
    if (joined) {
      require_gpu_per_rank(ctx.local_world_size, gpus, "environment (LOCAL_WORLD_SIZE)",
                           "start one process per GPU (torchrun --nproc-per-node, srun --ntasks-per-node)");
    } else {
      for (const auto& s : specs)
        require_gpu_per_rank(s.world_size, gpus, "--world-size",
                             fmt::format("use --world-size {} or fewer, or --device cpu for a Gloo run", gpus));
    }
  }
  // A local launch starts world_size processes on this host: refuse a count no host runs before
  // forking hundreds of ranks (correctness runs may oversubscribe the cores, up to 8 per core).
  if (joined) return;
  const Count cores = static_cast<Count>(std::max(1u, std::thread::hardware_concurrency()));
  const Count most = std::max<Count>(64, 8 * cores);
  for (const auto& s : specs)
    if (s.world_size > most)
      throw InputError(fmt::format("--world-size: {} ranks on one host with {} cores; a local launch runs at most {} "
                                   "(8 per core): use fewer ranks, or launch across nodes with torchrun/Slurm/mpirun "
                                   "(runner/MULTINODE.md)",
                                   s.world_size, cores, most));
}

// What every run is compared with, and where the document goes.
struct Validation {
  const ValidateOptions& o;
  std::optional<Profile> profile;
  std::unique_ptr<model::CostModel> model;
  ValidateOutcome out;
  int launch_code = 0;  // the first failed launch's exit code (engine::launch_exit_code)

  void predict(RunRecord& run) const {
    add_prediction(run, model.get(), profile ? &*profile : nullptr, o.tolerance_pct, o.prediction_is_verdict);
  }
  void write_doc() {
    out.exit_code = runs_exit_code(out.runs);
    if (launch_code != 0) out.exit_code = launch_code;
    out.document = validation_document(out.runs, out.exit_code);
    write_file_atomic(o.output, out.document.dump(2) + "\n");
    out.wrote_output = true;
  }
};

// Under torchrun/Slurm/mpirun: this process is one rank of each run of the job's size.
void run_joined(Validation& v, const std::vector<RunSpec>& specs, const comm::RankContext& ctx) {
  Count index = 0;
  for (const auto& s : specs) {
    if (s.world_size != ctx.world_size) continue;  // a tune pick for another job size
    RankRunOptions ro;
    ro.key_prefix = fmt::format("gaccum-validate-{}", index++);
    ro.deliver = [&](const RunRecord& record) {
      RunRecord run = record;
      v.predict(run);
      v.out.runs.push_back(std::move(run));
      v.write_doc();
      return runs_exit_code({v.out.runs.back()});
    };
    int code = 0;
    try {
      code = run_validation_rank(s, ctx, ro);
    } catch (const std::bad_alloc&) {
      throw RuntimeFailure(fmt::format("rank {}: out of memory {}: lower --micro-batch", ctx.rank,
                                       engine::RankPosition::describe()));
    }
    if (ctx.rank != 0) v.out.exit_code = std::max(v.out.exit_code, code);
  }
  if (index == 0)
    throw InputError(fmt::format("--from-tune: none of the top {} picks has world_size {} (this job's size)", v.o.top,
                                 ctx.world_size));
}

// The run's reference-kernel reading against the profile's (core/canary.hpp): a NOTE with the
// ratio, and cond judged with it (a machine more than kDisturbedCanary slower or faster than when
// it was profiled is a disturbed run: the step-time comparison measures that difference too).
void note_machine_speed(RunRecord& run, PhaseConditions& cond, const Profile& profile) {
  const Seconds reading = canary_reading(cond);
  if (reading <= 0) return;
  const Seconds reference = canary_reference(profile.conditions, cond.canary_kernel);
  if (reference <= 0) {
    run.model_notes.push_back("machine speed: not compared (the profile has no reference-kernel reading of this "
                              "build: profile again with this gaccum-tune)");
    return;
  }
  compare_canary(cond, reference);
  const bool quiet_reference = std::any_of(profile.conditions.begin(), profile.conditions.end(), [&](const auto& c) {
    return !c.disturbed && canary_reading(c) > 0 && c.canary_kernel == cond.canary_kernel;
  });
  run.model_notes.push_back(fmt::format("machine speed: the reference kernel took {} in this run, {:.2f}x its time "
                                        "while the profile was measured ({}{}; within {:.0f}% is this machine's own "
                                        "variation)",
                                        format_seconds(reading), cond.canary_vs_reference, format_seconds(reference),
                                        quiet_reference ? "" : ", read while the profile's phases were disturbed",
                                        100 * kDisturbedCanary));
}

// Our own launch: one engine::RankJob of world_size local ranks per run.
void run_local(Validation& v, const std::vector<RunSpec>& specs) {
  for (const auto& s : specs) {
    engine::RankJob job;
    job.role = kValidateRankRole;
    job.args = json{{"spec", to_json(s)}, {"launch", json{{"launcher", "local"}}}};
    job.world_size = static_cast<int>(s.world_size);
    job.store_timeout = s.timeout;
    job.scratch_prefix = "gaccum-validate";
    std::optional<RunRecord> record;
    const MachineActivity watch;  // what the rest of the machine did meanwhile
    const auto res = engine::run_rank_job(job, [&](const std::string& dir, const engine::RankJobOutcome& oc) {
      const std::string text = read_file_if_present(engine::rank_result_path(dir, 0));
      if (!text.empty() && !oc.launch.interrupted)
        record = run_record_from_json(parse_json_text(text, "rank 0's record"), "rank 0's record");
    });
    RunRecord run;
    if (record) {
      run = std::move(*record);
      PhaseConditions cond = watch.stop("validate");
      if (v.profile) note_machine_speed(run, cond, *v.profile);
      if (run.environment) {
        run.environment->launch["launcher_wall_s"] = res.launch.wall;
        run.environment->launch["machine"] = to_json(cond);
      }
      if (cond.disturbed)
        run.warnings.push_back(fmt::format("this run was measured while {}: its times include that work (run it "
                                           "again on a quiet machine)",
                                           describe_disturbance(cond)));
      v.predict(run);
    } else {
      run.spec = s;
      run.failure = res.failure;
      add_not_run_checks(run.checks, fmt::format("not run: the run did not finish ({})", res.failure), s.model_parallel());
      run.launcher_wall_s = res.launch.wall;
      v.out.failures.push_back(res.failure);
      if (v.launch_code == 0) v.launch_code = res.exit_code;
    }
    v.out.runs.push_back(std::move(run));
    if (res.launch.interrupted) break;
  }
  v.write_doc();
}

}  // namespace

ValidateOutcome validate(ValidateOptions o) {
  const auto ctx = comm::detect_rank_context();
  if (!(o.tolerance_pct >= 0)) throw InputError("--tolerance: must be a non-negative percentage, e.g. 10%");
  if (o.top < 1) throw InputError("--top: must be at least 1");
  std::vector<RunSpec> specs = configurations(o);

  Validation v{o, std::nullopt, nullptr, {}, 0};
  auto cfg = o.spec.workload;
  cfg.device = "cpu";
  const auto probe = workloads::make_workload(cfg);  // bad workloads fail here
  const std::string workload_hash = probe->identity().hash;
  for (const auto& s : specs)
    if (s.model_parallel()) {  // a model the runner can cut into pp x v equal chunks and split over tp
      if (!probe->staged())
        throw InputError(fmt::format("{}: workload {} is not a sequence of blocks the runner can cut into stages or "
                                     "split over ranks: {}",
                                     s.pp > 1 ? "--pp" : "--tp", probe->identity().name, probe->staging_rejection()));
      // A stage runs part of the forward, so it cannot draw the masks the whole forward draws from
      // one generator: the reference and the stages would train different networks.
      if (const auto dropout = probe->batch_dependence().dropout; s.pp > 1 && !dropout.empty())
        throw InputError(fmt::format("--pp: the model's dropout ({}{}) draws its masks from one generator across the "
                                     "whole forward(), which no pipeline stage runs, so the gradient check could not "
                                     "hold: validate the pipeline on the model without dropout (p = 0, or eval-mode "
                                     "dropout removed)",
                                     dropout.front(), dropout.size() > 1 ? ", ..." : ""));
      (void)probe->staged()->chunk_units(0, s.pp * s.virtual_stages);
      if (auto why = probe->staged()->tensor_parallel_rejection(s.tp, s.sequence_parallel); !why.empty())
        throw InputError(why);
    }
  if (!o.profile_path.empty()) {
    v.profile = load_profile(o.profile_path, workload_hash);
    v.model = model::make_profile_model(*v.profile);  // the one place the runner builds a cost model
  }
  complete_specs(specs, o, ctx, v.profile ? &*v.profile : nullptr);

  // Fail before a long run, not after it, when the output cannot be written.
  const fs::path out_dir = fs::path(o.output).parent_path();
  if (!out_dir.empty() && !fs::is_directory(out_dir))
    throw InputError(fmt::format("-o: directory '{}' does not exist (create it or choose another path for {})",
                                 out_dir.string(), o.output));
  if (ctx.distributed())
    run_joined(v, specs, ctx);
  else
    run_local(v, specs);
  return std::move(v.out);
}

}  // namespace gaccum::runner
