// What: the data-parallel plan's vocabulary beside the gradient-sync strategy (core/strategy.hpp):
//   sharding       what is partitioned across the ranks of a shard group (ZeRO, Rajbhandari et
//                  al. 2020; PyTorch FSDP's ShardingStrategy):
//                    none    DDP: every rank holds weights, gradients and optimizer state
//                    zero1   optimizer state (and fp32 master weights) sharded
//                    zero2   + gradients sharded (FSDP SHARD_GRAD_OP)
//                    zero3   + parameters sharded, all-gathered per wrapped unit for forward and
//                            backward (FSDP FULL_SHARD)
//                    hsdp:G  zero3 inside groups of G ranks, replicated across the p/G groups
//                            (FSDP HYBRID_SHARD with G = ranks per node)
//   precision      fp32, or mixed bf16/fp16: 2-byte weights, gradients and activations with fp32
//                  master weights and fp32 optimizer state; gradients are reduced in the 2-byte
//                  dtype (DeepSpeed's and FSDP MixedPrecision(reduce_dtype=bf16)'s default);
//                  fp8: bf16's memory with the layers' GEMMs in fp8 (TransformerEngine), for a
//                  --spec on a GPU with fp8 tensor cores only
//   checkpointing  activation recomputation: none, selective (attention core recomputed,
//                  Korthikanti et al. 2022) or full (each layer's input kept, the layer recomputed)
//   layout         how the GPUs of one data-parallel replica split the model (Megatron-LM's
//                  PTD-P, Narayanan et al. 2021; torchtitan's parallelism dims):
//                    tp   tensor parallel: each layer's matrices split over tp consecutive ranks
//                         (sequence_parallel: norms and dropout split along the sequence too)
//                    pp   pipeline parallel: the layers cut into pp stages, one per rank, run
//                         as m = accum_steps microbatches by a schedule (model/pipeline.hpp)
//                    v    virtual stages per rank (interleaved-1f1b: v chunks of layers each)
//                    cp   context parallel: the sequence split over cp ranks
//                  world_size = tp pp cp dp; the data-parallel size dp is what shards and
//                  reduces gradients; accumulation steps are the pipeline's microbatches
// Why: one value type names a plan everywhere (flags, job files, DeepSpeed configs, CSV/JSON,
//      the cost model); each enum has one traits table (name, aliases, description), so no
//      string comparisons are scattered over the code. What each combination costs lives in
//      model/plan_cost.hpp, nowhere else.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace gaccum {

enum class Sharding { none, zero1, zero2, zero3, hsdp };
enum class Precision { fp32, bf16, fp16, fp8 };
// selective: Megatron's (Korthikanti et al. 2022), the attention core recomputed; selective_op:
// torchtitan's per-op policy, the outputs of attention and of every other matmul kept.
enum class Checkpointing { none, selective, full, selective_op };
// Pipeline schedules (model/pipeline.hpp builds each rank's ordered operations):
//   gpipe             every forward, then every backward (Huang et al. 2019)
//   1f1b              PipeDream-Flush: p - r - 1 warm-up forwards on rank r, then one forward,
//                     one backward (Narayanan et al. 2021; Megatron-LM, DeepSpeed, torch)
//   interleaved-1f1b  1f1b over v chunks per rank in groups of p microbatches (Megatron-LM)
//   zb-h1             1f1b with the backward split into input and weight gradients, the weight
//                     gradients deferred into the bubble (Qi et al. 2023, ZB-H1)
enum class Schedule { gpipe, one_f_one_b, interleaved_1f1b, zb_h1 };

inline constexpr std::array<Sharding, 5> kAllShardings{Sharding::none, Sharding::zero1, Sharding::zero2,
                                                       Sharding::zero3, Sharding::hsdp};
// The precisions LibTorch trains in (profiles, runs); fp8 (TransformerEngine-style: fp8 GEMMs
// in the layers, bf16 weights and activations, fp32 master weights) is priced by the GPU compute
// model of a --spec only.
inline constexpr std::array<Precision, 3> kAllPrecisions{Precision::fp32, Precision::bf16, Precision::fp16};
inline constexpr std::array<Precision, 4> kSpecPrecisions{Precision::fp32, Precision::bf16, Precision::fp16,
                                                          Precision::fp8};
inline constexpr std::array<Schedule, 4> kAllSchedules{Schedule::gpipe, Schedule::one_f_one_b,
                                                      Schedule::interleaved_1f1b, Schedule::zb_h1};
inline constexpr std::array<Checkpointing, 4> kAllCheckpointings{Checkpointing::none, Checkpointing::selective,
                                                                 Checkpointing::full, Checkpointing::selective_op};

struct ShardingTraits {
  Sharding value;
  const char* name;         // flag / CSV spelling
  const char* fsdp_name;    // PyTorch FSDP ShardingStrategy
  const char* deepspeed;    // DeepSpeed zero_optimization.stage
  bool shards_optimizer;    // optimizer state + master weights partitioned
  bool shards_gradients;    // gradients partitioned (when reduced every micro-step)
  bool shards_parameters;   // parameters partitioned (gathered per unit for compute)
  const char* description;
};
const ShardingTraits& traits(Sharding s);

struct PrecisionTraits {
  Precision value;
  const char* name;
  double element_bytes;     // weights, gradients, activations
  bool mixed;               // fp32 master weights beside the 2-byte weights
  const char* description;
};
const PrecisionTraits& traits(Precision p);

struct CheckpointingTraits {
  Checkpointing value;
  const char* name;
  const char* description;
};
const CheckpointingTraits& traits(Checkpointing c);

struct ScheduleTraits {
  Schedule value;
  const char* name;        // flag / CSV spelling
  const char* torchtitan;  // [parallelism] pipeline_parallel_schedule ("" none)
  bool chunks;             // runs v >= 2 chunks per rank (else v = 1)
  bool splits_weight_grad; // the backward split into input and weight gradients
  const char* description;
};
const ScheduleTraits& traits(Schedule s);

// The model-parallel layout of one data-parallel replica (tp = pp = cp = 1: data parallel only).
struct ParallelLayout {
  Count tp = 1, pp = 1, cp = 1;
  Count virtual_stages = 1;                 // v: chunks per pipeline rank
  Schedule schedule = Schedule::one_f_one_b;
  bool sequence_parallel = false;           // with tp >= 2
  // An uneven split: the layers of the first model stage (rank 0's first chunk) and of the last
  // (the last rank's last chunk), the other pp x v - 2 stages even; 0: that end is even too.
  Count first_stage_layers = 0;             // 0: the even split (layers / (pp v))
  Count last_stage_layers = 0;              // 0: the even split
  // A split given stage by stage: pp x v layer counts in model order (stage j = chunk c x pp +
  // rank r), any shape (torchtitan's own split, whose middle stages differ by one; a torchtitan
  // module_fqns_per_model_part). Empty: the first/last rule above; never both.
  std::vector<Count> stage_layer_counts;
  bool uneven_split() const { return first_stage_layers > 0 || last_stage_layers > 0 || !stage_layer_counts.empty(); }
  Count model_parallel() const { return tp * pp * cp; }
  bool data_parallel_only() const { return tp == 1 && pp == 1 && cp == 1; }
  bool operator==(const ParallelLayout& o) const {
    return tp == o.tp && pp == o.pp && cp == o.cp && virtual_stages == o.virtual_stages &&
           (pp == 1 || schedule == o.schedule) && sequence_parallel == o.sequence_parallel &&
           first_stage_layers == o.first_stage_layers && last_stage_layers == o.last_stage_layers &&
           stage_layer_counts == o.stage_layer_counts;
  }
  bool operator!=(const ParallelLayout& o) const { return !(*this == o); }
};

// Layer counts in words, runs folded: {7, 8 x 14, 7} -> "7, 8 x 14, 7"; {20, 21, 20, 19} -> "20, 21,
// 20, 19".
std::string layer_counts_text(const std::vector<Count>& counts);

// A sharding choice with its group: G ranks per shard group for hsdp, 0 for every other mode
// (whose shard group is the whole world).
struct ShardingChoice {
  Sharding sharding = Sharding::none;
  Count group = 0;
};

std::string_view to_string(Sharding s);
std::string_view to_string(Precision p);
std::string_view to_string(Checkpointing c);
std::string_view to_string(Schedule s);
// "dp" for a data-parallel-only layout; else "tp 8 sp x pp 4 interleaved-1f1b v 2 x cp 2" (only
// the dimensions above 1; an uneven split in parentheses, "(layers 20, 21, 20, 19)").
std::string to_string(const ParallelLayout& l);
// "" for data parallel only; else compact for tables: "tp8 pp2", "tp8sp pp4 v2", "pp4 gpipe", "cp2".
std::string short_string(const ParallelLayout& l);
// "none", "zero2", "hsdp:8".
std::string to_string(const ShardingChoice& s);

// Accepted: none | ddp | no_shard, zero1, zero2 | shard_grad_op, zero3 | fsdp | full_shard,
// hsdp:G | hybrid_shard:G (G >= 2); plain "hsdp"/"hybrid_shard" gives group 0 (the caller
// picks G, e.g. the GPUs per node). InputError naming `field` and listing the valid values.
ShardingChoice parse_sharding(std::string_view text, std::string_view field = "--sharding");
// fp32 | float32, bf16 | bfloat16, fp16 | float16.
Precision parse_precision(std::string_view text, std::string_view field = "--precision");
// none | selective | full.
Checkpointing parse_checkpointing(std::string_view text, std::string_view field = "--checkpointing");

// gpipe, 1f1b | 1F1B, interleaved-1f1b | interleaved | Interleaved1F1B, zb-h1 | zbh1 | zb1p.
Schedule parse_schedule(std::string_view text, std::string_view field = "--schedule");

// The schedule a layout runs when none is named: interleaved 1F1B with more than one chunk per
// rank, 1F1B otherwise (Megatron-LM's and torchtitan's defaults).
constexpr Schedule default_schedule(Count virtual_stages) {
  return virtual_stages > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
}

// An uneven pipeline split into l (whose pp and virtual_stages are set): "7,8,8,7", one layer count
// per model stage (pp x v of them, in model order: with v chunks per rank, stage j runs on rank
// j mod pp), kept as first/last when only the ends differ (Megatron-LM's
// --decoder-first/last-pipeline-num-layers) and stage by stage otherwise (stage_layer_counts:
// torchtitan's 80 layers on pp 4, 20,21,20,19); or "7,...,7", the first and last model stage with
// the middle even (torchtitan's split of Llama 3 405B's 126 layers over pp 8 x v 2). InputError
// naming `field` otherwise (a count above 65536, a count per stage that does not match pp x v).
void set_stage_layers(ParallelLayout& l, std::string_view text, std::string_view field = "--stage-layers");

// The shard group size of a choice at world_size p: p for zero1/2/3, G for hsdp, 1 for none.
inline Count shard_group_size(const ShardingChoice& s, Count world_size) {
  switch (s.sharding) {
    case Sharding::none: return 1;
    case Sharding::hsdp: return s.group;
    default: return world_size;
  }
}

}  // namespace gaccum
