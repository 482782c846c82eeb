// What/why: see hf_config.hpp.
#include "model/hf_config.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"

namespace gaccum::model {

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> t = {"llama",       "mistral", "qwen2", "qwen3",      "gemma",
                                             "gemma2",      "gemma3_text", "phi3", "olmo2",   "gpt2",
                                             "gpt_neox",    "starcoder2", "falcon", "mixtral",  "qwen2_moe",
                                             "qwen3_moe"};
  return t;
}

bool is_hf_config(const nlohmann::json& j) { return j.is_object() && j.contains("model_type"); }

namespace {

// The config's fields, each error naming the file, the field and the fix. A null value is absent
// (HuggingFace writes "head_dim": null, "n_inner": null).
struct Fields {
  const nlohmann::json& j;
  const std::string& what;
  const std::string& type;

  const nlohmann::json* find(const std::string& key) const {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<Count> opt(const std::string& key) const {
    const nlohmann::json* v = find(key);
    if (!v) return std::nullopt;
    constexpr Count kMax = Count(1) << 26;
    if (!v->is_number_integer() || v->get<long long>() < 1 || v->get<long long>() > kMax)
      throw InputError(fmt::format("{}: {} must be a whole number from 1 to {}, got {}", what, key, kMax, v->dump()));
    return v->get<Count>();
  }
  Count req(const std::string& key) const {
    if (auto v = opt(key)) return *v;
    throw InputError(fmt::format("{}: {} is missing: a {} config.json gives it", what, key, type));
  }
  bool flag(const std::string& key, bool otherwise) const {
    const nlohmann::json* v = find(key);
    if (!v) return otherwise;
    if (!v->is_boolean()) throw InputError(fmt::format("{}: {} must be true or false, got {}", what, key, v->dump()));
    return v->get<bool>();
  }
  double probability(const std::string& key, double otherwise) const {
    const nlohmann::json* v = find(key);
    if (!v) return otherwise;
    if (!v->is_number() || v->get<double>() < 0 || v->get<double>() >= 1)
      throw InputError(fmt::format("{}: {} must be a probability in [0, 1), got {}", what, key, v->dump()));
    return v->get<double>();
  }
};

}  // namespace

TransformerSpec spec_from_hf_config(const nlohmann::json& j, const std::string& what, Count seq_len,
                                    const std::string& fallback_name) {
  if (!is_hf_config(j)) throw InputError(fmt::format("{}: not a HuggingFace config.json (no model_type key)", what));
  if (!j["model_type"].is_string())
    throw InputError(fmt::format("{}: model_type must be a string, got {}", what, j["model_type"].dump()));
  const std::string type = j["model_type"].get<std::string>();
  if (type == "gemma3")
    throw InputError(fmt::format("{}: model_type 'gemma3' is Gemma 3's multimodal checkpoint (a SigLIP vision tower "
                                 "beside the language model), whose vision tower is not modelled: plan the language "
                                 "model from its text_config saved as a config.json of its own (model_type "
                                 "gemma3_text)",
                                 what));
  const auto& types = hf_model_types();
  if (std::find(types.begin(), types.end(), type) == types.end())
    throw InputError(fmt::format("{}: model_type '{}' is not supported: use one of {} (or write a gaccum-tune spec, "
                                 "examples/specs/)",
                                 what, type, fmt::join(types, ", ")));
  const Fields f{j, what, type};
  TransformerSpec s;
  s.dtype = Precision::bf16;
  s.optimizer = Optimizer::adamw;
  s.flash_attention = true;
  Count positions = 0;
  if (type == "gpt2") {
    s.hidden = f.req("n_embd");
    s.layers = f.req("n_layer");
    s.heads = f.req("n_head");
    s.ffn_hidden = f.opt("n_inner").value_or(4 * s.hidden);
    s.vocab = f.req("vocab_size");
    positions = f.req("n_positions");
    s.positions = positions;
    s.learned_positions = true;
    s.tied_embeddings = f.flag("tie_word_embeddings", true);
    s.dropout = f.probability("resid_pdrop", 0.1) > 0 || f.probability("embd_pdrop", 0.1) > 0 ||
                f.probability("attn_pdrop", 0.1) > 0;
  } else if (type == "falcon") {
    // Falcon (HF FalconConfig; the first configs spell n_layer and n_head): LayerNorm, GELU MLP
    // of ffn_hidden_size (default 4 h), no biases unless "bias", rotary (or ALiBi: no table),
    // tied head. The 7B layout (new_decoder_architecture false): one key/value head when
    // multi_query, one LayerNorm per layer under parallel_attn; the 40B/180B one: num_kv_heads
    // and num_ln_in_parallel_attn (default 2) LayerNorms.
    s.hidden = f.req("hidden_size");
    s.layers = f.opt("num_hidden_layers") ? f.req("num_hidden_layers") : f.req("n_layer");
    s.heads = f.opt("num_attention_heads") ? f.req("num_attention_heads") : f.req("n_head");
    s.vocab = f.req("vocab_size");
    positions = f.opt("max_position_embeddings").value_or(2048);
    s.learned_positions = false;
    s.tied_embeddings = f.flag("tie_word_embeddings", true);
    s.bias = f.flag("bias", false);
    s.ffn_hidden = f.opt("ffn_hidden_size").value_or(4 * s.hidden);
    if (f.flag("new_decoder_architecture", false)) {
      s.kv_heads = f.opt("num_kv_heads").value_or(s.heads);
      s.layer_norms = f.opt("num_ln_in_parallel_attn").value_or(2);
      if (s.layer_norms > 2)
        throw InputError(fmt::format("{}: num_ln_in_parallel_attn {} is not a Falcon layout: 1 or 2", what,
                                     s.layer_norms));
    } else {
      s.kv_heads = f.flag("multi_query", true) ? 1 : s.heads;
      s.layer_norms = f.flag("parallel_attn", true) ? 1 : 2;
    }
    s.dropout = f.probability("hidden_dropout", 0) > 0 || f.probability("attention_dropout", 0) > 0;
  } else {
    s.hidden = f.req("hidden_size");
    s.layers = f.req("num_hidden_layers");
    s.heads = f.req("num_attention_heads");
    s.vocab = f.req("vocab_size");
    positions = f.req("max_position_embeddings");
    s.learned_positions = false;  // rotary
    const bool gemma = type == "gemma" || type == "gemma2" || type == "gemma3_text";
    s.tied_embeddings = f.flag("tie_word_embeddings", gemma || type == "starcoder2");
    if (type == "starcoder2") {
      // LayerNorm with biases, GELU MLP of intermediate_size, biases everywhere with use_bias,
      // grouped-query attention, sliding window on every layer.
      s.ffn_hidden = f.req("intermediate_size");
      s.bias = f.flag("use_bias", true);
      s.kv_heads = f.opt("num_key_value_heads").value_or(0);
      s.attention_window = f.opt("sliding_window").value_or(0);
      s.dropout = f.probability("attention_dropout", 0) > 0 || f.probability("residual_dropout", 0) > 0 ||
                  f.probability("embedding_dropout", 0) > 0;
    } else if (type == "gpt_neox") {
      s.ffn_hidden = f.req("intermediate_size");
      if (!f.flag("attention_bias", true))
        throw InputError(fmt::format("{}: attention_bias false (biases on the MLP only) is not modelled: remove it or "
                                     "set it true",
                                     what));
      s.dropout = f.probability("attention_dropout", 0) > 0 || f.probability("hidden_dropout", 0) > 0;
    } else {
      s.rms_norm = true;
      s.gated_mlp = true;
      s.bias = false;
      s.kv_heads = f.opt("num_key_value_heads").value_or(0);
      s.head_dim = f.opt("head_dim").value_or(gemma ? 256 : 0);
      s.qkv_bias = type == "qwen2" || type == "qwen2_moe";
      if (type == "gemma2" || type == "gemma3_text") s.layer_norms = 4;
      // Norms on q and k: Qwen3 and Gemma 3 per head, OLMo 2 over the whole projection (its two
      // norms per layer come after attention and after the MLP).
      if (type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text") s.qk_norm = QkNorm::per_head;
      if (type == "olmo2") s.qk_norm = QkNorm::full;
      if ((type == "qwen3" || type == "qwen3_moe" || type == "olmo2") && f.flag("attention_bias", false))
        throw InputError(fmt::format("{}: attention_bias true (biases on q, k, v and o) is not modelled for {}: "
                                     "remove it or set it false",
                                     what, type));
      if (type == "llama") {
        const bool attention = f.flag("attention_bias", false), mlp = f.flag("mlp_bias", false);
        if (attention != mlp)
          throw InputError(fmt::format("{}: attention_bias {} with mlp_bias {} is not modelled: set both alike", what,
                                       attention, mlp));
        s.bias = attention;
      }
      s.dropout = f.probability("attention_dropout", 0) > 0;
      if (type == "mixtral") {
        s.ffn_hidden = f.req("intermediate_size");
        s.experts = f.req("num_local_experts");
        s.active_experts = f.req("num_experts_per_tok");
      } else if (type == "qwen2_moe" || type == "qwen3_moe") {
        s.ffn_hidden = f.req("moe_intermediate_size");
        s.experts = f.req("num_experts");
        s.active_experts = f.req("num_experts_per_tok");
        if (type == "qwen2_moe") s.shared_ffn = f.req("shared_expert_intermediate_size");
        if (f.opt("decoder_sparse_step").value_or(1) != 1)
          throw InputError(fmt::format("{}: decoder_sparse_step {} (dense layers between sparse ones) is not modelled: "
                                       "only 1, every layer sparse",
                                       what, *f.opt("decoder_sparse_step")));
        if (const nlohmann::json* dense = f.find("mlp_only_layers"); dense && !(dense->is_array() && dense->empty()))
          throw InputError(fmt::format("{}: mlp_only_layers {} (dense layers) is not modelled: only [], every layer "
                                       "sparse",
                                       what, dense->dump()));
      } else {
        s.ffn_hidden = f.req("intermediate_size");
      }
      // Sliding-window attention, as each model's HuggingFace code applies it: Mistral, Mixtral
      // and Phi-3 on every layer; Gemma 2 on the even layers (0, 2, ...); Qwen2 only with
      // use_sliding_window, on the layers from max_window_layers on.
      // Gemma 3: every layer but each sliding_window_pattern-th (default 6: five local, one global).
      if (type == "mistral" || type == "mixtral" || type == "phi3" || type == "gemma2" || type == "gemma3_text") {
        s.attention_window = f.opt("sliding_window").value_or(0);
        if (type == "gemma2") s.windowed_layers = double((s.layers + 1) / 2) / double(s.layers);
        if (type == "gemma3_text") {
          const Count pattern = f.opt("sliding_window_pattern").value_or(6);
          s.windowed_layers = double(s.layers - s.layers / pattern) / double(s.layers);
        }
      } else if ((type == "qwen2" || type == "qwen2_moe" || type == "qwen3" || type == "qwen3_moe") &&
                 f.flag("use_sliding_window", false)) {
        const Count full = f.opt("max_window_layers").value_or(0);
        if (full < s.layers) {
          s.attention_window = f.opt("sliding_window").value_or(0);
          s.windowed_layers = double(s.layers - full) / double(s.layers);
        }
      }
    }
  }
  // Newer configs list each layer's attention ("layer_types": "sliding_attention" or
  // "full_attention"): that list, where given, is the windowed share.
  if (const nlohmann::json* lt = f.find("layer_types"); lt && type != "gpt2" && type != "falcon") {
    if (!lt->is_array() || Count(lt->size()) != s.layers)
      throw InputError(fmt::format("{}: layer_types must list one attention kind per layer ({} layers), got {}", what,
                                   s.layers, lt->dump().substr(0, 80)));
    Count windowed = 0;
    for (const auto& k : *lt) {
      if (!k.is_string() || (k != "sliding_attention" && k != "full_attention"))
        throw InputError(fmt::format("{}: layer_types: '{}' is not sliding_attention or full_attention", what,
                                     k.dump()));
      windowed += k == "sliding_attention" ? 1 : 0;
    }
    s.attention_window = windowed > 0 ? f.opt("sliding_window").value_or(0) : 0;
    s.windowed_layers = s.attention_window > 0 ? double(windowed) / double(s.layers) : 1.0;
  }
  if (s.kv_heads > 0 && s.heads % s.kv_heads != 0)
    throw InputError(fmt::format("{}: num_key_value_heads {} does not divide num_attention_heads {}", what, s.kv_heads,
                                 s.heads));
  if (s.head_dim == 0 && s.hidden % s.heads != 0)
    throw InputError(fmt::format("{}: the hidden size {} is not a multiple of the {} attention heads: give head_dim",
                                 what, s.hidden, s.heads));
  if (s.active_experts > s.experts)
    throw InputError(fmt::format("{}: num_experts_per_tok {} is more than the {} experts", what, s.active_experts,
                                 s.experts));
  constexpr Count kMaxSeq = Count(1) << 24;
  const char* positions_key = type == "gpt2" ? "n_positions" : "max_position_embeddings";
  if (seq_len > kMaxSeq) throw InputError(fmt::format("--seq-len {}: at most 2^24 tokens", seq_len));
  if (seq_len > positions && s.learned_positions)
    throw InputError(fmt::format("--seq-len {}: more than the {} learned positions ({} {}): use at most {}", seq_len,
                                 positions, what, positions_key, positions));
  s.seq_len = seq_len > 0 ? seq_len : positions;
  if (s.seq_len > kMaxSeq)
    throw InputError(fmt::format("{}: {} {} is beyond 2^24 tokens: pass --seq-len", what, positions_key, s.seq_len));
  s.mean_tokens_per_sample = double(s.seq_len);
  const nlohmann::json* name = f.find("_name_or_path");
  s.name = name && name->is_string() && !name->get<std::string>().empty() ? name->get<std::string>()
           : fallback_name.empty()                                            ? type
                                                                              : fallback_name;
  s.source = fmt::format("HuggingFace config.json, model_type {}", type);
  return s;
}

}  // namespace gaccum::model
