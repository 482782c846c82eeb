// What/why: the traits tables and parsers of plan.hpp: one row per enum value.
#include "core/plan.hpp"

#include <charconv>

#include <fmt/format.h>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"

namespace gaccum {
namespace {

constexpr ShardingTraits kSharding[] = {
    {Sharding::none, "none", "NO_SHARD", "0", false, false, false,
     "DDP: weights, gradients and optimizer state replicated on every rank"},
    {Sharding::zero1, "zero1", "-", "1", true, false, false, "optimizer state and fp32 master weights sharded"},
    {Sharding::zero2, "zero2", "SHARD_GRAD_OP", "2", true, true, false,
     "optimizer state, master weights and gradients sharded"},
    {Sharding::zero3, "zero3", "FULL_SHARD", "3", true, true, true,
     "parameters sharded too, all-gathered per wrapped unit for forward and backward"},
    {Sharding::hsdp, "hsdp", "HYBRID_SHARD", "-", true, true, true,
     "zero3 inside groups of G ranks, replicated across groups"},
};

constexpr PrecisionTraits kPrecision[] = {
    {Precision::fp32, "fp32", 4.0, false, "fp32 weights, gradients, activations and optimizer state"},
    {Precision::bf16, "bf16", 2.0, true,
     "bf16 weights, gradients (reduced in bf16) and activations; fp32 master weights and optimizer state"},
    {Precision::fp16, "fp16", 2.0, true,
     "fp16 weights, gradients (reduced in fp16, loss-scaled) and activations; fp32 master weights and optimizer state"},
    {Precision::fp8, "fp8", 2.0, true,
     "fp8 GEMMs in the layers (TransformerEngine), bf16 weights, gradients and activations; fp32 master weights and "
     "optimizer state"},
};

constexpr CheckpointingTraits kCheckpointing[] = {
    {Checkpointing::none, "none", "every activation kept for backward"},
    {Checkpointing::selective, "selective", "the attention core recomputed in backward (Korthikanti et al. 2022)"},
    {Checkpointing::full, "full", "each layer's input kept; the layer's forward recomputed in backward"},
    {Checkpointing::selective_op, "selective-op",
     "per-op selective (torchtitan's op SAC): the outputs of attention and of every other matmul kept, the rest "
     "recomputed in backward"},
};

constexpr ScheduleTraits kSchedule[] = {
    {Schedule::gpipe, "gpipe", "GPipe", false, false, "every microbatch's forward, then every backward"},
    {Schedule::one_f_one_b, "1f1b", "1F1B", false, false,
     "warm-up forwards, then one forward and one backward (PipeDream-Flush)"},
    {Schedule::interleaved_1f1b, "interleaved-1f1b", "Interleaved1F1B", true, false,
     "1f1b over v chunks of layers per rank, microbatches in groups of pp (Megatron-LM)"},
    {Schedule::zb_h1, "zb-h1", "", false, true,
     "1f1b with weight gradients split from the backward and deferred into the bubble (zero bubble H1)"},
};

Count parse_group(std::string_view text, std::string_view whole, std::string_view field) {
  Count g = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), g);
  if (ec != std::errc() || end != text.data() + text.size() || g < 2 || g > (Count(1) << 20))
    throw InputError(fmt::format("{}: '{}': the hsdp group must be an integer of at least 2 (ranks per shard group), "
                                 "e.g. hsdp:8",
                                 field, whole));
  return g;
}

}  // namespace

const ShardingTraits& traits(Sharding s) { return kSharding[static_cast<int>(s)]; }
const PrecisionTraits& traits(Precision p) { return kPrecision[static_cast<int>(p)]; }
const CheckpointingTraits& traits(Checkpointing c) { return kCheckpointing[static_cast<int>(c)]; }

std::string_view to_string(Sharding s) { return traits(s).name; }
std::string_view to_string(Precision p) { return traits(p).name; }
std::string_view to_string(Checkpointing c) { return traits(c).name; }
const ScheduleTraits& traits(Schedule s) { return kSchedule[static_cast<int>(s)]; }
std::string_view to_string(Schedule s) { return traits(s).name; }

std::string to_string(const ParallelLayout& l) {
  if (l.data_parallel_only()) return "dp";
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " x ") + part; };
  if (l.tp > 1) add(fmt::format("tp {}{}", l.tp, l.sequence_parallel ? " sp" : ""));
  if (l.pp > 1)
    add(fmt::format("pp {} {}{}{}", l.pp, to_string(l.schedule),
                    l.virtual_stages > 1 ? fmt::format(" v {}", l.virtual_stages) : "",
                    !l.stage_layer_counts.empty() ? fmt::format(" (layers {})", layer_counts_text(l.stage_layer_counts))
                    : l.first_stage_layers > 0 && l.last_stage_layers > 0
                        ? fmt::format(" (first stage {} layers, last {})", l.first_stage_layers, l.last_stage_layers)
                    : l.first_stage_layers > 0 ? fmt::format(" (first stage {} layers)", l.first_stage_layers)
                    : l.last_stage_layers > 0  ? fmt::format(" (last stage {} layers)", l.last_stage_layers)
                                               : ""));
  if (l.cp > 1) add(fmt::format("cp {}", l.cp));
  return out;
}

namespace {

// Runs of equal counts folded: three or more as "N<times>K", two spelled out, joined by `sep`.
std::string fold_runs(const std::vector<Count>& counts, const char* sep, const char* times) {
  std::string out;
  for (std::size_t i = 0; i < counts.size();) {
    std::size_t j = i;
    while (j < counts.size() && counts[j] == counts[i]) ++j;
    out += (out.empty() ? "" : sep) + (j - i > 2    ? fmt::format("{}{}{}", counts[i], times, j - i)
                                       : j - i == 2 ? fmt::format("{}{}{}", counts[i], sep, counts[i])
                                                    : fmt::format("{}", counts[i]));
    i = j;
  }
  return out;
}

}  // namespace

std::string layer_counts_text(const std::vector<Count>& counts) { return fold_runs(counts, ", ", " x "); }

std::string short_string(const ParallelLayout& l) {
  if (l.data_parallel_only()) return "";
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " ") + part; };
  if (l.tp > 1) add(fmt::format("tp{}{}", l.tp, l.sequence_parallel ? "sp" : ""));
  if (l.pp > 1) {
    add(fmt::format("pp{}", l.pp));
    if (l.virtual_stages > 1) add(fmt::format("v{}", l.virtual_stages));
    if (l.schedule == Schedule::gpipe || l.schedule == Schedule::zb_h1) add(std::string(to_string(l.schedule)));
    if (l.first_stage_layers > 0 || l.last_stage_layers > 0)
      add(fmt::format("f{}l{}", l.first_stage_layers, l.last_stage_layers));
    if (!l.stage_layer_counts.empty()) {
      // Runs folded, no spaces or commas (a table column, a CSV field): L5-6-5x13-4.
      add("L" + fold_runs(l.stage_layer_counts, "-", "x"));
    }
  }
  if (l.cp > 1) add(fmt::format("cp{}", l.cp));
  return out;
}

Schedule parse_schedule(std::string_view text, std::string_view field) {
  if (text == "gpipe" || text == "GPipe") return Schedule::gpipe;
  if (text == "1f1b" || text == "1F1B") return Schedule::one_f_one_b;
  if (text == "interleaved-1f1b" || text == "interleaved" || text == "Interleaved1F1B")
    return Schedule::interleaved_1f1b;
  if (text == "zb-h1" || text == "zbh1" || text == "zb1p") return Schedule::zb_h1;
  throw InputError(fmt::format("{}: unknown pipeline schedule '{}': expected gpipe, 1f1b, interleaved-1f1b or zb-h1",
                               field, text));
}

std::string to_string(const ShardingChoice& s) {
  if (s.sharding == Sharding::hsdp && s.group > 0) return fmt::format("hsdp:{}", s.group);
  return std::string(to_string(s.sharding));
}

ShardingChoice parse_sharding(std::string_view text, std::string_view field) {
  const auto colon = text.find(':');
  const std::string_view head = text.substr(0, colon);
  if (head == "hsdp" || head == "hybrid_shard") {
    ShardingChoice c{Sharding::hsdp, 0};
    if (colon != std::string_view::npos) c.group = parse_group(text.substr(colon + 1), text, field);
    return c;
  }
  if (colon == std::string_view::npos) {
    if (text == "none" || text == "ddp" || text == "no_shard") return {Sharding::none, 0};
    if (text == "zero1") return {Sharding::zero1, 0};
    if (text == "zero2" || text == "shard_grad_op") return {Sharding::zero2, 0};
    if (text == "zero3" || text == "fsdp" || text == "full_shard") return {Sharding::zero3, 0};
  }
  throw InputError(fmt::format(
      "{}: unknown sharding '{}': expected none (ddp, no_shard), zero1, zero2 (shard_grad_op), zero3 (fsdp, "
      "full_shard) or hsdp:G (hybrid_shard:G, G ranks per shard group)",
      field, text));
}

Precision parse_precision(std::string_view text, std::string_view field) {
  if (text == "fp32" || text == "float32") return Precision::fp32;
  if (text == "bf16" || text == "bfloat16") return Precision::bf16;
  if (text == "fp16" || text == "float16") return Precision::fp16;
  if (text == "fp8" || text == "float8") return Precision::fp8;
  throw InputError(fmt::format("{}: unknown precision '{}': expected fp32, bf16, fp16 or fp8 (fp8: a --spec on a GPU "
                               "with fp8 tensor cores)",
                               field, text));
}

Checkpointing parse_checkpointing(std::string_view text, std::string_view field) {
  if (text == "none") return Checkpointing::none;
  if (text == "selective") return Checkpointing::selective;
  if (text == "full") return Checkpointing::full;
  if (text == "selective-op" || text == "op") return Checkpointing::selective_op;
  throw InputError(fmt::format(
      "{}: unknown activation checkpointing '{}': expected none, selective, selective-op (torchtitan's per-op) or full",
      field, text));
}

void set_stage_layers(ParallelLayout& l, std::string_view text, std::string_view field) {
  auto layers = [&](std::string_view part) { return parse_count_at_most(part, field, Count(1) << 16, "65536"); };
  if (const auto dots = text.find(",...,"); dots != std::string_view::npos) {
    l.first_stage_layers = layers(text.substr(0, dots));
    l.last_stage_layers = layers(text.substr(dots + 5));
    l.stage_layer_counts.clear();
    return;
  }
  const std::vector<Count> n = parse_count_list(text, field);
  for (Count v : n) (void)layers(std::to_string(v));  // at most 65536 each
  const Count stages = l.pp * std::max<Count>(1, l.virtual_stages);
  if (static_cast<Count>(n.size()) != stages)
    throw InputError(fmt::format(
        "{}: {} values for {}: give one layer count per {}, or FIRST,...,LAST", field, n.size(),
        l.virtual_stages > 1 ? fmt::format("pp {} x virtual stages {} = {} model stages", l.pp, l.virtual_stages, stages)
                             : fmt::format("pp {}", l.pp),
        l.virtual_stages > 1 ? "model stage (rank 0's first chunk first)" : "pipeline rank"));
  for (std::size_t i = 1; i + 1 < n.size(); ++i)
    if (n[i] != n[1]) {
      // Middle stages of different sizes: kept stage by stage.
      l.first_stage_layers = l.last_stage_layers = 0;
      l.stage_layer_counts = n;
      return;
    }
  l.stage_layer_counts.clear();
  const Count middle = n.size() > 2 ? n[1] : 0;
  if (n.size() > 2 ? n.front() != middle : true) l.first_stage_layers = n.front();
  if (n.size() > 2 ? n.back() != middle : true) l.last_stage_layers = n.back();
}

}  // namespace gaccum
