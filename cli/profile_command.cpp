// What: `gaccum-tune profile`: measures a workload on this machine (memory per micro_batch,
//       compute per micro-step, optimizer step, allreduce, gradient norms, overlap) and writes
//       profile.json (atomically), printing a human summary (profiler/summary.hpp) and, when
//       stderr is a terminal, a progress line.
// Why: every later stage (predict, tune, check) runs from this file alone (docs/DESIGN.md, Profiler).
// Exit codes: 0 ok; 2 bad input (flags, workload name, files, a model that raises or whose loss
// is not finite); 1 when the workload does not fit the memory cap even at the smallest
// micro_batch (InfeasibleError: the flags are valid, the request is impossible); 87 out of
// memory; 86/87/88 a rank process died / ran out of memory / hung, 88 also when the model makes
// no progress in this process for --timeout + 2 s (docs/exit-codes.md).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "cli/model_flags.hpp"
#include "cli/profile_cache.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/rank_env.hpp"
#include "core/parse.hpp"
#include "core/plan.hpp"
#include "core/profile.hpp"
#include "profiler/profile_session.hpp"
#include "profiler/progress.hpp"
#include "profiler/summary.hpp"

namespace gaccum::cli {
namespace {

struct ProfileOptions {
  std::string workload = "gpt-tiny";
  TorchScriptFlags ts;  // --torchscript, --input-shape, --input, --target
  std::string dtype = "float32";
  std::string precision = "fp32";
  std::string checkpointing = "none";
  std::string device = "auto";
  std::string micro_batches = "auto";
  std::string memory_cap = "90%";
  std::string device_memory = "96MiB";
  std::string max_micro_batch = "auto";
  std::string time_budget = "30s";
  std::string ranks = "auto";
  std::string sizes = "auto";
  int warmup = 2;
  int iters = 8;
  std::string ci_target = "2%";
  int max_iters = 200;
  bool require_quiet = false;
  int comm_warmup = 3;
  int comm_iters = 20;
  std::string threads_per_rank = "auto";
  std::string optimizer = "adam";
  std::string seed = "1";
  int grad_norm_batches = 8;
  std::string timeout = "60s";
  std::string output = "profile.json";
  bool quiet = false;
  bool device_memory_given = false;
  bool workload_given = false;
};

profiler::ProfileRequest to_request(const ProfileOptions& o) {
  profiler::ProfileRequest r;
  r.workload = workload_from_flags(o.workload_given ? o.workload : "", o.ts, o.workload);
  r.workload.dtype = o.dtype;
  (void)workloads::parse_dtype(o.dtype);
  if (workloads::parse_dtype(o.dtype) == torch::kBFloat16)
    throw InputError("--dtype: bfloat16 is a precision: use --precision bf16 (fp32 master weights and optimizer state)");
  const Precision precision = parse_precision(o.precision, "--precision");
  const Checkpointing checkpointing = parse_checkpointing(o.checkpointing, "--checkpointing");
  if (precision == Precision::bf16 && o.dtype != "float32")
    throw InputError(fmt::format("--precision bf16 with --dtype {}: bf16 sets the dtype; drop --dtype", o.dtype));
  if (precision == Precision::fp8)
    throw InputError("--precision fp8: LibTorch here has no fp8 GEMMs to profile; price fp8 with an analytic --spec "
                     "on a GPU with fp8 tensor cores (gaccum-tune devices)");
  if (precision == Precision::fp16)
    throw InputError("--precision fp16: the profiler does not run fp16 (it needs dynamic loss scaling); profile "
                     "--precision bf16, whose memory is the same (2-byte weights, gradients and activations)");
  if (checkpointing == Checkpointing::selective)
    throw InputError("--checkpointing selective: the profiler recomputes whole blocks only; profile --checkpointing "
                     "full (or price selective recomputation with an analytic --spec)");
  workloads::measure_plan_as(r.workload, precision, checkpointing);
  r.device = o.device;
  if (o.micro_batches != "auto") r.micro_batches = parse_count_list(o.micro_batches, "--micro-batches");
  r.memory_cap = parse_memory_cap(o.memory_cap, "--memory-cap");
  if (o.device_memory_given) r.device_memory = parse_bytes(o.device_memory, "--device-memory");
  if (o.max_micro_batch != "auto") r.max_micro_batch = parse_positive_count(o.max_micro_batch, "--max-micro-batch");
  r.time_budget = parse_seconds(o.time_budget, "--time-budget");
  if (r.time_budget <= 0) throw InputError("--time-budget: must be positive, e.g. 30s");
  if (o.ranks != "auto") r.ranks = parse_count_list(o.ranks, "--ranks");
  if (o.sizes != "auto") r.sizes = parse_size_sweep(o.sizes, "--sizes");
  if (o.warmup < 0) throw InputError("--warmup: must be >= 0");
  if (o.iters < 1) throw InputError("--iters: must be >= 1");
  if (o.comm_warmup < 0) throw InputError("--comm-warmup: must be >= 0");
  if (o.comm_iters < 1) throw InputError("--comm-iters: must be >= 1");
  if (o.max_iters < 1) throw InputError("--max-iters: must be >= 1");
  r.warmup = o.warmup;
  r.iters = o.iters;
  r.ci_target = parse_fraction(o.ci_target, "--ci-target");
  if (r.ci_target > 0 && r.ci_target < 0.001)
    throw InputError("--ci-target: below 0.1% no CPU timing converges; use e.g. 2% (or 0 for exactly --iters)");
  r.max_iters = std::max(o.max_iters, o.iters);
  r.require_quiet = o.require_quiet;
  r.comm_warmup = o.comm_warmup;
  r.comm_iters = o.comm_iters;
  if (o.threads_per_rank != "auto")
    r.threads_per_rank = static_cast<int>(
        parse_count_at_most(o.threads_per_rank, "--threads-per-rank", kMaxThreadsPerRank, kMaxThreadsPerRankText));
  r.optimizer = parse_libtorch_optimizer(o.optimizer, "--optimizer");
  r.seed = static_cast<std::uint64_t>(parse_count_or_zero(o.seed, "--seed"));
  if (o.grad_norm_batches < 2) throw InputError("--grad-norm-batches: must be >= 2");
  r.grad_norm_batches = o.grad_norm_batches;
  r.rank_timeout = parse_seconds(o.timeout, "--timeout");
  if (r.rank_timeout < 1) throw InputError("--timeout: must be at least 1s");
  if (o.output.empty()) throw InputError("--output: empty path");
  return r;
}

int run_profile_command(const ProfileOptions& o) {
  auto req = to_request(o);
  // Under torchrun / Slurm / mpirun this process is one rank of the job (runner/MULTINODE.md);
  // rank 0 writes the profile and prints the summary.
  const RankContext ctx = detect_rank_context();
  if (ctx.distributed() && ctx.launcher != "local" && ctx.world_size > 1) {
    profiler::Progress progress(ctx.rank == 0 && !o.quiet && ::isatty(STDERR_FILENO) == 1);
    profiler::run_profile_as_rank(req, ctx, progress, [&](const Profile& prof) {
      save_profile(prof, o.output);
      if (!o.quiet) {
        profiler::print_summary(prof, stdout);
        fmt::print("\nwrote {} (rank 0 of {}, {} launcher)\n", o.output, ctx.world_size, ctx.launcher);
      }
    });
    return kExitOk;
  }
  profiler::Progress progress(!o.quiet && ::isatty(STDERR_FILENO) == 1);
  auto prof = profiler::run_profile(req, progress);
  save_profile(prof, o.output);
  progress.clear();
  // The same profile where tune, check and validate --workload look for it (not a failure when
  // there is no cache directory or it cannot be written: -o is what was asked for).
  std::string cached;
  try {
    cached = cache_profile(prof, workloads::resolve_device(req.device), req.optimizer, req.device_memory);
  } catch (const Error& e) {
    std::cerr << fmt::format("gaccum-tune: profile not cached ({}); tune --profile {} reads it\n", e.what(), o.output);
  }
  if (!o.quiet) {
    profiler::print_summary(prof, stdout);
    fmt::print("\nwrote {}\n", o.output);
    if (!cached.empty())
      fmt::print("cached as {} (tune, check and validate on this workload reuse it)\n", cached);
  }
  return kExitOk;
}

}  // namespace

void add_profile_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ProfileOptions>();
  auto* sub = app.add_subcommand("profile",
                                 "Measure a workload's memory, compute and allreduce cost on this machine -> "
                                 "profile.json");
  auto* wl = sub->add_option("--workload", o->workload,
                             "Workload: a preset (see `gaccum-tune workloads`), a kind with overrides "
                             "(gpt:layers=4,d_model=256) or torchscript");
  add_torchscript_flags(sub, o->ts);
  sub->add_option("--dtype", o->dtype, "float32 or float64 (the fp32 precision's compute dtype)");
  sub->add_option("--checkpointing", o->checkpointing,
                  "none or full (gpt workloads: every transformer block recomputed in backward; memory and the "
                  "recompute time measured)");
  sub->add_option("--precision", o->precision,
                  "fp32 or bf16 (mixed: 2-byte weights, gradients and activations, fp32 master weights and optimizer "
                  "state; the loss in fp32)");
  sub->add_option("--device", o->device, "auto, cpu, cuda or cuda:N (auto: cuda:0 when a GPU answers)");
  sub->add_option("--micro-batches", o->micro_batches,
                  "auto (double until the cap/OOM/--max-micro-batch/time budget, bisect, add ~1.5x points) or a "
                  "list 1,2,4,...");
  sub->add_option("--memory-cap", o->memory_cap, "Peak-memory cap per rank: bytes (20GiB) or a share of the device (90%)");
  auto* dm = sub->add_option("--device-memory", o->device_memory,
                             "The CPU \"device\" size (like a GPU's memory; 96MiB fits gpt-tiny up to micro_batch 46 "
                             "at 90%); CUDA default: the GPU's memory");
  sub->add_option("--max-micro-batch", o->max_micro_batch, "Largest micro_batch the sweep tries (auto: 64 CPU, 1024 CUDA)");
  sub->add_option("--time-budget", o->time_budget,
                  "Soft budget: bounds the sweep's doubling (1/3) and the extra compute points; required points "
                  "always run");
  sub->add_option("--ranks", o->ranks,
                  "Rank counts, e.g. 1,2 (auto: CPU powers of 2 up to min(cores,4); CUDA up to the GPU count)");
  sub->add_option("--sizes", o->sizes, "Allreduce sweep, e.g. 4K-64M*4 (auto: 4K x4 up to max(16M, gradient bytes))");
  sub->add_option("--warmup", o->warmup,
                  "Untimed iterations per point before compute/optimizer/overlap timing (compute and optimizer go on "
                  "while the last warm-up was still >5% faster than the one before)");
  sub->add_option("--iters", o->iters,
                  "Timed iterations for compute/optimizer (the minimum per point when --ci-target > 0) and overlap");
  sub->add_option("--ci-target", o->ci_target,
                  "Compute/optimizer: repeat each point until its median's 95% confidence interval is within this "
                  "(e.g. 2%), --max-iters or the time budget; 0: exactly --iters");
  sub->add_option("--max-iters", o->max_iters, "Most timed iterations per compute/optimizer point (with --ci-target)");
  sub->add_flag("--require-quiet", o->require_quiet,
                "Write no profile when a phase was measured while other processes kept the cores busy (after "
                "one re-measurement), or points stayed inconsistent after theirs; exit 1 naming them");
  sub->add_option("--comm-warmup", o->comm_warmup, "Untimed allreduces per message size");
  sub->add_option("--comm-iters", o->comm_iters, "Timed allreduces per message size");
  sub->add_option("--threads-per-rank", o->threads_per_rank,
                  "torch::set_num_threads in every rank, 1 to 1024 (auto: max(1, cores / max(--ranks)); the runner uses "
                  "the same)");
  sub->add_option("--optimizer", o->optimizer, "adam, adamw or sgd (momentum 0.9): the optimizer state measured");
  sub->add_option("--seed", o->seed, "Seed of the synthetic data streams (0 or a positive integer)");
  sub->add_option("--grad-norm-batches", o->grad_norm_batches, "Independent micro-batches per size for gradient norms");
  sub->add_option("--timeout", o->timeout,
                  "Rendezvous/collective timeout inside rank groups, and the longest the model may make no progress "
                  "(a forward that does not return ends the profile after it + 2 s, exit 88); at most 36525d");
  sub->add_option("-o,--output", o->output, "Where to write profile.json (atomically)");
  sub->add_flag("-q,--quiet", o->quiet, "Print nothing but errors");
  sub->callback([o, wl, dm, &action] {
    o->workload_given = wl->count() > 0;
    o->device_memory_given = dm->count() > 0;
    action = [o] { return run_profile_command(*o); };
  });
}

}  // namespace gaccum::cli
