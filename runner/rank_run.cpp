// What/why: see rank_run.hpp.
#include "runner/rank_run.hpp"

#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "comm/grad_sync.hpp"
#include "comm/sharded_sync.hpp"
#include "comm/launcher.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/json_fields.hpp"
#include "engine/exact_math.hpp"
#include "engine/memory_tracker.hpp"
#include "engine/rank_error.hpp"
#include "engine/rank_job.hpp"
#include "engine/watchdog.hpp"
#include "runner/pipeline_run.hpp"
#include "runner/record_checks.hpp"
#include "runner/run_observer.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::runner {

using nlohmann::json;

std::string host_name() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// The run's identity, which every rank must agree on before step 1.
json identity_of(const RunSpec& spec, const WorkloadIdentity& id, std::uint64_t seed, const std::string& params_hash) {
  json j{{"workload_hash", id.hash},
              {"workload", id.name},
              {"micro_batch", spec.micro_batch},
              {"accum_steps", spec.accum_steps},
              {"world_size", spec.world_size},
              {"strategy", std::string(to_string(spec.strategy))},
              {"sharding", to_string(spec.sharding)},
              {"seed", seed},
              {"dtype", spec.workload.dtype},
              {"steps", spec.steps},
              {"warmup", spec.warmup},
              {"dataset_size", spec.effective_dataset_size()},
              {"partial_window", std::string(to_string(spec.partial_window))},
              {"optimizer", std::string(to_string(spec.optimizer))},
              {"lr", spec.lr},
              {"initial_parameters_hash", params_hash},
              {"libtorch", TORCH_VERSION}};
  if (spec.model_parallel()) {
    j["pp"] = spec.pp;
    j["virtual_stages"] = spec.virtual_stages;
    j["schedule"] = std::string(to_string(spec.schedule));
    j["tp"] = spec.tp;
    j["sequence_parallel"] = spec.sequence_parallel;
  }
  return j;
}

CheckRecord agreement_check(const RunSpec& spec, const WorkloadIdentity& id, std::uint64_t seed,
                            const std::vector<json>& identities) {
  const Agreement a = check_agreement(identities);
  return check_record(RunCheck::rank_agreement, a.ok ? Status::pass : Status::fail,
          a.ok ? fmt::format("{} rank(s) agree on workload {} ({}), micro_batch {}, accum_steps {}, strategy {}, seed {}, "
                             "{}",
                             spec.world_size, id.name, id.hash, spec.micro_batch, spec.accum_steps,
                             to_string(spec.strategy), seed, spec.workload.dtype)
               : a.summary() + "; stopped every rank before step 1",
          json{{"identity", identities.front()}, {"mismatches", a.mismatches}});
}

std::unique_ptr<comm::Communicator> join(const RunSpec& spec, const comm::RankContext& ctx, const std::string& device,
                                         const RankRunOptions& opts) {
  if (ctx.world_size < 2) return nullptr;
  comm::ConnectOptions co;
  co.backend = spec.backend;
  co.device = device;
  co.timeout = spec.timeout;
  co.key_prefix = opts.key_prefix;
  co.wait = collective_wait_for(spec.backend, ctx.local_world_size, spec.threads_per_rank, usable_cores());
  co.after_store = [&](comm::KeyValueStore& st) {
    comm::rendezvous(st, "validate", ctx.rank, ctx.world_size, spec.timeout);
  };
  return comm::connect(ctx, co);
}

RankRecord rank_identity(const comm::RankContext& ctx, const comm::Communicator* comm) {
  RankRecord r;
  r.rank = ctx.rank;
  r.local_rank = ctx.local_rank;
  r.host = host_name();
  r.pid = static_cast<long>(::getpid());
  r.threads = torch::get_num_threads();
  r.interop_threads = torch::get_num_interop_threads();
  r.cores = static_cast<int>(std::thread::hardware_concurrency());
  r.collective_wait = comm ? comm->wait_mode() : CollectiveWait::block;
  return r;
}

int share_verdict(int rank, comm::Communicator* comm, const RankRunOptions& opts, const RunRecord* record, bool ok) {
  int code = ok ? 0 : 1;
  if (rank == 0 && opts.deliver && record) code = opts.deliver(*record);
  if (!comm) return code;
  if (rank == 0)
    comm->store().set("validate/verdict", std::to_string(code));
  else
    code = std::atoi(comm->store().get("validate/verdict").c_str());
  return code;
}

AgreedStart agree_on_identity(const RunSpec& spec, const WorkloadIdentity& id, const std::string& params_hash,
                            comm::Communicator* comm) {
  const json identity = identity_of(spec, id, spec.seed, params_hash);
  std::vector<json> identities{identity};
  if (comm) {
    identities.clear();
    for (const auto& s : comm->allgather_strings(identity.dump())) identities.push_back(json::parse(s));
  }
  AgreedStart a;
  a.checks.push_back(agreement_check(spec, id, spec.seed, identities));
  a.facts.spec = spec;
  a.facts.workload = WorkloadFacts{id.hash, id.kind, id.param_count, id.param_bytes};
  if (a.checks.front().status == Status::fail) {
    RunRecord stopped;
    stopped.spec = spec;
    stopped.facts = a.facts.workload;
    stopped.checks = a.checks;
    add_not_run_checks(stopped.checks, "not run: the ranks disagree (rank_agreement), so no training ran",
                       spec.model_parallel());
    stopped.stopped = "rank agreement failed";
    a.stopped = std::move(stopped);
  }
  return a;
}

RankStart start_rank(const RunSpec& spec, const comm::RankContext& ctx) {
  spec.validate();
  if (ctx.world_size != spec.world_size)
    throw InputError(fmt::format("--world-size: {} but the launcher started {} ranks", spec.world_size,
                                 ctx.world_size));
  RankStart st;
  st.faults = Faults::from_env(ctx.rank);
  if (st.faults.never_joins())
    while (true) std::this_thread::sleep_for(std::chrono::hours(1));
  st.watchdog = std::make_unique<engine::Watchdog>(ctx.rank, spec.timeout + 2.0);
  torch::set_num_threads(spec.threads_per_rank);
  engine::use_exact_fp32();  // no TF32 (engine/exact_math.hpp)
  try {
    torch::set_num_interop_threads(1);  // as the profiler's ranks (only possible before any parallel work)
  } catch (const c10::Error&) {
  }
  return st;
}

namespace {

// The plan's synchroniser: DDP's allreduces, or the sharded plan's reduce-scatters and all-gathers.
// zero3/hsdp on a staged model gather one unit at a time (comm/sharded_sync.hpp).
std::unique_ptr<comm::WindowSync> make_sync(const RunSpec& spec, comm::Communicator* comm,
                                            const std::vector<torch::Tensor>& params, const Faults& faults,
                                            const WorkloadIdentity& id) {
  if (spec.sharding.sharding == Sharding::none) return std::make_unique<comm::GradSync>(comm, params, spec.strategy);
  return std::make_unique<comm::ShardedSync>(comm, params, spec.sharding, spec.strategy, spec.accum_steps, faults.shard,
                                             id.unit_tensors);
}

// The staged model's unit hooks, handed to a sharded plan that gathers per unit, for a scope.
class PerUnitGathering final : public workloads::StagedModel::UnitHooks {
 public:
  PerUnitGathering(workloads::Workload& w, comm::WindowSync& sync)
      : sharded_(dynamic_cast<comm::ShardedSync*>(&sync)),
        installed_(sharded_ && sharded_->gathers_per_unit() ? w.staged() : nullptr, this) {}
  void before_unit_forward(Count u) override { sharded_->before_unit_forward(u); }
  void after_unit_forward(Count u, const torch::Tensor& out) override { sharded_->after_unit_forward(u, out); }

 private:
  comm::ShardedSync* sharded_;
  workloads::ScopedUnitHooks installed_;
};

// Every rank's final parameters, gathered where the plan shards them (a collective).
std::string final_parameters_hash(comm::WindowSync& sync, const std::vector<torch::Tensor>& params) {
  sync.gather_parameters();
  std::string h = hash_tensors(params);
  sync.release_parameters();
  return h;
}

RankRecord my_record(const comm::RankContext& ctx, const comm::Communicator* comm, const Observations& o,
                     comm::WindowSync& sync,
                     const std::vector<torch::Tensor>& params, RankSteps steps) {
  RankRecord r = rank_identity(ctx, comm);
  r.peak_memory = o.peak_memory;
  r.memory_at_reset = o.memory_at_reset;
  r.comm_buffer_bytes = sync.buffer_bytes();
  r.grads_hash_step0 = o.grads_hash_step0;
  r.params_hash_final = final_parameters_hash(sync, params);
  steps.nonzero_at_start = o.nonzero_at_start;
  steps.g_small_sq = o.g_small_sq;
  steps.g_big_sq = o.g_big_sq;
  r.steps = std::move(steps);
  return r;
}

}  // namespace

int run_validation_rank(const RunSpec& spec_in, const comm::RankContext& ctx, const RankRunOptions& opts) {
  if (spec_in.model_parallel()) return run_pipeline_rank(spec_in, ctx, opts);
  RankStart start = start_rank(spec_in, ctx);
  const int rank = ctx.rank;
  const Faults& faults = start.faults;
  engine::Watchdog& watchdog = *start.watchdog;

  // --- the rank: device, memory tracker, the job's communicator, the workload --------------------
  RunSpec spec = spec_in;
  spec.seed = spec_in.seed + (faults.perturb_seed ? 1 : 0);  // the data stream this rank reads
  workloads::WorkloadConfig wcfg = spec.workload;
  if (spec.backend == Backend::nccl) wcfg.device = fmt::format("cuda:{}", ctx.local_rank);  // one GPU per rank
  const torch::Device device(wcfg.device);
  auto memory = engine::memory_for(device);
  auto comm = join(spec, ctx, wcfg.device, opts);
  watchdog.beat();
  auto workload = workloads::make_workload(wcfg);
  const auto params = workload->parameters();
  const WorkloadIdentity& id = workload->identity();

  auto finish = [&](const RunRecord* record, bool ok) { return share_verdict(rank, comm.get(), opts, record, ok); };

  // --- rank agreement --------------------------------------------------------------------------
  AgreedStart agreed = agree_on_identity(spec, id, hash_tensors(params), comm.get());
  if (agreed.stopped) return finish(&*agreed.stopped, false);
  std::vector<CheckRecord> checks = std::move(agreed.checks);
  RunFacts facts = std::move(agreed.facts);

  // --- training ----------------------------------------------------------------------------------
  auto sync = make_sync(spec, comm.get(), params, faults, id);
  auto optimizer = workloads::make_optimizer(sync->optimizer_parameters(), spec.optimizer, spec.lr);
  sync->zero_grad();  // gradients allocated once, before the optimizer's state
  const LoopContext loop{spec, *workload, params, comm.get(), *sync, *optimizer, rank, spec.seed};
  RunObserver observer(loop, faults, *memory, watchdog);
  RankSteps steps;
  {
    PerUnitGathering per_unit(*workload, *sync);
    steps = run_windows(loop, observer);
  }
  const Observations seen = observer.finish();

  // --- every rank's record to rank 0 ---------------------------------------------------------------
  const RankRecord mine = my_record(ctx, comm.get(), seen, *sync, params, std::move(steps));
  std::vector<RankRecord> ranks{mine};
  if (comm) {
    ranks.clear();
    const auto texts = comm->allgather_strings(to_json(mine).dump());
    for (std::size_t r = 0; r < texts.size(); ++r)
      ranks.push_back(rank_record_from_json(json::parse(texts[r]), fmt::format("rank {} record", r)));
  }
  if (rank != 0) return finish(nullptr, true);

  // --- rank 0: the record --------------------------------------------------------------------------
  facts.token_workload = id.tokens_per_sample > 0;
  facts.dependence = workload->batch_dependence();
  facts.expected_per_micro = sync->expected_per_micro(spec.accum_steps);
  facts.expected_collectives = sync->expected_collectives(spec.accum_steps);
  facts.buckets = sync->units();
  if (traits(spec.sharding.sharding).shards_parameters && !workload->staged())
    facts.whole_model_gathering = workload->staging_rejection();
  facts.launcher = ctx.launcher;
  facts.backend = comm ? std::string(to_string(comm->backend())) : std::string("none");
  facts.device = device.str();
  facts.cpu = device.is_cpu();
  facts.launch = opts.launch;
  add_record_checks(checks, facts, ranks, *seen.step0, seen.partial);
  const RunRecord record = assemble_run(facts, std::move(checks), ranks);
  return finish(&record, record.ok);
}

int validate_rank_role(const json& args) {
  int rank = 0;
  try {
    auto ctx = comm::detect_rank_context();
    rank = ctx.rank;
    JsonFields f(args, "validate-rank args");
    const auto spec = run_spec_from_json(f.object("spec"), "validate-rank args: spec");
    const std::string result = engine::rank_result_path(f.str("job_dir"), 0);
    RankRunOptions o;
    if (const auto* l = f.opt_object("launch")) o.launch = *l;
    o.deliver = [&](const RunRecord& record) {
      write_file_atomic(result, to_json(record).dump(1) + "\n");
      return record.ok ? 0 : 1;
    };
    return run_validation_rank(spec, ctx, o);
  } catch (...) {
    return engine::rank_failure_exit_code(rank, std::current_exception());
  }
}

}  // namespace gaccum::runner
