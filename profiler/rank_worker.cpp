// What/why: see rank_worker.hpp (and probe.hpp for RankPlan).
#include "profiler/rank_worker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <torch/torch.h>

#include <cstdio>

#include <fmt/format.h>

#include "comm/launcher.hpp"
#include "comm/rank_env.hpp"
#include "core/atomic_file.hpp"
#include "core/backend.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/json_fields.hpp"
#include "engine/exact_math.hpp"
#include "engine/memory_tracker.hpp"
#include "engine/rank_error.hpp"
#include "engine/rank_job.hpp"
#include "engine/watchdog.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::profiler {

using nlohmann::json;

engine::AdaptivePolicy RankPlan::timing(Seconds budget) const {
  engine::AdaptivePolicy p;
  p.warmup = warmup;
  p.min_iters = iters;
  p.max_iters = max_iters;
  p.ci_target = ci_target;
  p.budget = budget;
  return p;
}

json RankPlan::to_json() const {
  const auto& w = workload;
  return json{{"workload",
               {{"name", w.name},
                {"overrides", w.overrides},
                {"dtype", w.dtype},
                {"device", w.device},
                {"init_seed", w.init_seed},
                {"torchscript", workloads::torchscript_fields_to_json(w)}}},
              {"threads_per_rank", threads_per_rank},
              {"warmup", warmup},
              {"iters", iters},
              {"ci_target", ci_target},
              {"max_iters", max_iters},
              {"compute_budget_s", compute_budget},
              {"optimizer_budget_s", optimizer_budget},
              {"comm_warmup", comm_warmup},
              {"comm_iters", comm_iters},
              {"optimizer", std::string(to_string(optimizer))},
              {"lr", lr},
              {"seed", seed},
              {"micro_batches", micro_batches},
              {"sizes", sizes},
              {"buckets", buckets},
              {"fused", fused},
              {"raw_nccl", raw_nccl},
              {"timeout_s", timeout},
              {"job_dir", job_dir}};
}

RankPlan RankPlan::from_json(const json& j) {
  JsonFields f(j, "profile-rank args");
  RankPlan p;
  JsonFields w(f.object("workload"), f.child("workload"));
  p.workload.name = w.str("name");
  if (auto* o = w.opt_object("overrides")) p.workload.overrides = *o;
  p.workload.dtype = w.str("dtype");
  p.workload.device = w.str("device");
  p.workload.init_seed = static_cast<std::uint64_t>(w.count("init_seed"));
  workloads::torchscript_fields_from_json(w.object("torchscript"), w.child("torchscript"), p.workload);
  p.threads_per_rank = static_cast<int>(f.positive("threads_per_rank"));
  p.warmup = static_cast<int>(f.count("warmup"));
  p.iters = static_cast<int>(f.positive("iters"));
  p.ci_target = f.num("ci_target");
  p.max_iters = static_cast<int>(f.count("max_iters"));
  p.compute_budget = f.num("compute_budget_s");
  p.optimizer_budget = f.num("optimizer_budget_s");
  p.comm_warmup = static_cast<int>(f.count("comm_warmup"));
  p.comm_iters = static_cast<int>(f.positive("comm_iters"));
  p.optimizer = parse_libtorch_optimizer(f.str("optimizer"), f.child("optimizer"));
  p.lr = f.num("lr");
  p.seed = static_cast<std::uint64_t>(f.count("seed"));
  p.micro_batches = f.count_list("micro_batches");
  p.sizes = f.bytes_list("sizes");
  p.buckets = f.bytes_list("buckets");
  p.fused = f.bytes("fused");
  p.raw_nccl = f.boolean("raw_nccl");
  p.timeout = f.num("timeout_s");
  p.job_dir = f.str("job_dir");
  return p;
}

torch::Tensor mean_loss(RankSession& s, std::uint64_t seed, Count first, Count b) {
  auto batch = s.workload.make_batch(seed, first, b);
  return s.workload.loss_sum(s.workload.forward(batch), batch) /
         static_cast<double>(std::max<Count>(1, batch.loss_terms));
}

std::string rank_log_path(const std::string& job_dir, int rank) {
  return fmt::format("{}/rank{}.log", job_dir, rank);
}

namespace {

void redirect_output(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;  // keep the inherited streams
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(fd, STDOUT_FILENO);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
}

json results_json(const RankResults& r, const WorkloadIdentity& identity, const RankPlan& plan) {
  Profile frag;
  frag.hardware.device_kind = device_kind_of(plan.workload.device) == DeviceKind::cuda ? "cuda" : "cpu";
  frag.hardware.threads_per_rank = plan.threads_per_rank;
  frag.workload = identity;
  frag.compute = r.compute;
  frag.optimizer = r.optimizer;
  frag.allreduce = r.allreduce;
  frag.collectives = r.collectives;
  frag.overlap = r.overlap;
  frag.notes = r.notes;
  return gaccum::to_json(frag);
}

int run_rank(const RankPlan& plan, const comm::RankContext& ctx) {
  std::unique_ptr<comm::Communicator> comm;
  if (ctx.world_size > 1) {
    // Gloo on CPU, NCCL on cuda:<local rank> (measure_rank puts the workload there too).
    const bool cuda = device_kind_of(plan.workload.device) == DeviceKind::cuda;
    comm::ConnectOptions co;
    co.backend = backend_for(device_kind_of(plan.workload.device));
    co.device = cuda ? fmt::format("cuda:{}", ctx.local_rank) : "cpu";
    co.timeout = plan.timeout;
    co.key_prefix = "profile";
    co.wait = collective_wait_for(co.backend, ctx.local_world_size, plan.threads_per_rank, usable_cores());
    comm = comm::connect(ctx, co);
  }
  const RankMeasurement m = measure_rank(plan, ctx, comm.get());
  json out{{"rank", ctx.rank},
           {"world_size", ctx.world_size},
           {"pid", static_cast<long>(::getpid())},
           {"threads", m.threads},
           {"interop_threads", torch::get_num_interop_threads()},
           {"fragment", results_json(m.results, m.identity, plan)},
           {"local", m.results.local}};
  write_file_atomic(engine::rank_result_path(plan.job_dir, ctx.rank), out.dump(1) + "\n");
  return 0;
}

}  // namespace

RankMeasurement measure_rank(const RankPlan& plan, const comm::RankContext& ctx, comm::Communicator* comm,
                             const AfterProbes& after) {
  torch::set_num_threads(plan.threads_per_rank);
  engine::use_exact_fp32();  // no TF32 (engine/exact_math.hpp)
  try {
    torch::set_num_interop_threads(1);
  } catch (const c10::Error&) {
    // Only allowed before any inter-op work started; a fresh rank process normally allows it.
  }
  auto cfg = plan.workload;
  const bool cuda = device_kind_of(cfg.device) == DeviceKind::cuda;
  if (cuda) {
    // One process per GPU: rank r of a group uses cuda:<local rank>; a single rank keeps the
    // device the user chose (e.g. cuda:1).
    if (ctx.world_size > 1 || cfg.device == "cuda") cfg.device = fmt::format("cuda:{}", ctx.local_rank);
  } else {
    engine::install_cpu_tracking_allocator();
  }
  auto workload = workloads::make_workload(cfg);
  auto params = workload->parameters();
  workloads::zero_grad(params);
  auto optimizer = workloads::make_optimizer(params, plan.optimizer, plan.lr);
  const int world = comm ? comm->world_size() : 1;
  const int rank = comm ? comm->rank() : 0;
  engine::IterationDriver driver(comm, workload->device(), plan.warmup, plan.iters);
  RankSession session{plan, *workload, params, *optimizer, comm, driver, rank, world};
  RankMeasurement m;
  // No progress (no timed iteration: engine::IterationDriver beats it) for --timeout + 2 s ends
  // this rank with exit 88, naming the probe; the collectives' own timeout (--timeout) fires first
  // in the ranks that wait for it (engine/watchdog.hpp).
  engine::Watchdog watchdog(rank, plan.timeout + 2.0);
  std::unique_ptr<Probe> probes[] = {make_compute_probe(), make_optimizer_probe(), make_allreduce_probe(),
                                     make_collective_probe(), make_overlap_probe()};
  for (auto& probe : probes)
    if (probe->applies(session)) {
      engine::RankPosition::set_phase(fmt::format("the {} probe", probe->name()));
      watchdog.beat();
      probe->run(session, m.results);
    }
  engine::RankPosition::set_phase("the collectives per level");
  watchdog.beat();
  if (after) after(session, m.results);
  driver.barrier();
  m.identity = workload->identity();
  m.threads = torch::get_num_threads();
  return m;
}

int run_profile_rank(const json& args) {
  int rank = 0;
  try {
    const auto ctx = comm::detect_rank_context();
    rank = ctx.rank;
    const RankPlan plan = RankPlan::from_json(args);
    redirect_output(rank_log_path(plan.job_dir, ctx.rank));
    return run_rank(plan, ctx);
  } catch (...) {
    return engine::rank_failure_exit_code(rank, std::current_exception());
  }
}

RankFile read_rank_file(const std::string& path) {
  auto j = parse_json_text(read_file(path, "rank result"), path);
  JsonFields f(j, path);
  RankFile r;
  r.rank = static_cast<int>(f.count("rank"));
  r.world_size = static_cast<int>(f.positive("world_size"));
  r.threads = static_cast<int>(f.positive("threads"));
  r.pid = static_cast<long>(f.count("pid"));
  Profile frag = profile_from_json(f.object("fragment"), f.child("fragment"));
  r.workload_hash = frag.workload.hash;
  r.results.compute = frag.compute;
  r.results.optimizer = frag.optimizer;
  r.results.allreduce = frag.allreduce;
  r.results.collectives = frag.collectives;
  r.results.overlap = frag.overlap;
  r.results.notes = frag.notes;
  if (auto* local = f.opt_object("local")) r.results.local = *local;
  return r;
}

}  // namespace gaccum::profiler
