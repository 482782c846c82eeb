// What/why: see profile_session.hpp.
#include "profiler/profile_session.hpp"

#include <stdlib.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/launcher.hpp"
#include "core/backend.hpp"
#include "core/atomic_file.hpp"
#include "core/buckets.hpp"
#include "core/error.hpp"
#include "core/scratch_dir.hpp"
#include "core/utc_time.hpp"
#include "profiler/cuda_support.hpp"
#include "profiler/grad_norm_probe.hpp"
#include "profiler/hardware.hpp"
#include "profiler/memory_sweep.hpp"
#include "profiler/progress.hpp"
#include "profiler/rank_worker.hpp"
#include "profiler/sweep_plan.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::profiler {
namespace {

namespace fs = std::filesystem;

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

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

void merge_rank_group(Profile& prof, const std::string& dir, Count p, int threads) {
  std::vector<RankFile> files;
  for (int r = 0; r < p; ++r) files.push_back(read_rank_file(rank_file_path(dir, r)));
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

}  // namespace

Profile run_profile(const ProfileRequest& req, Progress& progress) {
  Profile prof;
  prof.created_utc = utc_now();

  // --- resolve the request ------------------------------------------------------------------
  const std::string device = workloads::resolve_device(req.device);
  const bool cuda = device_kind_of(device) == DeviceKind::cuda;
  const int cores = usable_cores();
  const int gpus = cuda ? static_cast<int>(torch::cuda::device_count()) : 0;
  std::vector<Count> ranks = req.ranks.empty() ? default_ranks(cuda, cores, gpus) : req.ranks;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (Count p : ranks) {
    if (p < 1) throw InputError("--ranks: rank counts must be positive");
    if (!cuda && p > cores)
      throw InputError(fmt::format("--ranks: {} ranks need {} cores (one compute rank per core); this machine offers {}",
                                   p, p, cores));
    if (cuda && p > gpus)
      throw InputError(fmt::format("--ranks: {} ranks need {} GPUs (one process per GPU); {} visible", p, p, gpus));
  }
  const int threads = req.threads_per_rank > 0 ? req.threads_per_rank : default_threads_per_rank(cores, ranks);
  if (!cuda && static_cast<Count>(threads) * ranks.back() > cores)
    prof.notes.push_back(fmt::format("--threads-per-rank {} x {} ranks exceeds the {} usable cores: ranks oversubscribe "
                                     "the cores",
                                     threads, ranks.back(), cores));
  if (cuda && gpus == 1) prof.notes.push_back("one GPU: world_size 1 only; no allreduce or overlap measured");

  const Count max_mb = req.max_micro_batch > 0 ? req.max_micro_batch
                                               : (cuda ? kDefaultCudaMaxMicroBatch : kDefaultCpuMaxMicroBatch);
  if (req.warmup < 0 || req.iters < 1 || req.comm_warmup < 0 || req.comm_iters < 1)
    throw InputError("--warmup/--iters: need warmup >= 0 and iters >= 1");
  if (req.grad_norm_batches < 2) throw InputError("--grad-norm-batches: need at least 2");
  if (!traits(req.optimizer).in_libtorch)
    throw InputError(fmt::format("--optimizer: LibTorch has no {} optimizer: profile {} (the same state slots)",
                                 to_string(req.optimizer), to_string(traits(req.optimizer).profiled_as)));
  if (req.device_memory && *req.device_memory == 0) throw InputError("--device-memory: must be positive, e.g. 256MiB");

  prof.versions = library_versions();
  auto cfg = req.workload;
  cfg.device = device;

  // --- the workload (this process, exact tracker, threads_per_rank threads) ------------------
  torch::set_num_threads(threads);
  progress.status("memory: building the workload");
  auto ms = std::make_unique<MemorySweep>(cfg, req.optimizer, req.lr);  // released after the sweep
  prof.workload = ms->workload().identity();
  const auto dependence = ms->workload().batch_dependence();

  Bytes device_memory = 0;
  std::string device_note;
  if (req.device_memory) {
    device_memory = *req.device_memory;
  } else if (!cuda && prof.workload.kind == "torchscript") {
    progress.status("memory: sizing the CPU device to the model");
    const double need = ms->predicted_peak_at(kDerivedDeviceMicroBatch, req.seed);
    const double share = req.memory_cap.fraction.value_or(0.9);
    double want = std::max<double>(static_cast<double>(kDefaultCpuDeviceMemory), need / std::max(share, 1e-3));
    if (req.memory_cap.absolute) want = std::max(want, static_cast<double>(*req.memory_cap.absolute));
    device_memory = kDefaultCpuDeviceMemory;
    while (static_cast<double>(device_memory) < want && device_memory < (Bytes(1) << 50)) device_memory *= 2;
    device_note = fmt::format("CPU device size {} derived from the model (no --device-memory): 96 MiB doubled until "
                              "micro_batch {} is predicted to fit under the cap (peak {}); pass --device-memory to "
                              "emulate your GPU",
                              format_bytes(device_memory), kDerivedDeviceMicroBatch,
                              format_bytes(static_cast<Bytes>(std::max(0.0, need))));
  } else if (!cuda) {
    device_memory = kDefaultCpuDeviceMemory;
  }
  if (!device_note.empty()) prof.notes.push_back(device_note);
  prof.hardware = describe_hardware(device, threads, device_memory);
  if (cuda && prof.hardware.device_memory == 0) prof.hardware.device_memory = cuda_total_memory(torch::Device(device));
  device_memory = prof.hardware.device_memory;
  const Bytes cap = req.memory_cap.resolve(device_memory);
  if (cap == 0) throw InputError(fmt::format("--memory-cap: {} of {} is zero bytes", req.memory_cap.to_string(),
                                             format_bytes(device_memory)));
  if (cap > device_memory)
    throw InputError(fmt::format("--memory-cap: {} exceeds the device memory {} (set --device-memory for the CPU "
                                 "\"device\")",
                                 format_bytes(cap), format_bytes(device_memory)));
  // --- memory sweep -------------------------------------------------------------------------
  std::vector<std::string> took;  // where the time went, for the notes
  auto lap = [&, last = progress.elapsed()](const std::string& what) mutable {
    const Seconds now = progress.elapsed();
    took.push_back(fmt::format("{} {:.1f} s", what, now - last));
    last = now;
  };
  MemorySweepResult sweep;
  {
    MemorySweepOptions mo;
    mo.micro_batches = req.micro_batches;
    std::sort(mo.micro_batches.begin(), mo.micro_batches.end());
    mo.micro_batches.erase(std::unique(mo.micro_batches.begin(), mo.micro_batches.end()), mo.micro_batches.end());
    mo.cap = cap;
    mo.max_micro_batch = max_mb;
    mo.time_budget = req.time_budget / 3;
    mo.seed = req.seed;
    sweep = ms->run(mo, &progress);
    ms.reset();
  }
  lap("memory sweep");
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
    prof.notes.push_back(fmt::format("weights ({} bytes) include {} bytes beyond the {} parameter bytes: buffers or "
                                     "data-stream state the workload keeps",
                                     prof.memory[0].weights,
                                     static_cast<long long>(prof.memory[0].weights) -
                                         static_cast<long long>(prof.workload.param_bytes),
                                     prof.workload.param_bytes));
  prof.max_micro_batch_fitting = sweep.max_fitting;
  for (const auto& n : sweep.notes) prof.notes.push_back(n);
  if (req.micro_batches.empty())
    prof.notes.push_back(fmt::format("micro-batch sweep: doubling stopped by the {}; largest fitting micro_batch {} "
                                     "(cap {})",
                                     describe(sweep.stop), sweep.max_fitting, format_bytes(cap)));

  // --- gradient norms (this process; not timed) ---------------------------------------------
  // Still threads_per_rank threads: more OpenMP threads than free cores (another job on the
  // host) makes LibTorch's many small parallel regions stall, measured at 7x slower.
  {
    const auto sizes = default_grad_norm_sizes(sweep.max_fitting, min_b);
    progress.status(fmt::format("gradient norms: micro_batch {}", fmt::join(sizes, ", ")));
    auto fresh = workloads::make_workload(cfg);  // the initial parameters (the sweep stepped Adam)
    prof.grad_norms = measure_grad_norms(*fresh, sizes, req.grad_norm_batches, req.seed + 7919);
    if (sizes.size() < 2)
      prof.notes.push_back("gradient norms at one micro_batch only (max_micro_batch_fitting is 1): the noise scale "
                           "needs two sizes");
    lap("gradient norms");
  }

  // --- plan the compute points ---------------------------------------------------------------
  std::vector<Count> points;
  CostEstimate est;
  est.step = sweep.micro_step_times;
  est.optimizer = sweep.optimizer_step_time;
  est.iterations = req.warmup + req.iters;
  // Fixed costs of a rank group: process start-up and connection, the optimizer probe, and for
  // p >= 2 the allreduce sweep and the overlap probe (three runs at a small micro_batch).
  auto group_fixed = [&](Count p) {
    Seconds s = 1.0 + est.iterations * est.optimizer;
    if (p > 1) s += 1.5 + 3 * est.point(1, p);
    return s;
  };
  if (!req.micro_batches.empty()) {
    for (const auto& m : sweep.points)
      if (m.micro_batch <= sweep.max_fitting && m.micro_batch >= min_b) points.push_back(m.micro_batch);
  } else {
    const auto plan = plan_compute_points(sweep.max_fitting, min_b);
    auto cost_all_p = [&](Count b) {
      Seconds s = 0;
      for (Count p : ranks) s += est.point(b, p);
      return s;
    };
    Seconds required = 0;
    for (Count b : plan.required) required += cost_all_p(b);
    for (Count p : ranks) required += group_fixed(p);
    const Seconds left = req.time_budget - progress.elapsed() - required;
    points = choose_compute_points(plan, cost_all_p, left);
    const size_t extras = points.size() - plan.required.size();
    prof.notes.push_back(fmt::format("compute measured at {} micro_batch sizes ({} required, {} extra within the time "
                                     "budget of {})",
                                     points.size(), plan.required.size(), extras, format_seconds(req.time_budget)));
  }

  // --- rank groups -----------------------------------------------------------------------------
  const auto buckets = assign_buckets(prof.workload.param_tensor_bytes);
  RankPlan rp;
  rp.workload = cfg;
  rp.workload.device = device;  // "cpu" or "cuda:N"; ranks of a group >= 2 use cuda:<local rank>
  rp.threads_per_rank = threads;
  rp.warmup = req.warmup;
  rp.iters = req.iters;
  rp.comm_warmup = req.comm_warmup;
  rp.comm_iters = req.comm_iters;
  rp.optimizer = req.optimizer;
  rp.lr = req.lr;
  rp.seed = req.seed;
  rp.micro_batches = points;
  rp.sizes = req.sizes.empty() ? default_allreduce_sizes(prof.workload.param_bytes) : req.sizes;
  for (const auto& b : buckets) rp.buckets.push_back(b.bytes);
  rp.fused = prof.workload.param_bytes;
  rp.raw_nccl = cuda;
  rp.timeout = req.rank_timeout;

  const std::string self = req.worker_executable.empty() ? comm::self_executable() : req.worker_executable;
  for (Count p : ranks) {
    ScratchDir dir("gaccum-profile");  // the rank result files; removed also on a signal
    rp.result_dir = dir.path();
    const std::string args_path = dir.path() + "/args.json";
    write_file_atomic(args_path, rp.to_json().dump(1) + "\n");
    Seconds planned = group_fixed(p);
    for (Count b : points) planned += est.point(b, p);
    progress.status(fmt::format("world_size {}: compute at {} micro_batch sizes{} (about {})", p, points.size(),
                                p > 1 ? ", optimizer, allreduce, overlap" : ", optimizer", format_seconds(planned)));
    comm::LaunchOptions lo;
    lo.argv = {self, "_worker", "--role", kProfileRankRole, "--args", args_path};
    lo.world_size = static_cast<int>(p);
    lo.deadline = std::max<Seconds>(120, 5 * planned);
    lo.store_timeout = req.rank_timeout;
    lo.env["OMP_NUM_THREADS"] = std::to_string(threads);
    lo.env["MKL_NUM_THREADS"] = std::to_string(threads);
    auto res = comm::launch_local(lo);
    if (!res.ok) {
      std::string why = res.failed_rank >= 0 ? last_line(rank_log_path(dir.path(), res.failed_rank)) : "";
      throw RuntimeFailure(fmt::format("profile: world_size {} rank group failed: {}{}", p, res.failure,
                                       why.empty() ? "" : ": " + why));
    }
    merge_rank_group(prof, dir.path(), p, threads);
    lap(fmt::format("world_size {} group (planned {:.1f} s)", p, planned));
  }
  if (std::find_if(ranks.begin(), ranks.end(), [](Count p) { return p > 1; }) == ranks.end() && !(cuda && gpus == 1))
    prof.notes.push_back("world_size 1 only (--ranks): no allreduce or overlap measured");

  // --- settings -----------------------------------------------------------------------------
  auto& s = prof.settings;
  s.warmup = req.warmup;
  s.iters = req.iters;
  s.ranks = ranks;
  s.sizes = rp.sizes;
  s.memory_cap = cap;
  s.max_micro_batch = max_mb;
  s.time_budget_s = req.time_budget;
  s.seed = req.seed;
  s.optimizer = req.optimizer;
  prof.notes.push_back(fmt::format("time: {}", fmt::join(took, ", ")));
  if (const auto blas = blas_library(); !blas.empty())
    prof.notes.push_back(fmt::format("BLAS: {}{}", blas,
                                     is_reference_blas(blas) ? " (the netlib reference BLAS: CPU matmuls run several "
                                                               "times slower than with OpenBLAS, e.g. Debian's "
                                                               "libopenblas0-openmp)"
                                                             : ""));
  prof.notes.push_back(fmt::format("threads_per_rank {} (torch::set_num_threads in every rank process; interop 1) on {} "
                                   "usable cores",
                                   threads, cores));
  progress.clear();
  return prof;
}

}  // namespace gaccum::profiler
