// What: `gpt`, a decoder-only transformer language model (pre-LayerNorm blocks, causal
//       multi-head self-attention, GELU MLP of width 4*d_model, learned positions, untied head).
// Data: sequences of a fixed random Markov chain over the vocabulary (each token has 4 possible
//       successors), of variable length L ~ U[ceil(seq_len/4), seq_len], padded to seq_len.
//       Shapes stay fixed (so memory is a function of micro_batch alone) while the number of
//       real tokens differs between micro-batches: token-level loss must be normalised by the
//       tokens in the window, not by accum_steps.
// Loss: cross-entropy summed over real tokens (targets on padding are -100, ignored).
// Parameters (d = d_model, V = vocab, S = seq_len, n = layers):
//       V*d (tokens) + S*d (positions) + n*(12 d^2 + 13 d) + 2 d (final LN) + d*V (head).
#include <torch/torch.h>

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "workloads/module_workload.hpp"
#include "workloads/synthetic_rng.hpp"

namespace gaccum::workloads {
namespace {

// --- tensor parallelism (StagedModel::split_tensor_parallel) -------------------------------------

// Sequence collectives on [b, s, d] tensors: the communicator cuts dim 0, so the sequence is
// moved to the front ([s, b, d], contiguous) and back.
torch::Tensor gather_sequence(TensorParallelComm& comm, const torch::Tensor& x, bool backward, bool layer) {
  auto xs = x.transpose(0, 1).contiguous();  // [s_local, b, d]
  auto out = torch::empty({xs.size(0) * comm.size(), xs.size(1), xs.size(2)}, xs.options());
  comm.all_gather(xs, out, backward, layer);
  return out.transpose(0, 1).contiguous();   // [b, s, d]
}
torch::Tensor reduce_scatter_sequence(TensorParallelComm& comm, const torch::Tensor& x, bool backward, bool layer) {
  auto xs = x.transpose(0, 1).contiguous();  // [s, b, d]
  auto out = torch::empty({xs.size(0) / comm.size(), xs.size(1), xs.size(2)}, xs.options());
  comm.reduce_scatter_sum(xs, out, backward, layer);
  return out.transpose(0, 1).contiguous();   // [b, s / T, d]
}
torch::Tensor own_sequence_slice(const TensorParallelComm& comm, const torch::Tensor& x) {
  const auto local = x.size(1) / comm.size();
  return x.narrow(1, comm.rank() * local, local).contiguous();
}

// Megatron-LM's conjugate regions. kind: enter (f, before a column-parallel matmul), exit (g,
// after a row-parallel one), split (after the embedding, sequence parallel), gather (before the
// head, sequence parallel).
enum class Region : std::int64_t { enter, exit, split, gather };

struct TpRegion : torch::autograd::Function<TpRegion> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, TensorParallelComm* comm,
                               std::int64_t kind, bool sp) {
    ctx->saved_data["comm"] = reinterpret_cast<std::int64_t>(comm);
    ctx->saved_data["kind"] = kind;
    ctx->saved_data["sp"] = sp;
    switch (static_cast<Region>(kind)) {
      case Region::enter:
        return sp ? gather_sequence(*comm, x, false, true) : x.clone();
      case Region::exit:
        if (sp) return reduce_scatter_sequence(*comm, x, false, true);
        {
          auto y = x.contiguous().clone();
          comm->allreduce_sum(y, false, true);
          return y;
        }
      case Region::split:
        return own_sequence_slice(*comm, x);
      case Region::gather:
        return gather_sequence(*comm, x, false, false);
    }
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list g) {
    auto* comm = reinterpret_cast<TensorParallelComm*>(ctx->saved_data["comm"].toInt());
    const bool sp = ctx->saved_data["sp"].toBool();
    torch::Tensor dx;
    switch (static_cast<Region>(ctx->saved_data["kind"].toInt())) {
      case Region::enter:
        if (sp) {
          dx = reduce_scatter_sequence(*comm, g[0], true, true);
        } else {
          dx = g[0].contiguous().clone();
          comm->allreduce_sum(dx, true, true);
        }
        break;
      case Region::exit:
        dx = sp ? gather_sequence(*comm, g[0], true, true) : g[0];
        break;
      case Region::split:
        dx = gather_sequence(*comm, g[0], true, false);
        break;
      case Region::gather:
        dx = own_sequence_slice(*comm, g[0]);
        break;
    }
    return {dx, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

torch::Tensor region(const torch::Tensor& x, TensorParallelComm* comm, Region kind, bool sp) {
  return TpRegion::apply(x, comm, static_cast<std::int64_t>(kind), sp);
}

struct Block : torch::nn::Module {
  Block(Count d, Count heads) : d_(d), heads_(heads) {
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    qkv = register_module("qkv", torch::nn::Linear(d, 3 * d));
    proj = register_module("proj", torch::nn::Linear(d, d));
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    fc1 = register_module("fc1", torch::nn::Linear(d, 4 * d));
    fc2 = register_module("fc2", torch::nn::Linear(4 * d, d));
  }
  // x: [b, s, d] ([b, s / T, d] under sequence parallelism); causal: [s, s] additive mask (0 or -inf).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& causal) {
    if (tp_) return forward_tensor_parallel(x, causal);
    const auto b = x.size(0), s = x.size(1), dh = d_ / heads_;
    auto qkv_out = qkv->forward(ln1->forward(x)).view({b, s, 3, heads_, dh}).permute({2, 0, 3, 1, 4});
    auto q = qkv_out[0], k = qkv_out[1], v = qkv_out[2];                               // [b, h, s, dh]
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(dh)));  // [b, h, s, s]
    att = torch::softmax(att + causal, -1);
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({b, s, d_});  // [b, s, d]
    auto h = x + proj->forward(y);
    return h + fc2->forward(torch::gelu(fc1->forward(ln2->forward(h))));
  }
  // The same block on this rank's heads and hidden slice (StagedModel::split_tensor_parallel).
  torch::Tensor forward_tensor_parallel(const torch::Tensor& x, const torch::Tensor& causal) {
    const Count T = tp_->size(), heads = heads_ / T, dh = d_ / heads_;
    auto h1 = region(ln1->forward(x), tp_, Region::enter, sp_);  // [b, s, d]
    const auto b = h1.size(0), s = h1.size(1);
    auto qkv_out = qkv->forward(h1).view({b, s, 3, heads, dh}).permute({2, 0, 3, 1, 4});
    auto q = qkv_out[0], k = qkv_out[1], v = qkv_out[2];                               // [b, h/T, s, dh]
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(dh)));  // [b, h/T, s, s]
    att = torch::softmax(att + causal, -1);
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({b, s, d_ / T});  // [b, s, d/T]
    auto h = x + region(torch::linear(y, proj->weight), tp_, Region::exit, sp_) + proj->bias;
    auto u = torch::gelu(fc1->forward(region(ln2->forward(h), tp_, Region::enter, sp_)));  // [b, s, 4d/T]
    return h + region(torch::linear(u, fc2->weight), tp_, Region::exit, sp_) + fc2->bias;
  }
  Count d_, heads_;
  TensorParallelComm* tp_ = nullptr;
  bool sp_ = false;
  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  torch::nn::Linear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};

// Activation checkpointing of one block (the "checkpoint" hyper-parameter, profile --checkpointing
// full): the forward runs without autograd and keeps only the block's input x [b, s, d]; the
// backward runs the block's forward again with autograd on and back-propagates through it (a
// reentrant backward, as torch.utils.checkpoint does), so the recompute costs one forward of the
// block per micro-step and its activations live only while its backward runs.
struct CheckpointedBlock : torch::autograd::Function<CheckpointedBlock> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& causal, Block* block);
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out);
};

torch::Tensor CheckpointedBlock::forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                         const torch::Tensor& causal, Block* block) {
  ctx->save_for_backward({x, causal});
  ctx->saved_data["block"] = reinterpret_cast<std::int64_t>(block);
  return block->forward(x, causal);  // autograd is off inside a custom Function's forward
}

torch::autograd::variable_list CheckpointedBlock::backward(torch::autograd::AutogradContext* ctx,
                                                           torch::autograd::variable_list grad_out) {
  const auto saved = ctx->get_saved_variables();
  auto* block = reinterpret_cast<Block*>(ctx->saved_data["block"].toInt());
  torch::AutoGradMode enable(true);
  auto x = saved[0].detach().requires_grad_(true);
  auto y = block->forward(x, saved[1]);  // the recompute
  torch::autograd::backward({y}, {grad_out[0]});
  return {x.grad(), torch::Tensor(), torch::Tensor()};
}

struct GptNet : torch::nn::Module {
  GptNet(Count layers, Count d, Count heads, Count seq, Count vocab, bool checkpoint) : checkpoint_(checkpoint) {
    tok = register_module("tok", torch::nn::Embedding(vocab, d));
    pos = register_module("pos", torch::nn::Embedding(seq, d));
    for (Count i = 0; i < layers; ++i)
      blocks.push_back(register_module("block" + std::to_string(i), std::make_shared<Block>(d, heads)));
    ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    head = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(d, vocab).bias(false)));
  }
  torch::Tensor forward(const torch::Tensor& tokens) {  // [b, s] -> logits [b, s, V]
    return forward_units(0, static_cast<Count>(blocks.size()) + 2, tokens);
  }
  // Units [first, end): 0 the embedding, 1..L the blocks, L + 1 the head (StagedModel), each
  // between the hooks' before/after calls when hooks are set.
  torch::Tensor forward_units(Count first, Count end, const torch::Tensor& in) {
    const Count n = static_cast<Count>(blocks.size());
    torch::Tensor x = in;
    auto before = [&](Count u) {
      if (hooks_) hooks_->before_unit_forward(u);
    };
    auto after = [&](Count u) {
      if (hooks_) hooks_->after_unit_forward(u, x);
    };
    if (first == 0) {  // tokens [b, s] -> hidden [b, s, d]
      before(0);
      auto positions = torch::arange(in.size(1), in.options());
      x = tok->forward(in) + pos->forward(positions);
      if (sp_) x = region(x, tp_, Region::split, true);  // [b, s / T, d]
      after(0);
    }
    const Count b0 = std::max<Count>(first, 1), b1 = std::min<Count>(end, n + 1);
    if (b0 < b1) {
      const auto s = sp_ ? x.size(1) * tp_->size() : x.size(1);  // attention sees the whole sequence
      auto causal = torch::full({s, s}, -std::numeric_limits<double>::infinity(), x.options()).triu(1);
      for (Count u = b0; u < b1; ++u) {
        Block* blk = blocks[static_cast<std::size_t>(u - 1)].get();
        before(u);
        x = checkpoint_ ? CheckpointedBlock::apply(x, causal, blk) : blk->forward(x, causal);
        after(u);
      }
    }
    if (end == n + 2) {
      before(n + 1);
      if (sp_) x = region(x, tp_, Region::gather, true);  // the head sees the whole sequence
      x = head->forward(ln_f->forward(x));
      after(n + 1);
    }
    return x;
  }
  StagedModel::UnitHooks* hooks_ = nullptr;
  TensorParallelComm* tp_ = nullptr;  // the embedding/head boundary under sequence parallelism
  bool sp_ = false;
  torch::nn::Embedding tok{nullptr}, pos{nullptr};
  std::vector<std::shared_ptr<Block>> blocks;
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear head{nullptr};
  bool checkpoint_;
};

class Gpt final : public ModuleWorkload, public StagedModel {
 public:
  Gpt(WorkloadIdentity id, const WorkloadConfig& cfg) : ModuleWorkload(std::move(id), cfg) {
    const auto& h = identity_.hyper;
    const auto& n = identity_.name;
    layers_ = hyper_int(h, n, "layers");
    d_ = hyper_int(h, n, "d_model");
    heads_ = hyper_int(h, n, "heads");
    seq_ = hyper_int(h, n, "seq_len");
    vocab_ = hyper_int(h, n, "vocab");
    if (d_ % heads_ != 0)
      throw InputError(fmt::format("workload {}: d_model {} is not divisible by heads {}", n, d_, heads_));
    if (vocab_ < 8) throw InputError(fmt::format("workload {}: vocab must be at least 8, got {}", n, vocab_));
    min_len_ = std::max<Count>(1, (seq_ + 3) / 4);
    identity_.tokens_per_sample = seq_;
    identity_.mean_tokens_per_sample = 0.5 * double(min_len_ + seq_);
    const bool checkpoint = h.value(kCheckpointKey, 0) == 1;
    net_ = std::make_shared<GptNet>(layers_, d_, heads_, seq_, vocab_, checkpoint);
    adopt(net_);
  }

  torch::Tensor forward(const Batch& b) override { return net_->forward(b.input); }

  StagedModel* staged() override { return this; }
  void set_unit_hooks(UnitHooks* hooks) override { net_->hooks_ = hooks; }
  Count units() const override { return layers_ + 2; }
  Count blocks() const override { return layers_; }
  std::vector<torch::Tensor> unit_parameters(Count u) const override {
    if (u == 0) return {net_->tok->weight, net_->pos->weight};
    if (u <= layers_) return net_->blocks[static_cast<std::size_t>(u - 1)]->parameters();
    return {net_->ln_f->weight, net_->ln_f->bias, net_->head->weight};
  }
  torch::Tensor forward_units(Count first, Count end, const torch::Tensor& x) override {
    return net_->forward_units(first, end, x);
  }
  UnitInput unit_input(Count micro_batch, Count /*u*/) override {
    return {{micro_batch, net_->sp_ ? seq_ / net_->tp_->size() : seq_, d_}, dtype_};
  }

  std::string tensor_parallel_rejection(Count tp, bool sp) const override {
    if (tp < 1) return "--tp: must be at least 1";
    if (heads_ % tp != 0)
      return fmt::format("--tp {}: the model's {} heads do not split over {} ranks: choose a --tp dividing them", tp,
                         heads_, tp);
    if (sp && seq_ % tp != 0)
      return fmt::format("--sequence-parallel: the sequence of {} tokens does not split over --tp {}", seq_, tp);
    return "";
  }

  void split_tensor_parallel(TensorParallelComm& comm, bool sp) override {
    const Count T = comm.size(), t = comm.rank();
    if (auto why = tensor_parallel_rejection(T, sp); !why.empty()) throw InputError(why);
    if (T == 1) return;
    torch::NoGradGuard no_grad;
    // Keeps the rows (dim 0) or columns (dim 1) in `ranges` of parameter p, and where each kept
    // element sat in the whole parameter.
    auto keep = [&](torch::Tensor p, std::int64_t dim, const std::vector<std::pair<Count, Count>>& ranges) {
      auto where = torch::arange(p.numel(), torch::TensorOptions(torch::kInt64)).view(p.sizes());
      std::vector<torch::Tensor> parts, origin;
      for (auto [a, n] : ranges) {
        parts.push_back(p.narrow(dim, a, n));
        origin.push_back(where.narrow(dim, a, n));
      }
      auto data = torch::cat(parts, dim).contiguous();
      origins_[p.unsafeGetTensorImpl()] = torch::cat(origin, dim).reshape({-1}).contiguous();
      p.set_data(data);
    };
    const Count d = d_, q = d / T, f = 4 * d / T;
    const std::vector<std::pair<Count, Count>> qkv_rows{{t * q, q}, {d + t * q, q}, {2 * d + t * q, q}};
    for (auto& blk : net_->blocks) {
      keep(blk->qkv->weight, 0, qkv_rows);
      keep(blk->qkv->bias, 0, qkv_rows);
      keep(blk->proj->weight, 1, {{t * q, q}});
      keep(blk->fc1->weight, 0, {{t * f, f}});
      keep(blk->fc1->bias, 0, {{t * f, f}});
      keep(blk->fc2->weight, 1, {{t * f, f}});
      blk->tp_ = &comm;
      blk->sp_ = sp;
      if (sp)
        for (auto& p : {blk->ln1->weight, blk->ln1->bias, blk->ln2->weight, blk->ln2->bias, blk->proj->bias,
                        blk->fc2->bias})
          partial_.push_back(p);
    }
    net_->tp_ = &comm;
    net_->sp_ = sp;
  }

  std::vector<torch::Tensor> unit_parameter_origins(Count u) const override {
    std::vector<torch::Tensor> out;
    for (const auto& p : unit_parameters(u)) {
      auto it = origins_.find(p.unsafeGetTensorImpl());
      out.push_back(it == origins_.end() ? torch::Tensor() : it->second);
    }
    return out;
  }

  std::vector<torch::Tensor> partial_gradient_parameters() const override { return partial_; }

  torch::Tensor loss_sum(const torch::Tensor& out, const Batch& b) const override {
    return torch::nn::functional::cross_entropy(
        loss_precision(out).reshape({-1, vocab_}), b.target.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum));
  }

  Count loss_terms(std::uint64_t seed, Count first, Count count) const override {
    Count terms = 0;
    for (Count s = 0; s < count; ++s) terms += sample_length(seed, first + s);
    return terms;
  }

  Batch make_batch(std::uint64_t seed, Count first, Count count) const override {
    auto x = torch::zeros({count, seq_}, torch::kInt64);
    auto y = torch::full({count, seq_}, -100, torch::kInt64);
    auto* xp = x.data_ptr<std::int64_t>();
    auto* yp = y.data_ptr<std::int64_t>();
    const auto V = static_cast<std::uint64_t>(vocab_);
    SampleRng chain(0x6a7e, 0, 0);  // the Markov chain itself: fixed for the workload
    Count terms = 0;
    for (Count s = 0; s < count; ++s) {
      SampleRng rng(seed, static_cast<std::uint64_t>(first + s), 3);
      const Count len = sample_length(seed, first + s);
      std::uint64_t tok = 1 + rng.below(1, V - 1);  // token 0 is padding
      for (Count t = 0; t <= len; ++t) {
        if (t < len) xp[s * seq_ + t] = static_cast<std::int64_t>(tok);
        if (t > 0) yp[s * seq_ + t - 1] = static_cast<std::int64_t>(tok);
        std::uint64_t pick = rng.below(2 + static_cast<std::uint64_t>(t), 4);
        tok = 1 + chain.below(tok * 4 + pick, V - 1);
      }
      terms += len;
    }
    Batch b;
    b.input = x.to(device_);
    b.target = y.to(device_);
    b.samples = count;
    b.loss_terms = terms;
    return b;
  }

 private:
  // Real length of sample i, uniform in [min_len_, seq_] (draw 0 of the sample's stream).
  Count sample_length(std::uint64_t seed, Count sample) const {
    SampleRng rng(seed, static_cast<std::uint64_t>(sample), 3);
    return min_len_ + static_cast<Count>(rng.below(0, static_cast<std::uint64_t>(seq_ - min_len_ + 1)));
  }

  Count layers_ = 0, d_ = 0, heads_ = 0, seq_ = 0, vocab_ = 0, min_len_ = 1;
  std::shared_ptr<GptNet> net_;
  std::map<const c10::TensorImpl*, torch::Tensor> origins_;  // split parameters -> positions in the whole
  std::vector<torch::Tensor> partial_;
};

}  // namespace

std::unique_ptr<Workload> make_gpt(WorkloadIdentity id, const WorkloadConfig& cfg) {
  return std::make_unique<Gpt>(std::move(id), cfg);
}

}  // namespace gaccum::workloads
