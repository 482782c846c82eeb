// What/why: see deepspeed_tune.hpp.
#include "check/deepspeed_tune.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace gaccum::check {
namespace {

constexpr const char* kTrain = "train_batch_size";
constexpr const char* kMicro = "train_micro_batch_size_per_gpu";
constexpr const char* kGas = "gradient_accumulation_steps";

// InputError unless `total` is a multiple of `unit` (the product of the fixed per-step fields).
void require_multiple(const DeepSpeedConfig& c, Count total, Count unit, const std::string& unit_text) {
  if (total % unit == 0) return;
  const Count below = total / unit * unit;
  throw InputError(fmt::format("{}: {} {} is not a multiple of {} = {}, so no world size gives {} = {} x {} x "
                               "world_size: set {} to a multiple of {} (e.g. {}) or one of the fields to \"auto\"",
                               c.path, kTrain, total, unit_text, unit, kTrain, kMicro, kGas, kTrain, unit,
                               below >= unit ? below : unit));
}

bool is_auto(const nlohmann::ordered_json& v) {
  if (!v.is_string()) return false;
  std::string s = v.get<std::string>();
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s == "auto";
}

}  // namespace

DeepSpeedTunePins deepspeed_tune_pins(const DeepSpeedConfig& c) {
  DeepSpeedTunePins p;
  p.global_batch = c.train_batch_size;
  p.micro_batch = c.train_micro_batch_size_per_gpu;
  p.accum_steps = c.gradient_accumulation_steps;
  const auto &T = c.train_batch_size, &M = c.train_micro_batch_size_per_gpu, &G = c.gradient_accumulation_steps;
  if (T && M && G) {
    Count per_rank = 0;
    if (__builtin_mul_overflow(*M, *G, &per_rank))
      throw InputError(fmt::format("{}: {} x {} overflows 64 bits", c.path, kMicro, kGas));
    require_multiple(c, *T, per_rank, fmt::format("{} x {}", kMicro, kGas));
    p.world_size = *T / per_rank;
  } else if (T && M) {
    require_multiple(c, *T, *M, kMicro);
  } else if (T && G) {
    require_multiple(c, *T, *G, kGas);
  }
  p.plan = deepspeed_plan(c);
  const std::string src = "deepspeed " + c.path;
  if (p.plan.precision) {
    p.precision = p.plan.precision;
    p.precision_source = p.plan.precision_source;
    p.precision_assumed = p.plan.precision_assumed;
  } else if (!c.precision_auto) {
    p.precision = Precision::fp32;
    p.precision_source = src + " (neither bf16.enabled nor fp16.enabled: DeepSpeed trains in fp32)";
  }
  if (p.plan.checkpointing) {
    p.checkpointing = *p.plan.checkpointing;
    p.checkpointing_source = p.plan.checkpointing_source;
  } else {
    p.checkpointing_source = src + " (no activation_checkpointing section)";
  }
  p.offload_optimizer = c.offload_optimizer;
  p.offload_params = c.offload_params;
  return p;
}

nlohmann::ordered_json complete_deepspeed_config(nlohmann::ordered_json doc, const model::Config& pick,
                                                 bool fill_precision) {
  if (!doc.is_object()) throw InputError("DeepSpeed config: expected a JSON object");
  doc[kTrain] = pick.global_batch();
  doc[kMicro] = pick.micro_batch;
  doc[kGas] = pick.accum_steps;
  for (const char* key : {"bf16", "fp16"}) {
    if (!fill_precision) break;
    if (!doc.contains(key) || !doc[key].is_object() || !doc[key].contains("enabled") || !is_auto(doc[key]["enabled"]))
      continue;
    const Precision mine = std::string(key) == "bf16" ? Precision::bf16 : Precision::fp16;
    doc[key]["enabled"] = pick.precision && *pick.precision == mine;
  }
  return doc;
}

nlohmann::ordered_json load_deepspeed_document(const std::string& path) {
  const std::string text = read_text_file(path, "--deepspeed-config");
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
}

}  // namespace gaccum::check
