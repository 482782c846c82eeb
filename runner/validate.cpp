// What/why: see validate.hpp.
#include "runner/validate.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "comm/launcher.hpp"
#include "comm/rank_env.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/profile.hpp"
#include "core/scratch_dir.hpp"
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

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One line: what ended the launch, naming the rank, plus what that rank said about it.
std::string describe_failure(const comm::LaunchResult& res, const fs::path& dir, int world) {
  std::string msg = res.failure;
  std::string said;
  if (res.failed_rank >= 0) said = trim(read_text(dir / fmt::format("rank{}.err", res.failed_rank)));
  if (said.empty())
    for (int r = 0; r < world && said.empty(); ++r) {
      auto t = trim(read_text(dir / fmt::format("rank{}.err", r)));
      if (!t.empty() && t.find("c10d") == std::string::npos) said = t;
    }
  if (!said.empty()) msg += " -- " + said.substr(0, said.find('\n'));
  return msg;
}

// The exit code of a launch that failed, by the class of the rank named as its cause (README.md,
// "Exit codes"): 88 hung (the deadline passed, a rank's watchdog fired, or a rank still ran when
// its peers' collective gave up on it), 87 out of memory, 2 bad input found inside the rank, 86
// any other death (a signal, or an exit status of its own). 1 when the launcher was interrupted.
int launch_exit_code(const comm::LaunchResult& res) {
  if (res.ok) return 0;
  if (res.interrupted) return 1;
  if (res.timed_out) return kExitHung;
  if (res.failed_rank < 0 || res.failed_rank >= static_cast<int>(res.ranks.size())) return comm::kExitPeerLost;
  const comm::RankStatus& st = res.ranks[static_cast<std::size_t>(res.failed_rank)];
  if (!st.finished || st.killed_by_us) return kExitHung;
  if (st.signal != 0) return comm::kExitPeerLost;
  if (st.exit_code == 2 || st.exit_code == kExitOutOfMemory || st.exit_code == kExitHung) return st.exit_code;
  return comm::kExitPeerLost;
}

int default_threads(int ranks_on_host) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks_on_host));
}

json add_prediction(json run, const model::CostModel* model, const Profile* profile, double tolerance_pct) {
  if (!model || !run.contains("measured")) return run;
  const auto& cfg = run.at("config");
  model::Config mc;
  mc.micro_batch = cfg.at("micro_batch");
  mc.accum_steps = cfg.at("accum_steps");
  mc.world_size = cfg.at("world_size");
  mc.strategy = parse_strategy(cfg.at("strategy").get<std::string>());
  const auto pred = model->predict(mc);
  run["prediction"] = model::to_json(pred);
  run["comparison"] = compare_to_prediction(run.at("measured"), pred, tolerance_pct);
  if (profile && profile->hardware.threads_per_rank > 0 &&
      profile->hardware.threads_per_rank != run.at("environment").at("threads_per_rank").get<int>())
    run["warnings"].push_back(fmt::format("the profile was measured with {} thread(s) per rank, this run used {}",
                                          profile->hardware.threads_per_rank,
                                          run.at("environment").at("threads_per_rank").get<int>()));
  run["ok"] = run.at("ok").get<bool>() && run.at("comparison").at("ok").get<bool>();
  return run;
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
      ro.deliver = [&](const json& record) {
        out.runs.push_back(add_prediction(record, model.get(), profile ? &*profile : nullptr, o.tolerance_pct));
        write_doc();
        return runs_exit_code({out.runs.back()});
      };
      int code = 0;
      try {
        code = run_validation_rank(s, ctx, ro);
      } catch (const std::bad_alloc&) {
        throw RuntimeFailure(fmt::format("rank {}: out of memory {}: lower --micro-batch", ctx.rank, rank_position()));
      }
      if (ctx.rank != 0) out.exit_code = std::max(out.exit_code, code);
    }
    if (index == 0)
      throw InputError(fmt::format("--from-tune: none of the top {} picks has world_size {} (this job's size)", o.top,
                                   ctx.world_size));
    return out;
  }

  for (const auto& s : specs) {
    // One launch's args, rank 0's record and the ranks' error lines; removed also when the
    // process is ended by a signal (core/scratch_dir.hpp).
    ScratchDir scratch("gaccum-validate");
    const fs::path tmp = scratch.path();
    const fs::path args_file = tmp / "args.json", result_file = tmp / "result.json";
    json args{{"spec", to_json(s)}, {"result", result_file.string()}, {"launch", json{{"launcher", "local"}}}};
    write_file_atomic(args_file, args.dump());
    comm::LaunchOptions lo;
    lo.argv = {comm::self_executable(), "_worker", "--role", "validate-rank", "--args", args_file.string()};
    lo.world_size = static_cast<int>(s.world_size);
    lo.store_timeout = s.timeout;
    lo.grace = 3;
    for (int r = 0; r < lo.world_size; ++r)
      lo.rank_env[r]["GACCUM_ERROR_FILE"] = (tmp / fmt::format("rank{}.err", r)).string();
    const auto res = comm::launch_local(lo);
    json run;
    const std::string record_text = read_text(result_file);
    if (!record_text.empty() && !res.interrupted) {
      run = json::parse(record_text);
      run["environment"]["launcher_wall_s"] = res.wall;
      run = add_prediction(std::move(run), model.get(), profile ? &*profile : nullptr, o.tolerance_pct);
    } else {
      const std::string msg = describe_failure(res, tmp, lo.world_size);
      run = json{{"config", to_json(s)}, {"ok", false}, {"failure", msg}, {"launcher_wall_s", res.wall}};
      out.failures.push_back(msg);
      if (launch_code == 0) launch_code = launch_exit_code(res);
    }
    out.runs.push_back(std::move(run));
    if (res.interrupted) break;
  }
  write_doc();
  return out;
}

}  // namespace gaccum::runner
