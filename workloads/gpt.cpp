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

#include <fmt/format.h>

#include "core/error.hpp"
#include "workloads/module_workload.hpp"
#include "workloads/synthetic_rng.hpp"

namespace gaccum::workloads {
namespace {

struct Block : torch::nn::Module {
  Block(Count d, Count heads) : d_(d), heads_(heads) {
    ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    qkv = register_module("qkv", torch::nn::Linear(d, 3 * d));
    proj = register_module("proj", torch::nn::Linear(d, d));
    ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    fc1 = register_module("fc1", torch::nn::Linear(d, 4 * d));
    fc2 = register_module("fc2", torch::nn::Linear(4 * d, d));
  }
  // x: [b, s, d]; causal: [s, s] additive mask (0 or -inf).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& causal) {
    const auto b = x.size(0), s = x.size(1), dh = d_ / heads_;
    auto qkv_out = qkv->forward(ln1->forward(x)).view({b, s, 3, heads_, dh}).permute({2, 0, 3, 1, 4});
    auto q = qkv_out[0], k = qkv_out[1], v = qkv_out[2];                               // [b, h, s, dh]
    auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(dh)));  // [b, h, s, s]
    att = torch::softmax(att + causal, -1);
    auto y = torch::matmul(att, v).transpose(1, 2).reshape({b, s, d_});  // [b, s, d]
    auto h = x + proj->forward(y);
    return h + fc2->forward(torch::gelu(fc1->forward(ln2->forward(h))));
  }
  Count d_, heads_;
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
  // Units [first, end): 0 the embedding, 1..L the blocks, L + 1 the head (StagedModel).
  torch::Tensor forward_units(Count first, Count end, const torch::Tensor& in) {
    const Count n = static_cast<Count>(blocks.size());
    torch::Tensor x = in;
    if (first == 0) {  // tokens [b, s] -> hidden [b, s, d]
      auto positions = torch::arange(in.size(1), in.options());
      x = tok->forward(in) + pos->forward(positions);
    }
    const Count b0 = std::max<Count>(first, 1), b1 = std::min<Count>(end, n + 1);
    if (b0 < b1) {
      const auto s = x.size(1);
      auto causal = torch::full({s, s}, -std::numeric_limits<double>::infinity(), x.options()).triu(1);
      for (Count u = b0; u < b1; ++u) {
        Block* blk = blocks[static_cast<std::size_t>(u - 1)].get();
        x = checkpoint_ ? CheckpointedBlock::apply(x, causal, blk) : blk->forward(x, causal);
      }
    }
    if (end == n + 2) x = head->forward(ln_f->forward(x));
    return x;
  }
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
  std::vector<std::int64_t> hidden_shape(Count micro_batch) const override { return {micro_batch, seq_, d_}; }

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
};

}  // namespace

std::unique_ptr<Workload> make_gpt(WorkloadIdentity id, const WorkloadConfig& cfg) {
  return std::make_unique<Gpt>(std::move(id), cfg);
}

}  // namespace gaccum::workloads
