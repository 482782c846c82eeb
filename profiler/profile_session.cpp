// What/why: see profile_session.hpp.
#include "profiler/profile_session.hpp"

#include <stdlib.h>
#include <sys/resource.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <unistd.h>
#include <thread>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/backend.hpp"
#include "core/buckets.hpp"
#include "core/devices.hpp"
#include "core/error.hpp"
#include "core/canary.hpp"
#include "core/host.hpp"
#include "core/utc_time.hpp"
#include "core/text_lines.hpp"
#include "core/json_fields.hpp"
#include "comm/communicator.hpp"
#include "engine/cuda_support.hpp"
#include "engine/exact_math.hpp"
#include "engine/rank_error.hpp"
#include "engine/rank_job.hpp"
#include "engine/watchdog.hpp"
#include "profiler/grad_norm_probe.hpp"
#include "profiler/hardware.hpp"
#include "profiler/link_probe.hpp"
#include "profiler/memory_sweep.hpp"
#include "profiler/progress.hpp"
#include "profiler/rank_worker.hpp"
#include "profiler/sweep_plan.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::profiler {
namespace {

namespace fs = std::filesystem;

// Estimated seconds of the rank-group work, for the time budget (not a measurement).
struct CostEstimate {
  std::vector<std::pair<Count, Seconds>> step;  // micro-step seconds at threads_per_rank, alone
  Seconds optimizer = 0;
  int iterations = 7;                           // warmup + iters
  Seconds point(Count b, Count p) const {
    const double contention = p > 1 ? 1.25 : 1.0;  // guess: concurrent ranks share memory bandwidth
    return static_cast<double>(iterations) * interpolate_time(step, b) * contention;
  }
};

void merge_rank_group(Profile& prof, const std::vector<RankFile>& files, Count p, int threads) {
  for (const auto& f : files) {
    if (f.world_size != p || f.workload_hash != prof.workload.hash || f.threads != threads)
      throw RuntimeFailure(fmt::format("profile: rank {} of world_size {} reported world_size {}, workload {}, {} "
                                       "threads; expected {}, {}, {}",
                                       f.rank, p, f.world_size, f.workload_hash, f.threads, p, prof.workload.hash,
                                       threads));
    if (f.results.compute.size() != files[0].results.compute.size())
      throw RuntimeFailure(fmt::format("profile: ranks of world_size {} disagree on the compute points", p));
    for (size_t i = 0; i < f.results.compute.size(); ++i)
      if (f.results.compute[i].micro_step.median != files[0].results.compute[i].micro_step.median)
        throw RuntimeFailure(fmt::format("profile: rank {} of world_size {} reduced different compute times than rank 0",
                                         f.rank, p));
  }
  const auto& r0 = files[0].results;
  prof.compute.insert(prof.compute.end(), r0.compute.begin(), r0.compute.end());
  prof.optimizer.insert(prof.optimizer.end(), r0.optimizer.begin(), r0.optimizer.end());
  prof.allreduce.insert(prof.allreduce.end(), r0.allreduce.begin(), r0.allreduce.end());
  prof.collectives.insert(prof.collectives.end(), r0.collectives.begin(), r0.collectives.end());
  prof.overlap.insert(prof.overlap.end(), r0.overlap.begin(), r0.overlap.end());
  for (const auto& n : r0.notes) prof.notes.push_back(n);
  if (p < 2) return;
  // Rank skew: each rank's own median micro_step; the largest relative spread over micro_batch.
  double worst = 0;
  Count worst_b = 0;
  for (size_t i = 0; i < r0.compute.size(); ++i) {
    double lo = 1e300, hi = 0;
    for (const auto& f : files) {
      const auto& loc = f.results.local;
      if (!loc.contains("compute") || i >= loc["compute"].size()) continue;
      const double v = loc["compute"][i].value("micro_step", 0.0);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (lo > 0 && hi / lo - 1 > worst) {
      worst = hi / lo - 1;
      worst_b = r0.compute[i].micro_batch;
    }
  }
  if (worst_b > 0)
    prof.notes.push_back(fmt::format("world_size {}: rank skew (ranks' own median micro_step) at most {:.1f}% "
                                     "(micro_batch {})",
                                     p, 100 * worst, worst_b));
}

// One profile in the making: the resolved request and where the time went.
struct Session {
  Session(const ProfileRequest& r, Progress& p) : req(r), progress(p) {}
  const ProfileRequest& req;
  Progress& progress;
  Profile prof;
  std::string device;
  bool cuda = false;
  int cores = 1, gpus = 0, threads = 1;
  std::vector<Count> ranks;
  Count max_mb = 0;
  workloads::WorkloadConfig cfg;
  Bytes cap = 0;
  // The fastest reference-kernel reading of this session (core/canary.hpp): one at the start,
  // then each phase's. A phase that reads more than kDisturbedCanary slower counts as disturbed.
  Seconds canary_reference = 0;
  std::vector<std::string> took;  // "memory sweep 3.1 s", for the notes
  Seconds last_lap = 0;
  void lap(const std::string& what) {
    const Seconds now = progress.elapsed();
    took.push_back(fmt::format("{} {:.1f} s", what, now - last_lap));
    last_lap = now;
  }
};

// Device, rank counts, threads and the request's limits (InputError naming the flag).
// `launched`: `profile` under a cluster launcher, this process one rank of the job (the rank
// counts are the job's; on CUDA the device is cuda:<local rank>).
void resolve(Session& s, const RankContext* launched = nullptr) {
  const auto& req = s.req;
  s.device = workloads::resolve_device(req.device);
  s.cuda = device_kind_of(s.device) == DeviceKind::cuda;
  s.cores = usable_cores();
  s.gpus = s.cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (launched) {
    if (!req.ranks.empty())
      throw InputError(fmt::format("--ranks: under the {} launcher the job's {} ranks are what is measured; drop --ranks",
                                   launched->launcher, launched->world_size));
    const int local = launched->local_world_size;
    if (s.cuda) {
      if (req.device.rfind("cuda:", 0) == 0)
        throw InputError(fmt::format("--device {}: under a launcher every rank uses cuda:<local rank>; give --device cuda",
                                     req.device));
      require_gpu_per_rank(local, s.gpus, "environment (LOCAL_WORLD_SIZE)",
                           "start one process per GPU (torchrun --nproc-per-node, srun --ntasks-per-node)");
      s.device = fmt::format("cuda:{}", launched->local_rank);
    }
    s.ranks = {static_cast<Count>(launched->world_size)};
    s.threads = req.threads_per_rank > 0 ? req.threads_per_rank : gaccum::default_threads_per_rank(s.cores, Count(local));
    if (!s.cuda && static_cast<Count>(s.threads) * local > s.cores)
      s.prof.notes.push_back(fmt::format("{} ranks per node x {} threads exceed the {} usable cores of a node: ranks "
                                         "oversubscribe the cores (times are not a single-rank-per-core measurement)",
                                         local, s.threads, s.cores));
  } else {
    s.ranks = req.ranks.empty() ? default_ranks(s.cuda, s.cores, s.gpus) : req.ranks;
    std::sort(s.ranks.begin(), s.ranks.end());
    s.ranks.erase(std::unique(s.ranks.begin(), s.ranks.end()), s.ranks.end());
    for (Count p : s.ranks) {
      if (p < 1) throw InputError("--ranks: rank counts must be positive");
      if (!s.cuda && p > s.cores)
        throw InputError(fmt::format("--ranks: {} ranks need {} cores (one compute rank per core); this machine offers {}",
                                     p, p, s.cores));
      if (s.cuda) require_gpu_per_rank(p, s.gpus, "--ranks", "measure fewer ranks, or --device cpu for Gloo ranks");
    }
    s.threads = req.threads_per_rank > 0 ? req.threads_per_rank : default_threads_per_rank(s.cores, s.ranks);
    if (!s.cuda && static_cast<Count>(s.threads) * s.ranks.back() > s.cores)
      s.prof.notes.push_back(fmt::format("--threads-per-rank {} x {} ranks exceeds the {} usable cores: ranks "
                                         "oversubscribe the cores",
                                         s.threads, s.ranks.back(), s.cores));
    if (s.cuda && s.gpus == 1) s.prof.notes.push_back("one GPU: world_size 1 only; no allreduce or overlap measured");
  }
  s.max_mb = req.max_micro_batch > 0 ? req.max_micro_batch
                                     : (s.cuda ? kDefaultCudaMaxMicroBatch : kDefaultCpuMaxMicroBatch);
  if (req.warmup < 0 || req.iters < 1 || req.comm_warmup < 0 || req.comm_iters < 1)
    throw InputError("--warmup/--iters: need warmup >= 0 and iters >= 1");
  if (req.grad_norm_batches < 2) throw InputError("--grad-norm-batches: need at least 2");
  if (!traits(req.optimizer).in_libtorch)
    throw InputError(fmt::format("--optimizer: LibTorch has no {} optimizer: profile {} (the same state slots)",
                                 to_string(req.optimizer), to_string(traits(req.optimizer).profiled_as)));
  if (req.device_memory && *req.device_memory == 0) throw InputError("--device-memory: must be positive, e.g. 256MiB");
  s.cfg = req.workload;
  s.cfg.device = s.device;
}

// The device's memory and the cap. A user's TorchScript model on CPU without --device-memory
// gets a device sized to it (kDerivedDeviceMicroBatch).
void size_device(Session& s, MemorySweep& ms) {
  const auto& req = s.req;
  Bytes device_memory = 0;
  if (req.device_memory) {
    device_memory = *req.device_memory;
  } else if (!s.cuda && s.prof.workload.kind == "torchscript") {
    s.progress.status("memory: sizing the CPU device to the model");
    const double need = ms.predicted_peak_at(kDerivedDeviceMicroBatch, req.seed);
    const double share = req.memory_cap.fraction.value_or(0.9);
    double want = std::max<double>(static_cast<double>(kDefaultCpuDeviceMemory), need / std::max(share, 1e-3));
    if (req.memory_cap.absolute) want = std::max(want, static_cast<double>(*req.memory_cap.absolute));
    device_memory = kDefaultCpuDeviceMemory;
    while (static_cast<double>(device_memory) < want && device_memory < (Bytes(1) << 50)) device_memory *= 2;
    s.prof.notes.push_back(fmt::format("CPU device size {} derived from the model (no --device-memory): 96 MiB doubled "
                                       "until micro_batch {} is predicted to fit under the cap (peak {}); pass "
                                       "--device-memory to emulate your GPU",
                                       format_bytes(device_memory), kDerivedDeviceMicroBatch,
                                       format_bytes(static_cast<Bytes>(std::max(0.0, need)))));
  } else if (!s.cuda) {
    device_memory = kDefaultCpuDeviceMemory;
  }
  s.prof.hardware = describe_hardware(s.device, s.threads, device_memory);
  if (s.cuda && s.prof.hardware.device_memory == 0)
    s.prof.hardware.device_memory = engine::cuda_total_memory(torch::Device(s.device));
  device_memory = s.prof.hardware.device_memory;
  s.cap = req.memory_cap.resolve(device_memory);
  if (s.cap == 0)
    throw InputError(fmt::format("--memory-cap: {} of {} is zero bytes", req.memory_cap.to_string(),
                                 format_bytes(device_memory)));
  if (s.cap > device_memory)
    throw InputError(fmt::format("--memory-cap: {} exceeds the device memory {} (set --device-memory for the CPU "
                                 "\"device\")",
                                 format_bytes(s.cap), format_bytes(device_memory)));
}

// The memory sweep's results into the profile: points, the model's failures, notes.
// Returns the smallest micro_batch the model runs at.
Count record_sweep(Session& s, const MemorySweepResult& sweep, const workloads::BatchDependence& dependence) {
  auto& prof = s.prof;
  prof.memory = sweep.points;
  prof.model.failed_micro_batches = sweep.failed;
  Count min_b = 1;
  for (const auto& f : sweep.failed)
    if (f.micro_batch < sweep.min_ran) min_b = sweep.min_ran;
  prof.model.min_micro_batch = min_b;
  prof.model.batch_statistics = dependence.batch_statistics;
  prof.model.dropout = dependence.dropout;
  for (const auto& f : sweep.failed)
    prof.notes.push_back(fmt::format("micro_batch {}: the model raised ({}); {}", f.micro_batch, f.message,
                                     f.micro_batch < min_b ? fmt::format("the smallest micro_batch it ran at is {}", min_b)
                                                           : "the sweep stopped there"));
  if (!prof.memory.empty() && prof.memory[0].weights != prof.workload.param_bytes)
    prof.notes.push_back(fmt::format("weights ({} bytes) include {} bytes beyond the {} parameter bytes: {}",
                                     prof.memory[0].weights,
                                     static_cast<long long>(prof.memory[0].weights) -
                                         static_cast<long long>(prof.workload.param_bytes),
                                     prof.workload.param_bytes,
                                     s.cuda ? "the CUDA caching allocator rounds every block up to a multiple of 512 "
                                              "bytes (one block per parameter tensor), plus any buffers the model keeps"
                                            : "buffers or data-stream state the workload keeps"));
  prof.max_micro_batch_fitting = sweep.max_fitting;
  for (const auto& n : sweep.notes) prof.notes.push_back(n);
  if (s.req.micro_batches.empty())
    prof.notes.push_back(fmt::format("micro-batch sweep: doubling stopped by the {}; largest fitting micro_batch {} "
                                     "(cap {})",
                                     describe(sweep.stop), sweep.max_fitting, format_bytes(s.cap)));
  return min_b;
}

// The model runs in this process in the memory sweep and the gradient norms: a forward that does
// not return ends the profile with exit 88 after --timeout + 2 s, naming the phase, as a hung rank
// ends validate (engine/watchdog.hpp). Started once the workload is built (loading a model file
// is not a step of it).
std::unique_ptr<engine::Watchdog> model_watchdog(const Session& s) {
  return std::make_unique<engine::Watchdog>(
      "profile", s.req.rank_timeout + 2.0,
      fmt::format("the model made no progress within --timeout {}; check its forward() (or raise --timeout if one "
                  "micro-step takes that long)",
                  format_seconds(s.req.rank_timeout)));
}

// The workload in this process with the exact tracker: the memory sweep (and the device size).
Count sweep_memory(Session& s, MemorySweepResult& sweep) {
  const auto& req = s.req;
  s.progress.status("memory: building the workload");
  auto ms = std::make_unique<MemorySweep>(s.cfg, req.optimizer, req.lr);  // released after the sweep
  const auto watchdog = model_watchdog(s);
  s.prof.workload = ms->workload().identity();
  s.prof.optimizer_transient = ms->optimizer_transient();
  const auto dependence = ms->workload().batch_dependence();
  size_device(s, *ms);
  MemorySweepOptions mo;
  mo.micro_batches = req.micro_batches;
  std::sort(mo.micro_batches.begin(), mo.micro_batches.end());
  mo.micro_batches.erase(std::unique(mo.micro_batches.begin(), mo.micro_batches.end()), mo.micro_batches.end());
  mo.cap = s.cap;
  mo.max_micro_batch = s.max_mb;
  mo.time_budget = req.time_budget / 3;
  mo.seed = req.seed;
  sweep = ms->run(mo, &s.progress);
  ms.reset();
  s.lap("memory sweep");
  return record_sweep(s, sweep, dependence);
}

// Gradient norms (this process; not timed). Still threads_per_rank threads: more OpenMP threads
// than free cores (another job on the host) makes LibTorch's many small parallel regions stall,
// measured at 7x slower.
void grad_norms(Session& s, Count max_fitting, Count min_b) {
  const auto sizes = default_grad_norm_sizes(max_fitting, min_b);
  s.progress.status(fmt::format("gradient norms: micro_batch {}", fmt::join(sizes, ", ")));
  auto fresh = workloads::make_workload(s.cfg);  // the initial parameters (the sweep stepped Adam)
  {
    const auto watchdog = model_watchdog(s);
    s.prof.grad_norms = measure_grad_norms(*fresh, sizes, s.req.grad_norm_batches, s.req.seed + 7919);
  }
  engine::RankPosition::set_phase("");
  if (sizes.size() < 2)
    s.prof.notes.push_back("gradient norms at one micro_batch only (max_micro_batch_fitting is 1): the noise scale "
                           "needs two sizes");
  s.lap("gradient norms");
}

// Fixed costs of a rank group: process start-up and connection, the optimizer probe, and for
// p >= 2 the allreduce sweep and the overlap probe (three runs at a small micro_batch).
Seconds group_fixed(const CostEstimate& est, Count p) {
  Seconds t = 1.0 + est.iterations * est.optimizer;
  if (p > 1) t += 1.5 + 3 * est.point(1, p);
  return t;
}

// The compute points: the flags' sizes, or the plan's required ones plus extras within the budget.
std::vector<Count> plan_points(Session& s, const MemorySweepResult& sweep, Count min_b, const CostEstimate& est) {
  std::vector<Count> points;
  if (!s.req.micro_batches.empty()) {
    for (const auto& m : sweep.points)
      if (m.micro_batch <= sweep.max_fitting && m.micro_batch >= min_b) points.push_back(m.micro_batch);
    return points;
  }
  const auto plan = plan_compute_points(sweep.max_fitting, min_b);
  auto cost_all_p = [&](Count b) {
    Seconds t = 0;
    for (Count p : s.ranks) t += est.point(b, p);
    return t;
  };
  Seconds required = 0;
  for (Count b : plan.required) required += cost_all_p(b);
  for (Count p : s.ranks) required += group_fixed(est, p);
  // Adaptive timing spends half of what is left on extra points and half on repetitions.
  const Seconds left = (s.req.time_budget - s.progress.elapsed() - required) * (s.req.ci_target > 0 ? 0.5 : 1.0);
  points = choose_compute_points(plan, cost_all_p, left);
  const size_t extras = points.size() - plan.required.size();
  s.prof.notes.push_back(fmt::format("compute measured at {} micro_batch sizes ({} required, {} extra within the time "
                                     "budget of {})",
                                     points.size(), plan.required.size(), extras, format_seconds(s.req.time_budget)));
  return points;
}

// In this process: the memory sweep, the gradient norms and the compute points planned under
// the time budget (`points`); returns the cost estimate the rank groups' budgets come from.
CostEstimate sweep_and_plan(Session& s, std::vector<Count>& points) {
  const auto& req = s.req;
  MemorySweepResult sweep;
  const Count min_b = sweep_memory(s, sweep);
  // --micro-batches given: the gradient norms stay within the listed sizes (a model may raise
  // below them, e.g. BatchNorm at micro_batch 1, which a listed sweep never tried).
  grad_norms(s, sweep.max_fitting, req.micro_batches.empty() ? min_b : std::max(min_b, sweep.min_ran));
  CostEstimate est;
  est.step = sweep.micro_step_times;
  est.optimizer = sweep.optimizer_step_time;
  est.iterations = req.warmup + req.iters;
  points = plan_points(s, sweep, min_b, est);
  return est;
}

// --require-quiet: no profile with numbers the profiler could not confirm.
void refuse_unconfirmed(const Session& s) {
  if (s.req.require_quiet && !s.prof.unconfirmed.empty())
    throw RuntimeFailure(fmt::format("profile: not written (--require-quiet): {} measurement(s) not confirmed, e.g. {}; "
                                     "profile again on a quiet machine",
                                     s.prof.unconfirmed.size(), s.prof.unconfirmed.front().what));
}

RankPlan rank_plan(const Session& s, const std::vector<Count>& points) {
  const auto& req = s.req;
  RankPlan rp;
  rp.workload = s.cfg;  // "cpu" or "cuda:N"; ranks of a group >= 2 use cuda:<local rank>
  rp.threads_per_rank = s.threads;
  rp.warmup = req.warmup;
  rp.iters = req.iters;
  rp.ci_target = req.ci_target;
  rp.max_iters = req.max_iters;
  rp.comm_warmup = req.comm_warmup;
  rp.comm_iters = req.comm_iters;
  rp.optimizer = req.optimizer;
  rp.lr = req.lr;
  rp.seed = req.seed;
  rp.micro_batches = points;
  rp.sizes = req.sizes.empty() ? default_allreduce_sizes(s.prof.workload.param_bytes) : req.sizes;
  for (const auto& b : assign_buckets(s.prof.workload.param_tensor_bytes)) rp.buckets.push_back(b.bytes);
  rp.fused = s.prof.workload.param_bytes;
  rp.raw_nccl = s.cuda;
  rp.timeout = req.rank_timeout;
  return rp;
}

// One rank group of p ranks (an engine::RankJob) measuring rp; the machine watched meanwhile.
std::vector<RankFile> run_group(Session& s, const RankPlan& rp, Count p, Seconds planned, PhaseConditions& cond,
                                const std::string& phase) {
  engine::RankJob job;
  job.role = kProfileRankRole;
  job.args = rp.to_json();
  job.world_size = static_cast<int>(p);
  job.deadline = std::max<Seconds>(120, 5 * planned);
  job.store_timeout = s.req.rank_timeout;
  job.env["OMP_NUM_THREADS"] = std::to_string(s.threads);
  job.env["MKL_NUM_THREADS"] = std::to_string(s.threads);
  job.executable = s.req.worker_executable;
  job.scratch_prefix = "gaccum-profile";
  std::vector<RankFile> files;
  // The memory sweep's cached blocks stay reserved in this process while the children measure on
  // the same GPU: hand them back to the driver first.
  if (s.cuda) engine::cuda_release_cache();
  const MachineActivity watch;
  const auto outcome = engine::run_rank_job(job, [&](const std::string& dir, const engine::RankJobOutcome& o) {
    if (!o.ok) return;
    for (int r = 0; r < p; ++r) files.push_back(read_rank_file(engine::rank_result_path(dir, r)));
  });
  cond = watch.stop(phase);
  const Seconds reading = canary_reading(cond);
  if (reading > 0 && (s.canary_reference <= 0 || reading < s.canary_reference)) s.canary_reference = reading;
  compare_canary(cond, s.canary_reference);
  // The launch's class of failure is the command's exit code (docs/exit-codes.md): 88 a rank
  // hung, 87 out of memory, 86 a rank died, 2 bad input or the model raised inside a rank.
  if (!outcome.ok)
    throw RankFailure(fmt::format("profile: world_size {} rank group failed: {}", p, outcome.failure),
                      outcome.exit_code);
  return files;
}

// The compute budget of each group: its planned cost at --iters per point, plus its share (by
// that cost) of what the time budget has left for repetitions.
std::vector<Seconds> compute_budgets(const Session& s, const RankPlan& rp, const CostEstimate& est) {
  std::vector<Seconds> base;
  Seconds fixed = 0, sum = 0;
  for (Count p : s.ranks) {
    Seconds c = 0;
    for (Count b : rp.micro_batches) c += est.point(b, p);
    base.push_back(c);
    sum += c;
    fixed += group_fixed(est, p);
  }
  const Seconds reserve = std::max<Seconds>(0, s.req.time_budget - s.progress.elapsed() - fixed - sum);
  std::vector<Seconds> out;
  for (Seconds c : base) out.push_back(c + (sum > 0 ? reserve * c / sum : 0));
  return out;
}

// Of two attempts at a phase, is a the quieter: undisturbed before disturbed, then fewer cores
// kept busy by other processes, then the faster reference kernel.
bool quieter(const PhaseConditions& a, const PhaseConditions& b) {
  if (a.disturbed != b.disturbed) return !a.disturbed;
  if (std::abs(a.others_cores - b.others_cores) > 0.05) return a.others_cores < b.others_cores;
  const Seconds ra = canary_reading(a), rb = canary_reading(b);
  return ra > 0 && rb > 0 ? ra <= rb : a.others_cores <= b.others_cores;
}

// One rank group per rank count; a group measured while other processes kept the cores busy is
// measured again when the time budget allows (the quieter attempt is kept), and stays on the
// profile's `unconfirmed` list when it was disturbed both times.
void run_rank_groups(Session& s, const RankPlan& rp, const CostEstimate& est) {
  const auto& points = rp.micro_batches;
  const auto budgets = compute_budgets(s, rp, est);
  for (size_t gi = 0; gi < s.ranks.size(); ++gi) {
    const Count p = s.ranks[gi];
    RankPlan gp = rp;
    gp.compute_budget = rp.ci_target > 0 ? budgets[gi] : 0;
    gp.optimizer_budget = rp.ci_target > 0 ? std::clamp(60 * est.optimizer, 0.3, 2.0) : 0;
    const Seconds planned = group_fixed(est, p) + budgets[gi];
    const std::string phase = fmt::format("world_size {} group", p);
    s.progress.status(fmt::format("world_size {}: compute at {} micro_batch sizes{} (about {})", p, points.size(),
                                  p > 1 ? ", optimizer, allreduce, overlap" : ", optimizer", format_seconds(planned)));
    PhaseConditions cond;
    auto files = run_group(s, gp, p, planned, cond, phase);
    s.prof.conditions.push_back(cond);
    if (cond.disturbed && s.progress.elapsed() + planned <= 1.25 * s.req.time_budget) {
      s.progress.status(fmt::format("world_size {}: measured again ({})", p, describe_disturbance(cond)));
      PhaseConditions again;
      auto files2 = run_group(s, gp, p, planned, again, phase);
      again.attempt = 2;
      s.prof.conditions.push_back(again);
      const bool second = quieter(again, cond);
      s.prof.notes.push_back(fmt::format("{} measured again: the first attempt ran while {}; kept the {}", phase,
                                         describe_disturbance(cond), second ? "second" : "first"));
      if (second) {
        files = std::move(files2);
        cond = again;
      }
    }
    if (cond.disturbed)
      s.prof.unconfirmed.push_back({fmt::format("{} (compute, optimizer{}): measured while {}", phase,
                                                p > 1 ? ", allreduce, overlap" : "", describe_disturbance(cond)),
                                    p, 0});
    merge_rank_group(s.prof, files, p, s.threads);
    s.lap(fmt::format("world_size {} group (planned {:.1f} s)", p, planned));
  }
  if (std::find_if(s.ranks.begin(), s.ranks.end(), [](Count p) { return p > 1; }) == s.ranks.end() &&
      !(s.cuda && s.gpus == 1))
    s.prof.notes.push_back("world_size 1 only (--ranks): no allreduce or overlap measured");
}

// Points that disagree with their neighbours or with the contention physics
// (sweep_plan.hpp, find_suspect_points) are measured again, interleaved with their neighbours,
// in one small rank group per rank count; the fresh values replace the old ones. A point that
// still disagrees is kept when the two measurements agree (a real feature of the model) and is
// listed as unconfirmed when they do not.
void remeasure_suspects(Session& s, const RankPlan& rp) {
  const auto suspects = find_suspect_points(s.prof.compute, s.req.ci_target);
  if (suspects.empty()) return;
  std::map<Count, std::vector<Count>> by_p;  // p -> micro_batches to measure again
  for (const auto& sp : suspects) {
    std::vector<Count> bs;
    for (const auto& c : s.prof.compute)
      if (c.concurrent_ranks == sp.concurrent_ranks) bs.push_back(c.micro_batch);
    std::sort(bs.begin(), bs.end());
    const auto it = std::find(bs.begin(), bs.end(), sp.micro_batch);
    auto& want = by_p[sp.concurrent_ranks];
    want.push_back(sp.micro_batch);
    if (it != bs.begin()) want.push_back(*(it - 1));
    if (it + 1 != bs.end()) want.push_back(*(it + 1));
  }
  std::map<std::pair<Count, Count>, double> before;
  for (const auto& c : s.prof.compute) before[{c.micro_batch, c.concurrent_ranks}] = c.micro_step.median;
  for (auto& [p, bs] : by_p) {
    std::sort(bs.begin(), bs.end());
    bs.erase(std::unique(bs.begin(), bs.end()), bs.end());
    RankPlan gp = rp;
    gp.micro_batches = bs;
    gp.compute_budget = 0;  // the ci target or --max-iters ends it
    gp.max_iters = std::min(rp.max_iters, 3 * std::max(rp.iters, 8));
    s.progress.status(fmt::format("world_size {}: measuring micro_batch {} again (inconsistent)", p, fmt::join(bs, ", ")));
    PhaseConditions cond;
    const std::string phase = fmt::format("world_size {} re-measurement", p);
    const auto files = run_group(s, gp, p, 30, cond, phase);
    s.prof.conditions.push_back(cond);
    for (const auto& fresh : files[0].results.compute)
      for (auto& c : s.prof.compute)
        if (c.micro_batch == fresh.micro_batch && c.concurrent_ranks == p) c = fresh;
  }
  const auto still = find_suspect_points(s.prof.compute, s.req.ci_target);
  for (const auto& sp : suspects) {
    const auto key = std::make_pair(sp.micro_batch, sp.concurrent_ranks);
    double now = 0;
    for (const auto& c : s.prof.compute)
      if (c.micro_batch == sp.micro_batch && c.concurrent_ranks == sp.concurrent_ranks) now = c.micro_step.median;
    const bool persists = std::any_of(still.begin(), still.end(), [&](const SuspectPoint& x) {
      return x.micro_batch == sp.micro_batch && x.concurrent_ranks == sp.concurrent_ranks;
    });
    const double first = before[key];
    const bool reproduced = first > 0 && std::abs(now / first - 1) <= std::max(0.05, 2 * s.req.ci_target);
    const std::string what = fmt::format("world_size {} micro_batch {}: {} ms, measured again {} ms", sp.concurrent_ranks,
                                         sp.micro_batch, fmt::format("{:.2f}", 1e3 * first),
                                         fmt::format("{:.2f}", 1e3 * now));
    if (!persists)
      s.prof.notes.push_back(fmt::format("{} ({}; consistent now)", what, sp.why));
    else if (reproduced)
      s.prof.notes.push_back(fmt::format("{} ({}; reproduced, kept as measured)", what, sp.why));
    else
      s.prof.unconfirmed.push_back({fmt::format("{} ({}; the two measurements disagree)", what, sp.why),
                                    sp.concurrent_ranks, sp.micro_batch});
  }
  s.lap("re-measurement");
}

// `wait`: how the ranks that communicated waited for their collectives.
void record_settings(Session& s, const RankPlan& rp, CollectiveWait wait) {
  const auto& req = s.req;
  auto& st = s.prof.settings;
  st.collective_wait = wait;
  st.comm_gap = comm_gap_for(torch::Device(s.cuda ? s.device : "cpu"));
  st.warmup = req.warmup;
  st.iters = req.iters;
  st.ci_target = req.ci_target;
  st.max_iters = req.max_iters;
  st.ranks = s.ranks;
  st.sizes = rp.sizes;
  st.memory_cap = s.cap;
  st.max_micro_batch = s.max_mb;
  st.time_budget_s = req.time_budget;
  st.seed = req.seed;
  st.optimizer = req.optimizer;
  auto& notes = s.prof.notes;
  notes.push_back(fmt::format("time: {}", fmt::join(s.took, ", ")));
  if (const auto blas = blas_library(); !blas.empty())
    notes.push_back(fmt::format("BLAS: {}{}", blas,
                                is_reference_blas(blas) ? " (the netlib reference BLAS: CPU matmuls run several "
                                                          "times slower than with OpenBLAS, e.g. Debian's "
                                                          "libopenblas0-openmp)"
                                                        : ""));
  if (workloads::parse_dtype(req.workload.dtype) == torch::kBFloat16) {
    if (s.cuda)
      notes.push_back("precision bf16 measured on the GPU: the model in bf16 (not autocast), fp32 master weights and "
                      "optimizer state, the loss in fp32");
    else
      notes.push_back(fmt::format(
          "precision bf16 measured on CPU: memory is exact (tracking allocator: 2-byte weights, gradients and "
          "activations, fp32 master weights and optimizer state, the loss in fp32); times are this CPU's bf16 "
          "kernels ({}), not a GPU's",
          cpu_has_flag("avx512_bf16") ? "avx512_bf16 present" : "no avx512_bf16: bf16 is emulated in fp32 and slower"));
  }
  notes.push_back(fmt::format("threads_per_rank {} (torch::set_num_threads in every rank process; interop 1) on {} "
                              "usable cores",
                              s.threads, s.cores));
}

}  // namespace

// The phases in order: resolve the request; in this process (exact tracker, threads_per_rank
// threads) the memory sweep and the gradient norms; plan the compute points under the time
// budget; the rank groups; the settings and notes.
Profile run_profile(const ProfileRequest& req, Progress& progress) {
  Session s(req, progress);
  s.prof.created_utc = utc_now();
  s.last_lap = progress.elapsed();
  resolve(s);
  s.prof.versions = library_versions();
  torch::set_num_threads(s.threads);
  engine::use_exact_fp32();  // as in every rank (engine/exact_math.hpp)
  s.canary_reference = run_canary().min;  // this machine at rest, before any phase

  std::vector<Count> points;
  const CostEstimate est = sweep_and_plan(s, points);

  const RankPlan rp = rank_plan(s, points);
  run_rank_groups(s, rp, est);
  remeasure_suspects(s, rp);
  const int largest = s.ranks.empty() ? 1 : static_cast<int>(*std::max_element(s.ranks.begin(), s.ranks.end()));
  record_settings(s, rp,
                  collective_wait_for(backend_for(s.cuda ? DeviceKind::cuda : DeviceKind::cpu), largest, s.threads, usable_cores()));
  progress.clear();
  refuse_unconfirmed(s);
  return std::move(s.prof);
}


// ---- `profile` under a cluster launcher ----------------------------------------------------

namespace {

// CPU seconds of this process so far (user + system).
double own_cpu_seconds() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// Rank 0's plan reaches the others through the store; they poll (a store get would time out
// at --timeout while rank 0 still sweeps memory). "plan-status" is "ok" or rank 0's error.
std::string wait_for_plan(comm::KeyValueStore& store, Seconds deadline) {
  const auto start = std::chrono::steady_clock::now();
  while (store.add("plan-ready", 0) < 1) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > deadline)
      throw RuntimeFailure(fmt::format("profile: rank 0 published no plan within {} (its memory sweep, or rank 0 "
                                       "itself, is stuck); see rank 0's output",
                                       format_seconds(deadline)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string status = store.get("plan-status");
  if (status != "ok") throw RuntimeFailure(fmt::format("profile: rank 0 failed before measuring: {}", status));
  return store.get("plan");
}

// Compute spread between nodes: each node's mean of its ranks' own medians per micro_batch.
void note_node_spread(Profile& prof, const std::vector<std::string>& locals, const NodeLayout& lay) {
  double worst = 0;
  Count worst_b = 0;
  for (std::size_t i = 0; i < prof.compute.size(); ++i) {
    double lo = 1e300, hi = 0;
    for (const auto& m : lay.members) {
      double sum = 0;
      int n = 0;
      for (int r : m) {
        const auto j = nlohmann::json::parse(locals[static_cast<std::size_t>(r)], nullptr, false);
        if (j.is_discarded() || !j.contains("compute") || i >= j["compute"].size()) continue;
        sum += j["compute"][i].value("micro_step", 0.0);
        ++n;
      }
      if (n == 0 || sum <= 0) continue;
      lo = std::min(lo, sum / n);
      hi = std::max(hi, sum / n);
    }
    if (hi > 0 && lo < 1e300 && hi / lo - 1 > worst) {
      worst = hi / lo - 1;
      worst_b = prof.compute[i].micro_batch;
    }
  }
  if (worst_b > 0)
    prof.notes.push_back(fmt::format("compute spread between the {} nodes (each node's mean of its ranks' own median "
                                     "micro_step): at most {:.1f}% (micro_batch {}); the profile's compute is the max "
                                     "over all ranks",
                                     lay.nodes, 100 * worst, worst_b));
}

}  // namespace

void run_profile_as_rank(const ProfileRequest& req, const RankContext& ctx, Progress& progress,
                         const std::function<void(const Profile&)>& write) {
  Session s(req, progress);
  s.prof.created_utc = utc_now();
  s.last_lap = progress.elapsed();
  resolve(s, &ctx);
  s.prof.versions = library_versions();
  torch::set_num_threads(s.threads);
  engine::use_exact_fp32();  // as in every rank (engine/exact_math.hpp)
  s.cfg.device = s.device;

  comm::ConnectOptions co;
  co.backend = backend_for(s.cuda ? DeviceKind::cuda : DeviceKind::cpu);
  co.device = s.cuda ? s.device : "cpu";
  co.timeout = req.rank_timeout;
  co.key_prefix = "gaccum-profile";
  co.wait = collective_wait_for(co.backend, ctx.local_world_size, s.threads, usable_cores());
  co.after_store = [&](comm::KeyValueStore& st) {
    comm::rendezvous(st, "profile", ctx.rank, ctx.world_size, req.rank_timeout);
  };
  if (ctx.rank == 0) progress.status(fmt::format("joining the {} ranks at {}:{}", ctx.world_size, ctx.master_addr,
                                                 ctx.master_port));
  auto world = comm::connect(ctx, co);
  const NodeLayout lay = node_layout(*world, ctx);

  // Rank 0 sweeps memory, measures the gradient norms and plans; the others wait for the plan.
  RankPlan rp;
  if (ctx.rank == 0) {
    try {
      std::vector<Count> points;
      const CostEstimate est = sweep_and_plan(s, points);
      rp = rank_plan(s, points);
      rp.compute_budget = rp.ci_target > 0 ? compute_budgets(s, rp, est).front() : 0;
      rp.optimizer_budget = rp.ci_target > 0 ? std::clamp(60 * est.optimizer, 0.3, 2.0) : 0;
      world->store().set("plan", rp.to_json().dump());
      world->store().set("plan-status", "ok");
    } catch (const std::exception& e) {
      world->store().set("plan-status", first_line(e.what()));
      world->store().add("plan-ready", 1);
      throw;
    }
    world->store().add("plan-ready", 1);
  } else {
    const auto text = wait_for_plan(world->store(), std::max<Seconds>(600, 4 * req.time_budget));
    rp = RankPlan::from_json(parse_json_text(text, "rank 0's plan"));
  }

  // Every rank: the probes over the whole job, then the two levels.
  if (ctx.rank == 0)
    progress.status(fmt::format("{} ranks ({} node(s) x {}): compute at {} micro_batch sizes, optimizer, allreduce, "
                                "collectives, overlap, then per level",
                                ctx.world_size, lay.nodes, lay.ranks_per_node, rp.micro_batches.size()));
  const MachineActivity watch;
  const double cpu_start = own_cpu_seconds();
  const RankMeasurement m = measure_rank(rp, ctx, world.get(), [&](RankSession&, RankResults& out) {
    const auto levels = sweep_levels(*world, lay, ctx, rp.sizes, rp.comm_warmup, rp.comm_iters, /*job_level=*/false,
                                     /*collectives=*/true, "profile");
    out.allreduce.insert(out.allreduce.end(), levels.allreduce.begin(), levels.allreduce.end());
    out.collectives.insert(out.collectives.end(), levels.collectives.begin(), levels.collectives.end());
  });
  // The job's other ranks on this host are not "other processes": their CPU time is exchanged
  // and taken out of what the machine watch calls others' cores.
  const auto cpu = world->allgather_strings(fmt::format("{:.6f}", own_cpu_seconds() - cpu_start));
  auto cond = watch.stop(fmt::format("job of {} ranks (rank {}'s host)", ctx.world_size, ctx.rank));
  double siblings = 0;
  for (int r = 0; r < ctx.world_size; ++r)
    if (r != ctx.rank && lay.host_of[static_cast<std::size_t>(r)] == lay.host_of[static_cast<std::size_t>(ctx.rank)])
      siblings += std::atof(cpu[static_cast<std::size_t>(r)].c_str());
  if (cond.wall > 0) {
    cond.others_cores = std::max(0.0, cond.others_cores - siblings / cond.wall);
    cond.disturbed = is_disturbed(cond);
  }
  const auto locals = world->allgather_strings(m.results.local.dump());

  double failed = 0;
  if (ctx.rank == 0) {
    try {
      auto& prof = s.prof;
      prof.compute = m.results.compute;
      prof.optimizer = m.results.optimizer;
      prof.allreduce = m.results.allreduce;
      prof.collectives = m.results.collectives;
      prof.overlap = m.results.overlap;
      for (const auto& n : m.results.notes) prof.notes.push_back(n);
      prof.conditions.push_back(cond);
      if (cond.disturbed)
        prof.unconfirmed.push_back({fmt::format("{}: measured while {}", cond.phase, describe_disturbance(cond)), 0, 0});
      prof.topology.nodes = lay.nodes;
      prof.topology.ranks_per_node = lay.ranks_per_node;
      prof.topology.hosts = lay.hosts;
      prof.topology.launcher = ctx.launcher;
      note_node_spread(prof, locals, lay);
      prof.notes.push_back(fmt::format("launched by {}: {} node(s) x {} ranks; compute and optimizer measured with all "
                                       "{} ranks computing at once (max over ranks); allreduce, reduce-scatter and all-gather over the job, {}{}",
                                       ctx.launcher, lay.nodes, lay.ranks_per_node, ctx.world_size,
                                       lay.nodes > 1 && lay.ranks_per_node > 1 ? "inside each node (every node at once), " : "",
                                       lay.nodes > 1 ? "and across nodes (one rank per node, every local rank's group at once); a "
                                                       "level's time is its slowest group's"
                                                     : "(one node: no inter-node level)"));
      s.lap("launched job");
      record_settings(s, rp, world->wait_mode());
      progress.clear();
      refuse_unconfirmed(s);
      write(prof);
    } catch (...) {
      world->allreduce_sum_scalar(1);
      throw;
    }
  }
  failed = world->allreduce_sum_scalar(failed);
  if (failed > 0) throw RuntimeFailure("profile: rank 0 could not finish the profile (see its error); nothing was written");
}

}  // namespace gaccum::profiler
