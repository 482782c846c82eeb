// What: `gaccum-tune validate`: a real distributed gradient-accumulation run of one
//       configuration (or the top picks of a tune result) on LibTorch c10d, with the checks
//       that make it trustworthy, the measured step time / throughput / memory / communication,
//       and, with --profile, the cost model's prediction beside each figure.
//       Locally it starts --world-size rank processes; under torchrun, Slurm or mpirun it joins
//       the job as one rank (rank 0 writes -o).
// Why: docs/DESIGN.md, Runner. Exit 0 when every check (and prediction) passes, 1 when one fails or a
//      rank failed, 2 for bad input.
#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli/model_flags.hpp"
#include "cli/pick_cache.hpp"
#include "cli/profile_cache.hpp"
#include "cli/command.hpp"
#include "cli/noise_scale_cache.hpp"
#include "core/atomic_file.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/json_fields.hpp"
#include "core/parse.hpp"
#include "core/rank_env.hpp"
#include "runner/report.hpp"
#include "runner/validate.hpp"
#include "workloads/workload.hpp"

namespace gaccum::cli {
namespace {

struct ValidateCliOptions {
  std::string workload = "gpt-tiny";
  TorchScriptFlags ts;            // --torchscript FILE (implies --workload torchscript) and its inputs
  std::string micro_batch = "4";
  std::string accum_steps = "8";
  std::string world_size = "2";
  std::string strategy = "overlap";
  std::string sharding = "none";
  std::string steps = "20";
  std::string warmup = "3";
  std::string profile;
  std::string timeout = "60s";
  std::string dtype = "float32";
  std::string device = "auto";
  std::string threads_per_rank;   // default: profile's, else cores / ranks
  std::string optimizer = "adam";
  std::string lr = "1e-3";
  std::string seed = "0";
  std::string dataset_size;
  std::string partial_window = "run";
  std::string pp = "1";
  std::string tp = "1";
  bool sequence_parallel = false;
  std::string virtual_stages = "1";
  std::string schedule;           // default: 1f1b, interleaved-1f1b with --virtual-stages above 1
  std::string from_tune;
  std::string top = "3";
  std::string tolerance = "10%";
  std::string output = "validation.json";
};

double parse_percent(const std::string& text, const char* flag) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  try {
    std::size_t pos = 0;
    double v = std::stod(t, &pos);
    if (pos == t.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("{}: invalid percentage '{}': expected e.g. 10%", flag, text));
}

// Which of the run's settings the command line gave (the rest may come from tune's pick).
struct GivenFlags {
  bool workload = false, world_size = false, micro_batch = false, accum_steps = false, strategy = false, sharding = false;
  // A setting of the run given: tune's cached pick is not run instead of it (a --sharding or
  // --strategy given beside a pick would otherwise be ignored, and the run not the one asked for).
  bool setting() const { return world_size || micro_batch || accum_steps || strategy || sharding; }
};

int run_validate(const ValidateCliOptions& c, const GivenFlags& given) {
  const bool world_size_given = given.world_size, workload_given = given.workload;
  runner::ValidateOptions o;
  auto& s = o.spec;
  s.workload = workload_from_flags(workload_given ? c.workload : "", c.ts, c.workload);
  s.workload.dtype = c.dtype;
  (void)workloads::parse_dtype(c.dtype);
  s.workload.device = c.device;
  s.micro_batch = parse_count_at_most(c.micro_batch, "--micro-batch");
  s.accum_steps = parse_count_at_most(c.accum_steps, "--accum-steps");
  s.world_size = parse_count_at_most(c.world_size, "--world-size");
  checked_global_batch(s.micro_batch, s.accum_steps, s.world_size, "--micro-batch x --accum-steps x --world-size");
  s.strategy = parse_strategy(c.strategy, "--strategy");
  s.sharding = parse_sharding(c.sharding, "--sharding");
  s.steps = parse_count_at_most(c.steps, "--steps");
  s.warmup = parse_count_or_zero(c.warmup, "--warmup");
  s.timeout = parse_seconds(c.timeout, "--timeout");
  s.threads_per_rank = c.threads_per_rank.empty()
                           ? 0
                           : static_cast<int>(parse_count_at_most(c.threads_per_rank, "--threads-per-rank",
                                                                  kMaxThreadsPerRank, kMaxThreadsPerRankText));
  s.optimizer = parse_libtorch_optimizer(c.optimizer, "--optimizer");
  try {
    std::size_t pos = 0;
    s.lr = std::stod(c.lr, &pos);
    if (pos != c.lr.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    throw InputError(fmt::format("--lr: invalid number '{}'", c.lr));
  }
  if (!(std::isfinite(s.lr) && s.lr > 0))
    throw InputError(fmt::format("--lr: invalid learning rate '{}': expected a positive finite number such as 1e-3", c.lr));
  s.seed = static_cast<std::uint64_t>(parse_count_or_zero(c.seed, "--seed"));
  s.dataset_size = c.dataset_size.empty() ? 0 : parse_positive_count(c.dataset_size, "--dataset-size");
  s.partial_window = runner::parse_partial_window(c.partial_window, "--partial-window");
  s.pp = parse_count_at_most(c.pp, "--pp");
  s.tp = parse_count_at_most(c.tp, "--tp");
  s.sequence_parallel = c.sequence_parallel;
  s.virtual_stages = parse_count_at_most(c.virtual_stages, "--virtual-stages");
  s.schedule = !c.schedule.empty() ? parse_schedule(c.schedule, "--schedule") : default_schedule(s.virtual_stages);
  if (s.model_parallel() && !given.strategy) s.strategy = Strategy::fused;  // one reduction per step
  if (s.model_parallel() && !c.profile.empty())
    throw InputError("--profile: a profile's cost model prices data-parallel plans; a tensor/pipeline run (--pp, --tp) "
                     "is compared with its schedule's simulation instead: drop --profile");
  if (s.model_parallel() && !c.from_tune.empty())
    throw InputError("--from-tune: validate runs a tune pick's data-parallel plan; give the pipeline run with "
                     "-b/-k/-p and --pp/--schedule instead");
  if (s.pp == 1 && (!c.schedule.empty() || s.virtual_stages > 1))
    throw InputError("--schedule/--virtual-stages: need --pp 2 or more");
  o.world_size_given = world_size_given;
  o.profile_path = c.profile;
  o.tolerance_pct = parse_percent(c.tolerance, "--tolerance");
  o.from_tune = c.from_tune;
  o.top = parse_positive_count(c.top, "--top");
  o.output = c.output;
  if (!c.from_tune.empty() && !workload_given && !c.ts.given()) {
    // The tune result names its workload; --workload overrides it.
    const auto result = parse_json_text(read_text_file(c.from_tune, "--from-tune"), c.from_tune);
    if (result.contains("source") && result["source"].is_object() && result["source"].value("kind", "") == "spec") {
      // A spec prices a model that does not exist here: nothing to run, but its launch can be gated.
      const std::string next = result.value("next_command", std::string());
      throw InputError(fmt::format(
          "--from-tune {}: the picks were priced from the spec {} (a model description, no weights or code to run "
          "here); gate the launch with `{}`, or validate a model you can run at the pick's micro_batch and "
          "accum_steps (--workload / --torchscript with -b/-k/-p)",
          c.from_tune, result["source"].value("path", std::string("?")),
          next.empty() ? std::string("gaccum-tune check --spec ... --cluster ...") : next));
    }
    const auto name = runner::tune_workload_name(result);
    if (!name.empty()) {
      auto cfg = workloads::parse_workload_arg(name);
      cfg.dtype = s.workload.dtype;
      cfg.device = s.workload.device;
      s.workload = cfg;
    }
  }
  const std::string workload_hash = workloads::make_workload([&] {
    auto cfg = s.workload;
    cfg.device = "cpu";
    return cfg;
  }())->identity().hash;  // unknown workloads and bad overrides fail here (exit 2)

  // The journey connected (cli/pick_cache.hpp): without -b/-k/-p or --from-tune, the pick of the
  // last tune on this workload; without --profile, the cached profile tune and check read. Their
  // predictions are printed beside the measurements but only --profile / --from-tune make them
  // part of the exit code.
  const bool local = !detect_rank_context(false).distributed();
  if (local && o.from_tune.empty() && !given.setting() && !s.model_parallel()) {
    if (const auto pick = find_tune_pick(workload_hash)) {
      o.from_tune = pick->string();
      o.top = 1;
      o.prediction_is_verdict = !o.profile_path.empty();
      std::cout << fmt::format("validate: the pick of the last tune on this workload ({}); -b/-k/-p, --strategy or --sharding "
                               "validate another\n",
                               pick->string());
    }
  }
  if (local && o.profile_path.empty() && o.from_tune.empty() && !s.model_parallel()) {
    auto cfg = s.workload;
    cfg.device = workloads::resolve_device(cfg.device);
    if (const auto cached = find_cached_profile(cfg, s.optimizer); !cached.empty()) {
      o.profile_path = cached;
      o.prediction_is_verdict = false;
      std::cout << fmt::format("validate: predictions from the cached profile {} (informational; --profile FILE makes "
                               "them a verdict)\n",
                               cached);
    }
  }
  std::cout.flush();

  auto outcome = runner::validate(o);
  if (!outcome.wrote_output) return outcome.exit_code;  // a rank other than 0 of a joined job
  for (const auto& run : outcome.runs) std::cout << runner::format_run(run);
  std::cout << fmt::format("wrote {}\n", o.output);
  std::vector<nlohmann::json> runs;
  for (const auto& run : outcome.runs) runs.push_back(runner::to_json(run));
  if (const auto noise = record_validated_noise_scales(workload_hash, runs))
    std::cout << fmt::format("noise scale recorded in {}: tune and check on this workload use it\n", noise->string());
  std::cout.flush();
  if (!outcome.failures.empty()) throw RankFailure(outcome.failures.front(), outcome.exit_code);
  return outcome.exit_code;
}

}  // namespace

void add_validate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ValidateCliOptions>();
  auto* sub = app.add_subcommand(
      "validate",
      "Run one configuration for real on c10d (local ranks, or one rank under torchrun/Slurm/mpirun): checks, "
      "timings, memory, and measured vs predicted");
  sub->add_option("--workload", o->workload, "Workload preset, kind with overrides (gpt:layers=4), or torchscript");
  add_torchscript_flags(sub, o->ts);
  sub->add_option("--micro-batch,-b", o->micro_batch, "micro_batch b: samples per forward/backward on one rank (b*k*p at most 2^40)");
  sub->add_option("--accum-steps,-k", o->accum_steps, "accum_steps k: micro-batches per optimizer step");
  auto* ws = sub->add_option("--world-size,-p", o->world_size,
                             "world_size p: ranks (local launch); under torchrun/Slurm/mpirun the job's size");
  sub->add_option("--strategy", o->strategy, "Gradient sync: overlap | fused | every-step");
  sub->add_option("--sharding", o->sharding,
                  "none (DDP) | zero1 | zero2 | zero3 | hsdp:G: what is sharded across the ranks (overlap / fused keep the "
                  "full gradient over the window, every-step reduce-scatters every micro-step)");
  auto* steps = sub->add_option("--steps", o->steps, "Timed optimizer steps (after the warm-up)");
  sub->add_option("--warmup", o->warmup, "Untimed steps first (>= 1; step 0 carries the gradient checks)");
  sub->add_option("--profile", o->profile, "profile.json: put the cost model's prediction beside each figure");
  sub->add_option("--tolerance", o->tolerance, "Largest |error| of a predicted figure that passes (e.g. 10%)");
  sub->add_option("--timeout", o->timeout,
                  "Rendezvous and collective timeout, and the longest a rank may make no progress (e.g. 60s)");
  sub->add_option("--dtype", o->dtype, "float32 | float64");
  sub->add_option("--device", o->device, "auto | cpu | cuda (NCCL on GPUs, Gloo on CPU)");
  sub->add_option("--threads-per-rank", o->threads_per_rank,
                  "torch threads per rank, 1 to 1024 (default: the profile's, else what a default profile of this host uses: cores / max(ranks here, its largest rank count))");
  sub->add_option("--optimizer", o->optimizer, "adam | adamw | sgd");
  sub->add_option("--lr", o->lr, "Learning rate");
  sub->add_option("--seed", o->seed, "Data stream seed");
  auto* ds = sub->add_option("--dataset-size", o->dataset_size,
                             "Samples in the dataset: one epoch, then the last partial window (sets the steps)");
  sub->add_option("--partial-window", o->partial_window,
                  "Last partial window: run (normalised by its real samples/tokens) | drop");
  sub->add_option("--pp", o->pp,
                  "Pipeline stages (built-in gpt): world_size = pp x tp x dp, ranks pp-outermost; accum_steps are the "
                  "microbatches");
  sub->add_option("--virtual-stages", o->virtual_stages, "Model chunks per pipeline rank (interleaved-1f1b)");
  sub->add_option("--tp", o->tp,
                  "Tensor-parallel ranks per stage (built-in gpt; Megatron-LM's column/row-parallel blocks): "
                  "world_size = pp x tp x dp");
  sub->add_flag("--sequence-parallel", o->sequence_parallel,
                "With --tp: the sequence split between blocks (reduce-scatter / all-gather instead of allreduces)");
  sub->add_option("--schedule", o->schedule, "Pipeline schedule: gpipe | 1f1b | interleaved-1f1b (default 1f1b)");
  sub->add_option("--from-tune", o->from_tune, "A tune result.json: validate its top picks");
  sub->add_option("--top", o->top, "How many picks of --from-tune to validate");
  sub->add_option("-o,--output", o->output, "validation.json to write");
  ds->excludes(steps);
  sub->callback([o, ws, sub, &action] {
    GivenFlags given;
    given.world_size = ws->count() > 0;
    given.workload = sub->get_option("--workload")->count() > 0;
    given.micro_batch = sub->get_option("--micro-batch")->count() > 0;
    given.accum_steps = sub->get_option("--accum-steps")->count() > 0;
    given.strategy = sub->get_option("--strategy")->count() > 0;
    given.sharding = sub->get_option("--sharding")->count() > 0;
    action = [o, given] { return run_validate(*o, given); };
  });
}

}  // namespace gaccum::cli
