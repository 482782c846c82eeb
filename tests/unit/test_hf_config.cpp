// Unit tests for HuggingFace config.json as the model (model/hf_config.hpp): each family's
// parameters against the published count (the configs' real values, written here), the shipped
// examples/hf/ configs, mixture of experts (all parameters in memory, the active ones in FLOPs)
// and the one-line errors naming the field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "model/cluster.hpp"
#include "model/hf_config.hpp"
#include "model/spec_model.hpp"
#include "model/transformer.hpp"

using namespace gaccum;
using namespace gaccum::model;
using nlohmann::json;

namespace {

const std::string kSource = GACCUM_SOURCE_DIR;

Count params_of(const json& j) { return transformer_params(spec_from_hf_config(j, "test").shape()); }

json llama31_8b() {
  return json::parse(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
    "max_position_embeddings": 131072, "tie_word_embeddings": false, "attention_bias": false,
    "mlp_bias": false, "head_dim": null})");
}

json mixtral_8x7b() {
  return json::parse(R"({"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
    "max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2,
    "tie_word_embeddings": false, "sliding_window": null})");
}

}  // namespace

TEST_CASE("HF configs: parameters equal the published counts", "[model][hf]") {
  // Llama-3.1-8B: 8,030,261,248.
  CHECK(params_of(llama31_8b()) == 8030261248);
  // Mistral-7B-v0.1: 7,241,732,096.
  CHECK(params_of(json::parse(R"({"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
    "max_position_embeddings": 32768, "sliding_window": 4096, "tie_word_embeddings": false})")) == 7241732096);
  // Qwen2-7B (biases on q, k and v only): 7,615,616,512.
  CHECK(params_of(json::parse(R"({"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28,
    "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
    "max_position_embeddings": 131072, "tie_word_embeddings": false})")) == 7615616512);
  // GPT-2 (124M; learned positions of n_positions, tied head): 124,439,808.
  CHECK(params_of(json::parse(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
    "n_inner": null, "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257})")) == 124439808);
  // Gemma-7B (heads x head_dim = 4096 wider than hidden 3072, tied): 8,537,680,896.
  CHECK(params_of(json::parse(R"({"model_type": "gemma", "hidden_size": 3072, "num_hidden_layers": 28,
    "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256, "intermediate_size": 24576,
    "vocab_size": 256000, "max_position_embeddings": 8192})")) == 8537680896);
  // Gemma-2-9B (four norms per layer): 9,241,705,984.
  CHECK(params_of(json::parse(R"({"model_type": "gemma2", "hidden_size": 3584, "num_hidden_layers": 42,
    "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336,
    "vocab_size": 256000, "max_position_embeddings": 8192})")) == 9241705984);
  // Phi-3-mini-4k: 3,821,079,552.
  CHECK(params_of(json::parse(R"({"model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 8192, "vocab_size": 32064,
    "max_position_embeddings": 4096, "tie_word_embeddings": false})")) == 3821079552);
  // Pythia-160M (gpt_neox: biases, LayerNorm, untied embed_out): 162,322,944.
  CHECK(params_of(json::parse(R"({"model_type": "gpt_neox", "hidden_size": 768, "num_hidden_layers": 12,
    "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 50304,
    "max_position_embeddings": 2048, "tie_word_embeddings": false})")) == 162322944);
  // Mixtral-8x7B: 46,702,792,704 (every expert).
  CHECK(params_of(mixtral_8x7b()) == 46702792704);
  // Qwen3-8B (q/k RMSNorm per head: 2 x 128 weights per layer), by hand: per layer q 4096 x 4096 +
  // k, v 4096 x 2 x 1024 + q/k norms 256 + o 4096 x 4096 + MLP 3 x 4096 x 12288 + 2 norms 4096 =
  // 192,946,432; x 36 + 2 x 151936 x 4096 (untied) + final 4096 = 8,190,735,360.
  CHECK(params_of(json::parse(R"({"model_type": "qwen3", "hidden_size": 4096, "num_hidden_layers": 36,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 12288,
    "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": false,
    "attention_bias": false, "use_sliding_window": false, "sliding_window": null})")) == 8190735360);
  // Qwen3-30B-A3B (128 experts of 768, no shared expert), by hand: per layer q 2048 x 4096 + k, v
  // 2048 x 1024 + norms 256 + o 4096 x 2048 + router 2048 x 128 + 128 x 3 x 2048 x 768 + 2 x 2048 =
  // 623,120,640; x 48 + 2 x 151936 x 2048 + 2048 = 30,532,122,624.
  CHECK(params_of(json::parse(R"({"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "moe_intermediate_size": 768,
    "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
    "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": false})")) == 30532122624);
  // Gemma-3-1B (gemma3_text: 4 norms and q/k norms per head, tied), by hand: per layer q 1152 x 1024 +
  // k, v 1152 x 512 + norms 512 + o 1024 x 1152 + MLP 3 x 1152 x 6912 + 4 x 1152 = 26,842,112; x 26 +
  // 262144 x 1152 + 1152 = 999,885,952.
  CHECK(params_of(json::parse(R"({"model_type": "gemma3_text", "hidden_size": 1152, "num_hidden_layers": 26,
    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "intermediate_size": 6912,
    "vocab_size": 262144, "max_position_embeddings": 32768, "sliding_window": 512,
    "sliding_window_pattern": 6})")) == 999885952);
  // OLMo-2-7B (q/k norms over the whole projections: 4096 + 4096), by hand: per layer 4 x 4096^2 +
  // 8192 + 3 x 4096 x 11008 + 2 x 4096 = 202,391,552; x 32 + 2 x 100352 x 4096 + 4096 = 7,298,617,344.
  CHECK(params_of(json::parse(R"({"model_type": "olmo2", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 100352,
    "max_position_embeddings": 4096, "tie_word_embeddings": false, "attention_bias": false})")) == 7298617344);
  // StarCoder2-3B (LayerNorm, biases, GQA 24/2, tied by default), by hand: per layer q 3072 x 3072 +
  // 3072 + k, v 3072 x 512 + 512 + o 3072 x 3072 + 3072 + fc1 3072 x 12288 + 12288 + fc2 12288 x
  // 3072 + 3072 + 2 LayerNorms 4 x 3072 = 95,979,008; x 30 + 49152 x 3072 + 6144 = 3,030,371,328.
  CHECK(params_of(json::parse(R"({"model_type": "starcoder2", "hidden_size": 3072, "num_hidden_layers": 30,
    "num_attention_heads": 24, "num_key_value_heads": 2, "intermediate_size": 12288, "vocab_size": 49152,
    "max_position_embeddings": 16384, "sliding_window": 4096, "use_bias": true, "norm_type": "layer_norm"})")) ==
        3030371328);
  // Falcon-7B (one key/value head, one LayerNorm per layer, no biases, tied), by hand: per layer
  // qkv 4544 x (4544 + 2 x 64) + dense 4544^2 + MLP 2 x 4544 x 18176 + LayerNorm 2 x 4544 =
  // 207,070,080; x 32 + 65024 x 4544 + 9088 = 6,921,720,704.
  CHECK(params_of(json::parse(R"({"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32,
    "num_attention_heads": 71, "multi_query": true, "parallel_attn": true, "new_decoder_architecture": false,
    "bias": false, "alibi": false, "vocab_size": 65024})")) == 6921720704);
  // Its first config's spelling (n_layer, n_head) is the same model.
  CHECK(params_of(json::parse(R"({"model_type": "falcon", "hidden_size": 4544, "n_layer": 32, "n_head": 71,
    "vocab_size": 65024})")) == 6921720704);
  // Falcon-40B layout (new_decoder_architecture: 8 key/value heads, two LayerNorms), by hand: per
  // layer 8192 x (8192 + 2 x 8 x 64) + 8192^2 + 2 x 8192 x 32768 + 4 x 8192 = 679,510,016; x 60 +
  // 65024 x 8192 + 16384 = 41,303,293,952.
  CHECK(params_of(json::parse(R"({"model_type": "falcon", "hidden_size": 8192, "num_hidden_layers": 60,
    "num_attention_heads": 128, "num_kv_heads": 8, "new_decoder_architecture": true, "vocab_size": 65024})")) ==
        41303293952);
}

TEST_CASE("HF configs: windows and q/k norms of the newer families", "[model][hf][window]") {
  // Gemma 3 1B: 26 layers, every 6th global: 22 windowed of 512.
  const auto g3 = spec_from_hf_config(json::parse(R"({"model_type": "gemma3_text", "hidden_size": 1152,
    "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
    "intermediate_size": 6912, "vocab_size": 262144, "max_position_embeddings": 32768, "sliding_window": 512})"),
                                      "test");
  CHECK(g3.attention_window == 512);
  CHECK(g3.windowed_layers == Approx(22.0 / 26.0));
  CHECK(g3.qk_norm == QkNorm::per_head);
  CHECK(g3.tied_embeddings);
  // layer_types, where a config lists them, is the windowed share (here 1 of 4 layers).
  auto q3 = json::parse(R"({"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
    "max_position_embeddings": 256, "sliding_window": 32,
    "layer_types": ["sliding_attention", "full_attention", "full_attention", "full_attention"]})");
  const auto q = spec_from_hf_config(q3, "test");
  CHECK(q.attention_window == 32);
  CHECK(q.windowed_layers == Approx(0.25));
  // All full: no window, whatever sliding_window says.
  q3["layer_types"] = json::array({"full_attention", "full_attention", "full_attention", "full_attention"});
  CHECK(spec_from_hf_config(q3, "test").attention_window == 0);
  // The q/k norms keep their inputs for backward: q + k widths (64 + 32) per token more than without.
  const auto with = spec_from_hf_config(q3, "test").shape();
  auto without = with;
  without.qk_norm = QkNorm::none;
  CHECK(layer_activation_bytes(with, 1, 2, Checkpointing::none) -
            layer_activation_bytes(without, 1, 2, Checkpointing::none) ==
        Approx(2.0 * 256 * (64 + 32)));
  // StarCoder2: LayerNorm, plain GELU MLP, biases, window on every layer.
  const auto sc = spec_from_hf_config(json::parse(R"({"model_type": "starcoder2", "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256,
    "vocab_size": 100, "max_position_embeddings": 512, "sliding_window": 128, "tie_word_embeddings": false})"),
                                      "test");
  CHECK_FALSE(sc.rms_norm);
  CHECK_FALSE(sc.gated_mlp);
  CHECK(sc.bias);
  CHECK(sc.attention_window == 128);
  CHECK(sc.windowed_layers == 1.0);
  CHECK_FALSE(sc.tied_embeddings);
}

TEST_CASE("HF configs: the implied architecture per model_type", "[model][hf]") {
  const auto llama = spec_from_hf_config(llama31_8b(), "test");
  CHECK(llama.seq_len == 131072);  // max_position_embeddings
  CHECK(spec_from_hf_config(llama31_8b(), "test", 8192).seq_len == 8192);
  CHECK(llama.gated_mlp);
  CHECK(llama.rms_norm);
  CHECK_FALSE(llama.bias);
  CHECK_FALSE(llama.tied_embeddings);
  CHECK_FALSE(llama.learned_positions);
  CHECK(llama.optimizer == Optimizer::adamw);
  CHECK(llama.name == "llama");
  // The same model as the built-in llama3-8b at its sequence length.
  const auto builtin = builtin_spec("llama3-8b");
  const auto at8k = spec_from_hf_config(llama31_8b(), "test", 8192, "llama-3.1-8b");
  CHECK(at8k.name == "llama-3.1-8b");
  CHECK(transformer_params(at8k.shape()) == transformer_params(builtin.shape()));
  CHECK(training_flops(at8k.shape(), 2, Checkpointing::none) == training_flops(builtin.shape(), 2, Checkpointing::none));
  CHECK(activation_bytes(at8k.shape(), 2, 2, Checkpointing::none) == activation_bytes(builtin.shape(), 2, 2, Checkpointing::none));
  // gpt2: dropout from its pdrop fields (default 0.1), none when they are 0.
  auto gpt2 = json::parse(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128,
    "vocab_size": 100})");
  CHECK(spec_from_hf_config(gpt2, "test").dropout);
  CHECK(spec_from_hf_config(gpt2, "test").seq_len == 128);
  gpt2["resid_pdrop"] = gpt2["embd_pdrop"] = gpt2["attn_pdrop"] = 0.0;
  CHECK_FALSE(spec_from_hf_config(gpt2, "test").dropout);
  // gpt2: the position table keeps n_positions rows at a shorter sequence.
  CHECK(transformer_params(spec_from_hf_config(gpt2, "test", 64).shape()) ==
        transformer_params(spec_from_hf_config(gpt2, "test").shape()));
  // gemma ties by default; llama honours tie_word_embeddings.
  auto tied = llama31_8b();
  tied["tie_word_embeddings"] = true;
  CHECK(params_of(tied) == 8030261248 - 128256LL * 4096);
}

TEST_CASE("HF configs: sliding-window attention as each model's code applies it", "[model][hf][window]") {
  // Mixtral's null window: none. Mistral 7B v0.1: 4096 on every layer.
  CHECK(spec_from_hf_config(mixtral_8x7b(), "test").attention_window == 0);
  auto mistral = mixtral_8x7b();
  mistral["model_type"] = "mistral";
  mistral["sliding_window"] = 4096;
  const auto m = spec_from_hf_config(mistral, "test", 32768);
  CHECK(m.attention_window == 4096);
  CHECK(m.windowed_layers == 1.0);
  CHECK(m.shape().attended_keys() == Approx(4096.0));
  CHECK(spec_from_hf_config(mistral, "test", 4096).shape().attended_keys() == Approx(4096.0));
  // Gemma 2: the even layers of 26 (13 of them).
  auto gemma2 = json::parse(R"({"model_type": "gemma2", "hidden_size": 2304, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 9216,
    "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096})");
  const auto g = spec_from_hf_config(gemma2, "test");
  CHECK(g.attention_window == 4096);
  CHECK(g.windowed_layers == Approx(0.5));
  CHECK(g.shape().attended_keys() == Approx((8192.0 + 4096.0) / 2));
  // Qwen2: only with use_sliding_window, from layer max_window_layers on (21 of 28: 7 windowed).
  auto qwen = json::parse(R"({"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28,
    "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
    "max_position_embeddings": 32768, "sliding_window": 4096, "max_window_layers": 21, "use_sliding_window": false})");
  CHECK(spec_from_hf_config(qwen, "test").attention_window == 0);
  qwen["use_sliding_window"] = true;
  CHECK(spec_from_hf_config(qwen, "test").attention_window == 4096);
  CHECK(spec_from_hf_config(qwen, "test").windowed_layers == Approx(0.25));
  qwen["max_window_layers"] = 28;
  CHECK(spec_from_hf_config(qwen, "test").attention_window == 0);
  // A spec file says it with sliding_window and sliding_window_layers.
  auto spec = json::parse(R"({"name": "w", "layers": 2, "hidden": 64, "heads": 4, "seq_len": 1024, "vocab": 100,
    "sliding_window": 256, "sliding_window_layers": 0.5})");
  const auto s = spec_from_json(spec, "w.json");
  CHECK(s.attention_window == 256);
  CHECK(s.shape().attended_keys() == Approx(640.0));
  spec["sliding_window_layers"] = 1.5;
  CHECK_THROWS_WITH(spec_from_json(spec, "w.json"), Catch::Contains("w.json.sliding_window_layers: must be the share"));
  spec.erase("sliding_window");
  CHECK_THROWS_WITH(spec_from_json(spec, "w.json"), Catch::Contains("given without sliding_window"));
}

TEST_CASE("transformer: head_dim, q/k/v biases, norms per layer and experts, by hand", "[model][hf]") {
  TransformerShape t;
  t.layers = 1;
  t.hidden = 4;
  t.heads = 2;
  t.kv_heads = 1;
  t.vocab = 10;
  t.seq_len = 8;
  t.gated_mlp = true;
  t.bias = false;
  t.rms_norm = true;
  t.learned_positions = false;
  t.ffn_hidden = 2;
  // q 4x4, k and v 4x(2 x 2), output 4x4, gate+up 4x4, down 2x4, two norms of 4.
  CHECK(layer_params(t) == 16 + 16 + 16 + 16 + 8 + 8);
  t.head_dim = 3;  // q 4x6, k and v 4x(2 x 3), output 6x4
  CHECK(layer_params(t) == 24 + 24 + 24 + 16 + 8 + 8);
  t.qkv_bias = true;  // + q 6, k and v 6
  CHECK(layer_params(t) == 24 + 24 + 24 + 16 + 8 + 8 + 12);
  t.layer_norms = 4;
  CHECK(layer_params(t) == 24 + 24 + 24 + 16 + 8 + 16 + 12);
  t.head_dim = 0;
  t.qkv_bias = false;
  t.layer_norms = 2;
  // Three experts of width 2 (24 each), top-1, a shared expert of width 2 (24) and its gate (4),
  // a router of 4 x 3.
  t.experts = 3;
  t.active_experts = 1;
  t.shared_ffn = 2;
  const Count attention_and_norms = 16 + 16 + 16 + 8;
  CHECK(layer_params(t) == attention_and_norms + 12 + 3 * 24 + 24 + 4);
  CHECK(layer_active_params(t) == attention_and_norms + 12 + 1 * 24 + 24 + 4);
  CHECK(t.active_ffn() == 1 * 2 + 2);
  // FLOPs from the active parameters: 2 T (L N_active + V h) + 4 L T s q forward.
  const double T = 8;
  CHECK(forward_flops(t, 1) == Approx(2 * T * (double(layer_active_params(t)) + 40) + 4 * T * 8 * 4));
  // Learned positions: n_positions rows, whatever the sequence.
  TransformerShape g;
  g.positions = 16;
  CHECK(embedding_params(g) == (256 + 16) * 64);
  g.learned_positions = false;
  CHECK(embedding_params(g) == 256 * 64);
}

TEST_CASE("HF configs: mixture of experts prices every expert's memory, the active ones' compute", "[model][hf]") {
  const auto m = spec_from_hf_config(mixtral_8x7b(), "test", 4096);
  const TransformerShape t = m.shape();
  CHECK(t.experts == 8);
  CHECK(t.active_experts == 2);
  // Active: attention, norms, router and 2 of 8 experts per layer + embeddings: 12,879,925,248.
  CHECK(transformer_params(t) - t.layers * (layer_params(t) - layer_active_params(t)) == 12879925248);
  // The FLOPs of the dense model of the active parameters (bar the router, which is in both).
  TransformerShape dense = t;
  dense.experts = 0;
  dense.ffn_hidden = 2 * 14336;
  CHECK(forward_flops(t, 1) ==
        Approx(forward_flops(dense, 1) + 2.0 * 4096 * 32 * (4096.0 * 8)));
  // Qwen1.5-MoE-A2.7B: 60 experts of 1408, top-4, a shared expert of 5632, q/k/v biases:
  // 14,315,784,192 parameters, 2,689,173,504 active.
  const auto q = spec_from_hf_config(json::parse(R"({"model_type": "qwen2_moe", "hidden_size": 2048,
    "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
    "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
    "num_experts_per_tok": 4, "vocab_size": 151936, "max_position_embeddings": 8192,
    "tie_word_embeddings": false, "decoder_sparse_step": 1, "mlp_only_layers": []})"), "test");
  const TransformerShape qs = q.shape();
  CHECK(transformer_params(qs) == 14315784192);
  CHECK(transformer_params(qs) - qs.layers * (layer_params(qs) - layer_active_params(qs)) == 2689173504);
  // The spec model holds every parameter and says expert parallelism is not planned.
  const Cluster cluster = load_cluster(kSource + "/examples/clusters/h100-8node-ib400.json");
  const auto model = make_spec_model(m, cluster);
  CHECK(model->info().fit["params"].get<Count>() == 46702792704);
  bool said = false;
  for (const auto& n : model->info().notes) said = said || n.find("expert parallelism is not planned") != std::string::npos;
  CHECK(said);
}

TEST_CASE("HF configs: shipped examples load through load_spec", "[model][hf]") {
  const std::string d = kSource + "/examples/hf/";
  const auto llama = load_spec(d + "llama-3.1-8b.json", 0, true);
  CHECK(llama.name == "llama-3.1-8b");
  CHECK(transformer_params(llama.shape()) == 8030261248);
  CHECK(transformer_params(load_spec(d + "mistral-7b.json").shape()) == 7241732096);
  CHECK(transformer_params(load_spec(d + "qwen2-7b.json").shape()) == 7615616512);
  CHECK(transformer_params(load_spec(d + "gpt2.json").shape()) == 124439808);
  CHECK(transformer_params(load_spec(d + "mixtral-8x7b.json", 4096).shape()) == 46702792704);
  CHECK(load_spec(d + "mixtral-8x7b.json", 4096).seq_len == 4096);
  const auto qwen3 = load_spec(d + "qwen3-8b.json", 4096);
  CHECK(transformer_params(qwen3.shape()) == 8190735360);
  CHECK(qwen3.attention_window == 0);  // use_sliding_window false
}

TEST_CASE("HF configs: errors name the field and the fix", "[model][hf]") {
  auto bad = llama31_8b();
  bad["num_key_value_heads"] = 7;
  CHECK_THROWS_WITH(spec_from_hf_config(bad, "--model-config c.json"),
                    "--model-config c.json: num_key_value_heads 7 does not divide num_attention_heads 32");
  auto bert = llama31_8b();
  bert["model_type"] = "bert";
  CHECK_THROWS_WITH(spec_from_hf_config(bert, "w"),
                    Catch::Contains("model_type 'bert' is not supported: use one of llama, mistral, qwen2, qwen3, "
                                    "gemma, gemma2, gemma3_text, phi3, olmo2, gpt2, gpt_neox, starcoder2, falcon, "
                                    "mixtral, qwen2_moe, qwen3_moe"));
  // Gemma 3's multimodal checkpoint: its vision tower is not modelled; the fix is its text_config.
  auto gemma3 = llama31_8b();
  gemma3["model_type"] = "gemma3";
  CHECK_THROWS_WITH(spec_from_hf_config(gemma3, "w"),
                    Catch::Contains("w: model_type 'gemma3' is Gemma 3's multimodal checkpoint") &&
                        Catch::Contains("text_config saved as a config.json of its own (model_type gemma3_text)"));
  auto qwen3_bias = llama31_8b();
  qwen3_bias["model_type"] = "qwen3";
  qwen3_bias["attention_bias"] = true;
  CHECK_THROWS_WITH(spec_from_hf_config(qwen3_bias, "w"),
                    "w: attention_bias true (biases on q, k, v and o) is not modelled for qwen3: remove it or set it "
                    "false");
  auto types = mixtral_8x7b();
  types["model_type"] = "mistral";
  types["sliding_window"] = 4096;
  types["layer_types"] = json::array({"sliding_attention", "full_attention"});
  CHECK_THROWS_WITH(spec_from_hf_config(types, "w"),
                    Catch::Contains("w: layer_types must list one attention kind per layer (32 layers)"));
  auto missing = llama31_8b();
  missing.erase("intermediate_size");
  CHECK_THROWS_WITH(spec_from_hf_config(missing, "w"), "w: intermediate_size is missing: a llama config.json gives it");
  auto text = llama31_8b();
  text["hidden_size"] = "4096";
  CHECK_THROWS_WITH(spec_from_hf_config(text, "w"), Catch::Contains("w: hidden_size must be a whole number"));
  auto half_bias = llama31_8b();
  half_bias["attention_bias"] = true;
  CHECK_THROWS_WITH(spec_from_hf_config(half_bias, "w"), Catch::Contains("attention_bias true with mlp_bias false"));
  auto gpt2 = json::parse(R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128,
    "vocab_size": 100})");
  CHECK_THROWS_WITH(spec_from_hf_config(gpt2, "w", 256), Catch::Contains("--seq-len 256: more than the 128 learned positions"));
  auto moe = mixtral_8x7b();
  moe["num_experts_per_tok"] = 9;
  CHECK_THROWS_WITH(spec_from_hf_config(moe, "w"), Catch::Contains("num_experts_per_tok 9 is more than the 8 experts"));
  auto sparse = json::parse(R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64,
    "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 100, "max_position_embeddings": 128,
    "mlp_only_layers": [1]})");
  CHECK_THROWS_WITH(spec_from_hf_config(sparse, "w"), Catch::Contains("mlp_only_layers [1] (dense layers) is not modelled"));
  // --model-config takes a HuggingFace config only; --seq-len applies to one only.
  const std::string spec = kSource + "/examples/specs/gpt2-small.json";
  CHECK_THROWS_WITH(load_spec(spec, 0, true), Catch::Contains("not a HuggingFace config.json (it has no model_type)"));
  CHECK_THROWS_WITH(load_spec(spec, 512), Catch::Contains("--seq-len: applies to a HuggingFace config.json"));
  CHECK_THROWS_WITH(load_spec("builtin:llama3-8b", 512), Catch::Contains("builtin:NAME@SEQ_LEN"));
}
