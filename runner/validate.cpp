// What/why: see validate.hpp.
#include "runner/validate.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "comm/rank_env.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/profile.hpp"
#include "engine/rank_error.hpp"
#include "engine/rank_job.hpp"
#include "model/prediction_json.hpp"
#include "model/profile_model.hpp"
#include "runner/comparison.hpp"
#include "runner/rank_run.hpp"
#include "runner/report.hpp"
#include "workloads/workload.hpp"

namespace gaccum::runner {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int default_threads(int ranks_on_host) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks_on_host));
}

void add_prediction(RunRecord& run, const model::CostModel* model, const Profile* profile, double tolerance_pct) {
  if (!model || !run.measured) return;
  model::Config mc;
  mc.micro_batch = run.spec.micro_batch;
  mc.accum_steps = run.spec.accum_steps;
  mc.world_size = run.spec.world_size;
  mc.strategy = run.spec.strategy;
  const auto pred = model->predict(mc);
  run.prediction = model::to_json(pred);
  run.comparison = compare_to_prediction(*run.measured, pred, tolerance_pct);
  const int threads = run.environment ? run.environment->threads_per_rank : run.spec.threads_per_rank;
  if (profile && profile->hardware.threads_per_rank > 0 && profile->hardware.threads_per_rank != threads)
    run.warnings.push_back(fmt::format("the profile was measured with {} thread(s) per rank, this run used {}",
                                       profile->hardware.threads_per_rank, threads));
  run.ok = run.ok && run.comparison->ok;
}

}  // namespace

std::string tune_workload_name(const json& result) {
  if (!result.is_object()) return "";
  if (result.contains("workload")) {
    const auto& w = result.at("workload");
    if (w.is_string()) return w.get<std::string>();
    if (w.is_object() && w.contains("name") && w.at("name").is_string()) return w.at("name").get<std::string>();
  }
  if (result.contains("model") && result.at("model").is_object() && result.at("model").contains("workload_name") &&
      result.at("model").at("workload_name").is_string())
    return result.at("model").at("workload_name").get<std::string>();
  return "";
}

std::string tune_profile_path(const json& result, const std::string& result_path) {
  if (!result.is_object() || !result.contains("source") || !result.at("source").is_object()) return "";
  const auto& src = result.at("source");
  if (src.value("kind", std::string()) != "profile" || !src.contains("path") || !src.at("path").is_string()) return "";
  const fs::path p = src.at("path").get<std::string>();
  if (p.is_absolute() || fs::exists(p)) return p.string();
  // Relative to where `tune` ran: try next to the result's output directory.
  const fs::path beside = fs::path(result_path).parent_path().parent_path() / p;
  return fs::exists(beside) ? beside.string() : p.string();
}

std::vector<TunePick> read_tune_picks(const json& result, Count top, const std::string& what) {
  if (!result.is_object()) throw InputError(fmt::format("--from-tune: {}: expected a JSON object", what));
  const json* list = nullptr;
  for (const char* key : {"picks", "recommendations", "top", "ranking", "candidates"})
    if (result.contains(key) && result.at(key).is_array()) {
      list = &result.at(key);
      break;
    }
  if (!list || list->empty())
    throw InputError(fmt::format("--from-tune: {} has no \"picks\" array of configurations (is it a tune result.json?)",
                                 what));
  std::vector<TunePick> picks;
  for (std::size_t i = 0; i < list->size() && static_cast<Count>(picks.size()) < top; ++i) {
    const json& item = list->at(i);
    const std::string where = fmt::format("{}: picks[{}]", what, i);
    if (!item.is_object()) throw InputError(fmt::format("--from-tune: {}: expected an object", where));
    const json& c = item.contains("config") && item.at("config").is_object() ? item.at("config") : item;
    JsonFields f(c, "--from-tune: " + where);
    TunePick p;
    p.micro_batch = f.positive("micro_batch");
    p.accum_steps = f.positive("accum_steps");
    p.world_size = f.positive("world_size");
    p.strategy = parse_strategy(f.str("strategy"), "--from-tune: " + where + ".strategy");
    // Schema 2 carries the plan; the runner runs DDP in the workload's fp32 without checkpointing.
    const std::string sharding = f.opt_str("sharding").value_or("none");
    const std::string precision = f.opt_str("precision").value_or("fp32");
    const std::string checkpointing = f.opt_str("checkpointing").value_or("none");
    if (sharding != "none" || precision != "fp32" || checkpointing != "none")
      throw InputError(fmt::format("--from-tune: {} is a {} {} plan with {} checkpointing; validate runs DDP (sharding none) "
                                   "in fp32 without checkpointing: re-tune with --sharding none, or pass the setting "
                                   "with --micro-batch/--accum-steps/--world-size",
                                   where, sharding, precision, checkpointing));
    picks.push_back(p);
  }
  return picks;
}

ValidateOutcome validate(ValidateOptions o) {
  const auto ctx = comm::detect_rank_context();
  const bool joined = ctx.distributed();
  if (!(o.tolerance_pct >= 0)) throw InputError("--tolerance: must be a non-negative percentage, e.g. 10%");
  if (o.top < 1) throw InputError("--top: must be at least 1");

  // Configurations.
  std::vector<RunSpec> specs;
  if (!o.from_tune.empty()) {
    const auto result = parse_json_text(read_file(o.from_tune, "--from-tune"), o.from_tune);
    if (o.profile_path.empty()) o.profile_path = tune_profile_path(result, o.from_tune);
    for (const auto& pick : read_tune_picks(result, o.top, o.from_tune)) {
      RunSpec s = o.spec;
      s.micro_batch = pick.micro_batch;
      s.accum_steps = pick.accum_steps;
      s.world_size = pick.world_size;
      s.strategy = pick.strategy;
      specs.push_back(s);
    }
  } else {
    specs.push_back(o.spec);
  }

  // Device, backend, tolerances, workload identity (bad flags fail here, before any launch).
  const std::string device = workloads::resolve_device(o.spec.workload.device);
  WorkloadIdentity identity;
  {
    auto cfg = o.spec.workload;
    cfg.device = "cpu";
    identity = workloads::make_workload(cfg)->identity();
  }
  std::optional<Profile> profile;
  std::unique_ptr<model::CostModel> model;
  if (!o.profile_path.empty()) {
    profile = load_profile(o.profile_path, identity.hash);
    model = model::make_profile_model(*profile);  // the one place the runner builds a cost model
  }
  for (auto& s : specs) {
    s.workload.device = device;
    s.backend = device == "cpu" ? "gloo" : "nccl";
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
        s.threads_per_rank = default_threads(joined ? ctx.local_world_size : static_cast<int>(s.world_size));
    }
    s.validate();
  }

  // A local launch starts world_size processes on this host: refuse a count no host runs before
  // forking hundreds of ranks (correctness runs may oversubscribe the cores, up to 8 per core).
  if (!joined) {
    const Count cores = static_cast<Count>(std::max(1u, std::thread::hardware_concurrency()));
    const Count most = std::max<Count>(64, 8 * cores);
    for (const auto& s : specs)
      if (s.world_size > most)
        throw InputError(fmt::format("--world-size: {} ranks on one host with {} cores; a local launch runs at most {} "
                                     "(8 per core): use fewer ranks, or launch across nodes with torchrun/Slurm/mpirun "
                                     "(runner/MULTINODE.md)",
                                     s.world_size, cores, most));
  }

  // Fail before a long run, not after it, when the output cannot be written.
  const fs::path out_dir = fs::path(o.output).parent_path();
  if (!out_dir.empty() && !fs::is_directory(out_dir))
    throw InputError(fmt::format("-o: directory '{}' does not exist (create it or choose another path for {})",
                                 out_dir.string(), o.output));

  ValidateOutcome out;
  int launch_code = 0;  // the first failed launch's code (launch_exit_code)
  auto write_doc = [&]() {
    out.exit_code = runs_exit_code(out.runs);
    if (launch_code != 0) out.exit_code = launch_code;
    out.document = validation_document(out.runs, out.exit_code);
    write_file_atomic(o.output, out.document.dump(2) + "\n");
    out.wrote_output = true;
  };

  if (joined) {
    Count index = 0;
    for (const auto& s : specs) {
      if (s.world_size != ctx.world_size) continue;  // a tune pick for another job size
      RankRunOptions ro;
      ro.key_prefix = fmt::format("gaccum-validate-{}", index++);
      ro.deliver = [&](const RunRecord& record) {
        RunRecord run = record;
        add_prediction(run, model.get(), profile ? &*profile : nullptr, o.tolerance_pct);
        out.runs.push_back(std::move(run));
        write_doc();
        return runs_exit_code({out.runs.back()});
      };
      int code = 0;
      try {
        code = run_validation_rank(s, ctx, ro);
      } catch (const std::bad_alloc&) {
        throw RuntimeFailure(fmt::format("rank {}: out of memory {}: lower --micro-batch", ctx.rank,
                                         engine::RankPosition::describe()));
      }
      if (ctx.rank != 0) out.exit_code = std::max(out.exit_code, code);
    }
    if (index == 0)
      throw InputError(fmt::format("--from-tune: none of the top {} picks has world_size {} (this job's size)", o.top,
                                   ctx.world_size));
    return out;
  }

  for (const auto& s : specs) {
    engine::RankJob job;
    job.role = kValidateRankRole;
    job.args = json{{"spec", to_json(s)}, {"launch", json{{"launcher", "local"}}}};
    job.world_size = static_cast<int>(s.world_size);
    job.store_timeout = s.timeout;
    job.scratch_prefix = "gaccum-validate";
    std::optional<RunRecord> record;
    const auto res = engine::run_rank_job(job, [&](const std::string& dir, const engine::RankJobOutcome& oc) {
      const std::string text = read_text(engine::rank_result_path(dir, 0));
      if (!text.empty() && !oc.launch.interrupted)
        record = run_record_from_json(parse_json_text(text, "rank 0's record"), "rank 0's record");
    });
    RunRecord run;
    if (record) {
      run = std::move(*record);
      if (run.environment) run.environment->launch["launcher_wall_s"] = res.launch.wall;
      add_prediction(run, model.get(), profile ? &*profile : nullptr, o.tolerance_pct);
    } else {
      run.spec = s;
      run.failure = res.failure;
      run.launcher_wall_s = res.launch.wall;
      out.failures.push_back(res.failure);
      if (launch_code == 0) launch_code = res.exit_code;
    }
    out.runs.push_back(std::move(run));
    if (res.launch.interrupted) break;
  }
  write_doc();
  return out;
}

}  // namespace gaccum::runner
