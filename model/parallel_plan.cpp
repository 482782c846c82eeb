// What/why: see parallel_plan.hpp.
#include "model/parallel_plan.hpp"

#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/pipeline.hpp"
#include "model/plan_cost.hpp"

namespace gaccum::model {

Config data_parallel_view(const Config& c) {
  Config d = c;
  d.world_size = c.data_parallel() * c.layout.cp;
  d.layout = ParallelLayout{};
  return d;
}

namespace {

std::optional<std::string> split_rejection(const ParallelLayout& l, Count layers) {
  const Count p = l.pp, v = l.virtual_stages, S = p * v;
  if (!l.stage_layer_counts.empty()) {
    if (l.first_stage_layers > 0 || l.last_stage_layers > 0)
      return std::string("--stage-layers: give every stage's layers or the first and last, not both");
    if (static_cast<Count>(l.stage_layer_counts.size()) != S)
      return fmt::format("--stage-layers: {} counts for pp {} x virtual stages {} = {} model stages: give one per stage",
                         l.stage_layer_counts.size(), p, v, S);
    Count sum = 0;
    for (Count n : l.stage_layer_counts) {
      if (n < 1) return std::string("--stage-layers: every stage needs at least one layer");
      sum += n;
    }
    if (sum != layers)
      return fmt::format("--stage-layers {}: {} layers in all, the model has {}", stage_layers_text(l.stage_layer_counts),
                         sum, layers);
    return std::nullopt;
  }
  const bool uneven = l.first_stage_layers > 0 || l.last_stage_layers > 0;
  if (!uneven) {
    if (layers % S != 0) {
      const bool tt = !torchtitan_split_rejection(layers, S);
      return fmt::format("{} layers do not split evenly over pp {} x virtual stages {} = {} stages: choose pp and v "
                         "that divide {}, or give {}",
                         layers, p, v, S, layers,
                         tt ? fmt::format("--stage-layers {} (torchtitan's own split, which a torchtitan job "
                                          "makes itself; {})",
                                          stage_layers_text(torchtitan_split(layers, S)),
                                          v > 1 ? "Megatron-LM runs it given model stage by model stage, as "
                                                  "its --pipeline-model-parallel-layout"
                                                : "Megatron-LM's --decoder-first/last-pipeline-num-layers")
                            : std::string("--stage-layers"));
    }
    return std::nullopt;
  }
  if (p < 2) return std::string("--stage-layers needs pp >= 2 (one stage holds every layer)");
  // The first model stage (rank 0's first chunk) and the last (the last rank's last chunk) as
  // given, the other S - 2 (or S - 1) even.
  const Count first = l.first_stage_layers, last = l.last_stage_layers;
  const Count given = (first > 0 ? 1 : 0) + (last > 0 ? 1 : 0);
  const Count rest_stages = S - given;
  const Count rest = layers - first - last;
  if (first + last >= layers || (rest_stages > 0 && (rest < rest_stages || rest % rest_stages != 0)) ||
      (rest_stages == 0 && rest != 0))
    return fmt::format("--stage-layers: first {} and last {} leave {} layers for the other {} stage(s), which must split "
                       "evenly with at least one layer each",
                       first, last, rest, rest_stages);
  return std::nullopt;
}

}  // namespace

std::vector<Count> stage_layers(const ParallelLayout& l, Count layers) {
  if (auto why = split_rejection(l, layers)) throw InputError(*why);
  if (!l.stage_layer_counts.empty()) return l.stage_layer_counts;
  const Count S = l.pp * l.virtual_stages;
  std::vector<Count> out(static_cast<std::size_t>(S), layers / S);
  if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {
    const Count given = (l.first_stage_layers > 0 ? 1 : 0) + (l.last_stage_layers > 0 ? 1 : 0);
    const Count rest = layers - l.first_stage_layers - l.last_stage_layers;
    const Count each = S - given > 0 ? rest / (S - given) : 0;
    for (auto& n : out) n = each;
    if (l.first_stage_layers > 0) out.front() = l.first_stage_layers;
    if (l.last_stage_layers > 0) out.back() = l.last_stage_layers;
  }
  return out;
}

namespace {

// torchtitan's split of `layers` over `stages`, or why torchtitan refuses it: one computation
// behind torchtitan_split and torchtitan_split_rejection.
struct TorchtitanSplit {
  std::vector<Count> stages;
  std::optional<std::string> refusal;
};
TorchtitanSplit torchtitan_split_of(Count layers, Count stages, Count first_less, Count last_less) {
  const auto refused = [](std::string why) { return TorchtitanSplit{{}, std::move(why)}; };
  const Count effective = layers + first_less + last_less;
  if (stages < 1) return refused("torchtitan needs at least one stage");
  if (stages == 1) return TorchtitanSplit{{layers}, std::nullopt};
  if (stages > effective)
    return refused(fmt::format("torchtitan refuses {} stages for {} effective layers ({} layers + "
                               "first_stage_less_layers {} + last_stage_less_layers {})",
                               stages, effective, layers, first_less, last_less));
  const Count per = effective / stages, extra = effective % stages;
  if (first_less > per || last_less > per)
    return refused(fmt::format("torchtitan refuses pipeline_parallel_{}_stage_less_layers {} above the {} effective layers "
                               "per stage of {} layers over {} stages",
                               first_less > per ? "first" : "last", first_less > per ? first_less : last_less, per,
                               layers, stages));
  TorchtitanSplit out;
  Count placed = 0;
  for (Count j = 0; j < stages; ++j) {
    Count n = per + (j < extra ? 1 : 0);
    if (j == 0) n -= first_less;
    if (j == stages - 1) n -= last_less;
    n = std::min(n, layers - placed);  // torchtitan stops at the last layer
    out.stages.push_back(n);
    placed += n;
  }
  // A stage left without a transformer layer (torchtitan builds it; priced here it is not).
  if (out.stages.front() < 1 || out.stages.back() < 1)
    return refused(fmt::format("torchtitan's split of {} layers over {} stages leaves the {} stage without a transformer "
                               "layer",
                               layers, stages, out.stages.front() < 1 ? "first" : "last"));
  return out;
}

}  // namespace

std::optional<std::string> torchtitan_split_rejection(Count layers, Count stages, Count first_less, Count last_less) {
  return torchtitan_split_of(layers, stages, first_less, last_less).refusal;
}

std::vector<Count> torchtitan_split(Count layers, Count stages, Count first_less, Count last_less) {
  TorchtitanSplit s = torchtitan_split_of(layers, stages, first_less, last_less);
  if (s.refusal) throw InputError(*s.refusal);
  return std::move(s.stages);
}

std::vector<Count> megatron_account_split(Count layers, Count pp, Count virtual_stages, bool embedding, bool loss) {
  const Count n = layers + (embedding ? 1 : 0) + (loss ? 1 : 0);
  const char* flags = embedding && loss ? "--account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split"
                      : embedding       ? "--account-for-embedding-in-pipeline-split"
                                        : "--account-for-loss-in-pipeline-split";
  if (pp < 1 || virtual_stages < 1) throw InputError("a pipeline needs pp >= 1 and virtual stages >= 1");
  if (n % pp != 0)
    throw InputError(fmt::format("{}: {} layers count as {} with the embedding and loss, not a multiple of pp {} (Megatron-LM "
                                 "refuses it): choose pp dividing {}, or drop the flag",
                                 flags, layers, n, pp, n));
  if ((n / pp) % virtual_stages != 0)
    throw InputError(fmt::format("{}: {} layers per pipeline rank (with the embedding and loss) are not a multiple of the "
                                 "{} virtual stages (Megatron-LM refuses it): choose v dividing {}",
                                 flags, n / pp, virtual_stages, n / pp));
  const Count S = pp * virtual_stages, per = n / S;
  std::vector<Count> out(static_cast<std::size_t>(S), per);
  if (embedding) out.front() -= 1;
  if (loss) out.back() -= 1;
  if (out.front() < 1 || out.back() < 1)
    throw InputError(fmt::format("{}: {} layers over {} model stages leave the {} stage without a transformer layer (only "
                                 "the {}), a stage not priced here: use fewer stages",
                                 flags, layers, S, out.front() < 1 ? "first" : "last",
                                 out.front() < 1 ? "embedding" : "loss"));
  return out;
}

Count torchtitan_stages(Count layers, Count per_stage, Count pp, Count first_less, Count last_less) {
  const Count stages = (layers + first_less + last_less + per_stage - 1) / per_stage;
  if (pp < 1 || stages % pp != 0)
    throw InputError(fmt::format("pipeline_parallel_layers_per_stage {}: torchtitan makes ceil(({} layers + {} + {}) / "
                                 "{}) = {} stages, not a multiple of pipeline_parallel_degree {} (torchtitan refuses "
                                 "it): choose layers per stage that give a multiple of {}",
                                 per_stage, layers, first_less, last_less, per_stage, stages, pp, pp));
  return stages;
}

std::string stage_layers_text(const std::vector<Count>& counts) {
  bool middle_equal = counts.size() >= 3;
  for (std::size_t i = 2; middle_equal && i + 1 < counts.size(); ++i) middle_equal = counts[i] == counts[1];
  if (middle_equal && counts.size() > 3) return fmt::format("{},...,{}", counts.front(), counts.back());
  std::string out;
  for (Count n : counts) out += (out.empty() ? "" : ",") + std::to_string(n);
  return out;
}

std::vector<ParallelLayout> candidate_layouts(const TransformerShape& t, Count gpus_per_node, Count max_gpus) {
  std::vector<ParallelLayout> out{ParallelLayout{}};
  constexpr Count kMaxPipeline = 64, kMaxVirtual = 8;
  for (Count tp = 1; tp <= std::max<Count>(1, gpus_per_node); tp *= 2) {
    if (t.heads % tp != 0 || t.kv() % tp != 0 || t.ffn() % tp != 0 || t.shared_ffn % tp != 0) break;
    for (Count pp = 1; pp <= std::min(t.layers, kMaxPipeline); ++pp) {
      if (max_gpus > 0 && tp * pp > max_gpus) continue;
      if (tp == 1 && pp == 1) continue;  // the data-parallel layout, first
      for (Count v = 1; v <= (pp > 1 ? kMaxVirtual : 1); ++v) {
        const Count S = pp * v;
        if (S > t.layers) break;
        ParallelLayout l;
        l.tp = tp;
        l.pp = pp;
        l.virtual_stages = v;
        l.schedule = default_schedule(v);
        l.sequence_parallel = tp > 1;
        if (t.layers % S != 0) {
          // Layers that do not divide pp x v. The layout with no split given is torchtitan's:
          // a torchtitan-priced model splits it as torchtitan does (126 on pp 8 x v 2: 7, 8 x 14,
          // 7), every other refuses it; offered at torchtitan's defaults, one stage per rank
          // (1F1B) and two (Interleaved1F1B without pipeline_parallel_layers_per_stage), which
          // keeps the search's size near the layouts that divide. One chunk per rank also:
          // ceil(L / pp) on the middle stages, the rest shared by the first and last (Llama 3
          // 405B's 126 layers on 8 stages: 15, 16 x 6, 15), which Megatron-LM runs
          // (--decoder-first/last-pipeline-num-layers).
          if (v <= 2 && !torchtitan_split_rejection(t.layers, S)) out.push_back(l);
          if (v > 1) continue;
          const Count per = (t.layers + S - 1) / S;
          if (S < 3 || t.layers < per * (S - 2) + 2) continue;
          const Count rest = t.layers - per * (S - 2);
          if (rest % 2 != 0 || rest / 2 > per) continue;
          l.first_stage_layers = l.last_stage_layers = rest / 2;
        }
        out.push_back(l);
      }
    }
  }
  return out;
}

std::optional<std::string> layout_rejection(const Config& c, const TransformerShape& t, Count gpus_per_node) {
  const ParallelLayout& l = c.layout;
  if (l.data_parallel_only() && !l.sequence_parallel && l.virtual_stages == 1) return std::nullopt;
  if (l.tp < 1 || l.pp < 1 || l.cp < 1 || l.virtual_stages < 1)
    return std::string("tp, pp, cp and virtual stages must be at least 1");
  const Count mp = l.model_parallel();
  if (c.world_size % mp != 0)
    return fmt::format("world_size {} is not a multiple of tp x pp x cp = {}: use a multiple of {} GPUs, or change the "
                       "layout",
                       c.world_size, mp, mp);
  if (l.sequence_parallel && l.tp < 2) return std::string("--sequence-parallel needs --tp 2 or more");
  if (l.tp > 1) {
    if (t.heads % l.tp != 0 || t.kv() % l.tp != 0)
      return fmt::format("--tp {}: the {} attention heads and {} kv heads must be multiples of tp; use a tp that divides "
                         "{}",
                         l.tp, t.heads, t.kv(), t.kv());
    if (t.ffn() % l.tp != 0)
      return fmt::format("--tp {}: ffn_hidden {} is not a multiple of tp", l.tp, t.ffn());
    if (t.shared_ffn % l.tp != 0)
      return fmt::format("--tp {}: the shared expert's width {} is not a multiple of tp", l.tp, t.shared_ffn);
    if (gpus_per_node > 0 && l.tp > gpus_per_node)
      return fmt::format("--tp {} spans nodes of {} GPUs: its collectives run on every layer of every microbatch, keep "
                         "tp within a node (tp <= {}) and use pp across nodes",
                         l.tp, gpus_per_node, gpus_per_node);
  }
  if (l.cp > 1 && t.seq_len % (2 * l.cp) != 0)
    return fmt::format("--cp {}: seq_len {} must be a multiple of 2 cp = {} (each rank takes two chunks of the causal "
                       "sequence)",
                       l.cp, t.seq_len, 2 * l.cp);
  if (l.pp > 1) {
    if (auto why = split_rejection(l, t.layers)) return why;
    if (auto why = schedule_rejection(l.schedule, l.pp, l.virtual_stages, c.accum_steps))
      return fmt::format("--schedule: {}", *why);
  } else if (l.virtual_stages != 1) {
    return std::string("--virtual-stages needs --pp 2 or more");
  }
  if (traits(c.strategy).every_micro_step && l.pp > 1)
    return std::string("a pipeline reduces gradients once per step, after its last microbatch (Megatron-LM, DeepSpeed "
                       "and torch disable the sync on the others): use --strategy overlap or fused, not every-step");
  if (c.offload_optimizer || c.offload_params)
    return std::string("DeepSpeed offload is priced for data-parallel plans only: drop the offload, or tp/pp/cp");
  if (auto why = plan_rejection(data_parallel_view(c)))
    return l.cp > 1 ? fmt::format("the gradient group is dp x cp = {} x {} = {} ranks (world_size {} / (tp x pp = {})): "
                                  "{}",
                                  c.data_parallel(), l.cp, c.data_parallel() * l.cp, c.world_size, l.tp * l.pp, *why)
                    : fmt::format("the data-parallel part is dp = world_size {} / (tp x pp x cp = {}) = {} ranks: {}",
                                  c.world_size, mp, c.data_parallel(), *why);
  return std::nullopt;
}

}  // namespace gaccum::model
