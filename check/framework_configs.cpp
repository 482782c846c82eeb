// What/why: see framework_configs.hpp.
#include "check/framework_configs.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include <toml++/toml.h>

#include <fmt/format.h>

#include "check/deepspeed_config.hpp"
#include "check/structured_text.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "model/parallel_plan.hpp"

namespace gaccum::check {
namespace {

using json = nlohmann::json;

Count positive(const json& v, const std::string& field) {
  if (v.is_number_integer() && v.get<long long>() >= 1) return static_cast<Count>(v.get<long long>());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    Count n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && end == s.data() + s.size() && n >= 1) return n;
  }
  throw InputError(fmt::format("{}: expected a positive integer, got {}", field, v.dump()));
}

// ---- Megatron-LM arguments --------------------------------------------------------------------

// Shell-like words: whitespace-separated, '...' and "..." quoting, backslash-newline joins, # to
// the end of a line outside quotes.
std::vector<std::string> shell_words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      while (i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) ++i;
      continue;
    }
    if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) out.push_back(cur), cur.clear(), in_word = false;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
      continue;
    }
    cur += c;
    in_word = true;
  }
  if (quote) throw InputError("unterminated quote");
  if (in_word) out.push_back(cur);
  return out;
}

// The model a framework config describes whole: the shape its fields give, the plan the file runs.
struct ModelFields {
  std::string name, source;
  Count layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0;
  std::optional<Count> ffn, kv_heads;
  bool gated = false, rms_norm = false, learned_positions = true, tied = true, bias = true, flash = true, dropout = true;
  Precision dtype = Precision::bf16;
  Checkpointing checkpointing = Checkpointing::none;
};

model::TransformerSpec spec_of(const ModelFields& f) {
  model::TransformerSpec s;
  s.name = f.name;
  s.layers = f.layers;
  s.hidden = f.hidden;
  s.heads = f.heads;
  s.seq_len = f.seq;
  s.vocab = f.vocab;
  if (f.ffn) s.ffn_hidden = *f.ffn;
  if (f.kv_heads) s.kv_heads = *f.kv_heads;
  s.gated_mlp = f.gated;
  s.rms_norm = f.rms_norm;
  s.learned_positions = f.learned_positions;
  s.tied_embeddings = f.tied;
  s.bias = f.bias;
  s.flash_attention = f.flash;
  s.dropout = f.dropout;
  s.dtype = f.dtype;
  s.activation_checkpointing = f.checkpointing;
  s.mean_tokens_per_sample = double(f.seq);
  s.source = f.source;
  return s;
}

// Megatron-LM's and NeMo's block recompute: `recomputed` layers of each pipeline stage (of each
// virtual chunk when interleaved) recompute in full, the rest keep their activations; at or above
// the stage's layers it is full recompute of every layer. Without the layer count, every layer.
void set_block_recompute(CheckInputs& in, std::optional<Count> layers, Count recomputed, const std::string& what) {
  if (!layers) return;
  const Count chunks = (in.pp ? *in.pp : 1) * (in.virtual_stages ? *in.virtual_stages : 1);
  const double per_chunk = double(*layers) / double(chunks);
  if (double(recomputed) >= per_chunk) return;
  in.recomputed_fraction.set(double(recomputed) / per_chunk,
                             fmt::format("{}: {} of {:g} layers per stage", what, recomputed, per_chunk));
}

// The names one framework file gives Megatron-Core's split settings (Megatron-LM's flags, NeMo's keys).
struct SplitKeys {
  std::string path, src, layout, first_last, embedding, loss, virtual_stages, layers;
};

// Megatron-Core's layout (stage by stage) or its embedding/loss accounting, into the split priced:
// mutually exclusive with each other and with the first/last stage sizes, as Megatron-LM asserts.
void megatron_split_flags(CheckInputs& in, const std::optional<std::string>& layout, bool acc_e, bool acc_l,
                          std::optional<Count> layers, const SplitKeys& k) {
  if (!layout && !acc_e && !acc_l) return;
  const bool ends = in.first_stage_layers || in.last_stage_layers;
  if ((layout && (ends || acc_e || acc_l)) || (ends && (acc_e || acc_l)))
    throw InputError(fmt::format("{}: {} together with {}: Megatron-LM takes one way to split the layers (it refuses "
                                 "them together); keep one",
                                 k.path, layout ? k.layout : k.first_last,
                                 layout && ends ? k.first_last : acc_e ? k.embedding : k.loss));
  const Count pp = in.pp ? *in.pp : 1;
  if (layout) {
    const MegatronLayout ml = parse_megatron_layout(*layout, pp, fmt::format("{}: {}", k.path, k.layout));
    Count sum = 0;
    for (Count n : ml.stage_layers) sum += n;
    if (layers && sum != *layers)
      throw InputError(fmt::format("{}: {} '{}' places {} transformer layers, {} says {} (Megatron-LM refuses it)", k.path,
                                   k.layout, *layout, sum, k.layers, *layers));
    if (pp < 2 && ml.stage_layers.size() > 1)
      throw InputError(fmt::format("{}: {} '{}' has {} stages without a pipeline: give the pipeline size", k.path, k.layout,
                                   *layout, ml.stage_layers.size()));
    if (in.virtual_stages && *in.virtual_stages != ml.virtual_stages)
      throw InputError(fmt::format("{}: {} '{}' makes {} stages per pipeline rank, {} says {}: drop {}", k.path, k.layout,
                                   *layout, ml.virtual_stages, k.virtual_stages, *in.virtual_stages, k.virtual_stages));
    const std::string from = fmt::format("{} {}", k.src, k.layout);
    if (ml.virtual_stages > 1 || in.virtual_stages) in.virtual_stages.set(ml.virtual_stages, from);
    const bool even = std::all_of(ml.stage_layers.begin(), ml.stage_layers.end(),
                                  [&](Count n) { return n == ml.stage_layers.front(); });
    if (!even) in.stage_layer_counts.set(ml.stage_layers, from);
    return;
  }
  if (!layers)
    throw InputError(fmt::format("{}: {} needs {} to split the layers as Megatron-LM does: add it", k.path,
                                 acc_e ? k.embedding : k.loss, k.layers));
  const Count v = in.virtual_stages ? *in.virtual_stages : 1;
  std::vector<Count> split;
  try {
    split = model::megatron_account_split(*layers, pp, v, acc_e, acc_l);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", k.path, e.what()));
  }
  in.stage_layer_counts.set(split, fmt::format("{} {}", k.src, acc_e && acc_l ? k.embedding + " " + k.loss
                                                                  : acc_e    ? k.embedding
                                                                             : k.loss));
}

}  // namespace

MegatronLayout parse_megatron_layout(const std::string& text, Count pp, const std::string& what) {
  const auto fail = [&](const std::string& why) { return InputError(fmt::format("{} '{}': {}", what, text, why)); };
  if (pp < 1) throw fail("needs --pipeline-model-parallel-size");
  std::string t;
  for (char c : text)
    if (c != ',') t += c;  // purely cosmetic, as Megatron-LM drops them
  // Unroll "(group)*n", then "x*n", left to right (Megatron-LM's two substitutions), with a bound
  // on what a typo can ask for.
  constexpr std::size_t kMaxUnrolled = 1u << 20;
  const auto unroll = [&](const std::string& in, const std::regex& re) {
    std::string out;
    auto last = in.cbegin();
    for (std::sregex_iterator it(in.begin(), in.end(), re), end; it != end; ++it) {
      const std::smatch& m = *it;
      out.append(last, m[0].first);
      const std::string n = m[2].str();
      const unsigned long times = n.size() > 7 ? kMaxUnrolled + 1 : std::stoul(n);
      if (times * static_cast<std::size_t>(m[1].length()) + out.size() > kMaxUnrolled) throw fail("unrolls to more than a million layers");
      for (unsigned long i = 0; i < times; ++i) out += m[1].str();
      last = m[0].second;
    }
    out.append(last, in.cend());
    return out;
  };
  t = unroll(t, std::regex(R"(\(([^)]+)\)\*(\d+))"));
  t = unroll(t, std::regex(R"((.)\*(\d+))"));
  std::vector<std::string> stages(1);
  for (char c : t) {
    if (c == '|') {
      stages.emplace_back();
      continue;
    }
    if (c != 'E' && c != 'L' && c != 't' && c != 'm')
      throw fail(fmt::format("'{}' is not a layer: Megatron-LM knows E (embedding), t (transformer layer), m (multi-token "
                             "prediction) and L (loss), stages split by '|'",
                             c));
    stages.back() += c;
  }
  const Count S = static_cast<Count>(stages.size());
  if (S % pp != 0)
    throw fail(fmt::format("{} stages do not divide over --pipeline-model-parallel-size {} (Megatron-LM refuses it): give "
                           "pp x v stages",
                           S, pp));
  const std::string flat = [&] {
    std::string f;
    for (const auto& st : stages) f += st;
    return f;
  }();
  if (flat.empty() || flat.front() != 'E' || std::count(flat.begin(), flat.end(), 'E') != 1)
    throw fail("the embedding E must come exactly once, first (Megatron-LM refuses it otherwise)");
  if (flat.back() != 'L' || std::count(flat.begin(), flat.end(), 'L') != 1)
    throw fail("the loss L must come exactly once, last (Megatron-LM refuses it otherwise)");
  if (flat.find('m') != std::string::npos)
    throw fail("multi-token prediction layers (m) are not priced here: drop them from the layout to price the rest");
  MegatronLayout out;
  out.virtual_stages = S / pp;
  for (Count j = 0; j < S; ++j) {
    const std::string& st = stages[static_cast<std::size_t>(j)];
    const Count n = static_cast<Count>(std::count(st.begin(), st.end(), 't'));
    if (n < 1)
      throw fail(fmt::format("model stage {} ({}) holds no transformer layer: a stage of only the {} is not priced here; "
                             "give it at least one t",
                             j, st.empty() ? std::string("empty") : "'" + st + "'",
                             st == "E" ? "embedding" : st == "L" ? "loss" : "embedding or loss"));
    out.stage_layers.push_back(n);
  }
  return out;
}

FrameworkConfig load_megatron_args(const std::string& path) {
  const std::string text = read_text_file(path, "--megatron-args");
  FrameworkConfig fc;
  fc.kind = ConfigKind::megatron_args;
  fc.text = text;
  fc.path = path;
  fc.framework = Framework::megatron;
  fc.hash = hex64(fnv1a64(text));
  std::vector<std::string> words;
  try {
    words = shell_words(text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  // --name value, --name=value, or a bare --name (a switch).
  std::map<std::string, std::string> args;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("--", 0) != 0) continue;  // the launcher, the script, positional words
    std::string name = w.substr(2), value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) {
      value = words[++i];
    }
    args[name] = value;
  }
  const std::string src = "megatron args " + path;
  auto has = [&](const char* n) { return args.count(n) > 0; };
  auto count = [&](const char* n) -> std::optional<Count> {
    auto it = args.find(n);
    if (it == args.end()) return std::nullopt;
    return positive(json(it->second), fmt::format("{}: --{}", path, n));
  };
  CheckInputs& in = fc.inputs;
  in.framework.set(Framework::megatron, src);
  auto put = [&](Sourced<Count>& dst, const char* n) {
    if (auto v = count(n)) dst.set(*v, fmt::format("{} --{}", src, n));
  };
  put(in.tp, "tensor-model-parallel-size");
  put(in.pp, "pipeline-model-parallel-size");
  put(in.cp, "context-parallel-size");
  put(in.micro_batch, "micro-batch-size");
  put(in.global_batch, "global-batch-size");
  put(in.virtual_stages, "virtual-pipeline-model-parallel-size");
  // Megatron-LM's current spelling of the same (its scripts' --num-virtual-stages-per-pipeline-rank).
  if (auto v = count("num-virtual-stages-per-pipeline-rank")) {
    if (in.virtual_stages && *in.virtual_stages != *v)
      throw InputError(fmt::format("{}: --num-virtual-stages-per-pipeline-rank {} and --virtual-pipeline-model-parallel-size "
                                   "{} disagree: keep one",
                                   path, *v, *in.virtual_stages));
    in.virtual_stages.set(*v, src + " --num-virtual-stages-per-pipeline-rank");
  }
  put(in.first_stage_layers, "decoder-first-pipeline-num-layers");
  put(in.last_stage_layers, "decoder-last-pipeline-num-layers");
  const auto layers = count("num-layers");
  if (auto per = count("num-layers-per-virtual-pipeline-stage")) {
    const Count pp = in.pp ? *in.pp : 1;
    if (!layers || *layers % (pp * *per) != 0)
      throw InputError(fmt::format("{}: --num-layers-per-virtual-pipeline-stage {} needs --num-layers divisible by "
                                   "pp x {} (got {})",
                                   path, *per, *per, layers ? fmt::format("{}", *layers) : std::string("none")));
    in.virtual_stages.set(*layers / (pp * *per),
                          fmt::format("{} --num-layers / (--pipeline-model-parallel-size x "
                                      "--num-layers-per-virtual-pipeline-stage)",
                                      src));
  }
  // Megatron-LM's other splits: a layout stage by stage, or the embedding and loss counted as layers.
  {
    const bool acc_e = has("account-for-embedding-in-pipeline-split"), acc_l = has("account-for-loss-in-pipeline-split");
    std::optional<std::string> layout;
    if (has("pipeline-model-parallel-layout")) layout = args["pipeline-model-parallel-layout"];
    megatron_split_flags(in, layout, acc_e, acc_l, layers,
                         SplitKeys{path, src, "--pipeline-model-parallel-layout", "--decoder-first/last-pipeline-num-layers",
                                   "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
                                   "--virtual-pipeline-model-parallel-size", "--num-layers"});
  }
  if (in.virtual_stages && *in.virtual_stages > 1) in.schedule.set(Schedule::interleaved_1f1b, src);
  else if (in.pp && *in.pp > 1) in.schedule.set(Schedule::one_f_one_b, src);
  if (in.virtual_stages && *in.virtual_stages > 1 && (in.first_stage_layers || in.last_stage_layers))
    throw InputError(fmt::format("{}: --decoder-{}-pipeline-num-layers with {} virtual pipeline stages: Megatron-LM "
                                 "spreads those layers over the rank's chunks, a split not priced here; drop the "
                                 "virtual stages or give layers that divide pp x v",
                                 path, in.first_stage_layers ? "first" : "last", *in.virtual_stages));
  if (has("sequence-parallel")) in.sequence_parallel.set(true, src + " --sequence-parallel");
  if (has("recompute-granularity")) {
    const std::string g = args["recompute-granularity"];
    if (g != "full" && g != "selective")
      throw InputError(fmt::format("{}: --recompute-granularity '{}': expected full or selective", path, g));
    in.checkpointing.set(g == "full" ? Checkpointing::full : Checkpointing::selective,
                         src + " --recompute-granularity");
    const std::string method = has("recompute-method") ? args["recompute-method"] : "";
    if (!method.empty() && method != "uniform" && method != "block")
      throw InputError(fmt::format("{}: --recompute-method '{}': expected uniform or block", path, method));
    if (g == "full" && method == "block")
      if (auto n = count("recompute-num-layers"))
        set_block_recompute(in, layers, *n, fmt::format("{} --recompute-method block --recompute-num-layers {}", src, *n));
  } else if (has("recompute-activations")) {
    in.checkpointing.set(Checkpointing::selective, src + " --recompute-activations");
  } else {
    in.checkpointing.set(Checkpointing::none, src + " (no --recompute-granularity)");
  }
  in.sharding.set(has("use-distributed-optimizer") ? ShardingChoice{Sharding::zero1, 0} : ShardingChoice{},
                  has("use-distributed-optimizer") ? src + " --use-distributed-optimizer"
                                                   : src + " (no --use-distributed-optimizer)");
  in.strategy.set(has("overlap-grad-reduce") ? Strategy::overlap : Strategy::fused,
                  has("overlap-grad-reduce") ? src + " --overlap-grad-reduce" : src + " (no --overlap-grad-reduce)");
  // --fp8-format runs the GEMMs in fp8 (Transformer Engine) over --bf16 or --fp16.
  in.precision.set(has("fp8-format") ? Precision::fp8
                   : has("bf16")     ? Precision::bf16
                   : has("fp16")     ? Precision::fp16
                                     : Precision::fp32,
                   has("fp8-format") ? src + " --fp8-format"
                   : has("bf16")     ? src + " --bf16"
                   : has("fp16")     ? src + " --fp16"
                                     : src + " (neither --bf16 nor --fp16)");
  // Its gradient buffers: fp32 under --bf16 unless --grad-reduce-in-bf16 (the framework's default,
  // model/spec_model.hpp GradDtype); --accumulate-allreduce-grads-in-fp32 asks for fp32 under fp16 too.
  if (has("grad-reduce-in-bf16")) in.grad_reduce_in_fp32.set(false, src + " --grad-reduce-in-bf16");
  else if (has("accumulate-allreduce-grads-in-fp32"))
    in.grad_reduce_in_fp32.set(true, src + " --accumulate-allreduce-grads-in-fp32");
  // The model, when the arguments describe it whole.
  const auto hidden = count("hidden-size"), heads = count("num-attention-heads");
  const auto seq = count("seq-length"), vocab = count("vocab-size");
  if (layers && hidden && heads && seq) {
    if (!vocab) {
      fc.warnings.push_back(fmt::format("{}: no --vocab-size (Megatron takes it from the tokenizer): the model comes "
                                        "from --spec",
                                        path));
    } else {
      ModelFields m;
      m.name = "megatron-args";
      m.source = src;
      m.layers = *layers;
      m.hidden = *hidden;
      m.heads = *heads;
      m.seq = *seq;
      m.vocab = *vocab;
      m.ffn = count("ffn-hidden-size");
      if (has("group-query-attention")) m.kv_heads = count("num-query-groups").value_or(*heads);
      m.gated = has("swiglu");
      m.rms_norm = args.count("normalization") && args["normalization"] == "RMSNorm";
      m.learned_positions = !(args.count("position-embedding-type") && args["position-embedding-type"] == "rope");
      m.tied = !has("untie-embeddings-and-output-weights");
      m.bias = !has("disable-bias-linear");
      m.flash = has("use-flash-attn") || has("transformer-impl") || m.gated;
      m.dropout = !(args.count("attention-dropout") && args["attention-dropout"] == "0.0" &&
                    args.count("hidden-dropout") && args["hidden-dropout"] == "0.0");
      m.dtype = *in.precision;
      m.checkpointing = *in.checkpointing;
      const model::TransformerSpec s = spec_of(m);
      fc.model = s;
    }
  }
  return fc;
}

FrameworkConfig load_nemo_config(const std::string& path) {
  const std::string text = read_text_file(path, "--nemo-config");
  const json doc = parse_structured_text(text, TextFormat::yaml, path);
  FrameworkConfig fc;
  fc.kind = ConfigKind::nemo;
  fc.text = text;
  fc.path = path;
  fc.framework = Framework::megatron;  // NeMo and Megatron-Bridge train with Megatron-Core
  fc.hash = hex64(fnv1a64(text));
  if (!doc.is_object()) throw InputError(fmt::format("{}: expected a mapping with model: and trainer:", path));
  const json model = doc.value("model", json::object());
  const json trainer = doc.value("trainer", json::object());
  const std::string src = "nemo config " + path;
  CheckInputs& in = fc.inputs;
  in.framework.set(Framework::megatron, src + " (NeMo trains with Megatron-Core)");
  auto get = [&](const json& obj, const char* section, const char* key) -> std::optional<json> {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return std::nullopt;
    (void)section;
    return obj[key];
  };
  auto put = [&](Sourced<Count>& dst, const char* key) {
    if (auto v = get(model, "model", key)) dst.set(positive(*v, fmt::format("{}: model.{}", path, key)),
                                                    fmt::format("{} model.{}", src, key));
  };
  put(in.micro_batch, "micro_batch_size");
  put(in.global_batch, "global_batch_size");
  put(in.tp, "tensor_model_parallel_size");
  put(in.pp, "pipeline_model_parallel_size");
  put(in.cp, "context_parallel_size");
  put(in.virtual_stages, "virtual_pipeline_model_parallel_size");
  // Megatron-Core's uneven ends (TransformerConfig num_layers_in_first/last_pipeline_stage, what
  // Megatron-LM's --decoder-first/last-pipeline-num-layers set).
  put(in.first_stage_layers, "num_layers_in_first_pipeline_stage");
  put(in.last_stage_layers, "num_layers_in_last_pipeline_stage");
  {
    // Megatron-Core's layout (a string as Megatron-LM's flag, or its list of stages of layer names)
    // and its embedding/loss accounting.
    std::optional<std::string> layout;
    if (auto v = get(model, "model", "pipeline_model_parallel_layout")) {
      if (v->is_string()) {
        layout = v->get<std::string>();
      } else if (v->is_array()) {
        std::string joined;
        for (const json& stage : *v) {
          if (!stage.is_array())
            throw InputError(fmt::format("{}: model.pipeline_model_parallel_layout: expected a string or a list of stages "
                                         "(lists of layer names)",
                                         path));
          if (&stage != &v->front()) joined += '|';
          for (const json& name : stage) {
            const std::string n = name.is_string() ? name.get<std::string>() : name.dump();
            const char c = n == "embedding" ? 'E' : n == "decoder" ? 't' : n == "loss" ? 'L' : n == "mtp" ? 'm' : '?';
            if (c == '?')
              throw InputError(fmt::format("{}: model.pipeline_model_parallel_layout: '{}' is not a layer (embedding, "
                                           "decoder, mtp or loss)",
                                           path, n));
            joined += c;
          }
        }
        layout = joined;
      } else {
        throw InputError(fmt::format("{}: model.pipeline_model_parallel_layout: expected a string or a list of stages", path));
      }
    }
    const auto flag = [&](const char* key) {
      const auto v = get(model, "model", key);
      if (v && !v->is_boolean())
        throw InputError(fmt::format("{}: model.{}: expected true or false", path, key));
      return v && v->get<bool>();
    };
    const bool acc_e = flag("account_for_embedding_in_pipeline_split"), acc_l = flag("account_for_loss_in_pipeline_split");
    const auto nl = get(model, "model", "num_layers");
    megatron_split_flags(in, layout, acc_e, acc_l,
                         nl ? std::optional<Count>(positive(*nl, path + ": model.num_layers")) : std::nullopt,
                         SplitKeys{path, src, "model.pipeline_model_parallel_layout",
                                   "model.num_layers_in_first/last_pipeline_stage",
                                   "model.account_for_embedding_in_pipeline_split",
                                   "model.account_for_loss_in_pipeline_split",
                                   "model.virtual_pipeline_model_parallel_size", "model.num_layers"});
  }
  if (in.virtual_stages && *in.virtual_stages > 1 && (in.first_stage_layers || in.last_stage_layers))
    throw InputError(fmt::format("{}: model.num_layers_in_{}_pipeline_stage with {} virtual pipeline stages: "
                                 "Megatron-Core spreads those layers over the rank's chunks, a split not priced here; "
                                 "drop the virtual stages or give layers that divide pp x v",
                                 path, in.first_stage_layers ? "first" : "last", *in.virtual_stages));
  if (in.virtual_stages && *in.virtual_stages > 1) in.schedule.set(Schedule::interleaved_1f1b, src);
  else if (in.pp && *in.pp > 1) in.schedule.set(Schedule::one_f_one_b, src);
  if (auto v = get(model, "model", "sequence_parallel"); v && v->is_boolean())
    in.sequence_parallel.set(v->get<bool>(), src + " model.sequence_parallel");
  if (auto v = get(model, "model", "activations_checkpoint_granularity")) {
    const std::string g = v->is_string() ? v->get<std::string>() : v->dump();
    if (g != "full" && g != "selective")
      throw InputError(fmt::format("{}: model.activations_checkpoint_granularity '{}': expected full, selective or null",
                                   path, g));
    in.checkpointing.set(g == "full" ? Checkpointing::full : Checkpointing::selective,
                         src + " model.activations_checkpoint_granularity");
    const auto method = get(model, "model", "activations_checkpoint_method");
    const auto n = get(model, "model", "activations_checkpoint_num_layers");
    if (g == "full" && method && method->is_string() && method->get<std::string>() == "block" && n && !n->is_null()) {
      const Count k = positive(*n, path + ": model.activations_checkpoint_num_layers");
      const auto layers = get(model, "model", "num_layers");
      set_block_recompute(in, layers ? std::optional<Count>(positive(*layers, path + ": model.num_layers")) : std::nullopt, k,
                          fmt::format("{} model.activations_checkpoint_method block, activations_checkpoint_num_layers {}",
                                      src, k));
    }
  } else {
    in.checkpointing.set(Checkpointing::none, src + " (model.activations_checkpoint_granularity null)");
  }
  if (auto v = get(trainer, "trainer", "precision")) {
    const std::string p = v->is_string() ? v->get<std::string>() : v->dump();
    const Precision prec = p.rfind("bf16", 0) == 0 ? Precision::bf16
                           : (p.rfind("16", 0) == 0 || p.rfind("fp16", 0) == 0) ? Precision::fp16
                                                                                : Precision::fp32;
    in.precision.set(prec, src + " trainer.precision");
  }
  // Transformer Engine's fp8 GEMMs (model.fp8 over a bf16/fp16 trainer precision).
  if (auto v = get(model, "model", "fp8"); v && v->is_boolean() && v->get<bool>())
    in.precision.set(Precision::fp8, src + " model.fp8");
  if (auto d = get(trainer, "trainer", "devices"); d && d->is_number_integer()) {
    const Count nodes = get(trainer, "trainer", "num_nodes") ? positive(*get(trainer, "trainer", "num_nodes"),
                                                                        path + ": trainer.num_nodes")
                                                             : 1;
    in.world_size.set(positive(*d, path + ": trainer.devices") * nodes,
                      src + " trainer.devices x trainer.num_nodes");
  }
  const json optim = model.is_object() ? model.value("optim", json::object()) : json::object();
  const bool dist = optim.is_object() && optim.value("name", std::string()).find("distributed") != std::string::npos;
  in.sharding.set(dist ? ShardingChoice{Sharding::zero1, 0} : ShardingChoice{},
                  dist ? src + " model.optim.name distributed_fused_adam" : src + " (model.optim.name)");
  in.strategy.set(Strategy::fused, src + " (Megatron-Core reduces once per step)");
  // The model, when whole (NeMo takes the vocabulary from the tokenizer: --spec otherwise).
  auto c = [&](const char* key) -> std::optional<Count> {
    if (auto v = get(model, "model", key)) return positive(*v, fmt::format("{}: model.{}", path, key));
    return std::nullopt;
  };
  const auto layers = c("num_layers"), hidden = c("hidden_size"), heads = c("num_attention_heads");
  const auto seq = c("encoder_seq_length") ? c("encoder_seq_length") : c("seq_length");
  const auto vocab = c("vocab_size");
  if (layers && hidden && heads && seq && vocab) {
    ModelFields mf;
    mf.name = "nemo-config";
    mf.source = src;
    mf.layers = *layers;
    mf.hidden = *hidden;
    mf.heads = *heads;
    mf.seq = *seq;
    mf.vocab = *vocab;
    mf.ffn = c("ffn_hidden_size");
    mf.kv_heads = c("num_query_groups");
    const std::string act = model.value("activation", std::string());
    mf.gated = act.find("glu") != std::string::npos;
    mf.rms_norm = model.value("normalization", std::string()) == "rmsnorm";
    mf.learned_positions = model.value("position_embedding_type", std::string("learned_absolute")) == "learned_absolute";
    mf.tied = model.value("share_embeddings_and_output_weights", true);
    mf.bias = model.value("bias", true);
    mf.flash = true;
    mf.dropout = model.value("hidden_dropout", 0.1) > 0;
    mf.dtype = in.precision ? *in.precision : Precision::bf16;
    mf.checkpointing = *in.checkpointing;
    const model::TransformerSpec s = spec_of(mf);
    fc.model = s;
  } else if (layers || hidden) {
    fc.warnings.push_back(fmt::format("{}: the model's shape is partial (no model.vocab_size: NeMo takes it from the "
                                      "tokenizer): the model comes from --spec",
                                      path));
  }
  return fc;
}

namespace {

// One TOML value as JSON: strings, integers, floats, booleans, dates and times (as their TOML
// text), arrays of them; tables are flattened by the caller.
json toml_value(const toml::node& n, const std::string& what, const std::string& key) {
  if (auto v = n.as_string()) return v->get();
  if (auto v = n.as_integer()) return v->get();
  if (auto v = n.as_floating_point()) return v->get();
  if (auto v = n.as_boolean()) return v->get();
  if (auto v = n.as_date()) {
    std::ostringstream s;
    s << v->get();
    return s.str();
  }
  if (auto v = n.as_time()) {
    std::ostringstream s;
    s << v->get();
    return s.str();
  }
  if (auto v = n.as_date_time()) {
    std::ostringstream s;
    s << v->get();
    return s.str();
  }
  if (auto a = n.as_array()) {
    json out = json::array();
    for (const toml::node& e : *a) {
      if (e.is_table() || e.is_array_of_tables())
        throw InputError(fmt::format("{}:{}: '{}': arrays of tables are not read here", what, n.source().begin.line, key));
      out.push_back(toml_value(e, what, key));
    }
    return out;
  }
  throw InputError(fmt::format("{}:{}: '{}': not a TOML value this reader knows", what, n.source().begin.line, key));
}

void flatten_toml(const toml::table& t, const std::string& prefix, const std::string& what, json& out) {
  for (const auto& [k, node] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) flatten_toml(*sub, key, what, out);
    else if (node.is_array_of_tables())
      throw InputError(fmt::format("{}:{}: [[{}]]: arrays of tables are not read here", what, node.source().begin.line, key));
    else out[key] = toml_value(node, what, key);
  }
}

}  // namespace

json parse_toml(const std::string& text, const std::string& what) {
  toml::table t;
  try {
    t = toml::parse(text, what);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}: {}", what, e.source().begin.line, e.description()));
  }
  json out = json::object();
  flatten_toml(t, "", what, out);
  return out;
}

namespace {

// torchtitan's pipeline stages and split (its pipeline_llm): module_fqns_per_model_part names every
// model stage's modules (its "layers.N" counted; stages per rank = parts / pp), else
// pipeline_parallel_layers_per_stage makes ceil((L + first_less + last_less) / per) stages, else
// the schedule's default (1 per rank, Interleaved1F1B 2); without module_fqns_per_model_part the
// layers split as torchtitan splits them (model/parallel_plan.hpp torchtitan_split), which the
// torchtitan-priced model does itself at the default weights (first/last_stage_less_layers 1).
template <class Get, class CountOf>
void torchtitan_pipeline_split(FrameworkConfig& fc, Get get, CountOf count, const std::string& path,
                               const std::string& src, std::optional<Count> layers) {
  CheckInputs& in = fc.inputs;
  const Count pp = in.pp ? *in.pp : 1;
  const bool single = !in.schedule || traits(*in.schedule).chunks == false;
  auto less = [&](const char* key) -> Count {
    auto v = get(key);
    if (!v) return 1;
    if (!v->is_number_integer() || v->template get<long long>() < 0)
      throw InputError(fmt::format("{}: {}: expected a non-negative integer (torchtitan's default is 1)", path, key));
    return static_cast<Count>(v->template get<long long>());
  };
  const Count first_less = less("parallelism.pipeline_parallel_first_stage_less_layers");
  const Count last_less = less("parallelism.pipeline_parallel_last_stage_less_layers");
  if (auto parts = get("parallelism.module_fqns_per_model_part"); parts && !parts->is_null()) {
    const std::string key = path + ": parallelism.module_fqns_per_model_part";
    if (!parts->is_array() || parts->empty())
      throw InputError(key + ": expected a list of lists of module names, one list per model stage");
    std::vector<Count> counts;
    for (const auto& part : *parts) {
      if (!part.is_array()) throw InputError(key + ": expected a list of lists of module names, one list per model stage");
      Count n = 0;
      for (const auto& m : part) {
        if (!m.is_string()) throw InputError(key + ": module names are strings (\"layers.0\")");
        const std::string fqn = m.template get<std::string>();
        const auto dot = fqn.rfind('.');
        if (dot != std::string::npos && dot + 1 < fqn.size() &&
            std::all_of(fqn.begin() + static_cast<std::ptrdiff_t>(dot) + 1, fqn.end(),
                        [](char ch) { return ch >= '0' && ch <= '9'; }))
          ++n;
      }
      counts.push_back(n);
    }
    const Count S = static_cast<Count>(counts.size());
    if (pp < 2) {
      fc.warnings.push_back(fmt::format("{}: ignored without pipeline_parallel_degree > 1", key));
      return;
    }
    if (S % pp != 0)
      throw InputError(fmt::format("{}: {} model stages over pipeline_parallel_degree {}: give a multiple of {} lists",
                                   key, S, pp, pp));
    if (single && S != pp)
      throw InputError(fmt::format("{}: {} model stages: the {} schedule runs one stage per rank ({} lists); use "
                                   "Interleaved1F1B for {} per rank",
                                   key, S, in.schedule ? std::string(to_string(*in.schedule)) : "1F1B", pp, S / pp));
    if (!single && S / pp < 2)
      throw InputError(fmt::format("{}: {} model stages on {} ranks: torchtitan's multi-stage schedules need at least 2 "
                                   "per rank",
                                   key, S, pp));
    if (S > pp) in.virtual_stages.set(S / pp, src + " parallelism.module_fqns_per_model_part (lists / pipeline_parallel_degree)");
    in.stage_layer_counts.set(counts, src + " parallelism.module_fqns_per_model_part");
    return;
  }
  if (auto split = get("parallelism.pipeline_parallel_split_points");
      split && split->is_array() && !split->empty() && pp > 1)
    throw InputError(fmt::format("{}: parallelism.pipeline_parallel_split_points is deprecated in torchtitan (its "
                                 "pipeline builder now reads module_fqns_per_model_part): give the stages as "
                                 "module_fqns_per_model_part, or drop it for torchtitan's own split",
                                 path));
  if (pp < 2) return;
  const auto per = count("parallelism.pipeline_parallel_layers_per_stage");
  const bool weights = first_less != 1 || last_less != 1;
  if (!layers && (per || weights))
    throw InputError(fmt::format("{}: parallelism.{}: the stages it makes depend on the model's layers, known here for "
                                 "torchtitan's llama3 8B, 70B and 405B: give module_fqns_per_model_part for another "
                                 "model",
                                 path, per ? "pipeline_parallel_layers_per_stage" : "pipeline_parallel_*_stage_less_layers"));
  Count S = pp * (in.virtual_stages ? *in.virtual_stages : 1);
  if (per) {
    S = model::torchtitan_stages(*layers, *per, pp, first_less, last_less);
    if (single && S != pp)
      throw InputError(fmt::format("{}: parallelism.pipeline_parallel_layers_per_stage {}: torchtitan makes {} stages of "
                                   "{} layers, and the single-stage schedule needs {} (one per rank): use at least {} "
                                   "layers per stage",
                                   path, *per, S, *layers, pp, (*layers + first_less + last_less + pp - 1) / pp));
    if (!single && S / pp < 2)
      throw InputError(fmt::format("{}: parallelism.pipeline_parallel_layers_per_stage {}: {} stages on {} ranks, and "
                                   "torchtitan's multi-stage schedules need at least 2 per rank: use fewer layers per "
                                   "stage",
                                   path, *per, S, pp));
    in.virtual_stages.set(S / pp, src + " (ceil((model layers + 2) / pipeline_parallel_layers_per_stage) / "
                                        "pipeline_parallel_degree, torchtitan's stages)");
  }
  if (weights) {
    if (auto why = model::torchtitan_split_rejection(*layers, S, first_less, last_less))
      throw InputError(fmt::format("{}: {}", path, *why));
    in.stage_layer_counts.set(model::torchtitan_split(*layers, S, first_less, last_less),
                              src + " (torchtitan's split with pipeline_parallel_first/last_stage_less_layers)");
  }
}

}  // namespace

FrameworkConfig load_torchtitan_config(const std::string& path) {
  const std::string text = read_text_file(path, "--torchtitan-config");
  const json t = parse_toml(text, path);
  FrameworkConfig fc;
  fc.kind = ConfigKind::torchtitan;
  fc.text = text;
  fc.path = path;
  fc.framework = Framework::torchtitan;
  fc.hash = hex64(fnv1a64(text));
  const std::string src = "torchtitan config " + path;
  CheckInputs& in = fc.inputs;
  in.framework.set(Framework::torchtitan, src);
  auto get = [&](const char* key) -> std::optional<json> {
    if (!t.contains(key)) return std::nullopt;
    return t[key];
  };
  auto count = [&](const char* key) -> std::optional<Count> {
    auto v = get(key);
    if (!v) return std::nullopt;
    return positive(*v, fmt::format("{}: {}", path, key));
  };
  auto degree = [&](const char* key, Sourced<Count>& dst) {
    if (auto v = count(key)) dst.set(*v, fmt::format("{} {}", src, key));
  };
  degree("parallelism.tensor_parallel_degree", in.tp);
  degree("parallelism.pipeline_parallel_degree", in.pp);
  degree("parallelism.context_parallel_degree", in.cp);
  if (in.tp && *in.tp > 1) in.sequence_parallel.set(true, src + " (torchtitan's tensor parallelism shards the sequence)");
  // Data parallel: shard degree -1 takes what is left of the world size.
  long long shard = -1, replicate = 1;
  if (auto v = get("parallelism.data_parallel_shard_degree")) {
    if (!v->is_number_integer() || (v->get<long long>() < 1 && v->get<long long>() != -1))
      throw InputError(fmt::format("{}: parallelism.data_parallel_shard_degree: expected -1 or a positive integer", path));
    shard = v->get<long long>();
  }
  if (auto v = count("parallelism.data_parallel_replicate_degree")) replicate = static_cast<long long>(*v);
  const Count mp = (in.tp ? *in.tp : 1) * (in.pp ? *in.pp : 1) * (in.cp ? *in.cp : 1);
  if (shard > 0) in.world_size.set(mp * static_cast<Count>(shard * replicate), src + " tp x pp x cp x dp degrees");
  // torchtitan applies FSDP over its dp_shard_cp mesh: the context-parallel ranks hold the same
  // weights, so with cp > 1 it shards over dp_shard x cp even at data_parallel_shard_degree 1.
  const Count cp = in.cp ? *in.cp : 1;
  const std::string over_cp = cp > 1 ? fmt::format(" x context_parallel_degree {} (FSDP over dp_shard_cp)", cp) : "";
  if (shard == 1 && replicate == 1 && cp == 1)
    in.sharding.set(ShardingChoice{}, src + " (data_parallel_shard_degree 1)");
  else if (replicate > 1 && (shard != 1 || cp > 1))
    in.sharding.set(ShardingChoice{Sharding::hsdp, shard > 0 ? static_cast<Count>(shard) * cp : 0},
                    src + " data_parallel_shard_degree" + over_cp + " x data_parallel_replicate_degree");
  else if (replicate > 1)
    in.sharding.set(ShardingChoice{}, src + " data_parallel_replicate_degree (DDP)");
  else if (shard == 1)
    in.sharding.set(ShardingChoice{Sharding::zero3, 0}, src + " data_parallel_shard_degree 1" + over_cp);
  else if (get("parallelism.fsdp_reshard_after_forward") && get("parallelism.fsdp_reshard_after_forward")->is_string() &&
           get("parallelism.fsdp_reshard_after_forward")->get<std::string>() == "never")
    in.sharding.set(ShardingChoice{Sharding::zero2, 0},
                    src + " data_parallel_shard_degree, fsdp_reshard_after_forward \"never\" (FSDP2 ZeRO-2)");
  else
    in.sharding.set(ShardingChoice{Sharding::zero3, 0}, src + " data_parallel_shard_degree (FSDP2)");
  if (auto v = get("parallelism.pipeline_parallel_schedule")) {
    const std::string s = v->is_string() ? v->get<std::string>() : v->dump();
    if (s != "GPipe" && s != "1F1B" && s != "Interleaved1F1B")
      throw InputError(fmt::format("{}: parallelism.pipeline_parallel_schedule '{}': priced here are GPipe, 1F1B and "
                                   "Interleaved1F1B",
                                   path, s));
    in.schedule.set(parse_schedule(s, path + ": parallelism.pipeline_parallel_schedule"),
                    src + " parallelism.pipeline_parallel_schedule");
    if (s == "Interleaved1F1B")
      in.virtual_stages.set(2, src + " (Interleaved1F1B: 2 stages per rank, torchtitan's default without "
                                     "pipeline_parallel_layers_per_stage or module_fqns_per_model_part)");
  } else if (in.pp && *in.pp > 1) {
    in.schedule.set(Schedule::one_f_one_b, src + " (pipeline_parallel_schedule default 1F1B)");
  }
  // The batch: local_batch_size per data-parallel rank and step; microbatches of
  // pipeline_parallel_microbatch_size (pp > 1), else one micro-batch of local_batch_size.
  const auto local = count("training.local_batch_size") ? count("training.local_batch_size") : count("training.batch_size");
  const auto mb = count("parallelism.pipeline_parallel_microbatch_size");
  if (local) {
    if (in.pp && *in.pp > 1) {
      const Count b = mb.value_or(1);
      if (*local % b != 0)
        throw InputError(fmt::format("{}: training.local_batch_size {} is not a multiple of "
                                     "parallelism.pipeline_parallel_microbatch_size {}",
                                     path, *local, b));
      in.micro_batch.set(b, src + " parallelism.pipeline_parallel_microbatch_size" + (mb ? "" : " (default 1)"));
      in.accum_steps.set(*local / b, src + " training.local_batch_size / pipeline_parallel_microbatch_size");
    } else {
      in.micro_batch.set(*local, src + " training.local_batch_size");
    }
  }
  if (auto g = get("training.global_batch_size"); g && g->is_number_integer() && g->get<long long>() > 0)
    in.global_batch.set(static_cast<Count>(g->get<long long>()), src + " training.global_batch_size");
  if (auto v = get("training.mixed_precision_param")) {
    const std::string p = v->is_string() ? v->get<std::string>() : "";
    in.precision.set(p == "float32" ? Precision::fp32 : Precision::bf16, src + " training.mixed_precision_param");
  } else {
    in.precision.set(Precision::bf16, src + " (mixed_precision_param default bfloat16)");
  }
  // FSDP2's reduce dtype: float32 (the default, model/spec_model.hpp GradDtype) or bfloat16.
  if (auto v = get("training.mixed_precision_reduce")) {
    const std::string p = v->is_string() ? v->get<std::string>() : "";
    if (p != "float32" && p != "bfloat16")
      throw InputError(fmt::format("{}: training.mixed_precision_reduce '{}': expected float32 or bfloat16", path, p));
    in.grad_reduce_in_fp32.set(p == "float32", src + " training.mixed_precision_reduce");
  }
  if (auto v = get("optimizer.lr"); v && v->is_number() && v->get<double>() > 0)
    in.lr.set(v->get<double>(), src + " optimizer.lr");
  {
    // torchtitan's defaults (its job_config ActivationCheckpoint): mode "selective",
    // selective_ac_option "2", so a file without the table or the option runs them.
    const auto v = get("activation_checkpoint.mode");
    const std::string m = !v ? "selective" : v->is_string() ? v->get<std::string>() : "";
    if (m != "none" && m != "selective" && m != "full")
      throw InputError(fmt::format("{}: activation_checkpoint.mode '{}': expected none, selective or full", path, m));
    // torchtitan's selective with selective_ac_option "op" is its per-op policy (selective-op);
    // an integer n wraps every n-th transformer block in full recompute and leaves the others
    // as they are (a fraction 1/n of the layers recomputed; n = 1 is every layer).
    const auto opt = get("activation_checkpoint.selective_ac_option");
    const std::string o = opt ? (opt->is_string() ? opt->get<std::string>() : opt->dump()) : "2";
    const std::string where =
        opt  ? fmt::format("{} activation_checkpoint.selective_ac_option \"{}\"", src, o)
        : v ? src + " activation_checkpoint.mode \"selective\" (torchtitan's default selective_ac_option \"2\")"
            : src + " (torchtitan's default activation_checkpoint: mode \"selective\", selective_ac_option \"2\")";
    if (m == "selective" && o == "op") {
      in.checkpointing.set(Checkpointing::selective_op, src + " activation_checkpoint.selective_ac_option \"op\"");
    } else if (m == "selective") {
      long long every = 0;
      try {
        std::size_t used = 0;
        every = std::stoll(o, &used);
        if (used != o.size()) every = 0;
      } catch (const std::exception&) {
        every = 0;
      }
      if (every <= 0)
        throw InputError(fmt::format("{}: activation_checkpoint.selective_ac_option '{}': expected \"op\" or a positive "
                                     "integer (full recompute of every n-th layer)",
                                     path, o));
      in.checkpointing.set(Checkpointing::full, where + ": full recompute of every n-th layer");
      if (every > 1) in.recomputed_fraction.set(1.0 / double(every), where + ": 1 in every " + o + " layers");
    } else {
      in.checkpointing.set(parse_checkpointing(m, path + ": activation_checkpoint.mode"), src + " activation_checkpoint.mode");
    }
  }
  // torchtitan's pipelines reduce once after the last microbatch; without one its accumulation
  // reduce-scatters every micro-batch (core/framework.hpp).
  in.strategy.set(in.pp && *in.pp > 1 ? Strategy::overlap : Strategy::every_step,
                  src + (in.pp && *in.pp > 1 ? " (torch pipelining reduces once per step)"
                                             : " (torchtitan reduces on every micro-batch)"));
  std::optional<Count> model_layers;  // known for the llama3 flavors (else the model comes from --spec)
  const std::string name = get("model.name") && get("model.name")->is_string() ? get("model.name")->get<std::string>() : "";
  const std::string flavor =
      get("model.flavor") && get("model.flavor")->is_string() ? get("model.flavor")->get<std::string>() : "";
  if (name == "llama3" && (flavor == "8B" || flavor == "70B" || flavor == "405B")) {
    std::string f = flavor;
    for (auto& ch : f) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    fc.builtin_model = "builtin:llama3-" + f;
    if (auto seq = count("training.seq_len")) fc.builtin_model += fmt::format("@{}", *seq);
    model_layers = model::builtin_spec("llama3-" + f).layers;
  } else if (!name.empty()) {
    fc.warnings.push_back(fmt::format("{}: model {} {} is not one this tool knows (llama3 8B, 70B, 405B): the model "
                                      "comes from --spec",
                                      path, name, flavor));
  }
  torchtitan_pipeline_split(fc, get, count, path, src, model_layers);
  return fc;
}

namespace {

// A trainer's file read as a JSON/YAML mapping (InputError `expected` otherwise), with its
// FrameworkConfig started (kind, text, path, hash; DDP until the file says otherwise).
std::pair<FrameworkConfig, json> framework_file(ConfigKind kind, const std::string& path, const char* flag,
                                                TextFormat format, const char* expected) {
  FrameworkConfig fc;
  fc.kind = kind;
  fc.text = read_text_file(path, flag);
  fc.path = path;
  fc.framework = Framework::ddp;
  fc.hash = hex64(fnv1a64(fc.text));
  json doc = parse_structured_text(fc.text, format, path);
  if (!doc.is_object()) throw InputError(fmt::format("{}: expected {}", path, expected));
  return {std::move(fc), std::move(doc)};
}

// A DeepSpeed config inside a trainer's file: its stage, strategy, offload and precision.
void apply_deepspeed(CheckInputs& in, const DeepSpeedConfig& ds, const std::string& src) {
  const DeepSpeedPlan plan = deepspeed_plan(ds);
  in.framework.set(Framework::deepspeed, src);
  in.sharding.set(plan.sharding, src + " " + plan.sharding_source);
  in.strategy.set(plan.strategy, src + " " + plan.strategy_source);
  if (plan.precision) in.precision.set(*plan.precision, src + " " + plan.precision_source);
  if (plan.checkpointing) in.checkpointing.set(*plan.checkpointing, src + " " + plan.checkpointing_source);
  if (ds.offload_optimizer) in.offload_optimizer.set(true, src + " offload_optimizer");
  if (ds.offload_params) in.offload_params.set(true, src + " offload_param");
  if (ds.train_micro_batch_size_per_gpu) in.micro_batch.set(*ds.train_micro_batch_size_per_gpu, src + " train_micro_batch_size_per_gpu");
  if (ds.gradient_accumulation_steps) in.accum_steps.set(*ds.gradient_accumulation_steps, src + " gradient_accumulation_steps");
  if (ds.train_batch_size) in.global_batch.set(*ds.train_batch_size, src + " train_batch_size");
}

bool flag_of(const json& v, const std::string& field) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (s == "true" || s == "yes") return true;
    if (s == "false" || s == "no") return false;
  }
  throw InputError(fmt::format("{}: expected true or false, got {}", field, v.dump()));
}

std::string upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// FSDP's sharding strategy by name (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD,
// HYBRID_SHARD_ZERO2) or Accelerate's number for it (1-5, in that order).
ShardingChoice fsdp_sharding(const json& v, const std::string& field) {
  std::string s = v.is_number_integer() ? std::to_string(v.get<long long>()) : v.is_string() ? upper(v.get<std::string>()) : "";
  if (s == "1" || s == "FULL_SHARD") return {Sharding::zero3, 0};
  if (s == "2" || s == "SHARD_GRAD_OP") return {Sharding::zero2, 0};
  if (s == "3" || s == "NO_SHARD") return {};
  if (s == "4" || s == "5" || s == "HYBRID_SHARD" || s == "HYBRID_SHARD_ZERO2") return {Sharding::hsdp, 0};
  throw InputError(fmt::format("{}: {} is not an FSDP sharding strategy (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, "
                               "HYBRID_SHARD, HYBRID_SHARD_ZERO2)",
                               field, v.dump()));
}

std::string resolve_beside(const std::string& file, const std::string& rel) {
  namespace fs = std::filesystem;
  const fs::path p(rel);
  return p.is_absolute() ? rel : (fs::path(file).parent_path() / p).string();
}

}  // namespace

FrameworkConfig load_hf_training_args(const std::string& path) {
  auto file = framework_file(ConfigKind::hf_args, path, "--hf-args", TextFormat::json,
                             "a JSON object of TrainingArguments fields");
  FrameworkConfig& fc = file.first;
  const json& doc = file.second;
  const std::string src = "hf args " + path;
  CheckInputs& in = fc.inputs;
  auto has = [&](const char* k) { return doc.contains(k) && !doc[k].is_null(); };
  if (has("per_device_train_batch_size"))
    in.micro_batch.set(positive(doc["per_device_train_batch_size"], path + ": per_device_train_batch_size"),
                       src + " per_device_train_batch_size");
  if (has("gradient_accumulation_steps"))
    in.accum_steps.set(positive(doc["gradient_accumulation_steps"], path + ": gradient_accumulation_steps"),
                       src + " gradient_accumulation_steps");
  const bool bf16 = has("bf16") && flag_of(doc["bf16"], path + ": bf16");
  const bool fp16 = has("fp16") && flag_of(doc["fp16"], path + ": fp16");
  if (bf16 && fp16) throw InputError(fmt::format("{}: bf16 and fp16 are both true: set one", path));
  in.precision.set(bf16 ? Precision::bf16 : fp16 ? Precision::fp16 : Precision::fp32,
                   bf16 ? src + " bf16" : fp16 ? src + " fp16" : src + " (neither bf16 nor fp16)");
  const bool ckpt = has("gradient_checkpointing") && flag_of(doc["gradient_checkpointing"], path + ": gradient_checkpointing");
  in.checkpointing.set(ckpt ? Checkpointing::full : Checkpointing::none,
                       src + (ckpt ? " gradient_checkpointing" : " (gradient_checkpointing false)"));
  if (has("learning_rate")) {
    if (!doc["learning_rate"].is_number() || !(doc["learning_rate"].get<double>() > 0))
      throw InputError(fmt::format("{}: learning_rate: expected a positive number, got {}", path, doc["learning_rate"].dump()));
    in.lr.set(doc["learning_rate"].get<double>(), src + " learning_rate");
  }
  // The data-parallel engine: DeepSpeed, FSDP or DDP (the Trainer accumulates under no_sync()).
  std::string fsdp;
  if (has("fsdp")) {
    const json& f = doc["fsdp"];
    if (f.is_string()) fsdp = f.get<std::string>();
    else if (f.is_array())
      for (const auto& w : f) fsdp += (w.is_string() ? w.get<std::string>() : w.dump()) + " ";
    else if (!(f.is_boolean() && !f.get<bool>()))
      throw InputError(fmt::format("{}: fsdp: expected a string such as \"full_shard auto_wrap\", got {}", path, f.dump()));
  }
  if (has("deepspeed") && !fsdp.empty())
    throw InputError(fmt::format("{}: deepspeed and fsdp are both set: the Trainer runs one of them", path));
  if (has("deepspeed")) {
    const json& d = doc["deepspeed"];
    if (d.is_string()) {
      const std::string ds_path = resolve_beside(path, d.get<std::string>());
      apply_deepspeed(in, load_deepspeed_config(ds_path), src + " deepspeed " + ds_path);
    } else if (d.is_object()) {
      apply_deepspeed(in, deepspeed_from_json(d, path + ": deepspeed"), src + " deepspeed");
    } else {
      throw InputError(fmt::format("{}: deepspeed: expected a config path or object, got {}", path, d.dump()));
    }
    fc.framework = Framework::deepspeed;
  } else {
    const bool fsdp_on = !fsdp.empty() && fsdp.find("no_shard") == std::string::npos;
    ShardingChoice sc;
    if (fsdp.find("full_shard") != std::string::npos) sc = {Sharding::zero3, 0};
    else if (fsdp.find("shard_grad_op") != std::string::npos) sc = {Sharding::zero2, 0};
    else if (fsdp.find("hybrid_shard") != std::string::npos) sc = {Sharding::hsdp, 0};
    else if (fsdp_on)
      throw InputError(fmt::format("{}: fsdp \"{}\": expected full_shard, shard_grad_op, hybrid_shard or no_shard", path, fsdp));
    if (fsdp.find("offload") != std::string::npos)
      fc.warnings.push_back(fmt::format("{}: fsdp offload is not priced (the parameters are counted on the device)", path));
    fc.framework = fsdp.empty() ? Framework::ddp : Framework::fsdp;
    in.framework.set(fc.framework, src + (fsdp.empty() ? " (no fsdp or deepspeed: DDP)" : " fsdp"));
    in.sharding.set(sc, src + (fsdp.empty() ? " (DDP)" : " fsdp"));
    in.strategy.set(Strategy::overlap, src + " (the Trainer accumulates under no_sync())");
  }
  return fc;
}

FrameworkConfig load_accelerate_config(const std::string& path) {
  auto file = framework_file(ConfigKind::accelerate, path, "--accelerate-config", TextFormat::detect,
                             "Accelerate's config mapping (distributed_type: ...)");
  FrameworkConfig& fc = file.first;
  const json& doc = file.second;
  const std::string src = "accelerate config " + path;
  CheckInputs& in = fc.inputs;
  auto has = [&](const json& o, const char* k) { return o.is_object() && o.contains(k) && !o[k].is_null(); };
  if (!has(doc, "distributed_type"))
    throw InputError(fmt::format("{}: no distributed_type (Accelerate requires one: NO, MULTI_GPU, FSDP, DEEPSPEED)", path));
  const std::string type = upper(doc["distributed_type"].is_string() ? doc["distributed_type"].get<std::string>()
                                                                      : doc["distributed_type"].dump());
  if (type != "NO" && type != "MULTI_GPU" && type != "MULTI_CPU" && type != "FSDP" && type != "DEEPSPEED")
    throw InputError(fmt::format("{}: distributed_type {}: priced here are NO, MULTI_GPU, MULTI_CPU, FSDP and DEEPSPEED",
                                 path, type));
  if (has(doc, "num_processes")) {
    const json& n = doc["num_processes"];
    if (!(n.is_number_integer() && n.get<long long>() == -1))
      in.world_size.set(positive(n, path + ": num_processes"), src + " num_processes");
  } else if (type == "NO") {
    in.world_size.set(1, src + " (distributed_type NO: one process)");
  }
  if (has(doc, "mixed_precision")) {
    const std::string m = doc["mixed_precision"].is_string() ? doc["mixed_precision"].get<std::string>() : doc["mixed_precision"].dump();
    if (m != "no" && m != "fp16" && m != "bf16" && m != "fp8" && m != "false")
      throw InputError(fmt::format("{}: mixed_precision '{}': expected no, fp16, bf16 or fp8", path, m));
    in.precision.set(m == "bf16" ? Precision::bf16 : m == "fp16" ? Precision::fp16 : m == "fp8" ? Precision::fp8 : Precision::fp32,
                     src + " mixed_precision");
  } else {
    in.precision.set(Precision::fp32, src + " (no mixed_precision)");
  }
  if (type == "FSDP") {
    const json f = doc.value("fsdp_config", json::object());
    ShardingChoice sc{Sharding::zero3, 0};
    std::string how = " (fsdp_sharding_strategy default FULL_SHARD)";
    if (has(f, "fsdp_sharding_strategy")) {
      sc = fsdp_sharding(f["fsdp_sharding_strategy"], path + ": fsdp_config.fsdp_sharding_strategy");
      how = " fsdp_config.fsdp_sharding_strategy";
    } else if (has(f, "fsdp_reshard_after_forward")) {
      const json& r = f["fsdp_reshard_after_forward"];
      sc = r.is_boolean() ? ShardingChoice{r.get<bool>() ? Sharding::zero3 : Sharding::zero2, 0}
                          : fsdp_sharding(r, path + ": fsdp_config.fsdp_reshard_after_forward");
      how = " fsdp_config.fsdp_reshard_after_forward";
    }
    const bool v2 = has(f, "fsdp_version") && f["fsdp_version"].is_number_integer() && f["fsdp_version"].get<long long>() == 2;
    fc.framework = v2 ? Framework::fsdp2 : Framework::fsdp;
    in.framework.set(fc.framework, src + " distributed_type FSDP" + (v2 ? " fsdp_version 2" : ""));
    in.sharding.set(sc, src + how);
    in.strategy.set(Strategy::overlap, src + " (Accelerate accumulates under no_sync())");
    const bool ckpt = has(f, "fsdp_activation_checkpointing") &&
                      flag_of(f["fsdp_activation_checkpointing"], path + ": fsdp_config.fsdp_activation_checkpointing");
    in.checkpointing.set(ckpt ? Checkpointing::full : Checkpointing::none, src + " fsdp_config.fsdp_activation_checkpointing");
    if (has(f, "fsdp_offload_params") && flag_of(f["fsdp_offload_params"], path + ": fsdp_config.fsdp_offload_params"))
      fc.warnings.push_back(fmt::format("{}: fsdp_offload_params is not priced (the parameters are counted on the device)", path));
  } else if (type == "DEEPSPEED") {
    const json d = doc.value("deepspeed_config", json::object());
    if (has(d, "deepspeed_config_file")) {
      const std::string ds_path = resolve_beside(path, d["deepspeed_config_file"].get<std::string>());
      apply_deepspeed(in, load_deepspeed_config(ds_path), src + " deepspeed_config_file " + ds_path);
    } else {
      json ds = json::object();
      ds["zero_optimization"] = json{{"stage", has(d, "zero_stage") ? d["zero_stage"] : json(0)}};
      for (const auto& [key, section] : {std::pair{"offload_optimizer_device", "offload_optimizer"},
                                         std::pair{"offload_param_device", "offload_param"}})
        if (has(d, key) && d[key].is_string() && d[key].get<std::string>() != "none")
          ds["zero_optimization"][section] = json{{"device", d[key]}};
      if (in.precision && *in.precision == Precision::bf16) ds["bf16"] = json{{"enabled", true}};
      if (in.precision && *in.precision == Precision::fp16) ds["fp16"] = json{{"enabled", true}};
      apply_deepspeed(in, deepspeed_from_json(ds, path + ": deepspeed_config"), src + " deepspeed_config");
    }
    if (has(d, "gradient_accumulation_steps"))
      in.accum_steps.set(positive(d["gradient_accumulation_steps"], path + ": deepspeed_config.gradient_accumulation_steps"),
                         src + " deepspeed_config.gradient_accumulation_steps");
    fc.framework = Framework::deepspeed;
  } else {
    in.framework.set(Framework::ddp, src + " distributed_type " + type);
    in.sharding.set(ShardingChoice{}, src + " distributed_type " + type);
    in.strategy.set(Strategy::overlap, src + " (Accelerate accumulates under no_sync())");
  }
  return fc;
}

FrameworkConfig load_lightning_config(const std::string& path) {
  auto file = framework_file(ConfigKind::lightning, path, "--lightning-config", TextFormat::detect,
                             "a mapping (LightningCLI's trainer: section)");
  FrameworkConfig& fc = file.first;
  const json& doc = file.second;
  const bool cli = doc.contains("trainer");
  const json t = cli ? doc["trainer"] : doc;
  const std::string at = cli ? "trainer." : "";
  if (!t.is_object()) throw InputError(fmt::format("{}: trainer: expected the Trainer's arguments as a mapping", path));
  const std::string src = "lightning config " + path;
  CheckInputs& in = fc.inputs;
  auto has = [&](const json& o, const char* k) { return o.is_object() && o.contains(k) && !o[k].is_null(); };
  // devices x num_nodes: an integer, a list of device ids, or "auto"/-1 (the machine's: unknown).
  std::optional<Count> devices;
  if (has(t, "devices")) {
    const json& d = t["devices"];
    if (d.is_array()) devices = static_cast<Count>(d.size());
    else if (d.is_number_integer() && d.get<long long>() >= 1) devices = static_cast<Count>(d.get<long long>());
    else if (d.is_string() && d.get<std::string>() != "auto" && d.get<std::string>() != "-1")
      devices = positive(d, path + ": " + at + "devices");
  }
  const Count nodes = has(t, "num_nodes") ? positive(t["num_nodes"], path + ": " + at + "num_nodes") : 1;
  if (devices) in.world_size.set(*devices * nodes, src + " " + at + "devices x " + at + "num_nodes");
  if (has(t, "accumulate_grad_batches"))
    in.accum_steps.set(positive(t["accumulate_grad_batches"], path + ": " + at + "accumulate_grad_batches"),
                       src + " " + at + "accumulate_grad_batches");
  if (cli && doc.contains("data") && has(doc["data"], "batch_size"))
    in.micro_batch.set(positive(doc["data"]["batch_size"], path + ": data.batch_size"), src + " data.batch_size");
  // precision: 32 / "32-true", "bf16-mixed" / "bf16", "16-mixed" / 16; "*-true" half weights too.
  if (has(t, "precision")) {
    std::string p = t["precision"].is_string() ? t["precision"].get<std::string>() : t["precision"].dump();
    const Precision prec = p.rfind("bf16", 0) == 0                                   ? Precision::bf16
                           : (p.rfind("16", 0) == 0 || p.rfind("fp16", 0) == 0)     ? Precision::fp16
                           : p.rfind("transformer-engine", 0) == 0                  ? Precision::fp8
                           : (p.rfind("32", 0) == 0 || p.rfind("64", 0) == 0)       ? Precision::fp32
                                                                                    : Precision::fp8;
    if (prec == Precision::fp8 && p.rfind("transformer-engine", 0) != 0)
      throw InputError(fmt::format("{}: {}precision '{}': expected 32-true, bf16-mixed, 16-mixed (or 32, bf16, 16)", path,
                                   at, p));
    in.precision.set(prec, src + " " + at + "precision");
  } else {
    in.precision.set(Precision::fp32, src + " (precision default 32-true)");
  }
  // strategy: a name, or {class_path, init_args}.
  std::string name = "auto";
  json init = json::object();
  if (has(t, "strategy")) {
    const json& s = t["strategy"];
    if (s.is_string()) {
      name = s.get<std::string>();
    } else if (s.is_object() && s.contains("class_path") && s["class_path"].is_string()) {
      const std::string cp = s["class_path"].get<std::string>();
      name = cp.find("FSDPStrategy") != std::string::npos        ? "fsdp"
             : cp.find("DeepSpeedStrategy") != std::string::npos ? "deepspeed"
             : cp.find("DDPStrategy") != std::string::npos       ? "ddp"
                                                                 : cp;
      init = s.value("init_args", json::object());
    } else {
      throw InputError(fmt::format("{}: {}strategy: expected a name (ddp, fsdp, deepspeed_stage_2, ...) or class_path "
                                   "and init_args",
                                   path, at));
    }
  }
  const std::string where = src + " " + at + "strategy";
  if (name == "auto" || name == "single_device" || name.rfind("ddp", 0) == 0) {
    fc.framework = Framework::ddp;
    in.framework.set(Framework::ddp, where);
    in.sharding.set(ShardingChoice{}, where);
    in.strategy.set(Strategy::overlap, where + " (Lightning accumulates DDP under no_sync())");
  } else if (name.rfind("fsdp", 0) == 0) {
    fc.framework = Framework::fsdp;
    in.framework.set(Framework::fsdp, where);
    in.sharding.set(has(init, "sharding_strategy") ? fsdp_sharding(init["sharding_strategy"], path + ": strategy.init_args.sharding_strategy")
                                                   : ShardingChoice{Sharding::zero3, 0},
                    where + (has(init, "sharding_strategy") ? ".init_args.sharding_strategy" : " (FULL_SHARD)"));
    in.strategy.set(Strategy::every_step, where + " (Lightning blocks the sync of DDP models only: FSDP reduces on every "
                                                   "micro-batch)");
  } else if (name.rfind("deepspeed", 0) == 0) {
    Count stage = 2;  // Lightning's "deepspeed" is stage 2
    bool offload = name.find("offload") != std::string::npos;
    if (const auto at_stage = name.find("stage_"); at_stage != std::string::npos) stage = name[at_stage + 6] - '0';
    if (has(init, "stage")) stage = positive(init["stage"], path + ": strategy.init_args.stage");
    if (has(init, "offload_optimizer") && flag_of(init["offload_optimizer"], path + ": strategy.init_args.offload_optimizer"))
      offload = true;
    if (stage > 3) throw InputError(fmt::format("{}: {}strategy {}: DeepSpeed stages are 0-3", path, at, name));
    // Lightning's DeepSpeedStrategy overlaps the reduction with the backward unless told not to.
    const bool overlap = !has(init, "overlap_comm") || flag_of(init["overlap_comm"], path + ": strategy.init_args.overlap_comm");
    json ds = json{{"zero_optimization", json{{"stage", stage}, {"overlap_comm", overlap}}}};
    if (offload) ds["zero_optimization"]["offload_optimizer"] = json{{"device", "cpu"}};
    if ((offload && stage == 3 && name != "deepspeed") ||
        (has(init, "offload_parameters") && flag_of(init["offload_parameters"], path + ": strategy.init_args.offload_parameters")))
      ds["zero_optimization"]["offload_param"] = json{{"device", "cpu"}};
    if (in.precision && *in.precision == Precision::bf16) ds["bf16"] = json{{"enabled", true}};
    if (in.precision && *in.precision == Precision::fp16) ds["fp16"] = json{{"enabled", true}};
    apply_deepspeed(in, deepspeed_from_json(ds, where), where);
    fc.framework = Framework::deepspeed;
  } else {
    throw InputError(fmt::format("{}: {}strategy '{}': priced here are auto, ddp*, fsdp and deepspeed[_stage_N[_offload]]",
                                 path, at, name));
  }
  return fc;
}

const char* completed_name(ConfigKind k) {
  switch (k) {
    case ConfigKind::megatron_args: return "megatron_args.sh";
    case ConfigKind::nemo: return "nemo_config.yaml";
    case ConfigKind::torchtitan: return "torchtitan.toml";
    case ConfigKind::hf_args: return "hf_training_args.json";
    case ConfigKind::accelerate: return "accelerate_config.yaml";
    case ConfigKind::lightning: return "lightning_trainer.yaml";
  }
  return "config";
}

namespace {

// Megatron: `--name value` / `--name=value` set in place, else appended as a continued line.
void set_arg(std::string& t, const std::string& name, const std::string& value) {
  const std::regex re("--" + name + "(=|[ \\t]+)[^ \\t\\r\\n\\\\]+");
  if (std::regex_search(t, re)) {
    t = std::regex_replace(t, re, "--" + name + " " + value, std::regex_constants::format_first_only);
    return;
  }
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  t += " \\\n  --" + name + (value.empty() ? "" : " " + value) + "\n";
}
void drop_arg(std::string& t, const std::string& name, bool with_value) {
  const std::regex re("[ \\t]*--" + name + (with_value ? "(=|[ \\t]+)[^ \\t\\r\\n\\\\]+" : "(?![-\\w])"));
  t = std::regex_replace(t, re, "");
}

// YAML: `key: value` under the top-level `model:` (or `trainer:`) block, else inserted after it.
void set_yaml(std::string& t, const std::string& block, const std::string& key, const std::string& value) {
  const std::regex head("(^|\\n)" + block + ":[ \\t]*\\n");
  std::smatch m;
  if (!std::regex_search(t, m, head)) {
    t += (t.empty() || t.back() == '\n' ? "" : "\n") + block + ":\n  " + key + ": " + value + "\n";
    return;
  }
  const std::size_t start = static_cast<std::size_t>(m.position(0) + m.length(0));
  // The block ends at the next line that starts without indentation.
  std::size_t end = start;
  while (end < t.size()) {
    const std::size_t nl = t.find('\n', end);
    const std::size_t line_end = nl == std::string::npos ? t.size() : nl + 1;
    if (end < t.size() && t[end] != ' ' && t[end] != '\t' && t[end] != '\n' && t[end] != '#') break;
    end = line_end;
  }
  std::string body = t.substr(start, end - start);
  const std::regex line("(^|\\n)([ \\t]+)" + key + ":[^\\n]*");
  if (std::regex_search(body, m, line)) {
    body = std::regex_replace(body, line, "$1$2" + key + ": " + value, std::regex_constants::format_first_only);
  } else {
    body = "  " + key + ": " + value + "\n" + body;
  }
  t = t.substr(0, start) + body + t.substr(end);
}

// TOML: `key = value` in [table], else inserted after its header (the table appended if absent).
void set_toml(std::string& t, const std::string& table, const std::string& key, const std::string& value) {
  const std::regex head("(^|\\n)\\[" + table + "\\][ \\t]*(#[^\\n]*)?\\n");
  std::smatch m;
  if (!std::regex_search(t, m, head)) {
    t += (t.empty() || t.back() == '\n' ? "" : "\n") + std::string("\n[") + table + "]\n" + key + " = " + value + "\n";
    return;
  }
  const std::size_t start = static_cast<std::size_t>(m.position(0) + m.length(0));
  std::size_t end = t.find("\n[", start);
  end = end == std::string::npos ? t.size() : end + 1;
  std::string body = t.substr(start, end - start);
  const std::regex line("(^|\\n)[ \\t]*" + key + "[ \\t]*=[^\\n]*");
  if (std::regex_search(body, m, line))
    body = std::regex_replace(body, line, "$1" + key + " = " + value, std::regex_constants::format_first_only);
  else
    body = key + " = " + value + "\n" + body;
  t = t.substr(0, start) + body + t.substr(end);
}

// Removes `key = value` from [table], a value that opens an array running to its closing bracket
// over as many lines as it takes (nested arrays counted).
void drop_toml(std::string& t, const std::string& table, const std::string& key) {
  const std::regex head("(^|\\n)\\[" + table + "\\][ \\t]*(#[^\\n]*)?\\n");
  std::smatch m;
  if (!std::regex_search(t, m, head)) return;
  const std::size_t start = static_cast<std::size_t>(m.position(0) + m.length(0));
  std::size_t end = t.find("\n[", start);
  end = end == std::string::npos ? t.size() : end + 1;
  std::string body = t.substr(start, end - start);
  const std::regex line("(^|\\n)[ \\t]*" + key + "[ \\t]*=");
  if (!std::regex_search(body, m, line)) return;
  const std::size_t from = static_cast<std::size_t>(m.position(0)) + (m[1].length() > 0 ? 1 : 0);
  std::size_t at = static_cast<std::size_t>(m.position(0) + m.length(0));
  int depth = 0;
  bool quoted = false;
  for (; at < body.size(); ++at) {
    const char ch = body[at];
    if (ch == '"') quoted = !quoted;
    if (quoted) continue;
    if (ch == '[') ++depth;
    if (ch == ']') --depth;
    if (ch == '\n' && depth <= 0) break;
  }
  body.erase(from, std::min(body.size(), at + 1) - from);
  t = t.substr(0, start) + body + t.substr(end);
}

}  // namespace

std::string torchtitan_module_fqns(const ParallelLayout& l, Count layers) {
  if (l.pp < 2 || layers < 1) return "";
  const Count v = l.virtual_stages, S = l.pp * v;
  const bool default_stages = v == (traits(l.schedule).chunks ? 2 : 1);
  const std::vector<Count> split = l.uneven_split() ? model::stage_layers(l, layers) : model::torchtitan_split(layers, S);
  if (default_stages && !model::torchtitan_split_rejection(layers, S) && split == model::torchtitan_split(layers, S))
    return "";
  std::string out = "[\n";
  Count at = 0;
  for (std::size_t s = 0; s < split.size(); ++s) {
    std::string part;
    auto add = [&](const std::string& name) { part += (part.empty() ? "" : ", ") + ("\"" + name + "\""); };
    if (s == 0) add("tok_embeddings");
    for (Count n = 0; n < split[s]; ++n) add(fmt::format("layers.{}", at++));
    if (s + 1 == split.size()) {
      add("norm");
      add("output");
    }
    out += "  [" + part + "],\n";
  }
  return out + "]";
}

namespace {

// Whether a Megatron-LM/NeMo file's --account-for-embedding/loss-in-pipeline-split flags make the
// pick's split (then they stay, and no layout is written).
bool megatron_accounting_kept(const FrameworkConfig& fc, const ParallelLayout& l, Count layers) {
  const bool args = fc.kind == ConfigKind::megatron_args;
  const std::regex e(args ? "--account-for-embedding-in-pipeline-split(?![-\\w])"
                          : "(^|\\n)[ \\t]+account_for_embedding_in_pipeline_split:[ \\t]*true");
  const std::regex lo(args ? "--account-for-loss-in-pipeline-split(?![-\\w])"
                           : "(^|\\n)[ \\t]+account_for_loss_in_pipeline_split:[ \\t]*true");
  const bool acc_e = std::regex_search(fc.text, e), acc_l = std::regex_search(fc.text, lo);
  if ((!acc_e && !acc_l) || l.pp < 2 || layers < 1 || l.stage_layer_counts.empty()) return false;
  try {
    return model::megatron_account_split(layers, l.pp, l.virtual_stages, acc_e, acc_l) == l.stage_layer_counts;
  } catch (const InputError&) {
    return false;
  }
}

}  // namespace

std::string complete_framework_config(const FrameworkConfig& fc, const model::Config& pick, Count layers) {
  std::string t = fc.text;
  const ParallelLayout& l = pick.layout;
  const auto n = [](Count v) { return fmt::format("{}", v); };
  // The recompute the pick was priced with, written where the file says otherwise (or recomputes
  // only some layers, which tune does not price).
  const bool recompute_changed =
      pick.checkpointing && (!fc.inputs.checkpointing || *fc.inputs.checkpointing != *pick.checkpointing ||
                             fc.inputs.recomputed_fraction);
  switch (fc.kind) {
    case ConfigKind::megatron_args:
      set_arg(t, "micro-batch-size", n(pick.micro_batch));
      set_arg(t, "global-batch-size", n(pick.global_batch()));
      set_arg(t, "tensor-model-parallel-size", n(l.tp));
      set_arg(t, "pipeline-model-parallel-size", n(l.pp));
      if (l.cp > 1 || fc.inputs.cp) set_arg(t, "context-parallel-size", n(l.cp));
      // The split: the file's --account-for-* flags where they make the pick's, else a layout stage
      // by stage (it sets v), else the first and last stage (one chunk per rank), else even.
      if (megatron_accounting_kept(fc, l, layers)) {
        drop_arg(t, "pipeline-model-parallel-layout", true);
      } else {
        drop_arg(t, "account-for-embedding-in-pipeline-split", false);
        drop_arg(t, "account-for-loss-in-pipeline-split", false);
        if (l.pp > 1 && !l.stage_layer_counts.empty())
          set_arg(t, "pipeline-model-parallel-layout", "'" + megatron_layout_text(l.stage_layer_counts) + "'");
        else
          drop_arg(t, "pipeline-model-parallel-layout", true);
      }
      if (l.first_stage_layers > 0) set_arg(t, "decoder-first-pipeline-num-layers", n(l.first_stage_layers));
      else drop_arg(t, "decoder-first-pipeline-num-layers", true);
      if (l.last_stage_layers > 0) set_arg(t, "decoder-last-pipeline-num-layers", n(l.last_stage_layers));
      else drop_arg(t, "decoder-last-pipeline-num-layers", true);
      if (recompute_changed) {
        drop_arg(t, "recompute-activations", false);
        drop_arg(t, "recompute-method", true);
        drop_arg(t, "recompute-num-layers", true);
        if (*pick.checkpointing == Checkpointing::none) {
          drop_arg(t, "recompute-granularity", true);
        } else {
          set_arg(t, "recompute-granularity", *pick.checkpointing == Checkpointing::full ? "full" : "selective");
          if (*pick.checkpointing == Checkpointing::full) {
            set_arg(t, "recompute-method", "uniform");
            set_arg(t, "recompute-num-layers", "1");
          }
        }
      }
      if (l.virtual_stages > 1 && l.pp > 1 && !l.stage_layer_counts.empty() && !megatron_accounting_kept(fc, l, layers)) {
        drop_arg(t, "num-layers-per-virtual-pipeline-stage", true);  // the layout gives v
        drop_arg(t, "virtual-pipeline-model-parallel-size", true);
        drop_arg(t, "num-virtual-stages-per-pipeline-rank", true);
      } else if (l.virtual_stages > 1) {
        // v in the file's own spelling.
        if (fc.text.find("--num-layers-per-virtual-pipeline-stage") != std::string::npos && layers > 0)
          set_arg(t, "num-layers-per-virtual-pipeline-stage", n(layers / (l.pp * l.virtual_stages)));
        else if (fc.text.find("--num-virtual-stages-per-pipeline-rank") != std::string::npos)
          set_arg(t, "num-virtual-stages-per-pipeline-rank", n(l.virtual_stages));
        else
          set_arg(t, "virtual-pipeline-model-parallel-size", n(l.virtual_stages));
      } else {
        drop_arg(t, "num-layers-per-virtual-pipeline-stage", true);
        drop_arg(t, "virtual-pipeline-model-parallel-size", true);
        drop_arg(t, "num-virtual-stages-per-pipeline-rank", true);
      }
      if (l.sequence_parallel && fc.text.find("--sequence-parallel") == std::string::npos) set_arg(t, "sequence-parallel", "");
      if (!l.sequence_parallel) drop_arg(t, "sequence-parallel", false);
      break;
    case ConfigKind::nemo:
      set_yaml(t, "model", "micro_batch_size", n(pick.micro_batch));
      set_yaml(t, "model", "global_batch_size", n(pick.global_batch()));
      set_yaml(t, "model", "tensor_model_parallel_size", n(l.tp));
      set_yaml(t, "model", "pipeline_model_parallel_size", n(l.pp));
      {
        // The split as for Megatron-LM's flags: the file's accounting where it makes the pick's,
        // else a layout stage by stage (it sets v), else the first and last stage, else even.
        const bool kept = megatron_accounting_kept(fc, l, layers);
        const bool layout = !kept && l.pp > 1 && !l.stage_layer_counts.empty();
        set_yaml(t, "model", "virtual_pipeline_model_parallel_size",
                 l.virtual_stages > 1 && !layout ? n(l.virtual_stages) : "null");
        if (layout)
          set_yaml(t, "model", "pipeline_model_parallel_layout", "\"" + megatron_layout_text(l.stage_layer_counts) + "\"");
        else if (fc.text.find("pipeline_model_parallel_layout") != std::string::npos)
          set_yaml(t, "model", "pipeline_model_parallel_layout", "null");
        if (!kept) {
          for (const char* key : {"account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"})
            if (fc.text.find(key) != std::string::npos) set_yaml(t, "model", key, "false");
        }
      }
      // An uneven split (one chunk per rank): Megatron-Core's first and last stage.
      if (l.first_stage_layers > 0 || fc.inputs.first_stage_layers)
        set_yaml(t, "model", "num_layers_in_first_pipeline_stage", l.first_stage_layers > 0 ? n(l.first_stage_layers) : "null");
      if (l.last_stage_layers > 0 || fc.inputs.last_stage_layers)
        set_yaml(t, "model", "num_layers_in_last_pipeline_stage", l.last_stage_layers > 0 ? n(l.last_stage_layers) : "null");
      set_yaml(t, "model", "sequence_parallel", l.sequence_parallel ? "true" : "false");
      if (l.cp > 1 || fc.inputs.cp) set_yaml(t, "model", "context_parallel_size", n(l.cp));
      if (recompute_changed) {
        const Checkpointing c = *pick.checkpointing;
        set_yaml(t, "model", "activations_checkpoint_granularity",
                 c == Checkpointing::none ? "null" : c == Checkpointing::full ? "full" : "selective");
        set_yaml(t, "model", "activations_checkpoint_method", c == Checkpointing::full ? "uniform" : "null");
        set_yaml(t, "model", "activations_checkpoint_num_layers", c == Checkpointing::full ? "1" : "null");
      }
      break;
    case ConfigKind::torchtitan:
      // A pipeline's step runs local_batch_size / microbatch_size microbatches; without one,
      // torchtitan accumulates global_batch_size / (local_batch_size x dp) micro-batches.
      set_toml(t, "training", "local_batch_size", n(l.pp > 1 ? pick.micro_batch * pick.accum_steps : pick.micro_batch));
      set_toml(t, "training", "global_batch_size", n(pick.global_batch()));
      set_toml(t, "parallelism", "tensor_parallel_degree", n(l.tp));
      set_toml(t, "parallelism", "pipeline_parallel_degree", n(l.pp));
      {
        // The data-parallel degrees follow the pick's dp = world_size / (tp pp cp); an hsdp group
        // counts dp x cp ranks (FSDP over dp_shard_cp), so the replicas are dp cp / G.
        const Count dp = pick.data_parallel();
        const Count replicate = pick.sharding.sharding == Sharding::hsdp && pick.sharding.group > 0
                                    ? dp * l.cp / pick.sharding.group
                                    : pick.sharding.sharding == Sharding::none ? dp : 1;
        set_toml(t, "parallelism", "data_parallel_replicate_degree", n(std::max<Count>(1, replicate)));
        set_toml(t, "parallelism", "data_parallel_shard_degree", n(std::max<Count>(1, dp / std::max<Count>(1, replicate))));
      }
      if (l.pp > 1) {
        set_toml(t, "parallelism", "pipeline_parallel_microbatch_size", n(pick.micro_batch));
        set_toml(t, "parallelism", "pipeline_parallel_schedule", fmt::format("\"{}\"", traits(l.schedule).torchtitan));
        // The pick's stages: torchtitan's own from the file alone, else every stage named.
        for (const char* key : {"module_fqns_per_model_part", "pipeline_parallel_layers_per_stage",
                                "pipeline_parallel_first_stage_less_layers", "pipeline_parallel_last_stage_less_layers",
                                "pipeline_parallel_split_points"})
          drop_toml(t, "parallelism", key);
        if (const std::string fqns = torchtitan_module_fqns(l, layers); !fqns.empty())
          set_toml(t, "parallelism", "module_fqns_per_model_part", fqns);
      }
      if (l.cp > 1 || fc.inputs.cp) set_toml(t, "parallelism", "context_parallel_degree", n(l.cp));
      if (recompute_changed) {
        // torchtitan's own modes: none, full (every block), selective with "op" (per-op).
        const Checkpointing c = *pick.checkpointing;
        set_toml(t, "activation_checkpoint", "mode",
                 c == Checkpointing::none ? "\"none\"" : c == Checkpointing::full ? "\"full\"" : "\"selective\"");
        if (c == Checkpointing::selective_op) set_toml(t, "activation_checkpoint", "selective_ac_option", "\"op\"");
      }
      break;
    case ConfigKind::hf_args:
    case ConfigKind::accelerate:
    case ConfigKind::lightning:
      throw InputError(fmt::format("{}: tune completes Megatron-LM, NeMo and torchtitan files; for this trainer's file use "
                                   "tune --emit",
                                   fc.path));
  }
  return t;
}

}  // namespace gaccum::check
