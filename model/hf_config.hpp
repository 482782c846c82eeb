// What: a HuggingFace transformers config.json read as the model to plan (`--model-config FILE`,
//       or `--spec FILE` when the file has a model_type key; model/spec_model.hpp load_spec).
//   model_type      what the architecture implies beyond the config's numbers:
//     llama, mistral  RMSNorm (weight only), gated SiLU MLP of intermediate_size, no biases
//                     (llama's attention_bias and mlp_bias honoured when both agree), rotary;
//                     tie_word_embeddings (default false); head_dim when the config gives one
//     qwen2           llama-style with biases on q, k and v only
//     gemma, gemma2   llama-style (gated GELU), tied embeddings (default true), head_dim from the
//                     config (default 256; heads x head_dim may differ from hidden_size); gemma2:
//                     four RMSNorms per layer (before and after attention and MLP)
//     qwen3           llama-style with RMSNorm on q and k per head (head_dim weights each);
//                     attention_bias true is refused (not modelled)
//     gemma3_text     gemma2-style with RMSNorm on q and k per head; sliding window on all but
//                     each sliding_window_pattern-th layer (default 6). model_type gemma3 (the
//                     multimodal checkpoint) is refused, naming its text_config as the fix
//     phi3            llama-style (fused qkv and gate_up: the same parameters)
//     olmo2           llama-style with RMSNorm on the whole q and k projections (q_hidden +
//                     kv_hidden weights); its two norms per layer follow attention and the MLP
//     starcoder2      LayerNorm with biases, GELU MLP of intermediate_size, biases with use_bias
//                     (default true), grouped-query attention, sliding_window on every layer,
//                     tied head (default true)
//     falcon          LayerNorm, GELU MLP of ffn_hidden_size (default 4 h), biases with bias
//                     (default false), tied head; new_decoder_architecture false (7B): one
//                     key/value head with multi_query, one LayerNorm per layer with parallel_attn;
//                     true (40B, 180B): num_kv_heads, num_ln_in_parallel_attn LayerNorms (2)
//     gpt2            n_embd, n_layer, n_head, n_inner (default 4 n_embd), learned positions
//                     (n_positions x n_embd), biases everywhere, two LayerNorms per layer + a
//                     final one, tied head
//     gpt_neox        LayerNorm, biases everywhere, rotary, untied embed_out (tie_word_embeddings
//                     default false), non-gated MLP of intermediate_size; parallel attention does
//                     not change the parameters
//     mixtral         llama-style with num_local_experts experts of intermediate_size per layer,
//                     num_experts_per_tok active, a router of hidden x experts
//     qwen2_moe       qwen2-style with num_experts experts of moe_intermediate_size,
//                     num_experts_per_tok active, a shared expert of
//                     shared_expert_intermediate_size behind a hidden x 1 gate, a router; every
//                     layer sparse (decoder_sparse_step 1, no mlp_only_layers)
//     qwen3_moe       qwen3-style with qwen2_moe's experts and no shared expert
//   layer_types     where a config lists each layer's attention (sliding_attention or
//                   full_attention), the windowed share comes from that list
//   sequence length max_position_embeddings (gpt2: n_positions) unless --seq-len N sets it.
//   plan            bf16 (torch_dtype is the checkpoint's storage, not the training plan),
//                   AdamW, no recompute, FlashAttention; dropout when the config's dropout
//                   probabilities are above 0 (gpt2's resid/embd/attn_pdrop).
//   Mixture of experts: memory from every expert's parameters, compute from the active ones
//   (model/transformer.hpp); expert parallelism is not planned (the spec model's notes say so).
// Why: users plan the model they train from the file they already have, not a transcription.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/spec_model.hpp"

namespace gaccum::model {

// The model types spec_from_hf_config reads.
const std::vector<std::string>& hf_model_types();
// True for a JSON object with a model_type key (a gaccum-tune spec has none).
bool is_hf_config(const nlohmann::json& j);
// The spec the config describes; `what` prefixes every error ("--model-config config.json").
// seq_len > 0 overrides max_position_embeddings. The name: _name_or_path, else fallback_name
// (load_spec: the file's stem), else the model_type. InputError naming the field and the fix on a
// missing or inconsistent field, or an unsupported model_type (listing the supported ones).
TransformerSpec spec_from_hf_config(const nlohmann::json& j, const std::string& what, Count seq_len = 0,
                                    const std::string& fallback_name = "");

}  // namespace gaccum::model
