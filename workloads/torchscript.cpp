// What: `torchscript`, a user's own model saved with torch.jit.script/trace + save, trained on a
//       synthetic stream built from the inputs and target of core/model_inputs.hpp:
//         float:D...      [b, D...] ~ N(0, 1)   (input 0: stream purpose 5, element j draws
//                          normal(j + 1): bench/ddp_peer.py reproduces it in Python)
//         tokens:V:S      [b, S] int64 uniform in [1, V) on real positions, 0 on padding
//         mask:S          [b, S] int64, 1 on the sample's L real positions, then 0
//         pad-mask:S      [b, S] bool, true on padding
//       targets: classes:N (labels [b], cross-entropy on [b, N]), regression:D (N(0,1) [b, D],
//       squared error), tokens:V (labels [b, S], -100 on padding, cross-entropy on [b, S, V]
//       summed over real tokens; loss_terms = real tokens).
// Dropout: forward() seeds LibTorch's generator from (stream seed, first sample, count) and runs
//       the unoptimised graph, so a micro-batch draws the same dropout masks wherever and whenever
//       it is computed (a rank's first forward, the reference after k of them).
// Errors: whatever the model raises in forward or the loss becomes a ModelError carrying the
//       last line of the TorchScript traceback (the model's own message) and the micro_batch.
// Identity: the file's content hash joins the workload hash, so a changed model file never
//       matches a stale profile.
// Blocks: a model whose top-level forward() provably is a chain of submodule calls (an
//       nn.Sequential, or an embedding, a ModuleList looped in forward() and a head, scripted or
//       traced) runs unit by unit (a StagedModel): pipeline stages, and zero3's per-unit
//       gathering. "Provably": the forward graph (not inlined) holds nothing but the attribute
//       reads that reach submodules and forward() calls, each on the previous call's output, the
//       last returned; every trainable parameter belongs to exactly one called submodule. Anything
//       else (an op between calls, a second input, a residual across units, a shared block, a
//       parameter of the top module) is refused with that reason, and the model runs whole.
#include <cstdint>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/json_fields.hpp"
#include "core/text_lines.hpp"
#include "workloads/module_workload.hpp"
#include "workloads/synthetic_rng.hpp"

namespace gaccum::workloads {
namespace {

// The last non-empty line of a LibTorch message: for a TorchScript interpreter error, the
// model's own error ("RuntimeError: Expected more than 1 value per channel when training, ...").
std::string last_message_line(const std::exception& e) {
  const auto* c10e = dynamic_cast<const c10::Error*>(&e);
  return last_nonempty_line(c10e ? c10e->what_without_backtrace() : e.what());
}

// Does the graph (inlined, so functional calls count) run one of `ops`?
bool graph_runs(const torch::jit::Block* block, const std::set<std::string>& ops) {
  for (const auto* node : block->nodes()) {
    if (ops.count(node->kind().toQualString())) return true;
    for (const auto* sub : node->blocks())
      if (graph_runs(sub, ops)) return true;
  }
  return false;
}

const std::set<std::string> kBatchStatisticOps = {"aten::batch_norm", "aten::_batch_norm_impl_index",
                                                  "aten::native_batch_norm"};
// Ops that draw from the generator in forward(): dropout, and the draws models make themselves
// (torchvision's StochasticDepth: torch.empty(...).bernoulli_(p); noise injection; RReLU's slopes).
const std::set<std::string> kRandomOps = {
    "aten::dropout",   "aten::dropout_",     "aten::feature_dropout", "aten::alpha_dropout",
    "aten::feature_alpha_dropout",           "aten::native_dropout",  "aten::bernoulli",
    "aten::bernoulli_", "aten::rand",        "aten::rand_like",       "aten::randn",
    "aten::randn_like", "aten::randint",     "aten::randint_like",    "aten::randperm",
    "aten::multinomial", "aten::normal",     "aten::normal_",         "aten::uniform_",
    "aten::exponential_", "aten::geometric_", "aten::cauchy_",        "aten::log_normal_",
    "aten::poisson",    "aten::rrelu",       "aten::rrelu_",          "aten::rrelu_with_noise"};

std::string type_short_name(const torch::jit::Module& m) {
  auto name = m.type()->name();
  if (!name) return "module";
  const std::string q = name->qualifiedName();
  auto dot = q.rfind('.');
  return dot == std::string::npos ? q : q.substr(dot + 1);
}

// Where a node sits in the model's source ("model.py:12"), when the file kept it.
std::string source_of(const torch::jit::Node* n) {
  const auto flc = n->sourceRange().file_line_col();
  if (!flc) return "";
  std::string file = std::get<0>(*flc);
  if (auto slash = file.rfind('/'); slash != std::string::npos) file = file.substr(slash + 1);
  return fmt::format(" ({}:{})", file, std::get<1>(*flc));
}

// The first node of the (inlined) graph that draws random numbers, as "aten::bernoulli_
// (stochastic_depth.py:39)"; "" when none does. An op with a `dropout_p` argument
// (scaled_dot_product_attention and its kernels, torch 2.x; nn.MultiheadAttention calls it)
// draws unless that argument is the constant 0.
std::string first_random_op(const torch::jit::Block* block) {
  for (const auto* node : block->nodes()) {
    const std::string kind = node->kind().toQualString();
    if (kRandomOps.count(kind)) return kind + source_of(node);
    if (const auto* schema = node->maybeSchema()) {
      if (const auto i = schema->argumentIndexWithName("dropout_p"); i && static_cast<std::size_t>(*i) < node->inputs().size()) {
        const auto p = torch::jit::toIValue(node->input(*i));
        if (!(p && p->isDouble() && p->toDouble() == 0.0)) return fmt::format("{} with dropout_p{}", kind, source_of(node));
      }
    }
    for (const auto* sub : node->blocks())
      if (auto found = first_random_op(sub); !found.empty()) return found;
  }
  return "";
}

// The top-level forward() as the module paths it calls one after the other ("0", "1", ... for an
// nn.Sequential; "embed", "blocks.0", ..., "head"), or why it is not such a chain.
struct Chain {
  std::vector<std::string> paths;
  std::string why;  // "" when paths is the forward
};

Chain find_chain(const torch::jit::Module& m) {
  namespace jit = torch::jit;
  auto refuse = [](std::string why) { return Chain{{}, std::move(why)}; };
  std::shared_ptr<jit::Graph> graph;
  try {
    graph = m.get_method("forward").graph();
  } catch (const c10::Error&) {
    return refuse("its forward() has no graph to read");
  }
  const auto ins = graph->inputs();
  if (ins.size() != 2)
    return refuse(fmt::format("its forward() takes {} inputs, and a stage boundary carries the one tensor the "
                              "previous block returned",
                              ins.size() - 1));
  std::map<const jit::Value*, std::string> submodule;  // values that hold a submodule: its path
  submodule[ins[0]] = "";
  const jit::Value* current = ins[1];
  std::string current_from = "its input";
  std::vector<std::string> paths;
  std::set<std::string> called;
  for (const jit::Node* n : graph->nodes()) {
    if (n->kind() == c10::prim::Constant) continue;  // a value only: an op that uses it is what refuses
    if (n->kind() == c10::prim::GetAttr) {
      auto it = submodule.find(n->input(0));
      const std::string name = n->s(c10::attr::name);
      const std::string path = it == submodule.end() ? name : it->second.empty() ? name : it->second + "." + name;
      const auto type = n->output()->type()->cast<c10::ClassType>();
      if (it == submodule.end() || !type || !type->is_module())
        return refuse(fmt::format("its forward() reads '{}' ({}) itself{}, outside the submodules it calls", path,
                                  n->output()->type()->repr_str(), source_of(n)));
      submodule[n->output()] = path;
      continue;
    }
    if (n->kind() == c10::prim::CallMethod) {
      auto it = submodule.find(n->input(0));
      const std::string path = it == submodule.end() ? "?" : it->second.empty() ? "self" : it->second;
      const std::string method = n->s(c10::attr::name);
      if (it == submodule.end() || method != "forward")
        return refuse(fmt::format("its forward() calls {}.{}(){}, not a submodule's forward()", path, method,
                                  source_of(n)));
      if (n->inputs().size() != 2 || n->input(1) != current)
        return refuse(fmt::format("its forward() calls '{}'{} on {} instead of on {} alone", path, source_of(n),
                                  n->inputs().size() != 2 ? fmt::format("{} arguments", n->inputs().size() - 1)
                                                          : std::string("another value"),
                                  current_from));
      if (!called.insert(path).second)
        return refuse(fmt::format("its forward() calls '{}' twice{} (a block shared between positions)", path,
                                  source_of(n)));
      if (!n->output()->type()->isSubtypeOf(*c10::TensorType::get()))
        return refuse(fmt::format("'{}' returns {}{}, not one tensor", path, n->output()->type()->repr_str(),
                                  source_of(n)));
      current = n->output();
      current_from = fmt::format("the output of '{}'", path);
      paths.push_back(path);
      continue;
    }
    return refuse(fmt::format("its forward() runs {}{} {} the submodule calls", n->kind().toQualString(), source_of(n),
                              paths.empty() ? "before" : "between or after"));
  }
  if (graph->outputs().size() != 1 || graph->outputs()[0] != current)
    return refuse(fmt::format("its forward() returns something other than {}", current_from));
  if (paths.size() < 2)
    return refuse(fmt::format("its forward() calls {} submodule, and a sequence of blocks needs at least 2",
                              paths.size()));
  return {paths, ""};
}

class TorchScriptWorkload final : public Workload, public StagedModel {
 public:
  TorchScriptWorkload(WorkloadIdentity id, const WorkloadConfig& cfg)
      : Workload(std::move(id), torch::Device(cfg.device), parse_dtype(cfg.dtype)),
        path_(cfg.torchscript_path),
        inputs_(cfg.inputs),
        target_(cfg.target) {
    if (cfg.torchscript_path.empty()) throw InputError("--torchscript: a TorchScript file is required for workload 'torchscript'");
    if (inputs_.empty())
      throw InputError("--input-shape: required with --torchscript, e.g. --input-shape 3,32,32 (or --input "
                       "tokens:VOCAB:SEQ for a token model)");
    check_target_fits_inputs(target_, inputs_, "--target");
    seq_ = sequence_length(inputs_);
    masked_ = has_mask(inputs_);
    std::string content = read_file(cfg.torchscript_path, "--torchscript", UINT64_MAX);  // a model: no size limit
    try {
      module_ = torch::jit::load(cfg.torchscript_path, device_);
    } catch (const c10::Error& e) {
      std::string msg = e.what_without_backtrace();
      auto nl = msg.find('\n');
      if (nl != std::string::npos) msg = msg.substr(0, nl);
      throw InputError(fmt::format("--torchscript: '{}' is not a loadable TorchScript file ({}); save one with "
                                   "torch.jit.script(model).save(path)", cfg.torchscript_path, msg));
    }
    // Floating-point parameters and buffers to the run's dtype, nothing else: jit::Module::to(dtype)
    // converts every tensor, and an index buffer (Swin's relative_position_index, BatchNorm's
    // num_batches_tracked) must stay int64.
    bool integer_buffers = false;  // joins the identity: a profile cached by a build that converted them measured other bytes
    {
      torch::NoGradGuard no_grad;
      for (const auto& p : module_.named_parameters(/*recurse=*/true))
        if (c10::isFloatingType(p.value.scalar_type()) && p.value.scalar_type() != dtype_)
          p.value.set_data(p.value.to(dtype_));
      for (const auto& b : module_.named_buffers(/*recurse=*/true))
        if (c10::isFloatingType(b.value.scalar_type())) {
          if (b.value.scalar_type() != dtype_) b.value.set_data(b.value.to(dtype_));
        } else {
          integer_buffers = true;
        }
    }
    module_.train();
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      if (!p.value.requires_grad()) continue;
      params_.push_back(p.value);
      names_.push_back(p.name);
    }
    if (params_.empty()) throw InputError(fmt::format("--torchscript: '{}' has no trainable parameters", cfg.torchscript_path));
    find_batch_dependence();
    find_units();
    std::vector<std::string> texts;
    for (const auto& in : inputs_) texts.push_back(to_text(in));
    identity_.hyper["inputs"] = texts;
    identity_.hyper["target"] = to_text(target_);
    identity_.hyper["file"] = cfg.torchscript_path;
    if (target_.kind == TargetKind::tokens) {
      // The loss is per token: the runner normalises by the window's real tokens.
      identity_.tokens_per_sample = seq_;
      const Count lo = (seq_ + 1) / 2;
      identity_.mean_tokens_per_sample = masked_ ? 0.5 * double(lo + seq_) : double(seq_);
    }
    finish_identity(hex64(fnv1a64(content)) + (integer_buffers ? "|integer buffers kept" : ""));
  }

  std::vector<torch::Tensor> parameters() const override { return params_; }
  std::vector<std::string> parameter_names() const override { return names_; }
  BatchDependence batch_dependence() const override { return dependence_; }
  StagedModel* staged() override { return units_.empty() ? nullptr : this; }
  std::string staging_rejection() const override {
    return fmt::format("'{}': {}; write it as a sequence of blocks (an nn.Sequential, or a ModuleList looped in "
                       "forward(), each block taking the previous one's output) to run it block by block",
                       path_, staging_rejection_);
  }

  // --- StagedModel: the chain's units ----------------------------------------------------------
  void set_unit_hooks(UnitHooks* hooks) override { hooks_ = hooks; }
  Count units() const override { return static_cast<Count>(units_.size()); }
  Count blocks() const override { return units() - 2; }
  std::vector<torch::Tensor> unit_parameters(Count u) const override { return units_.at(static_cast<std::size_t>(u)).params; }

  torch::Tensor forward_units(Count first, Count end, const torch::Tensor& x) override {
    torch::jit::GraphOptimizerEnabledGuard plain_graph(false);  // as forward(): the same graph every call
    torch::Tensor h = x;
    for (Count u = first; u < end; ++u) {
      if (hooks_) hooks_->before_unit_forward(u);
      h = call_unit(u, h);
      if (hooks_) hooks_->after_unit_forward(u, h);
    }
    return h;
  }

  UnitInput unit_input(Count micro_batch, Count u) override {
    auto it = boundaries_.find(micro_batch);
    if (it == boundaries_.end()) it = boundaries_.emplace(micro_batch, probe_boundaries(micro_batch)).first;
    return it->second.at(static_cast<std::size_t>(u));
  }

  std::string tensor_parallel_rejection(Count tp, bool sequence_parallel) const override {
    if (tp <= 1 && !sequence_parallel) return "";
    return fmt::format("--tp {}: the runner splits the built-in gpt's attention and MLP over tensor-parallel ranks, "
                       "not a TorchScript model's layers; run this model with --pp or --sharding",
                       tp);
  }
  void split_tensor_parallel(TensorParallelComm& /*comm*/, bool sequence_parallel) override {
    throw InputError(tensor_parallel_rejection(2, sequence_parallel));
  }
  std::vector<torch::Tensor> unit_parameter_origins(Count u) const override {
    return std::vector<torch::Tensor>(units_.at(static_cast<std::size_t>(u)).params.size());
  }
  std::vector<torch::Tensor> partial_gradient_parameters() const override { return {}; }

  torch::Tensor forward(const Batch& b) override {
    if (!dependence_.dropout.empty()) {
      // Same micro-batch, same masks: a function of where the batch sits in its stream only.
      const std::uint64_t key = splitmix64(splitmix64(b.seed ^ 0xd70b0a7ull) ^ static_cast<std::uint64_t>(b.first_sample)) ^
                                static_cast<std::uint64_t>(b.samples);
      torch::manual_seed(key >> 1);
    }
    // The graph executor's profiling runs (the first forwards of a process) and its optimised
    // graph draw dropout's random numbers differently: without optimisation every forward runs
    // the same graph, so a micro-batch's masks do not depend on how many forwards came before.
    torch::jit::GraphOptimizerEnabledGuard plain_graph(false);
    if (!units_.empty()) return forward_units(0, units(), b.input);
    std::vector<torch::jit::IValue> args{b.input};
    for (const auto& t : b.more_inputs) args.emplace_back(t);
    torch::jit::IValue out;
    try {
      out = module_.forward(args);
    } catch (const std::exception& e) {
      rethrow_if_not_the_model(e);
      throw model_error(e, b.samples, "forward");
    }
    if (!out.isTensor())
      throw ModelError(fmt::format("--torchscript: the forward() of '{}' must return one tensor, the output the loss "
                                   "is taken of (it returned a {} in training mode): script a wrapper whose forward "
                                   "returns that tensor (e.g. out[0]; torchvision's GoogLeNet and Inception: "
                                   "aux_logits=False)",
                                   path_, out.tagKind()),
                       b.samples, "forward() did not return a tensor");
    return out.toTensor();
  }

  torch::Tensor loss_sum(const torch::Tensor& model_out, const Batch& b) const override {
    namespace F = torch::nn::functional;
    const torch::Tensor out = loss_precision(model_out);
    const Count w = target_.width;
    try {
      switch (target_.kind) {
        case TargetKind::classes:
          check_output(out, {b.samples, w});
          return F::cross_entropy(out, b.target, F::CrossEntropyFuncOptions().reduction(torch::kSum));
        case TargetKind::regression:
          check_output(out, {b.samples, w});
          return (out - b.target).pow(2).sum();
        case TargetKind::tokens:
          check_output(out, {b.samples, seq_, w});
          return F::cross_entropy(out.reshape({-1, w}), b.target.reshape({-1}),
                                  F::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(-100));
      }
    } catch (const ModelError&) {
      throw;
    } catch (const std::exception& e) {
      rethrow_if_not_the_model(e);
      throw model_error(e, b.samples, "the loss");
    }
    return {};
  }

  Batch make_batch(std::uint64_t seed, Count first, Count count) const override {
    Batch b;
    b.seed = seed;
    b.first_sample = first;
    b.samples = count;
    std::vector<Count> lengths(static_cast<std::size_t>(count), seq_);
    if (masked_)
      for (Count s = 0; s < count; ++s) lengths[static_cast<std::size_t>(s)] = sample_length(seed, first + s);
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      auto t = make_input(i, seed, first, count, lengths);
      if (i == 0)
        b.input = std::move(t);
      else
        b.more_inputs.push_back(std::move(t));
    }
    b.loss_terms = count;
    switch (target_.kind) {
      case TargetKind::classes: {
        auto y = torch::empty({count}, torch::kInt64);
        for (Count s = 0; s < count; ++s) {
          SampleRng rng(seed, static_cast<std::uint64_t>(first + s), 5);
          y.data_ptr<std::int64_t>()[s] = static_cast<std::int64_t>(rng.below(0, static_cast<std::uint64_t>(target_.width)));
        }
        b.target = y.to(device_);
        break;
      }
      case TargetKind::regression: {
        auto y = torch::empty({count, target_.width}, torch::kFloat64);
        for (Count s = 0; s < count; ++s) {
          SampleRng trng(seed, static_cast<std::uint64_t>(first + s), 6);
          for (Count j = 0; j < target_.width; ++j)
            y.data_ptr<double>()[s * target_.width + j] = trng.normal(static_cast<std::uint64_t>(j));
        }
        b.target = y.to(device_, dtype_);
        break;
      }
      case TargetKind::tokens: {
        auto y = torch::full({count, seq_}, -100, torch::kInt64);
        auto* yp = y.data_ptr<std::int64_t>();
        Count terms = 0;
        for (Count s = 0; s < count; ++s) {
          SampleRng rng(seed, static_cast<std::uint64_t>(first + s), 9);
          const Count len = lengths[static_cast<std::size_t>(s)];
          for (Count t = 0; t < len; ++t)
            yp[s * seq_ + t] = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(t),
                                                                   static_cast<std::uint64_t>(target_.width)));
          terms += len;
        }
        b.target = y.to(device_);
        b.loss_terms = terms;
        break;
      }
    }
    return b;
  }

  Count loss_terms(std::uint64_t seed, Count first, Count count) const override {
    if (target_.kind != TargetKind::tokens) return count;
    if (!masked_) return count * seq_;
    Count terms = 0;
    for (Count s = 0; s < count; ++s) terms += sample_length(seed, first + s);
    return terms;
  }

 private:
  // Out of memory (the interpreter rethrows a CUDA OOM as a plain runtime error) and our own
  // errors keep their meaning; everything else the model raised is the model's error.
  static void rethrow_if_not_the_model(const std::exception& e) {
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || dynamic_cast<const std::bad_alloc*>(&e) ||
        dynamic_cast<const Error*>(&e))
      throw;
    if (is_out_of_memory_message(e.what())) throw;  // core/error.hpp: device and host
  }

  ModelError model_error(const std::exception& e, Count micro_batch, const char* where) const {
    const std::string line = last_message_line(e);
    return ModelError(fmt::format("--torchscript: the model '{}' raised in {} at micro_batch {}: {}", path_, where,
                                  micro_batch, line),
                      micro_batch, line);
  }

  void check_output(const torch::Tensor& out, const std::vector<std::int64_t>& want) const {
    if (out.sizes().vec() == want) return;
    throw ModelError(fmt::format("--target: the model returned shape [{}] but {} needs [{}]; set --target to the "
                                 "model's output",
                                 fmt::join(out.sizes().vec(), ", "), to_text(target_), fmt::join(want, ", ")),
                     want.front(), "output shape mismatch");
  }

  // Real length of sample i, uniform in [ceil(S/2), S] (draw 0 of purpose 8).
  Count sample_length(std::uint64_t seed, Count sample) const {
    const Count lo = (seq_ + 1) / 2;
    SampleRng rng(seed, static_cast<std::uint64_t>(sample), 8);
    return lo + static_cast<Count>(rng.below(0, static_cast<std::uint64_t>(seq_ - lo + 1)));
  }

  torch::Tensor make_input(std::size_t i, std::uint64_t seed, Count first, Count count,
                           const std::vector<Count>& lengths) const {
    const auto& in = inputs_[i];
    Count per = 1;
    for (auto d : in.shape) per *= d;
    std::vector<std::int64_t> dims{count};
    for (auto d : in.shape) dims.push_back(d);
    // Input 0 keeps the stream of the single-input workload (purpose 5); input i > 0 uses 100 + i.
    const std::uint64_t purpose = i == 0 ? 5 : 100 + i;
    switch (in.kind) {
      case InputKind::floats: {
        auto x = torch::empty(dims, torch::kFloat64);
        auto* xp = x.data_ptr<double>();
        for (Count s = 0; s < count; ++s) {
          SampleRng rng(seed, static_cast<std::uint64_t>(first + s), purpose);
          for (Count j = 0; j < per; ++j) xp[s * per + j] = rng.normal(static_cast<std::uint64_t>(j + 1));
        }
        return x.to(device_, dtype_);
      }
      case InputKind::tokens: {
        auto x = torch::zeros(dims, torch::kInt64);
        auto* xp = x.data_ptr<std::int64_t>();
        const Count S = in.shape.back();
        const auto V = static_cast<std::uint64_t>(in.vocab);
        for (Count s = 0; s < count; ++s) {
          SampleRng rng(seed, static_cast<std::uint64_t>(first + s), purpose);
          const Count len = lengths[static_cast<std::size_t>(s)];
          for (Count j = 0; j < per; ++j) {
            const bool real = (j % S) < len;
            // Token 0 is padding; a vocabulary of 1 has only token 0.
            xp[s * per + j] = real && V > 1 ? static_cast<std::int64_t>(1 + rng.below(static_cast<std::uint64_t>(j + 1), V - 1)) : 0;
          }
        }
        return x.to(device_);
      }
      case InputKind::mask:
      case InputKind::pad_mask: {
        auto x = torch::zeros(dims, torch::kInt64);
        auto* xp = x.data_ptr<std::int64_t>();
        const Count S = in.shape.back();
        for (Count s = 0; s < count; ++s)
          for (Count j = 0; j < S; ++j) {
            const bool real = j < lengths[static_cast<std::size_t>(s)];
            xp[s * S + j] = in.kind == InputKind::mask ? (real ? 1 : 0) : (real ? 0 : 1);
          }
        return in.kind == InputKind::mask ? x.to(device_) : x.to(device_, torch::kBool);
      }
    }
    return {};
  }

  // BatchNorm and dropout: named modules whose type says so (a recurrent module's own dropout
  // between its layers included; stochastic depth drops whole residual branches), or the ops in
  // the inlined forward graph (functional calls have no module; any op that draws random numbers
  // counts, since a micro-batch must draw the same ones wherever it is computed).
  void find_batch_dependence() {
    for (const auto& m : module_.named_modules()) {
      const std::string type = type_short_name(m.value);
      const std::string where = fmt::format("{} ({})", m.name.empty() ? "<model>" : m.name, type);
      if (type.find("BatchNorm") != std::string::npos) dependence_.batch_statistics.push_back(where);
      if (type.find("Dropout") != std::string::npos || type == "StochasticDepth" || type == "DropPath")
        dependence_.dropout.push_back(where);
      // nn.LSTM / nn.GRU / nn.RNN with dropout > 0 drop between their layers inside one op
      // (aten::lstm's dropout argument, read from the module's `dropout` attribute).
      if ((type == "LSTM" || type == "GRU" || type == "RNN") && m.value.hasattr("dropout")) {
        const auto d = m.value.attr("dropout");
        const double rate = d.isDouble() ? d.toDouble() : 0.0;
        const auto layers = m.value.hasattr("num_layers") ? m.value.attr("num_layers") : c10::IValue();
        if (rate > 0 && (!layers.isInt() || layers.toInt() > 1))
          dependence_.dropout.push_back(fmt::format("{} ({}, dropout {} between layers)", m.name, type, rate));
      }
    }
    bool bn_op = false;
    std::string random_op;
    try {
      auto graph = module_.get_method("forward").graph()->copy();
      torch::jit::Inline(*graph);
      bn_op = graph_runs(graph->block(), kBatchStatisticOps);
      random_op = first_random_op(graph->block());
    } catch (const c10::Error&) {
      // A traced or unusual module whose graph cannot be inlined: the named modules decide.
    }
    if (bn_op && dependence_.batch_statistics.empty()) dependence_.batch_statistics.push_back("functional batch_norm in forward()");
    if (!random_op.empty() && dependence_.dropout.empty())
      dependence_.dropout.push_back(fmt::format("random draws in forward(): {}", random_op));
  }

  // The chain of find_chain as units, the parameters reordered unit by unit (the order a sharded
  // plan's units and a pipeline's stages take them in); else the reason it runs whole.
  void find_units() {
    Chain chain = find_chain(module_);
    if (chain.why.empty() && inputs_.size() != 1)
      chain = {{}, fmt::format("it takes {} inputs (--input), and a stage boundary carries one tensor", inputs_.size())};
    if (!chain.why.empty()) {
      staging_rejection_ = chain.why;
      return;
    }
    std::map<const c10::TensorImpl*, std::string> name_of;
    for (std::size_t i = 0; i < params_.size(); ++i) name_of[params_[i].unsafeGetTensorImpl()] = names_[i];
    std::map<const c10::TensorImpl*, std::string> owner;  // parameter -> the unit that holds it
    // A call without parameters (an activation, a Flatten) joins the unit before it (the first
    // unit's leading ones join it too): every unit holds parameters to gather and to place.
    std::vector<Unit> units;
    std::vector<torch::Tensor> params;
    std::vector<std::string> names;
    Unit pending;  // parameterless calls not yet in a unit
    for (const auto& path : chain.paths) {
      torch::jit::script::Module sub = module_;
      std::string rest = path;
      while (!rest.empty()) {
        const auto dot = rest.find('.');
        sub = sub.attr(rest.substr(0, dot)).toModule();
        rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
      }
      std::vector<torch::Tensor> own;
      for (const auto& p : sub.named_parameters(/*recurse=*/true)) {
        if (!p.value.requires_grad()) continue;
        const auto* impl = p.value.unsafeGetTensorImpl();
        if (auto o = owner.find(impl); o != owner.end()) {
          staging_rejection_ = fmt::format("'{}' and '{}' share the parameter '{}' (tied weights)", o->second, path,
                                           name_of[impl]);
          return;
        }
        owner[impl] = path;
        own.push_back(p.value);
        params.push_back(p.value);
        names.push_back(name_of[impl]);
      }
      Unit* into = &pending;
      if (own.empty() && !units.empty()) into = &units.back();
      into->paths.push_back(path);
      into->modules.push_back(sub);
      into->params.insert(into->params.end(), own.begin(), own.end());
      if (!own.empty()) {
        units.push_back(std::move(pending));
        pending = Unit{};
      }
    }
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (!owner.count(params_[i].unsafeGetTensorImpl())) {
        staging_rejection_ = fmt::format("its parameter '{}' belongs to no submodule its forward() calls", names_[i]);
        return;
      }
    if (units.size() < 2) {
      staging_rejection_ = fmt::format("its forward() calls one submodule with parameters ('{}'), and a sequence of "
                                       "blocks needs at least 2",
                                       units.empty() ? "" : units.front().name());
      return;
    }
    std::vector<std::string> unit_names;
    for (const auto& u : units) unit_names.push_back(u.name());
    units_ = std::move(units);
    params_ = std::move(params);
    names_ = std::move(names);
    identity_.hyper["units"] = unit_names;
  }

  torch::Tensor call_unit(Count u, const torch::Tensor& x) {
    Unit& unit = units_.at(static_cast<std::size_t>(u));
    const Count micro_batch = x.dim() > 0 ? x.size(0) : 0;
    torch::Tensor h = x;
    for (std::size_t i = 0; i < unit.modules.size(); ++i) {
      torch::jit::IValue out;
      try {
        out = unit.modules[i].forward({h});
      } catch (const std::exception& e) {
        rethrow_if_not_the_model(e);
        throw model_error(e, micro_batch, "forward");
      }
      if (!out.isTensor())
        throw ModelError(fmt::format("--torchscript: submodule '{}' of '{}' must return one tensor (it returned a {})",
                                     unit.paths[i], path_, out.tagKind()),
                         micro_batch, "a block did not return a tensor");
      h = out.toTensor();
    }
    return h;
  }

  // The tensor entering each unit, from one eval-mode forward without gradients on a micro-batch
  // (eval: BatchNorm's running statistics and dropout's generator are left as they were).
  std::vector<UnitInput> probe_boundaries(Count micro_batch) {
    std::vector<UnitInput> in;
    torch::NoGradGuard no_grad;
    torch::jit::GraphOptimizerEnabledGuard plain_graph(false);
    module_.eval();
    try {
      torch::Tensor h = make_batch(0, 0, micro_batch).input;
      for (Count u = 0; u < units(); ++u) {
        if (u > 0 && !c10::isFloatingType(h.scalar_type()))
          throw InputError(fmt::format("--pp: block '{}' of '{}' returns a {} tensor; a pipeline stage boundary carries "
                                       "a floating-point activation and its gradient",
                                       units_[static_cast<std::size_t>(u - 1)].name(), path_,
                                       c10::toString(h.scalar_type())));
        in.push_back({h.sizes().vec(), h.scalar_type()});
        h = call_unit(u, h);
      }
    } catch (...) {
      module_.train();
      throw;
    }
    module_.train();
    return in;
  }

  // One unit: a called submodule with parameters and the parameterless calls joined to it.
  struct Unit {
    std::vector<std::string> paths;  // "0", "1" (an nn.Sequential's Linear and its GELU); "blocks.3"
    std::vector<torch::jit::script::Module> modules;
    std::vector<torch::Tensor> params;  // trainable, registration order within each submodule
    std::string name() const { return fmt::format("{}", fmt::join(paths, "+")); }
  };

  std::string path_;
  std::vector<ModelInput> inputs_;
  ModelTarget target_;
  Count seq_ = 0;
  bool masked_ = false;
  torch::jit::script::Module module_;
  std::vector<torch::Tensor> params_;
  std::vector<std::string> names_;
  BatchDependence dependence_;
  std::vector<Unit> units_;  // empty: the model runs whole (staging_rejection_ says why)
  std::string staging_rejection_;
  UnitHooks* hooks_ = nullptr;
  std::map<Count, std::vector<UnitInput>> boundaries_;  // per micro_batch: what enters each unit
};

}  // namespace

std::unique_ptr<Workload> make_torchscript(WorkloadIdentity id, const WorkloadConfig& cfg) {
  return std::make_unique<TorchScriptWorkload>(std::move(id), cfg);
}

nlohmann::json torchscript_fields_to_json(const WorkloadConfig& cfg) {
  std::vector<std::string> texts;
  for (const auto& in : cfg.inputs) texts.push_back(to_text(in));
  return nlohmann::json{{"torchscript_path", cfg.torchscript_path}, {"inputs", texts}, {"target", to_text(cfg.target)}};
}

void torchscript_fields_from_json(const nlohmann::json& j, const std::string& where, WorkloadConfig& cfg) {
  JsonFields f(j, where);
  cfg.torchscript_path = f.opt_str("torchscript_path").value_or("");
  cfg.inputs.clear();
  if (f.has("inputs")) {
    const auto& arr = j.at("inputs");
    if (!arr.is_array()) throw InputError(fmt::format("{}.inputs: expected a list of input texts", where));
    std::vector<std::string> texts;
    for (const auto& t : arr) {
      if (!t.is_string()) throw InputError(fmt::format("{}.inputs: expected a list of input texts", where));
      texts.push_back(t.get<std::string>());
    }
    if (!texts.empty()) cfg.inputs = parse_model_inputs(texts, where + ".inputs");
  }
  if (auto t = f.opt_str("target"); t && !t->empty()) cfg.target = parse_model_target(*t, where + ".target");
}

}  // namespace gaccum::workloads
