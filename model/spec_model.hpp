// What: the cost model of an analytic transformer spec (spec.json) on a described cluster, for
//       models no local machine can run (docs/DESIGN.md, Workloads; formulas in model/transformer.hpp).
//   plans      every sharding, precision (fp32, bf16, fp16) and checkpointing mode; the spec's
//              dtype and activation_checkpointing are the plan used when none is asked for
//   memory     model/plan_cost.hpp on the plan's state sizes (weights and gradients in the
//              precision's bytes per parameter, optimizer state = fp32 master weights for
//              fp16/bf16 + Adam's two fp32 moments or SGD's momentum), wrapped units = the
//              embedding, each layer, the final norm + head; activations (Korthikanti et al.
//              2022 with the plan's precision and checkpointing)
//   compute    on a catalogue GPU (the cluster names one, or its peak and memory match one) and
//              without --mfu: the GPU compute model (model/gpu_compute.hpp), kernel by kernel
//              with the device generation's calibrated efficiencies, the optimizer step and
//              gradient copies at the HBM's memory-bound rate, collectives overlapped at the
//              calibration's overlap efficiency, and the caching allocator's reserve in the peak.
//              Otherwise (or with --mfu): t(b) = training FLOPs / (device peak FLOP/s x MFU,
//              default kDefaultMfu); backward = all but the forward; fp32 plans at
//              device.peak_tflops_fp32 when the cluster gives it, else at half the (bf16) peak:
//              the TF32 tensor-core rate of A100/H100 datasheets
//   optimizer  memory traffic of one fused update at the device's memory bandwidth:
//              per parameter 2e (read grad, zero it) + 8 (read/write the fp32 weight or master)
//              + 8 per fp32 state slot + e (write the low-precision weight when mixed)
//   copies     kSyncCopyPasses passes over the gradient bytes at the memory bandwidth
//   allreduce  the cluster's hierarchical model on the DDP buckets of the spec's tensors;
//              reduce-scatter / all-gather at half its cost (model/plan_cost.hpp); overlap
//              efficiency 1 (NCCL on its own stream); sharded optimizer steps 1/N of the parameters
//   No measurement spread: the band equals the estimate.
//   Mixture of experts (a HuggingFace mixtral or qwen2_moe config, model/hf_config.hpp): memory
//   and the optimizer step from every expert's parameters, compute from the active ones; expert
//   parallelism is not planned (a note says so).
// Spec file (strict; unknown keys other than "_source", "comment", "_*" are errors):
//   {"schema": "gaccum-tune/spec", "name": "gpt2-small", "layers": 12, "hidden": 768,
//    "heads": 12, "seq_len": 1024, "vocab": 50257, "dtype": "bf16", "optimizer": "adam",
//    "activation_checkpointing": "none", "ffn_hidden": 3072, "tied_embeddings": true,
//    "dropout": true, "mean_tokens_per_sample": 1024}
//   LLaMA-style fields: "gated_mlp": true (SwiGLU, three matrices of ffn_hidden), "kv_heads": 8
//   (grouped-query attention), "attention": "flash" | "standard" (FlashAttention keeps no s^2
//   matrix), "bias": false, "norm": "rmsnorm" | "layernorm", "learned_positions": false (rotary).
//   dtype: fp16 | bf16 | fp32 (float16, bfloat16, float32 accepted); optimizer: adam | adamw |
//   sgd (momentum); activation_checkpointing: none | selective | full (true = full, false = none).
// Why: same Prediction type, same tuner downstream.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/framework.hpp"
#include "core/optimizer.hpp"
#include "model/cluster.hpp"
#include "model/cost_model.hpp"
#include "model/transformer.hpp"

namespace gaccum::model {

// The dtype in which gradients are accumulated over micro-batches, held and reduced:
//   param          the plan's precision (PyTorch DDP and FSDP without a reduce dtype): 2 bytes
//                  per parameter in bf16
//   fp32_for_bf16  fp32 under bf16 (and fp8, whose weights are bf16), the plan's precision under
//                  fp16: Megatron-LM forces accumulate_allreduce_grads_in_fp32 for bf16 (unless
//                  --grad-reduce-in-bf16), NeMo's bf16 plugin sets grad_reduce_in_fp32,
//                  torchtitan's FSDP2 reduces in mixed_precision_reduce = float32
//   fp32           fp32 under every half precision ("grad_reduce_in_fp32": true in a spec,
//                  --accumulate-allreduce-grads-in-fp32 in Megatron-LM arguments)
// fp32 gradients are 4 bytes per parameter held (whole or sharded, as the plan holds them) and on
// the wire of the gradient reduction.
enum class GradDtype { param, fp32_for_bf16, fp32 };
const char* to_string(GradDtype g);
// Bytes per gradient element of a plan in precision p.
int gradient_element_bytes(GradDtype g, Precision p);

struct TransformerSpec {
  std::string name;
  Count layers = 0, hidden = 0, heads = 0, seq_len = 0, vocab = 0;
  Count ffn_hidden = 0;                 // 0: 4 x hidden
  Precision dtype = Precision::bf16;    // the plan's precision unless one is asked for
  Optimizer optimizer = Optimizer::adam;  // adam | adamw | sgd
  Checkpointing activation_checkpointing = Checkpointing::none;
  bool tied_embeddings = true;
  bool learned_positions = true;
  bool dropout = true;
  bool gated_mlp = false;
  Count kv_heads = 0;                   // 0: heads
  bool flash_attention = false;
  bool bias = true;
  bool rms_norm = false;
  // Set by a HuggingFace config (model/hf_config.hpp), not by spec files; model/transformer.hpp
  // TransformerShape says what each means.
  Count head_dim = 0;
  bool qkv_bias = false;
  Count layer_norms = 2;
  QkNorm qk_norm = QkNorm::none;
  Count positions = 0;
  Count experts = 0, active_experts = 0, shared_ffn = 0;
  LossKind loss = LossKind::fp32;       // "loss" (model/transformer.hpp LossKind)
  std::string loss_source;              // where `loss` was set ("": the default, PyTorch's fp32)
  GradDtype grad_dtype = GradDtype::param;  // "grad_reduce_in_fp32" (GradDtype below)
  bool contiguous_grad_buffer = false;  // Megatron-LM's (model/plan_cost.hpp StateSizes), set by its framework
  std::string grad_source;              // where grad_dtype was set ("": the default)
  // A pipeline with no split given: split as torchtitan's pipeline builder does (the embedding and
  // the output counted as a layer each: model/parallel_plan.hpp torchtitan_split; 80 layers on pp
  // 4 -> 20, 21, 20, 19), set by its framework; false: even, and layers that do not divide refused.
  bool torchtitan_split = false;
  Count attention_window = 0;           // "sliding_window": tokens a query attends to (0: all)
  double windowed_layers = 1.0;         // "sliding_window_layers": the share of layers windowed
  double mean_tokens_per_sample = 0;    // real tokens per sample; 0: seq_len
  std::string source;

  TransformerShape shape() const;
  int optimizer_slots() const;          // fp32 state elements per parameter: adam 2, sgd 1
};

// The spec file's fields, for the "unknown field" error.
// (GradDtype is declared above TransformerSpec.)
const std::vector<std::string>& spec_fields();
TransformerSpec spec_from_json(const nlohmann::json& j, const std::string& what);
// A spec file, "builtin:NAME[@SEQ_LEN]" for a model this tool knows (builtin_spec), or a
// HuggingFace config.json (it has a model_type key: model/hf_config.hpp). seq_len > 0 sets a
// HuggingFace config's sequence length (--seq-len; an InputError for the others, whose sequence
// length is their own); model_config (--model-config) accepts a HuggingFace config only.
TransformerSpec load_spec(const std::string& path, Count seq_len = 0, bool model_config = false);
// Models known by name (what a torchtitan config's model flavor names): llama3-8b, llama3-70b,
// llama3-405b (Meta's "The Llama 3 Herd of Models", Table 3; sequence 8192 unless @SEQ_LEN).
// InputError listing them for any other name.
TransformerSpec builtin_spec(const std::string& name);
// What the job's framework sets where the spec does not say (loss_source, grad_source empty):
// the loss, Megatron-LM's (and NeMo's, which runs it) in-place vocab-parallel cross-entropy, every
// other framework PyTorch's F.cross_entropy on fp32 logits (the default); the gradient dtype,
// fp32_for_bf16 for Megatron-LM and torchtitan (GradDtype), the plan's precision otherwise;
// Megatron-LM's contiguous gradient buffer, reduced in place (contiguous_grad_buffer);
// torchtitan's split of a pipeline's layers (torchtitan_split).
// `from` names where the framework came from (a flag, a config file).
void apply_framework_defaults(TransformerSpec& spec, Framework framework, const std::string& from);
// The frameworks whose defaults change what a spec costs (the others run it as it is).
inline constexpr std::array<Framework, 2> kFrameworksWithOwnCosts{Framework::megatron, Framework::torchtitan};
// What apply_framework_defaults changes in `spec` for `framework`, one phrase each (e.g. "gradients
// held and reduced in fp32 under bf16"); empty when it prices the spec as it is.
std::vector<std::string> framework_cost_changes(const TransformerSpec& spec, Framework framework);

// A job whose framework is not named (tune and check without --framework): a plan plain PyTorch
// (DDP, FSDP, FSDP2), DeepSpeed or Horovod runs is priced with the spec as it is; a plan only
// Megatron-LM or torchtitan runs (their tensor/pipeline layouts) as that framework runs it
// (apply_framework_defaults: Megatron-LM's fp32 gradients and vocab-parallel loss, torchtitan's
// fp32 gradient reduction; of two that run it, the lower peak memory), and says so
// (Prediction::priced_as). A plan is never priced cheaper than the framework that runs it.
std::unique_ptr<CostModel> make_spec_model_any_framework(const TransformerSpec& spec, const Cluster& cluster,
                                                         std::optional<double> mfu = std::nullopt);

// The flat MFU of a spec on a device the GPU compute model does not know.
inline constexpr double kDefaultMfu = 0.4;

// InputError when the cluster lacks device.peak_tflops or mfu is not in (0, 1]. mfu given: the
// flat-MFU path even on a catalogue GPU (an explicit override).
std::unique_ptr<CostModel> make_spec_model(const TransformerSpec& spec, const Cluster& cluster,
                                           std::optional<double> mfu = std::nullopt);

}  // namespace gaccum::model
