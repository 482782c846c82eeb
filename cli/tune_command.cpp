// What: `gaccum-tune tune`: the main job. Builds a cost model from a profile (--profile), an
//       analytic spec (--spec with --cluster), or a workload it profiles first and caches
//       (--workload, default gpt-tiny); searches every (micro_batch, accum_steps, world_size,
//       strategy) for the global batch target under the memory cap; prints a ranked table with a
//       recommendation and writes result.csv, result.json, result.md and report.html to --out.
// Why: one command answers "which b, k and p?" with reasons; the tuner (tuner/) and printers
//      (reports/) do the work, this file only turns flags into a TuneRequest and files.
//
// Defaults (also in --help):
//   --workload gpt-tiny      when neither --profile nor --spec is given
//   --global-batch 512       the memory cap binds on the CPU demo: gpt-tiny's micro_batch is
//                            bounded by the profile's device memory, so B needs accumulation
//   --max-world-size         cluster size; CPU profile: cores / threads per rank (a rank stands
//                            for a GPU, at most one rank per core group); GPU profile: the largest
//                            rank count it measured
//   --memory-cap 100%  --margin 10%  --max-accum-steps 64  --strategy auto  (cap and margin as in
//   `check`: the device, less a 10% safety margin, which is also the profiler's 90% sweep cap)
//   --objective throughput  --optimizer adam  --top 10  --out gaccum-out

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/deepspeed_tune.hpp"
#include "check/framework_configs.hpp"
#include "check/framework_emit.hpp"
#include "cli/pick_cache.hpp"
#include "cli/command.hpp"
#include "cli/model_flags.hpp"
#include "cli/layout_flags.hpp"
#include "cli/model_source.hpp"
#include "cli/noise_scale_cache.hpp"
#include "cli/profile_cache.hpp"
#include "cli/profile_source.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/profile.hpp"
#include "core/text_lines.hpp"
#include "core/version.hpp"
#include "core/utc_time.hpp"
#include "model/parallel_plan.hpp"
#include "model/spec_model.hpp"
#include "reports/csv_printer.hpp"
#include "reports/html_printer.hpp"
#include "reports/json_printer.hpp"
#include "reports/markdown_printer.hpp"
#include "reports/output_dir.hpp"
#include "reports/row.hpp"
#include "reports/terminal_printer.hpp"
#include "tuner/tuner.hpp"
#include "workloads/workload.hpp"

namespace gaccum::cli {
namespace {

namespace fs = std::filesystem;

inline constexpr const char* kDefaultWorkload = "gpt-tiny";
inline constexpr Count kDefaultGlobalBatch = 512;
const std::vector<std::string> kOutputNames = {"result.csv", "result.json", "result.md", "report.html"};

struct TuneOptions {
  ModelSourceFlags source;  // cli/model_source.hpp; no source: the cached profile of kDefaultWorkload
  std::string global_batch;        // default kDefaultGlobalBatch
  std::string global_batch_range;  // "256-1024"
  std::string global_batch_tokens; // "1M": the global batch in tokens (also --global-batch "1M tokens")
  std::string max_world_size;      // default: see the file comment
  std::string world_sizes;         // "1,2,4,8"
  std::string memory_cap = "100%";
  std::string margin = "10%";
  std::string max_accum_steps = "64";
  std::string strategy = "auto";
  std::string framework;  // "": any (each plan labelled with the frameworks that run it)
  std::string sharding = "auto";       // auto: what the model offers (spec: none, zero1-3, hsdp:GPUs per node)
  std::string precision = "auto";
  std::string checkpointing = "auto";
  bool force_memory_cap = false;
  std::string objective = "throughput";
  std::string lr_ref;  // "3e-4@256"
  std::string optimizer = "adam";
  std::string noise_scale;           // B_noise override, samples
  std::string dataset_size;          // samples per epoch (warm-up in steps)
  std::string cost_per_device_hour;  // default: the cluster's price when given
  std::string top = "10";
  std::string out = "gaccum-out";
  bool extrapolate = false;
  bool force = false;
  bool json = false;
  std::string command;  // reconstructed for the reports
  std::string deepspeed_config;  // --deepspeed-config: pins what it fixes, written back completed
  LayoutFlags layout;            // --tp, --pp, --cp, --virtual-stages, --schedule, --sequence-parallel, --stage-layers
  FrameworkConfigFlags fw_config;  // a framework's config: pins what it fixes, written back completed
  std::string emit;                // --emit hf,accelerate,...: the pick in the frameworks' own files
};

// ---- --megatron-args / --nemo-config / --torchtitan-config (check/framework_configs.hpp) ---------

std::optional<check::FrameworkConfig> load_framework_config(const TuneOptions& o) {
  const auto& f = o.fw_config;
  const int given = int(!f.megatron_args.empty()) + int(!f.nemo_config.empty()) + int(!f.torchtitan_config.empty()) +
                    int(!o.deepspeed_config.empty());
  if (given > 1)
    throw InputError("--megatron-args, --nemo-config, --torchtitan-config and --deepspeed-config: give the one config "
                     "the job launches with");
  if (!f.megatron_args.empty()) return check::load_megatron_args(f.megatron_args);
  if (!f.nemo_config.empty()) return check::load_nemo_config(f.nemo_config);
  if (!f.torchtitan_config.empty()) return check::load_torchtitan_config(f.torchtitan_config);
  return std::nullopt;
}

// What the file fixes joins the request (a flag given wins): the layout, the global batch, the
// world size, the plan and the framework; tune then searches micro_batch and microbatches.
void apply_framework_config(const TuneOptions& o, const check::FrameworkConfig& fc, tuner::TuneRequest& r) {
  const auto& in = fc.inputs;
  if (!o.layout.given()) {
    ParallelLayout l;
    if (in.tp) l.tp = *in.tp;
    if (in.pp) l.pp = *in.pp;
    if (in.cp) l.cp = *in.cp;
    if (in.virtual_stages) l.virtual_stages = *in.virtual_stages;
    if (in.schedule) l.schedule = *in.schedule;
    if (in.sequence_parallel) l.sequence_parallel = *in.sequence_parallel;
    if (in.first_stage_layers) l.first_stage_layers = *in.first_stage_layers;
    if (in.last_stage_layers) l.last_stage_layers = *in.last_stage_layers;
    if (in.stage_layer_counts) l.stage_layer_counts = *in.stage_layer_counts;
    r.layouts = {l};
  }
  const bool batch_flag = !o.global_batch.empty() || !o.global_batch_range.empty() || !o.global_batch_tokens.empty();
  if (!batch_flag) {
    if (in.global_batch) {
      r.global_batch_min = r.global_batch_max = *in.global_batch;
    } else if (in.micro_batch && in.world_size) {
      // torchtitan without global_batch_size: local_batch_size on each data-parallel rank.
      const Count mp = r.layouts.empty() ? 1 : r.layouts.front().model_parallel();
      r.global_batch_min = r.global_batch_max = *in.micro_batch * (in.accum_steps ? *in.accum_steps : 1) *
                                                (*in.world_size / std::max<Count>(1, mp));
    }
  }
  if (in.world_size && o.world_sizes.empty() && o.max_world_size.empty()) r.world_sizes = {*in.world_size};
  if (in.precision && o.precision == "auto") r.precision = *in.precision;
  if (in.checkpointing && o.checkpointing == "auto") r.checkpointing = *in.checkpointing;
  if (in.recomputed_fraction && o.checkpointing == "auto")
    r.notes.push_back(fmt::format("{}: recomputes {:.0f}% of the layers ({}); the search prices full recompute of every "
                                  "layer, and the completed file says so (check prices the partial recompute)",
                                  fc.path, 100 * *in.recomputed_fraction, in.recomputed_fraction.source));
  if (in.sharding && o.sharding == "auto") r.sharding = *in.sharding;
  // The strategy follows the layout (a pipeline reduces once; torchtitan without one every
  // micro-batch): pinned from the file only with the file's own layout.
  if (in.strategy && o.strategy == "auto" && !o.layout.given()) r.strategy = *in.strategy;
  if (o.framework.empty()) {
    r.framework = fc.framework;
    r.framework_source = fc.path;
  }
  r.notes.push_back(fmt::format("{}: the layout, batch and plan it sets pin the search; {} in --out is the file "
                                "completed with the pick",
                                fc.path, check::completed_name(fc.kind)));
}

// ---- model ---------------------------------------------------------------------------------
// The source resolution (profile / spec / cached profile of a workload) is shared with predict and
// check: cli/model_source.hpp.

// The gradient dtype a framework's file sets (Megatron-LM --grad-reduce-in-bf16, torchtitan
// mixed_precision_reduce), over its framework's default.
void set_grad_dtype(ModelSource& src, const std::optional<check::FrameworkConfig>& fc) {
  if (!fc || !fc->inputs.grad_reduce_in_fp32) return;
  src.grad_reduce_in_fp32 = *fc->inputs.grad_reduce_in_fp32;
  src.grad_source = fc->inputs.grad_reduce_in_fp32.source;
}

LoadedModel load_model(const TuneOptions& o, const std::optional<check::FrameworkConfig>& fc = std::nullopt) {
  // The job's framework prices the loss it computes (model/spec_model.hpp apply_framework_defaults).
  std::optional<Framework> fw;
  std::string fw_from;
  if (!o.framework.empty()) fw = parse_framework(o.framework, "--framework"), fw_from = "flag --framework";
  else if (fc) fw = fc->framework, fw_from = fc->path;
  const bool no_source = o.source.spec_file().empty() && o.source.profile.empty() && o.source.workload.empty() && !o.source.ts.given();
  if (fc && no_source && fc->model) {
    // The model the framework config describes (Megatron arguments with --vocab-size, NeMo with
    // model.vocab_size).
    ModelSource src;
    src.spec_object = *fc->model;
    src.spec_label = fc->path;
    src.cluster = o.source.cluster;
    if (!o.source.mfu.empty()) src.mfu = parse_fraction(o.source.mfu, "--mfu");
    src.framework = fw;
    src.framework_source = fw_from;
    set_grad_dtype(src, fc);
    return load_model_source(src);
  }
  if (fc && no_source && !fc->builtin_model.empty()) {
    ModelSource src;
    src.spec = fc->builtin_model;
    src.cluster = o.source.cluster;
    if (!o.source.mfu.empty()) src.mfu = parse_fraction(o.source.mfu, "--mfu");
    src.framework = fw;
    src.framework_source = fw_from;
    set_grad_dtype(src, fc);
    return load_model_source(src);
  }
  auto src = model_source_from_flags(o.source, parse_optimizer(o.optimizer, "--optimizer"), kDefaultWorkload);
  if (o.precision != "auto") src.precision = parse_precision(o.precision, "--precision");
  if (o.checkpointing != "auto") src.checkpointing = parse_checkpointing(o.checkpointing, "--checkpointing");
  src.framework = fw;
  src.framework_source = fw_from;
  set_grad_dtype(src, fc);
  return load_model_source(src);
}

// The most configurations one `tune` writes (result.json, report.html and result.csv hold every
// row): measured 167,550 rows at 1.3 GB peak and 4.4 s on the 2-core machine.
constexpr std::size_t kMaxTuneCandidates = 200'000;

// A token count as LLM papers give batches: "4M" = 4 x 2^20 = 4194304 tokens (K, M, G binary,
// as "Llama 2: 4M tokens" = 1024 x 4096), "1.5M", or a plain integer; an optional "tokens" word.
Count parse_token_count(const std::string& text, const std::string& flag) {
  std::string t;
  for (char ch : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* word : {"tokens", "token", "tok"})
    if (t.size() >= std::strlen(word) && t.compare(t.size() - std::strlen(word), std::string::npos, word) == 0) {
      t.resize(t.size() - std::strlen(word));
      break;
    }
  while (!t.empty() && (t.back() == ' ' || t.back() == '-' || t.back() == '_')) t.pop_back();
  double mult = 1;
  if (!t.empty() && std::string_view("kmg").find(t.back()) != std::string_view::npos) {
    mult = t.back() == 'k' ? 1024.0 : t.back() == 'm' ? 1048576.0 : 1073741824.0;
    t.pop_back();
  }
  char* end = nullptr;
  const double v = t.empty() ? -1 : std::strtod(t.c_str(), &end);
  const double n = v * mult;
  if (t.empty() || end != t.c_str() + t.size() || !(n >= 1) || n > double(kMaxCount) * 65536.0 || n != std::floor(n))
    throw InputError(fmt::format("{}: invalid token count '{}': expected a whole number of tokens such as 1M tokens "
                                 "(K, M, G = 2^10, 2^20, 2^30) or 4194304",
                                 flag, text));
  return Count(n);
}

tuner::TuneRequest make_request(const TuneOptions& o, const LoadedModel& l) {
  tuner::TuneRequest r;
  if (!o.global_batch.empty() && !o.global_batch_range.empty())
    throw InputError("pass --global-batch or --global-batch-range, not both");
  // The global batch in tokens: --global-batch-tokens N, or --global-batch "N tokens".
  std::string token_flag, token_text = o.global_batch_tokens;
  if (!token_text.empty()) {
    token_flag = "--global-batch-tokens";
    if (!o.global_batch.empty() || !o.global_batch_range.empty())
      throw InputError("--global-batch-tokens: pass it or --global-batch / --global-batch-range, not both");
  } else if (o.global_batch.find_first_of("tT") != std::string::npos) {
    token_flag = "--global-batch";
    token_text = o.global_batch;
  }
  if (!token_flag.empty()) {
    const Count tokens = parse_token_count(token_text, token_flag);
    r.global_batch_min = r.global_batch_max = kDefaultGlobalBatch;  // until the model says its tokens per sample
    if (l.model) {
      const double tps = l.model->info().tokens_per_sample;
      if (!(tps > 0))
        throw InputError(fmt::format("{}: '{}' is a batch in tokens, but this model has no tokens per sample (not a "
                                     "sequence model); give the global batch in samples (--global-batch N)",
                                     token_flag, token_text));
      const double exact = double(tokens) / tps;
      const Count samples = std::max<Count>(1, Count(std::llround(exact)));
      if (samples > kMaxCount)
        throw InputError(fmt::format("{}: {} tokens is {} samples, above the largest accepted global batch {}",
                                     token_flag, tokens, samples, kMaxCountText));
      r.global_batch_min = r.global_batch_max = samples;
      r.notes.push_back(fmt::format(
          "global_batch {} samples from {} {}: {} tokens / {:g} tokens per sample{}", samples, token_flag, token_text,
          tokens, tps,
          double(samples) == exact
              ? std::string()
              : fmt::format(" = {:.2f}, rounded to {} samples ({:.0f} tokens per step)", exact, samples, double(samples) * tps)));
    }
  } else if (!o.global_batch_range.empty()) {
    auto [lo, hi] = parse_count_range(o.global_batch_range, "--global-batch-range");
    if (hi > kMaxCount)
      throw InputError(fmt::format("--global-batch-range: {} is above the largest accepted value {}", hi, kMaxCountText));
    r.global_batch_min = lo, r.global_batch_max = hi;
  } else {
    r.global_batch_min = r.global_batch_max =
        o.global_batch.empty() ? kDefaultGlobalBatch : parse_count_at_most(o.global_batch, "--global-batch");
  }
  if (!o.world_sizes.empty() && !o.max_world_size.empty())
    throw InputError("pass --world-sizes or --max-world-size, not both");
  if (!o.world_sizes.empty()) {
    r.world_sizes = parse_count_list(o.world_sizes, "--world-sizes");
    for (Count p : r.world_sizes)
      if (p > kMaxCount)
        throw InputError(fmt::format("--world-sizes: {} is above the largest accepted value {}", p, kMaxCountText));
  } else {
    const Count n = o.max_world_size.empty() ? default_max_world_size(l)
                                             : parse_positive_count(o.max_world_size, "--max-world-size");
    if (n > 65536) throw InputError("--max-world-size: at most 65536 (use --world-sizes for a sparse list)");
    r.world_sizes = tuner::world_sizes_up_to(n);
  }
  r.memory_cap = parse_memory_cap(o.memory_cap, "--memory-cap");
  r.margin = parse_fraction(o.margin, "--margin");
  r.max_accum_steps = parse_count_at_most(o.max_accum_steps, "--max-accum-steps");
  if (o.strategy != "auto") r.strategy = parse_strategy(o.strategy, "--strategy");
  if (!o.framework.empty()) {
    r.framework = parse_framework(o.framework, "--framework");
    r.framework_source = "flag --framework";
  }
  if (o.sharding != "auto") r.sharding = parse_sharding(o.sharding, "--sharding");
  if (o.precision != "auto") r.precision = parse_precision(o.precision, "--precision");
  if (o.checkpointing != "auto") r.checkpointing = parse_checkpointing(o.checkpointing, "--checkpointing");
  // The layouts (the model's candidates for `auto`): known once the model is loaded.
  if (l.model) r.layouts = layouts_from_flags(o.layout, l.model->info().plans.layout_candidates);
  r.allow_cap_above_device = o.force_memory_cap;
  r.allow_extrapolation = o.extrapolate;
  r.objective = tuner::parse_objective(o.objective, "--objective");
  if (!o.noise_scale.empty()) r.noise_scale = double(parse_positive_count(o.noise_scale, "--noise-scale"));
  if (!o.cost_per_device_hour.empty()) {
    char* end = nullptr;
    r.cost_per_device_hour = std::strtod(o.cost_per_device_hour.c_str(), &end);
    if (end != o.cost_per_device_hour.c_str() + o.cost_per_device_hour.size() || !(r.cost_per_device_hour >= 0))
      throw InputError(fmt::format("--cost-per-device-hour: invalid value '{}': expected a non-negative number",
                                   o.cost_per_device_hour));
  } else if (l.cluster && l.cluster->cost_per_device_hour) {
    r.cost_per_device_hour = *l.cluster->cost_per_device_hour;
  }
  if (!o.lr_ref.empty()) r.lr_reference = tuner::parse_lr_reference(o.lr_ref, "--lr-ref");
  r.optimizer = parse_optimizer(o.optimizer, "--optimizer");
  if (!o.dataset_size.empty()) r.dataset_size = parse_positive_count(o.dataset_size, "--dataset-size");
  r.top = parse_positive_count(o.top, "--top");
  r.max_candidates = kMaxTuneCandidates;
  return r;
}

// ---- --deepspeed-config (check/deepspeed_tune.hpp) -------------------------------------------
inline constexpr const char* kDeepSpeedOutput = "deepspeed_config.json";

struct DeepSpeedInput {
  check::DeepSpeedConfig config;
  check::DeepSpeedTunePins pins;
  nlohmann::ordered_json document;
  bool precision_priced = true;  // false: an assumed "auto" precision the profile cannot price (fp32 instead)
};

std::optional<DeepSpeedInput> load_deepspeed(const TuneOptions& o) {
  if (o.deepspeed_config.empty()) return std::nullopt;
  DeepSpeedInput d;
  d.config = check::load_deepspeed_config(o.deepspeed_config);
  for (const auto& w : d.config.warnings)
    if (w.find("\"auto\"") == std::string::npos) std::cerr << "gaccum-tune: warning: " << w << "\n";
  d.pins = check::deepspeed_tune_pins(d.config);
  d.document = check::load_deepspeed_document(o.deepspeed_config);
  return d;
}

// What the config fixes joins the request; a flag that says otherwise is an InputError naming both.
void apply_deepspeed(const TuneOptions& o, DeepSpeedInput& d, tuner::TuneRequest& r,
                     const model::ModelInfo* info) {
  const auto& p = d.pins;
  const std::string& path = d.config.path;
  auto clash = [&](const char* flag, const std::string& given, const std::string& field, const std::string& value) {
    const bool batch_field = field.find("batch") != std::string::npos;  // these may be "auto"
    throw InputError(fmt::format("{} {} contradicts {}: {} {}: drop the flag or change the field{}", flag, given, path,
                                 field, value, batch_field ? " (\"auto\" lets tune pick it)" : ""));
  };
  if (p.global_batch) {
    if (!o.global_batch_range.empty()) clash("--global-batch-range", o.global_batch_range, "train_batch_size", std::to_string(*p.global_batch));
    if (!o.global_batch.empty() && r.global_batch_min != *p.global_batch)
      clash("--global-batch", o.global_batch, "train_batch_size", std::to_string(*p.global_batch));
    r.global_batch_min = r.global_batch_max = *p.global_batch;
  }
  r.micro_batch = p.micro_batch;
  r.accum_steps = p.accum_steps;
  if (p.accum_steps) r.max_accum_steps = std::max(r.max_accum_steps, *p.accum_steps);
  if (p.world_size) {
    if ((!o.world_sizes.empty() || !o.max_world_size.empty()) &&
        std::find(r.world_sizes.begin(), r.world_sizes.end(), *p.world_size) == r.world_sizes.end())
      clash(o.world_sizes.empty() ? "--max-world-size" : "--world-sizes",
            o.world_sizes.empty() ? o.max_world_size : o.world_sizes,
            "train_batch_size / (train_micro_batch_size_per_gpu x gradient_accumulation_steps) = world_size",
            std::to_string(*p.world_size));
    r.world_sizes = {*p.world_size};
  }
  const auto& plan = p.plan;
  if (o.strategy != "auto" && r.strategy != plan.strategy)
    clash("--strategy", o.strategy,
          fmt::format("zero_optimization.stage {}{}", d.config.zero_stage,
                      d.config.overlap_comm ? " with overlap_comm" : ""),
          fmt::format("runs strategy {}", to_string(plan.strategy)));
  r.strategy = plan.strategy;
  if (r.framework && *r.framework != Framework::deepspeed)
    clash("--framework", o.framework, "the DeepSpeed config", "is run by DeepSpeed");
  r.framework = Framework::deepspeed;
  r.framework_source = "deepspeed " + path;
  if (o.sharding != "auto" && !(r.sharding && r.sharding->sharding == plan.sharding.sharding))
    clash("--sharding", o.sharding, "zero_optimization.stage", std::to_string(d.config.zero_stage));
  r.sharding = plan.sharding;
  if (p.precision && !(p.precision_assumed && o.precision != "auto")) {  // a flag overrides an assumed "auto"
    if (o.precision != "auto" && r.precision != p.precision)
      clash("--precision", o.precision, "bf16/fp16.enabled", std::string(to_string(*p.precision)));
    r.precision = p.precision;
  }
  if (o.checkpointing != "auto" && r.checkpointing != p.checkpointing)
    clash("--checkpointing", o.checkpointing, "activation_checkpointing", std::string(to_string(p.checkpointing)));
  r.checkpointing = p.checkpointing;
  r.offload_optimizer = p.offload_optimizer;
  r.offload_params = p.offload_params;
  std::string pinned;
  if (p.global_batch) pinned += fmt::format("global_batch {} (train_batch_size), ", *p.global_batch);
  if (p.micro_batch) pinned += fmt::format("micro_batch {} (train_micro_batch_size_per_gpu), ", *p.micro_batch);
  if (p.accum_steps) pinned += fmt::format("accum_steps {} (gradient_accumulation_steps), ", *p.accum_steps);
  if (p.world_size) pinned += fmt::format("world_size {} (train / (micro x gas)), ", *p.world_size);
  // The plan must be one the model prices; an assumed "auto" precision it cannot price falls back.
  auto check_offered = [&](const model::ModelInfo& mi) {
    const auto& plans = mi.plans;
    const bool offered = !r.precision || std::find(plans.precisions.begin(), plans.precisions.end(), *r.precision) !=
                                             plans.precisions.end();
    if (!offered && p.precision_assumed && r.precision == p.precision) {
      // "auto" assumed a 16-bit run the profile cannot price: the run is priced at what it measured.
      r.notes.push_back(fmt::format("{}: precision {} was assumed from \"auto\", but {}: searched at {} instead", path,
                                    to_string(*r.precision), plans.limits, to_string(plans.own_precision())));
      r.precision = plans.own_precision();
      d.precision_priced = false;
    } else if (!offered)
      throw InputError(fmt::format("{}: precision {} ({}) is not available for this model: {}", path,
                                   to_string(*r.precision), p.precision_source, plans.limits));
    if (std::find(plans.checkpointings.begin(), plans.checkpointings.end(), p.checkpointing) == plans.checkpointings.end())
      throw InputError(fmt::format("{}: checkpointing {} ({}) is not available for this model: {}", path,
                                   to_string(p.checkpointing), p.checkpointing_source, plans.limits));
  };
  if (info) check_offered(*info);
  r.notes.push_back(fmt::format(
      "{} pins {}sharding {} (zero_optimization.stage {}), strategy {}, precision {}, checkpointing {}{}; \"auto\" or "
      "absent fields were searched",
      path, pinned, to_string(plan.sharding), d.config.zero_stage, to_string(plan.strategy),
      r.precision ? std::string(to_string(*r.precision)) : std::string("searched (\"auto\")"),
      to_string(p.checkpointing), p.offload_optimizer || p.offload_params ? ", offload (state off the device)" : ""));
}

// ---- next command ---------------------------------------------------------------------------
// What to run on the pick, runnable as printed: a profiled model is run for real by `validate
// --from-tune` (it reads the workload and the profile from result.json); a spec cannot run
// here, so the pick goes to the pre-launch gate `check` with its flags (or the completed
// DeepSpeed config).

// The spec flags of the tune command line, for check: --spec or --model-config, with --seq-len.
std::string spec_flags(const TuneOptions& o) {
  const auto& f = o.source;
  if (f.spec_file().empty()) return "";
  std::string out = (f.model_config.empty() ? " --spec " : " --model-config ") + shell_word(f.spec_file());
  if (!f.seq_len.empty()) out += " --seq-len " + shell_word(f.seq_len);
  return out;
}

std::string next_command(const TuneOptions& o, const tuner::TuneResult& r, const fs::path& out, bool deepspeed) {
  const model::Config& c = r.best().config();
  if (!o.source.spec_file().empty()) {
    std::string cmd = "gaccum-tune check";
    if (deepspeed)
      cmd += " --deepspeed-config " + shell_word((out / kDeepSpeedOutput).string());
    cmd += spec_flags(o) + " --cluster " + shell_word(o.source.cluster);
    if (!o.source.mfu.empty()) cmd += " --mfu " + shell_word(o.source.mfu);
    if (deepspeed) return cmd + fmt::format(" --world-size {}", c.world_size);
    cmd += fmt::format(" -b {} -k {} -p {} --strategy {} --sharding {}", c.micro_batch, c.accum_steps, c.world_size,
                       to_string(c.strategy), to_string(c.sharding));
    if (c.precision) cmd += fmt::format(" --precision {}", to_string(*c.precision));
    if (c.checkpointing) cmd += fmt::format(" --checkpointing {}", to_string(*c.checkpointing));
    const ParallelLayout& l = c.layout;
    if (l.tp > 1) cmd += fmt::format(" --tp {}", l.tp);
    if (l.sequence_parallel) cmd += " --sequence-parallel";
    if (l.pp > 1) cmd += fmt::format(" --pp {} --schedule {}", l.pp, to_string(l.schedule));
    if (l.pp > 1 && l.virtual_stages > 1) cmd += fmt::format(" --virtual-stages {}", l.virtual_stages);
    if (!l.stage_layer_counts.empty())
      cmd += " --stage-layers " + model::stage_layers_text(l.stage_layer_counts);
    else if (l.first_stage_layers > 0 || l.last_stage_layers > 0)
      cmd += fmt::format(" --stage-layers {},...,{}", l.first_stage_layers, l.last_stage_layers);
    if (l.cp > 1) cmd += fmt::format(" --cp {}", l.cp);
    if (r.request.framework) cmd += fmt::format(" --framework {}", to_string(*r.request.framework));
    return cmd;
  }
  std::string cmd = "gaccum-tune validate --from-tune " + shell_word((out / "result.json").string()) + " --top 1";
  if (o.source.ts.given()) {
    cmd += " --torchscript " + shell_word(o.source.ts.file);
    if (!o.source.ts.input_shape.empty()) cmd += " --input-shape " + shell_word(o.source.ts.input_shape);
    for (const auto& in : o.source.ts.inputs) cmd += " --input " + shell_word(in);
    if (!o.source.ts.target.empty()) cmd += " --target " + shell_word(o.source.ts.target);
  }
  return cmd;
}

// ---- --emit (check/framework_emit.hpp) ---------------------------------------------------------

// The model flags `check` needs beside an emitted file: what tune priced (spec and cluster, or
// the profile / workload / TorchScript model).
std::string check_model_flags(const TuneOptions& o) {
  std::string cmd;
  if (!o.source.spec_file().empty()) {
    cmd = spec_flags(o);
    if (!o.source.mfu.empty()) cmd += " --mfu " + shell_word(o.source.mfu);
  } else if (!o.source.profile.empty()) {
    cmd = " --profile " + shell_word(o.source.profile);
  } else if (o.source.ts.given()) {
    cmd = " --torchscript " + shell_word(o.source.ts.file);
    if (!o.source.ts.input_shape.empty()) cmd += " --input-shape " + shell_word(o.source.ts.input_shape);
    for (const auto& in : o.source.ts.inputs) cmd += " --input " + shell_word(in);
    if (!o.source.ts.target.empty()) cmd += " --target " + shell_word(o.source.ts.target);
  } else {
    cmd = " --workload " + shell_word(o.source.workload.empty() ? std::string(kDefaultWorkload) : o.source.workload);
  }
  if (o.source.spec_file().empty() && !o.source.device_memory.empty())
    cmd += " --device-memory " + shell_word(o.source.device_memory);
  if (!o.source.cluster.empty()) cmd += " --cluster " + shell_word(o.source.cluster);
  return cmd;
}

// For each format, the best ranked plan it runs (tune's pick when it runs there), as written.
struct EmitChoice {
  check::EmitFormat format;
  check::EmitPlan plan;
  const tuner::TuneResult* from = nullptr;  // the ranking it came from (tune's, or its framework's own)
  std::size_t position = 0;                 // in that ranking (0: its pick)
  std::string pick_refusal;                 // why tune's pick itself does not run there
};

// The search whose ranking a format's file takes its plan from: tune's own, or, for a framework
// that prices a plan differently from plain PyTorch (Megatron-LM's vocab-parallel loss and fp32
// gradients, torchtitan's fp32 gradient reduction: model/spec_model.hpp apply_framework_defaults)
// when --framework did not name one, the same search run as that framework: the file then holds
// the best plan under the costs the job will have, and `check` of it prices what tune priced.
struct EmitSearches {
  const tuner::TuneResult* tune = nullptr;
  std::map<Framework, tuner::TuneResult> own;
  std::map<Framework, std::string> refused;  // the framework's search found no plan: why
};
std::optional<Framework> own_search_framework(check::EmitFormat f, const TuneOptions& o) {
  // (A DeepSpeed config pins the framework: its plans are DeepSpeed's, priced as they are.)
  if (!o.framework.empty() || !o.deepspeed_config.empty() || o.source.spec_file().empty()) return std::nullopt;
  const std::optional<Framework> fw = f == check::EmitFormat::megatron     ? std::optional(Framework::megatron)
                                      : f == check::EmitFormat::torchtitan ? std::optional(Framework::torchtitan)
                                                                           : std::nullopt;
  if (!fw) return std::nullopt;
  const auto& own = model::kFrameworksWithOwnCosts;
  return std::find(own.begin(), own.end(), *fw) != own.end() ? fw : std::nullopt;
}

// `skipped`: with --emit all, the formats no ranked plan runs on and why (named formats are an
// InputError instead).
std::vector<EmitChoice> choose_emit_plans(const std::vector<check::EmitFormat>& formats, const TuneOptions& o,
                                          const EmitSearches& searches, const LoadedModel& l,
                                          std::vector<std::string>& skipped) {
  std::string emit_words = o.emit;
  for (auto& ch : emit_words) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const bool all = emit_words.find("all") != std::string::npos;
  std::optional<model::TransformerSpec> spec;
  if (!o.source.spec_file().empty())
    spec = model::load_spec(o.source.spec_file(), o.source.seq_len.empty() ? 0 : parse_positive_count(o.source.seq_len, "--seq-len"),
                            !o.source.model_config.empty());
  // What every candidate shares (the model, the nodes), set once; the lr for the chosen one only.
  check::EmitPlan base;
  base.model = spec;
  if (l.cluster) {
    base.gpus_per_node = l.cluster->gpus_per_node;
    base.gpus_per_node_assumed = false;
  }
  std::vector<EmitChoice> out;
  for (const check::EmitFormat f : formats) {
    std::optional<EmitChoice> got;
    std::string first_why;
    check::EmitPlan p = base;
    const std::optional<Framework> own = own_search_framework(f, o);
    if (own && searches.refused.count(*own)) {
      const std::string why = fmt::format("{}: not written: no plan fits as {} runs it ({})", check::traits(f).file,
                                          traits(*own).display, searches.refused.at(*own));
      if (!all) throw InputError(fmt::format("--emit {}: {}", check::traits(f).name, why));
      skipped.push_back(why);
      continue;
    }
    const tuner::TuneResult& r = own ? searches.own.at(*own) : *searches.tune;
    {
      // Why tune's own pick is not the file's (its framework refuses it, or prices it otherwise).
      const model::Config& c = searches.tune->best().config();
      check::EmitPlan q = base;
      q.pick = c;
      q.precision = c.precision.value_or(searches.tune->info.plans.own_precision());
      q.checkpointing = c.checkpointing.value_or(searches.tune->info.plans.own_checkpointing());
      check::emit_framework(f, q, &first_why);
    }
    for (std::size_t at = 0; at < r.search.ranking.size() && !got; ++at) {
      const model::Config& c = r.search.candidates[r.search.ranking[at]].config();
      p.pick = c;
      p.precision = c.precision.value_or(r.info.plans.own_precision());
      p.checkpointing = c.checkpointing.value_or(r.info.plans.own_checkpointing());
      std::string why;
      if (!check::emit_framework(f, p, &why)) {
        if (at == 0 && first_why.empty()) first_why = why;
        continue;
      }
      const tuner::LrAdvice lr = tuner::recommend_lr(r.request.lr_reference, r.request.optimizer, c.global_batch(),
                                                     r.request.dataset_size);
      if (lr.available) p.lr = lr.lr;
      got = EmitChoice{f, p, &r, at, first_why};
    }
    if (!got && all) {
      skipped.push_back(fmt::format("{}: not written: no plan tune ranked runs there ({})", check::traits(f).file, first_why));
      continue;
    }
    if (!got)
      throw InputError(fmt::format("--emit {}: no plan tune ranked runs there ({}); tune again with --framework naming "
                                   "what {} runs, or drop {} from --emit",
                                   check::traits(f).name, first_why, check::traits(f).display, check::traits(f).name));
    out.push_back(*got);
  }
  return out;
}

int run_tune(const TuneOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path out(o.out);
  std::vector<std::string> output_names = kOutputNames;
  if (!o.deepspeed_config.empty()) output_names.push_back(kDeepSpeedOutput);
  const std::optional<check::FrameworkConfig> fwc = load_framework_config(o);
  if (fwc) output_names.push_back(check::completed_name(fwc->kind));
  const std::vector<check::EmitFormat> emit =
      o.emit.empty() ? std::vector<check::EmitFormat>{} : check::parse_emit_formats(o.emit);
  if (!emit.empty() && fwc)
    throw InputError(fmt::format("--emit with {}: tune writes that file completed ({}); drop --emit or the config",
                                 fwc->path, check::completed_name(fwc->kind)));
  for (const check::EmitFormat f : emit) {
    if (f == check::EmitFormat::deepspeed && !o.deepspeed_config.empty())
      throw InputError("--emit deepspeed with --deepspeed-config: tune writes the given config completed as "
                       "deepspeed_config.json; drop deepspeed from --emit");
    output_names.push_back(check::traits(f).file);
    if (f == check::EmitFormat::hf) output_names.push_back("hf_deepspeed_config.json");
    if (f == check::EmitFormat::accelerate) output_names.push_back("accelerate_deepspeed_config.json");
  }
  if (!emit.empty()) output_names.push_back("launch.sh");
  reports::check_outputs(out, output_names, o.force);  // refuse before any expensive work
  std::optional<DeepSpeedInput> ds = load_deepspeed(o);
  {
    // Every flag that does not need the model is checked before profiling or loading.
    tuner::TuneRequest early = make_request(o, LoadedModel{});
    if (ds) apply_deepspeed(o, *ds, early, nullptr);
    tuner::validate(early);
  }

  LoadedModel l = load_model(o, fwc);
  tuner::TuneRequest req = make_request(o, l);
  if (ds) apply_deepspeed(o, *ds, req, &l.model->info());
  if (fwc) apply_framework_config(o, *fwc, req);
  {
    // B_noise: --noise-scale, else a stronger one validate measured for this workload, else the
    // profile's; without any, the report names the validate command (cli/noise_scale_cache.hpp).
    const NoiseLookup noise = lookup_noise_scale(l, o.source.workload.empty() ? std::string() : "--workload " + o.source.workload);
    if (!req.noise_scale && noise.recorded) {
      req.noise_scale = noise.recorded->noise_scale;
      req.noise_scale_source = noise.recorded->source;
    }
    req.noise_scale_hint = noise.validate_command;
  }
  const tuner::TuneResult result = tuner::tune(*l.model, req);

  reports::ReportContext ctx;
  ctx.tool_version = GACCUM_VERSION_STRING;
  ctx.generated_utc = utc_now();
  ctx.command = o.command;
  ctx.source = l.source;
  if (ds) ctx.deepspeed_config = (out / kDeepSpeedOutput).string();
  ctx.next_command = next_command(o, result, out, ds.has_value());
  if (fwc) {
    // check the completed file, as the job will launch with it.
    const char* flag = fwc->kind == check::ConfigKind::megatron_args ? "--megatron-args"
                       : fwc->kind == check::ConfigKind::nemo        ? "--nemo-config"
                                                                     : "--torchtitan-config";
    ctx.next_command = fmt::format("gaccum-tune check {} {}{}{} --world-size {}", flag,
                                   shell_word((out / check::completed_name(fwc->kind)).string()),
                                   spec_flags(o),
                                   o.source.cluster.empty() ? "" : " --cluster " + shell_word(o.source.cluster),
                                   result.best().config().world_size);
  }
  // Every emitted file is made before any is written (a refusal leaves --out untouched).
  EmitSearches searches;
  searches.tune = &result;
  for (const check::EmitFormat f : emit) {
    const std::optional<Framework> fw = own_search_framework(f, o);
    if (!fw || searches.own.count(*fw) || searches.refused.count(*fw)) continue;
    TuneOptions as = o;
    as.framework = std::string(to_string(*fw));
    const LoadedModel fl = load_model(as, fwc);
    tuner::TuneRequest fr = make_request(as, fl);
    fr.noise_scale = req.noise_scale;
    fr.noise_scale_source = req.noise_scale_source;
    fr.noise_scale_hint = req.noise_scale_hint;
    try {
      searches.own.emplace(*fw, tuner::tune(*fl.model, fr));
    } catch (const InfeasibleError& e) {
      searches.refused.emplace(*fw, first_line(e.what()));
    }
  }
  std::vector<std::string> emit_skipped;
  const std::vector<EmitChoice> emitted = choose_emit_plans(emit, o, searches, l, emit_skipped);
  const std::string model_flags = emitted.empty() ? std::string() : check_model_flags(o);
  const std::string json = reports::print_json(result, ctx);
  std::vector<reports::OutputFile> files = {
      {"result.csv", reports::print_csv(reports::make_rows(result))},
      {"result.json", json},
      {"result.md", reports::print_markdown(result, ctx)},
      {"report.html", reports::print_html(result, ctx)},
  };
  if (ds) files.push_back({kDeepSpeedOutput, check::complete_deepspeed_config(ds->document, result.best().config(), ds->precision_priced).dump(2) + "\n"});
  if (fwc) {
    const Count layers = fwc->model ? fwc->model->layers : 0;
    files.push_back({check::completed_name(fwc->kind), check::complete_framework_config(*fwc, result.best().config(), layers)});
  }
  std::vector<std::pair<check::EmitFormat, check::EmitPlan>> launch;
  for (const EmitChoice& e : emitted) {
    for (auto& f : check::emit_files(e.format, e.plan)) files.push_back({f.name, f.text});
    launch.emplace_back(e.format, e.plan);
  }
  if (!launch.empty()) files.push_back({"launch.sh", check::launch_script(launch, model_flags)});
  const auto written = reports::write_outputs(out, files, o.force);
  if (!launch.empty()) fs::permissions(out / "launch.sh", fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
  // validate on this workload without -b/-k/-p runs this pick (cli/pick_cache.hpp).
  if (l.profile) record_tune_pick(l.model->info().workload_hash, out / "result.json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (o.json) {
    std::cout << json;
    return kExitOk;
  }
  std::cout << reports::print_terminal(result, ctx);
  if (l.source.contains("cached"))
    fmt::print("\nProfile: {} {}\n", l.source["cached"].get<bool>() ? "cached" : "measured now and cached at",
               l.source["path"].get<std::string>());
  fmt::print("\nReports ({} configs, {:.2f} s):\n", result.search.candidates.size(), seconds);
  for (const auto& p : written) fmt::print("  {}\n", p.string());
  if (!emitted.empty()) {
    fmt::print("\nFramework files (launch.sh runs each; check reads each back before the launch):\n");
    const double best = result.best().prediction.throughput;
    for (const EmitChoice& e : emitted) {
      const auto& pred = e.from->search.candidates[e.from->search.ranking[e.position]].prediction;
      const double below = best > 0 ? 100.0 * (1.0 - pred.throughput / best) : 0.0;
      std::string which = "the pick";
      if (e.from != &result) {
        const std::optional<Framework> fw = own_search_framework(e.format, o);
        const bool same = tuner::short_config(pred.config) == tuner::short_config(result.best().config());
        const Bytes pick_peak = result.best().prediction.memory.peak;
        which = fmt::format("{} plan of the same search run as {} (its own costs: {}): {}, {} per rank{}",
                            e.position == 0 ? "the best" : fmt::format("plan #{} of the", e.position + 1),
                            traits(*fw).display,
                            e.plan.model ? fmt::format("{}", fmt::join(model::framework_cost_changes(*e.plan.model, *fw), ", "))
                                         : std::string("its plans"),
                            same && pred.memory.peak != pick_peak
                                ? fmt::format("tune's pick, priced as {} runs it ({} as tune ranked it)",
                                              traits(*fw).display, format_bytes(pick_peak))
                            : same ? "tune's pick"
                            : below >= 0 ? fmt::format("{:.1f}% below tune's pick", below)
                                         : fmt::format("{:.1f}% above tune's pick (a setting only its own search "
                                                       "tries, such as torchtitan's per-op recompute)",
                                                       -below),
                            format_bytes(pred.memory.peak),
                            same || e.pick_refusal.empty() ? "" : fmt::format(" (the pick: {})", e.pick_refusal));
      } else if (e.position > 0) {
        which = fmt::format("plan #{} of the ranking, {:.1f}% below the pick's throughput (the pick: {})", e.position + 1,
                            below, e.pick_refusal);
      }
      fmt::print("  {:<24} {}\n    {}\n", check::traits(e.format).file, which,
                 check::check_command(e.format, e.plan, o.out, model_flags));
    }
  }
  for (const auto& line : emit_skipped) fmt::print("  {}\n", line);
  if (ctx.next_command.rfind("gaccum-tune check", 0) == 0)  // a spec, or a framework config's model
    fmt::print("\nNext: a spec cannot run on this machine; gate the launch with the pick's plan:\n  {}\n", ctx.next_command);
  else
    fmt::print("\nNext: run the pick for real and check the accumulated gradient:\n  {}\n", ctx.next_command);
  return kExitOk;
}

// "gaccum-tune tune --flag value ..." from the options the user actually gave.
std::string command_line(const CLI::App* sub) {
  std::string cmd = "gaccum-tune tune";
  for (const CLI::Option* opt : sub->get_options()) {
    if (opt->count() == 0 || opt->get_name() == "--help") continue;
    const std::string name = opt->get_name();
    if (opt->get_expected_max() == 0) {
      cmd += " " + name;
      continue;
    }
    for (const auto& v : opt->results()) cmd += " " + name + " " + v;
  }
  return cmd;
}

}  // namespace

void add_tune_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<TuneOptions>();
  auto* sub = app.add_subcommand(
      "tune", "Recommend micro_batch, accum_steps, world_size and strategy for a global batch, with reasons");
  add_model_source_flags(sub, o->source, true);
  add_layout_flags(sub, o->layout);
  add_framework_config_flags(sub, o->fw_config,
                             "its layout, batch and plan pin the search; the file completed with the pick is written "
                             "to --out (megatron_args.sh, nemo_config.yaml, torchtitan.toml)");
  sub->add_option("--deepspeed-config", o->deepspeed_config,
                  "DeepSpeed config: its numeric batch fields, ZeRO stage, bf16/fp16, activation_checkpointing and "
                  "offload pin the search; \"auto\" fields are filled with the pick in --out/deepspeed_config.json");
  sub->add_option("--global-batch", o->global_batch,
                  "Target global batch B = b*k*p in samples, at most 2^40, or in tokens for a sequence model (\"1M "
                  "tokens\") [default: 512]");
  sub->add_option("--global-batch-tokens", o->global_batch_tokens,
                  "Target global batch in tokens (sequence models): 1M = 2^20 tokens, divided by the model's tokens "
                  "per sample (rounded to whole samples, with a note)");
  sub->add_option("--global-batch-range", o->global_batch_range, "Target range LO-HI, e.g. 256-1024 (HI at most 2^40)");
  sub->add_option("--max-world-size", o->max_world_size,
                  "World sizes 1..N [default: cluster size; CPU: cores / threads per rank; GPU: ranks profiled]");
  sub->add_option("--world-sizes", o->world_sizes, "Explicit world sizes, e.g. 1,2,4,8");
  sub->add_option("--memory-cap", o->memory_cap, "Per-rank memory cap: bytes (20GiB) or a share of device memory");
  sub->add_option("--margin", o->margin, "Safety margin: peak memory <= cap x (1 - margin)");
  sub->add_option("--max-accum-steps", o->max_accum_steps, "Largest accum_steps allowed (at most 2^40)");
  sub->add_option("--strategy", o->strategy, "auto | overlap | fused | every-step (auto ranks overlap and fused)");
  sub->add_option("--framework", o->framework,
                  "the framework the job runs on: ddp | fsdp | fsdp2 | deepspeed | megatron | torchtitan | horovod: "
                  "only the plans it runs are searched [default: any, each plan labelled with the frameworks that "
                  "run it; deepspeed with --deepspeed-config]");
  sub->add_option("--sharding", o->sharding,
                  "auto | none | zero1 | zero2 | zero3 | hsdp[:G] (FSDP: shard_grad_op, full_shard, hybrid_shard) "
                  "[default: auto: spec none..zero3 and hsdp:GPUs-per-node; profile none]");
  sub->add_option("--precision", o->precision, "auto | fp32 | bf16 | fp16 [default: auto: spec its dtype and fp32; profile fp32]");
  sub->add_option("--checkpointing", o->checkpointing,
                  "auto | none | selective | full | selective-op (torchtitan's per-op; searched only with --framework torchtitan) [default: auto: spec "
                  "none, selective (not under FlashAttention) and full; profile none]");
  sub->add_flag("--force-memory-cap", o->force_memory_cap, "Accept a --memory-cap above the device's memory");
  sub->add_option("--objective", o->objective, "throughput | cost (GPU-seconds per sample) | time-to-target");
  sub->add_flag("--extrapolate", o->extrapolate, "Allow micro_batch above the measured range");
  sub->add_option("--lr-ref", o->lr_ref, "Reference learning rate LR@BATCH, e.g. 3e-4@256");
  sub->add_option("--optimizer", o->optimizer, "sgd (linear LR scaling) | adam | adamw | lamb (square-root)");
  sub->add_option("--dataset-size", o->dataset_size, "Samples per epoch (warm-up length in steps)");
  sub->add_option("--noise-scale", o->noise_scale, "Gradient noise scale B_noise in samples (overrides the profile)");
  sub->add_option("--cost-per-device-hour", o->cost_per_device_hour, "Price per device-hour [default: cluster's]");
  sub->add_option("--top", o->top, "Picks shown and explained");
  sub->add_option("--out", o->out, "Output directory for result.csv, result.json, result.md, report.html");
  sub->add_option("--emit", o->emit,
                  "Write the pick in the frameworks' own files, a comma list of hf, accelerate, lightning, torchtitan, "
                  "megatron, deepspeed (or all), with launch.sh; `check` reads each back");
  sub->add_flag("--force", o->force, "Replace the reports of an earlier run in --out");
  sub->add_flag("--json", o->json, "Print the JSON result instead of the terminal report");
  sub->footer(
      "Defaults: --workload gpt-tiny --global-batch 512 --memory-cap 100% --margin 10% --max-accum-steps 64\n"
      "--strategy auto --sharding auto --precision auto --checkpointing auto --objective throughput --optimizer adam\n"
      "--top 10 --out gaccum-out; world sizes 1..N with N\n"
      "the cluster size, or on a CPU profile cores / threads per rank (each rank stands for one GPU).\n"
      "Profiles made by `tune --workload` are cached in ${XDG_CACHE_HOME:-~/.cache}/gaccum-tune/profiles/.");
  sub->callback([o, sub, &action] {
    o->command = command_line(sub);
    action = [o] { return run_tune(*o); };
  });
}

}  // namespace gaccum::cli
