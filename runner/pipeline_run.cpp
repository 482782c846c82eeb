// What/why: see pipeline_run.hpp. The rank reads top to bottom: join, agree, cut the model, then
// per window: zero the gradients, run the schedule's operations, average over the stage's
// replicas, step; rank 0 assembles the record and the pipeline's checks.
#include "runner/pipeline_run.hpp"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "comm/grad_sync.hpp"
#include "comm/sharded_sync.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "engine/exact_math.hpp"
#include "engine/memory_tracker.hpp"
#include "engine/rank_error.hpp"
#include "engine/watchdog.hpp"
#include "model/parallel_plan.hpp"
#include "runner/faults.hpp"
#include "runner/gradients.hpp"
#include "runner/record_checks.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::runner {

using nlohmann::json;

Bytes replay_stage_memory(const std::vector<model::PipeOp>& ops, const std::vector<ChunkMemory>& chunks,
                          Bytes resident, Bytes optimizer_peak) {
  Bytes level = resident, peak = resident + optimizer_peak;
  for (const auto& op : ops) {
    const ChunkMemory& c = chunks.at(static_cast<std::size_t>(op.chunk));
    if (op.kind == model::PipeOpKind::forward) {
      peak = std::max(peak, level + c.forward_peak);
      level += c.held;
    } else {
      peak = std::max(peak, level + c.backward_peak);
      level = level + c.sent_gradient - c.held;  // held was added by the chunk's F
    }
  }
  return peak;
}

double closed_form_bubble(Count p, Count v, Count m) {
  return static_cast<double>(p - 1) / static_cast<double>(v * m + p - 1);
}

std::string op_name(const model::PipeOp& op) {
  return fmt::format("{}{}.{}", model::to_string(op.kind), op.microbatch, op.chunk);
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::int64_t ns(Clock::time_point t) { return t.time_since_epoch().count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Where this rank sits: stage (pipeline rank), replica and tensor-parallel rank (rank = stage dp
// tp + replica tp + t), and its chunks' model stages.
struct Place {
  Count pp = 1, v = 1, dp = 1, tp = 1, stage = 0, replica = 0, t = 0;
  Count chunks() const { return pp * v; }                       // model stages
  Count model_stage(Count chunk) const { return chunk * pp + stage; }
  int rank_at(Count st, Count rep, Count tr) const { return static_cast<int>((st * dp + rep) * tp + tr); }
  // This rank's peer (same replica and tp rank) on the stage holding model stage j.
  int rank_of(Count model_stage_j) const { return rank_at(model_stage_j % pp, replica, t); }
  // Tags pair a send with its recv: activations into model stage j, gradients out of it.
  int activation_tag(Count j, Count i, Count m) const { return static_cast<int>(j * m + i); }
  int gradient_tag(Count j, Count i, Count m) const { return static_cast<int>((chunks() + j) * m + i); }
};

// One microbatch chunk from its F to its B.
struct Held {
  workloads::Batch batch;
  torch::Tensor input, output;  // input: tokens, or the received hidden state (a leaf needing grad)
  std::unique_ptr<comm::PendingCollective> sent;  // the output's send (not the last chunk)
};

// What one window measured on this rank.
struct WindowFigures {
  std::vector<model::PipeOp> order;
  std::vector<double> forward, backward;           // per op kind: [chunk] sums (seconds)
  std::vector<Count> forward_n, backward_n;
  Seconds busy = 0;
  std::int64_t first_start_ns = 0, last_end_ns = 0;
  Count in_flight = 0;
  // Tensor-parallel collectives of the window: allreduce f/b, all-gather f/b, reduce-scatter f/b
  // issued by blocks, then all-gathers f/b at the sequence-parallel boundaries.
  std::array<Count, 8> tp_counts{};
  double loss_sum = 0;
  Count local_terms = 0, local_samples = 0;
};

class PipelineRank {
 public:
  PipelineRank(const RunSpec& spec, const Place& at, workloads::Workload& wl, comm::Communicator* world,
               engine::DeviceMemory& memory, engine::Watchdog& watchdog, const Faults& faults)
      : spec_(spec), at_(at), wl_(wl), staged_(*wl.staged()), world_(world), memory_(memory), watchdog_(watchdog),
        faults_(faults) {
    for (Count c = 0; c < at_.v; ++c) {
      const auto [first, end] = staged_.chunk_units(at_.model_stage(c), at_.chunks());
      units_.push_back({first, end});
      for (Count u = first; u < end; ++u) {
        for (auto& p : staged_.unit_parameters(u)) params_.push_back(p);
        for (auto& o : staged_.unit_parameter_origins(u)) origins_.push_back(o);
        if (u >= 1 && u <= staged_.blocks()) ++blocks_;
      }
    }
    // What each chunk receives, and what crosses each stage boundary (the p2p measurement's
    // message), known before any parameter of another stage is released.
    for (Count c = 0; c < at_.v; ++c)
      inputs_.push_back(units_[static_cast<std::size_t>(c)].first > 0
                            ? staged_.unit_input(spec_.micro_batch, units_[static_cast<std::size_t>(c)].first)
                            : workloads::StagedModel::UnitInput{});
    for (Count s = 1; s < at_.pp; ++s)
      boundary_.push_back(staged_.unit_input(spec_.micro_batch, staged_.chunk_units(s, at_.chunks()).first));
    ops_ = model::schedule_ops(spec_.schedule, at_.pp, at_.v, spec_.accum_steps)[static_cast<std::size_t>(at_.stage)];
    if (faults_.swap_forwards && at_.stage == 0 && ops_.size() >= 2 && ops_[0].kind == model::PipeOpKind::forward &&
        ops_[1].kind == model::PipeOpKind::forward)
      std::swap(ops_[0], ops_[1]);
    parts_.assign(static_cast<std::size_t>(at_.v), ChunkMemory{});
    measured_part_.assign(static_cast<std::size_t>(at_.v), std::pair<bool, bool>{false, false});
  }

  const std::vector<torch::Tensor>& params() const { return params_; }
  // Per parameter: its elements' positions in the unsplit parameter (undefined: held whole).
  const std::vector<torch::Tensor>& origins() const { return origins_; }
  Count blocks() const { return blocks_; }  // transformer blocks in this rank's chunks
  bool holds_unit(Count u) const {
    return std::any_of(units_.begin(), units_.end(), [&](const auto& r) { return u >= r.first && u < r.second; });
  }
  const std::vector<model::PipeOp>& ops() const { return ops_; }
  const std::vector<ChunkMemory>& parts() const { return parts_; }

  // The window's operations. `measure_parts`: each chunk's first F and B measured (ChunkMemory).
  // `before_last`: filled with the gradients as held before the rank's last backward.
  WindowFigures run_ops(Count w, double global_terms, bool measure_parts, std::vector<torch::Tensor>* before_last) {
    WindowFigures f;
    f.forward.assign(static_cast<std::size_t>(at_.v), 0.0);
    f.backward = f.forward;
    f.forward_n.assign(static_cast<std::size_t>(at_.v), 0);
    f.backward_n = f.forward_n;
    std::map<std::pair<Count, Count>, Held> held;  // (microbatch, chunk)
    std::vector<std::pair<torch::Tensor, std::unique_ptr<comm::PendingCollective>>> gradient_sends;
    const Count m = spec_.accum_steps;
    std::size_t last_backward = 0;
    for (std::size_t k = 0; k < ops_.size(); ++k)
      if (ops_[k].kind == model::PipeOpKind::backward) last_backward = k;
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      const model::PipeOp& op = ops_[k];
      const Count c = op.chunk, i = op.microbatch, j = at_.model_stage(c);
      const auto ci = static_cast<std::size_t>(c);
      engine::RankPosition::set(w, i);
      watchdog_.beat();
      if (op.kind == model::PipeOpKind::forward) {
        if (c == 0) faults_.maybe_trigger(w, i);
        Held h;
        const auto [first, count] = spec_.micro_range(w, at_.replica, i);
        const Bytes before = memory_.snapshot().allocated;
        if (measure_parts) memory_.reset_peak();
        if (j > 0) {
          const auto& in = inputs_[ci];
          h.input = torch::empty(in.shape, torch::TensorOptions(in.dtype).device(wl_.device()));
          receive(h.input, at_.rank_of(j - 1), at_.activation_tag(j, i, m),
                  fmt::format("microbatch {}'s hidden state into model stage {}", i, j));
          h.input.requires_grad_(true);
        }
        const auto start = Clock::now();  // busy from here: the batch is built by the stage that needs it
        if (j == 0 || j == at_.chunks() - 1) h.batch = wl_.make_batch(spec_.seed, first, count);
        if (j == 0) h.input = h.batch.input;
        if (f.first_start_ns == 0) f.first_start_ns = ns(start);
        torch::Tensor out = staged_.forward_units(units_[ci].first, units_[ci].second, h.input);
        if (j == at_.chunks() - 1) {
          auto loss = wl_.loss_sum(out, h.batch);
          const double sum = loss.item<double>();
          f.loss_sum += sum;
          f.local_terms += h.batch.loss_terms;
          f.local_samples += h.batch.samples;
          const double scale = faults_.normalise_by_k
                                   ? 1.0 / (static_cast<double>(m) * static_cast<double>(std::max<Count>(1, h.batch.loss_terms)))
                                   : static_cast<double>(at_.dp) / global_terms;
          h.output = loss * scale;
        } else {
          h.output = out;
        }
        out = torch::Tensor();  // the last chunk's logits live on only where autograd saved them
        const auto end = Clock::now();
        f.forward[ci] += seconds(end - start);
        f.forward_n[ci] += 1;
        f.busy += seconds(end - start);
        f.last_end_ns = ns(end);
        if (j < at_.chunks() - 1 && !faults_.drops_send(w, i))
          h.sent = world_->send_async(h.output, at_.rank_of(j + 1), at_.activation_tag(j + 1, i, m));
        if (measure_parts && !measured_part_[ci].first) {
          const auto snap = memory_.snapshot();
          parts_[ci].forward_peak = snap.peak_allocated - before;
          parts_[ci].held = snap.allocated - before;
          measured_part_[ci].first = true;
        }
        held.emplace(std::make_pair(i, c), std::move(h));
        f.in_flight = std::max<Count>(f.in_flight, static_cast<Count>(held.size()));
      } else {
        auto it = held.find({i, c});
        if (it == held.end())
          throw Error(fmt::format("pipeline stage {}: backward of microbatch {} chunk {} before its forward", at_.stage,
                                  i, c));
        if (k == last_backward && before_last) {
          before_last->clear();
          for (const auto& p : params_)
            before_last->push_back(p.grad().defined() ? p.grad().detach().clone() : torch::Tensor());
        }
        const Bytes before = memory_.snapshot().allocated;
        const Bytes held_bytes = measure_parts ? parts_[ci].held : 0;
        if (measure_parts) memory_.reset_peak();
        Held& h = it->second;
        if (h.sent) {
          wait_for(*h.sent, fmt::format("the send of microbatch {}'s hidden state to model stage {}", i, j + 1),
                   at_.rank_of(j + 1));
          h.sent.reset();
        }
        torch::Tensor grad;
        if (j < at_.chunks() - 1) {
          grad = torch::empty_like(h.output);
          receive(grad, at_.rank_of(j + 1), at_.gradient_tag(j + 1, i, m),
                  fmt::format("microbatch {}'s output gradient from model stage {}", i, j + 1));
        }
        const auto start = Clock::now();
        if (j == at_.chunks() - 1)
          torch::autograd::backward({h.output});
        else
          torch::autograd::backward({h.output}, {grad});
        grad = torch::Tensor();
        const auto end = Clock::now();
        f.backward[ci] += seconds(end - start);
        f.backward_n[ci] += 1;
        f.busy += seconds(end - start);
        f.last_end_ns = ns(end);
        if (j > 0) {
          torch::Tensor g = h.input.grad();
          auto work = world_->send_async(g, at_.rank_of(j - 1), at_.gradient_tag(j, i, m));
          gradient_sends.emplace_back(g, std::move(work));
        }
        held.erase(it);
        if (measure_parts && !measured_part_[ci].second) {
          const auto snap = memory_.snapshot();
          parts_[ci].backward_peak = snap.peak_allocated - before;
          parts_[ci].sent_gradient = snap.allocated + held_bytes - before;
          measured_part_[ci].second = true;
        }
      }
      f.order.push_back(op);
    }
    for (auto& [t, work] : gradient_sends) wait_for(*work, "an input gradient's send", -1);
    gradient_sends.clear();
    return f;
  }

  // Seconds of one point-to-point message of a hidden state between neighbouring stages: a
  // ping-pong of `rounds` round trips per pair (s, s + 1), measured by the lower stage (the first
  // quarter untimed); 0 on the last stage. Every rank takes part in its pairs in stage order.
  Seconds measure_p2p(int rounds) {
    const int tag = static_cast<int>(2 * at_.chunks() * spec_.accum_steps) + 7;
    Seconds mine = 0;
    for (Count lower = 0; lower + 1 < at_.pp; ++lower) {
      if (at_.stage != lower && at_.stage != lower + 1) continue;
      const auto& in = boundary_[static_cast<std::size_t>(lower)];
      auto t = torch::zeros(in.shape, torch::TensorOptions(in.dtype).device(wl_.device()));
      if (at_.stage == lower) {
        const int peer = at_.rank_at(lower + 1, at_.replica, at_.t);
        Clock::time_point start;
        for (int r = 0; r < rounds; ++r) {
          if (r == rounds / 4) start = Clock::now();
          world_->send_async(t, peer, tag)->wait();
          world_->recv_async(t, peer, tag)->wait();
        }
        mine = seconds(Clock::now() - start) / (2.0 * (rounds - rounds / 4));
      } else if (at_.stage == lower + 1) {
        const int peer = at_.rank_at(lower, at_.replica, at_.t);
        for (int r = 0; r < rounds; ++r) {
          world_->recv_async(t, peer, tag)->wait();
          world_->send_async(t, peer, tag)->wait();
        }
      }
    }
    return mine;
  }

 private:
  void receive(torch::Tensor& t, int src, int tag, const std::string& what) {
    auto work = world_->recv_async(t, src, tag);
    wait_for(*work, what, src);
  }
  void wait_for(comm::PendingCollective& work, const std::string& what, int peer) {
    try {
      work.wait();
    } catch (const CollectiveFailure& e) {
      throw CollectiveFailure(fmt::format("pipeline stage {} (rank {}) waiting for {}{}: {}", at_.stage,
                                          world_->rank(), what,
                                          peer >= 0 ? fmt::format(" (peer rank {}, stage {})", peer, peer / (at_.dp * at_.tp))
                                                    : "",
                                          e.what()));
    }
  }

  const RunSpec& spec_;
  Place at_;
  workloads::Workload& wl_;
  workloads::StagedModel& staged_;
  comm::Communicator* world_;
  engine::DeviceMemory& memory_;
  engine::Watchdog& watchdog_;
  const Faults& faults_;
  std::vector<std::pair<Count, Count>> units_;  // per chunk: units [first, end)
  std::vector<workloads::StagedModel::UnitInput> inputs_;    // per chunk: what enters its first unit
  std::vector<workloads::StagedModel::UnitInput> boundary_;  // [s]: what crosses from stage s to s + 1
  std::vector<torch::Tensor> params_, origins_;
  Count blocks_ = 0;
  std::vector<model::PipeOp> ops_;
  std::vector<ChunkMemory> parts_;
  std::vector<std::pair<bool, bool>> measured_part_;
};

// Every parameter's offset in the full model's flat order.
std::vector<Count> offsets_of(const std::vector<torch::Tensor>& all) {
  std::vector<Count> off;
  Count at = 0;
  for (const auto& p : all) {
    off.push_back(at);
    at += p.numel();
  }
  off.push_back(at);
  return off;
}

// The full model's gradient (float64, flat) from the stages' replica-0 ranks: each contributes its
// parameters' elements at their positions in the unsplit model (a tensor-parallel shard at its
// origins; a parameter every tp rank holds whole from tp rank 0 only); one allreduce over the world
// (a collective: every rank calls it).
std::vector<double> gather_full(comm::Communicator& world, const std::vector<torch::Tensor>& all,
                                const std::vector<Count>& offsets, const std::vector<torch::Tensor>& mine,
                                const std::vector<torch::Tensor>& origins, const std::vector<torch::Tensor>& values,
                                const Place& at) {
  auto flat = torch::zeros({offsets.back()}, torch::kFloat64);
  if (at.replica == 0)
    for (std::size_t k = 0; k < mine.size(); ++k) {
      if (!values[k].defined() || (!origins[k].defined() && at.t != 0)) continue;
      const auto it = std::find_if(all.begin(), all.end(), [&](const torch::Tensor& p) { return p.is_same(mine[k]); });
      const auto idx = static_cast<std::size_t>(it - all.begin());
      const auto v = values[k].detach().reshape({-1}).to(torch::kFloat64);
      if (origins[k].defined())
        flat.index_add_(0, origins[k] + offsets[idx], v);
      else
        flat.narrow(0, offsets[idx], v.numel()).copy_(v);
    }
  world.allreduce_sum(flat);
  const double* d = flat.data_ptr<double>();
  return std::vector<double>(d, d + flat.numel());
}

// The tensor-parallel group's collectives for the split blocks (workloads::TensorParallelComm),
// on the c10d seam, counted per window by op, pass and site. Every message is staged through
// buffers this object keeps (grown to the largest message, in window 0), so the messages add no
// allocation of their own to a window's measured peak after window 0.
class TensorParallelGroup final : public workloads::TensorParallelComm {
 public:
  enum class Op { allreduce, all_gather, reduce_scatter };
  explicit TensorParallelGroup(comm::Communicator& group) : group_(group) {}
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.world_size(); }
  void allreduce_sum(torch::Tensor& t, bool backward, bool layer) override {
    auto msg = stage_in(t);
    group_.allreduce_sum(msg);
    t.view({-1}).copy_(msg);
    counts_[index(Op::allreduce, backward, layer)] += 1;
  }
  void all_gather(const torch::Tensor& in, torch::Tensor& out, bool backward, bool layer) override {
    auto msg = stage_in(in);
    auto got = buffer(recv_, out.numel(), in).narrow(0, 0, out.numel());
    group_.all_gather_into(msg, got, &buffer(scratch_, out.numel(), in));
    out.view({-1}).copy_(got);
    counts_[index(Op::all_gather, backward, layer)] += 1;
  }
  void reduce_scatter_sum(const torch::Tensor& in, torch::Tensor& out, bool backward, bool layer) override {
    auto msg = stage_in(in);
    auto got = buffer(recv_, out.numel(), in).narrow(0, 0, out.numel());
    group_.reduce_scatter_sum_into(msg, got, &buffer(scratch_, in.numel(), in), false);
    out.view({-1}).copy_(got);
    counts_[index(Op::reduce_scatter, backward, layer)] += 1;
  }
  // Counts since the last reset, by op, pass (backward) and site (layer).
  Count count(Op op, bool backward, bool layer) const { return counts_[index(op, backward, layer)]; }
  void reset() { counts_.fill(0); }

 private:
  static std::size_t index(Op op, bool backward, bool layer) {
    return static_cast<std::size_t>(op) * 4 + (backward ? 2 : 0) + (layer ? 1 : 0);
  }
  static torch::Tensor& buffer(torch::Tensor& b, std::int64_t numel, const torch::Tensor& like) {
    if (!b.defined() || b.numel() < numel) b = torch::empty({numel}, like.options());
    return b;
  }
  torch::Tensor stage_in(const torch::Tensor& t) {
    auto msg = buffer(send_, t.numel(), t).narrow(0, 0, t.numel());
    msg.copy_(t.reshape({-1}));
    return msg;
  }
  comm::Communicator& group_;
  torch::Tensor send_, recv_, scratch_;
  std::array<Count, 12> counts_{};
};

// This rank's pipeline figures (gathered on rank 0 beside its RankRecord).
json stage_json(const Place& at, int rank, const std::vector<model::PipeOp>& order0, Count in_flight, Bytes peak,
                Bytes predicted, Bytes resident, Bytes optimizer_peak, const std::vector<ChunkMemory>& parts, const std::vector<double>& fwd,
                const std::vector<double>& bwd, const std::vector<WindowFigures>& timed) {
  std::vector<std::string> order;
  for (const auto& op : order0) order.push_back(op_name(op));
  std::vector<Bytes> act;
  json chunk_parts = json::array();
  for (const auto& p : parts) {
    act.push_back(p.held);
    chunk_parts.push_back(json{{"forward_peak", p.forward_peak},
                               {"held", p.held},
                               {"backward_peak", p.backward_peak},
                               {"sent_gradient", p.sent_gradient}});
  }
  json windows = json::array();
  for (const auto& f : timed) windows.push_back({f.first_start_ns, f.last_end_ns, f.busy});
  return json{{"rank", rank},        {"stage", at.stage},         {"replica", at.replica}, {"tp_rank", at.t},
              {"order", order},
              {"in_flight", in_flight}, {"peak", peak},            {"predicted", predicted}, {"activations", act},
              {"forward", fwd},      {"backward", bwd},           {"windows", windows},
              {"resident", resident}, {"optimizer_peak", optimizer_peak}, {"chunk_parts", chunk_parts}};
}

// Rank 0: the pipeline's checks and measure from every rank's stage_json.
void pipeline_checks(const RunSpec& spec, const std::vector<json>& stages, bool cpu,
                     RunRecord& rec) {
  const Count p = spec.pp, v = spec.virtual_stages, m = spec.accum_steps, dp = spec.data_parallel();
  const auto sched = model::schedule_ops(spec.schedule, p, v, m);
  // Per model stage j: the mean forward/backward of replica 0's rank of stage j mod p (the mean,
  // not the median: two ranks computing at once on a small CPU slow each other down, and the mean
  // carries that into the simulation as the busy time does).
  model::StageTimes times;
  times.forward.assign(static_cast<std::size_t>(p * v), 0.0);
  times.backward = times.forward;
  times.weight = times.forward;
  times.activations.assign(static_cast<std::size_t>(p * v), 1.0);
  for (const auto& s : stages) {
    if (s.at("replica").get<Count>() != 0 || s.at("tp_rank").get<Count>() != 0) continue;
    const Count st = s.at("stage").get<Count>();
    const auto fwd = s.at("forward").get<std::vector<double>>(), bwd = s.at("backward").get<std::vector<double>>();
    for (Count c = 0; c < v; ++c) {
      times.forward[static_cast<std::size_t>(c * p + st)] = fwd[static_cast<std::size_t>(c)];
      times.backward[static_cast<std::size_t>(c * p + st)] = bwd[static_cast<std::size_t>(c)];
    }
  }
  std::vector<double> p2p;
  for (const auto& s : stages)
    if (s.at("stage").get<Count>() + 1 < p) p2p.push_back(s.at("p2p").get<double>());
  times.p2p = median(p2p);
  const model::PipelineRun sim = model::simulate(sched, v, times);

  PipelineMeasure pm;
  bool order_ok = true, flight_ok = true, memory_ok = true;
  json order_bad = json::array(), flight = json::array(), memory = json::array();
  const std::size_t windows = stages.front().at("windows").size();
  std::vector<double> makespans, bubbles;
  std::vector<std::vector<double>> idle_per_rank(stages.size());
  for (std::size_t w = 0; w < windows; ++w) {
    std::int64_t start = 0, end = 0;
    for (const auto& s : stages) {
      const auto row = s.at("windows").at(w);
      const auto a = row.at(0).get<std::int64_t>(), b = row.at(1).get<std::int64_t>();
      start = start == 0 ? a : std::min(start, a);
      end = std::max(end, b);
    }
    const double span = 1e-9 * static_cast<double>(end - start);
    double idle = 0;
    for (std::size_t r = 0; r < stages.size(); ++r) {
      const double busy = stages[r].at("windows").at(w).at(2).get<double>();
      idle_per_rank[r].push_back(span - busy);
      idle += span - busy;
    }
    makespans.push_back(span);
    bubbles.push_back(span > 0 ? idle / static_cast<double>(stages.size()) / span : 0.0);
  }
  for (std::size_t r = 0; r < stages.size(); ++r) {
    const json& s = stages[r];
    StageRecord sr;
    sr.rank = s.at("rank").get<int>();
    sr.stage = s.at("stage").get<Count>();
    sr.replica = s.at("replica").get<Count>();
    sr.order = s.at("order").get<std::vector<std::string>>();
    sr.in_flight = s.at("in_flight").get<Count>();
    sr.in_flight_model = sim.peak_in_flight[static_cast<std::size_t>(sr.stage)];
    sr.peak_memory = s.at("peak").get<Bytes>();
    sr.predicted_peak = s.at("predicted").get<Bytes>();
    sr.chunk_activations = s.at("activations").get<std::vector<Bytes>>();
    sr.forward = s.at("forward").get<std::vector<double>>();
    sr.backward = s.at("backward").get<std::vector<double>>();
    sr.busy = 0;
    for (const auto& row : s.at("windows")) sr.busy += row.at(2).get<double>();
    sr.busy /= std::max<double>(1.0, static_cast<double>(windows));
    sr.idle = median(idle_per_rank[r]);
    sr.predicted_idle = sim.idle[static_cast<std::size_t>(sr.stage)];
    std::vector<std::string> expected;
    for (const auto& op : sched[static_cast<std::size_t>(sr.stage)]) expected.push_back(op_name(op));
    if (sr.order != expected) {
      order_ok = false;
      std::size_t at = 0;
      while (at < expected.size() && at < sr.order.size() && expected[at] == sr.order[at]) ++at;
      order_bad.push_back({{"rank", sr.rank},
                           {"stage", sr.stage},
                           {"position", at},
                           {"ran", at < sr.order.size() ? sr.order[at] : "-"},
                           {"expected", at < expected.size() ? expected[at] : "-"}});
    }
    if (sr.in_flight != sr.in_flight_model) flight_ok = false;
    flight.push_back({{"rank", sr.rank}, {"measured", sr.in_flight}, {"model", sr.in_flight_model}});
    if (sr.peak_memory != sr.predicted_peak) memory_ok = false;
    memory.push_back({{"rank", sr.rank}, {"stage", sr.stage}, {"measured", sr.peak_memory},
                      {"predicted", sr.predicted_peak}, {"resident", s.at("resident")},
                      {"optimizer_peak", s.at("optimizer_peak")}, {"chunks", s.at("chunk_parts")}});
    pm.ranks.push_back(std::move(sr));
  }
  pm.makespan = median(makespans);
  pm.bubble_fraction = median(bubbles);
  pm.predicted_makespan = sim.makespan;
  pm.predicted_bubble_fraction = sim.bubble_fraction();
  pm.closed_form_bubble_fraction = closed_form_bubble(p, v, m);
  pm.p2p = times.p2p;
  if (rec.measured)
    pm.predicted_step_time = sim.makespan + rec.measured->comm_exposed + rec.measured->optimizer;

  const std::string sched_name(to_string(spec.schedule));
  rec.checks.push_back(check_record(
      RunCheck::schedule_order, order_ok ? Status::pass : Status::fail,
      order_ok ? fmt::format("every rank ran its {} operations of {} (p {}, v {}, m {}) in the schedule's order "
                             "(model/pipeline.hpp schedule_ops)",
                             sched[0].size(), sched_name, p, v, m)
               : fmt::format("{} rank(s) ran another order than {} defines, first at {}", order_bad.size(), sched_name,
                             order_bad.front().dump()),
      json{{"mismatches", order_bad}}));
  rec.checks.push_back(check_record(
      RunCheck::microbatches_in_flight, flight_ok ? Status::pass : Status::fail,
      fmt::format("microbatch chunks held at once per rank, measured vs the schedule simulation: {}",
                  [&] {
                    std::string t;
                    for (const auto& x : flight)
                      t += fmt::format("{}rank {} {}/{}", t.empty() ? "" : ", ", x.at("rank").get<int>(),
                                       x.at("measured").get<Count>(), x.at("model").get<Count>());
                    return t;
                  }()),
      json{{"per_rank", flight}}));
  const bool exact = cpu;
  Bytes worst = 0;
  for (const auto& x : memory) {
    const Bytes a = x.at("measured").get<Bytes>(), b = x.at("predicted").get<Bytes>();
    worst = std::max<Bytes>(worst, a > b ? a - b : b - a);
  }
  rec.checks.push_back(check_record(
      RunCheck::stage_memory, !exact ? Status::skip : memory_ok ? Status::pass : Status::fail,
      !exact ? "n/a on a GPU: the caching allocator rounds blocks, so the replay is not byte-exact there (the figures "
               "are in numbers)"
      : memory_ok
          ? fmt::format("every rank's peak over the timed windows equals the replay of its operations with one "
                        "microbatch's measured bytes per chunk, byte-exact ({} ranks)",
                        memory.size())
          : fmt::format("a rank's peak differs from the replay of its operations by up to {} bytes: {}", worst,
                        memory.dump()),
      json{{"per_rank", memory}}));
  // Tensor-parallel collectives per window against model::tp_layer_collectives (no checkpointing):
  // per block and microbatch, 2 forward + 2 backward allreduces, or with sequence parallelism
  // that many all-gathers and reduce-scatters each; at the boundaries (sequence parallel) one
  // all-gather per microbatch after the embedding (backward) and one before the head (forward).
  if (spec.tp > 1) {
    const auto per = model::tp_layer_collectives(Checkpointing::none);
    bool ok = true;
    json rows = json::array();
    for (const auto& s : stages) {
      const auto c = s.at("tp_counts").get<std::array<Count, 8>>();
      const Count layers = s.at("blocks").get<Count>();
      const Count fw = m * layers * per.forward, bw = m * layers * per.backward;
      const bool sp = spec.sequence_parallel;
      const std::array<Count, 8> want{sp ? 0 : fw, sp ? 0 : bw, sp ? fw : 0, sp ? bw : 0, sp ? fw : 0, sp ? bw : 0,
                                      sp && s.at("head").get<bool>() ? m : 0,
                                      sp && s.at("embedding").get<bool>() ? m : 0};
      ok = ok && c == want;
      rows.push_back({{"rank", s.at("rank")}, {"measured", c}, {"expected", want}});
    }
    const auto& r0 = rows.front();
    rec.checks.push_back(check_record(
        RunCheck::tensor_parallel_collectives, ok ? Status::pass : Status::fail,
        fmt::format("{} per window and rank (allreduce, all-gather, reduce-scatter; forward/backward) as "
                    "model::tp_layer_collectives prices them: {} per block and microbatch forward, {} backward{}; "
                    "rank 0 measured {} (expected {})",
                    ok ? "the tensor-parallel collectives match" : "the tensor-parallel collectives differ",
                    per.forward, per.backward,
                    spec.sequence_parallel ? " (each an all-gather and a reduce-scatter under sequence parallelism)" : "",
                    r0.at("measured").dump(), r0.at("expected").dump()),
        json{{"order", {"allreduce_forward", "allreduce_backward", "all_gather_forward", "all_gather_backward",
                        "reduce_scatter_forward", "reduce_scatter_backward", "boundary_all_gather_forward",
                        "boundary_all_gather_backward"}},
             {"per_rank", rows}}));
  } else {
    rec.checks.push_back(check_record(RunCheck::tensor_parallel_collectives, Status::skip,
                                      "no tensor parallelism in this run (--tp 1)"));
  }
  rec.pipeline = std::move(pm);
  if (p > 1)
    rec.model_notes.push_back(fmt::format(
        "pipeline: {} x {} chunk(s) over {} stage rank(s){}, {} data-parallel replica(s); measured bubble {:.1f}% vs "
        "{:.1f}% simulated from the measured operation times and a {} point-to-point message (ping-pong; {:.1f}% "
        "closed form); every stage's gradients are reduced once per step, after its last backward (one fused "
        "allreduce over its replicas)",
        p, v, p, spec.tp > 1 ? fmt::format(" of tp {}{}", spec.tp, spec.sequence_parallel ? " with sp" : "") : "", dp,
        100 * rec.pipeline->bubble_fraction, 100 * rec.pipeline->predicted_bubble_fraction, format_seconds(times.p2p),
        100 * rec.pipeline->closed_form_bubble_fraction));
  else
    rec.model_notes.push_back(fmt::format(
        "tensor parallel: {} rank(s){} x {} data-parallel replica(s), m {} microbatches accumulated in order; the "
        "blocks' qkv and fc1 column-parallel, proj and fc2 row-parallel{}; gradients reduced once per step over the "
        "replicas (one fused allreduce)",
        spec.tp, spec.sequence_parallel ? " with sequence parallelism" : "", dp, m,
        spec.sequence_parallel ? ", norms and row biases summed over the tp group after the backward" : ""));
  rec.ok = std::none_of(rec.checks.begin(), rec.checks.end(), [](const CheckRecord& c) { return c.status == Status::fail; });
}

}  // namespace

int run_pipeline_rank(const RunSpec& spec_in, const comm::RankContext& ctx, const RankRunOptions& opts) {
  RankStart start = start_rank(spec_in, ctx);
  const int rank = ctx.rank;
  const Faults& faults = start.faults;
  engine::Watchdog& watchdog = *start.watchdog;

  // --- the rank: device, memory tracker, the job's communicator, the workload --------------------
  RunSpec spec = spec_in;
  spec.seed = spec_in.seed + (faults.perturb_seed ? 1 : 0);
  if (faults.other_schedule) spec.schedule = spec.schedule == Schedule::gpipe ? Schedule::one_f_one_b : Schedule::gpipe;
  workloads::WorkloadConfig wcfg = spec.workload;
  if (spec.backend == Backend::nccl) wcfg.device = fmt::format("cuda:{}", ctx.local_rank);
  const torch::Device device(wcfg.device);
  auto memory = engine::memory_for(device);
  auto world = join(spec, ctx, wcfg.device, opts);
  if (!world) throw InputError("--pp: a pipeline run needs at least 2 ranks");
  watchdog.beat();
  auto workload = workloads::make_workload(wcfg);
  if (!workload->staged())
    throw InputError(fmt::format("--pp: workload {} is not a sequence of blocks the runner can cut into stages: {}",
                                 workload->identity().name, workload->staging_rejection()));
  const auto all_params = workload->parameters();  // the whole model's, before any split
  const auto offsets = offsets_of(all_params);
  const WorkloadIdentity& id = workload->identity();

  Place at;
  at.pp = spec.pp;
  at.v = spec.virtual_stages;
  at.dp = spec.data_parallel();
  at.tp = spec.tp;
  at.stage = rank / (at.dp * at.tp);
  at.replica = (rank / at.tp) % at.dp;
  at.t = rank % at.tp;

  auto finish = [&](const RunRecord* record, bool ok) { return share_verdict(rank, world.get(), opts, record, ok); };

  // --- rank agreement --------------------------------------------------------------------------
  AgreedStart agreed = agree_on_identity(spec, id, hash_tensors(all_params), world.get());
  if (agreed.stopped) return finish(&*agreed.stopped, false);
  std::vector<CheckRecord> checks = std::move(agreed.checks);
  RunFacts facts = std::move(agreed.facts);
  if (id.param_count > 50'000'000)
    throw InputError(fmt::format("--workload {}: {} parameters; a pipeline run's gradient check gathers the full "
                                 "model's gradient in float64 on every rank: use a model under 50M parameters",
                                 id.name, id.param_count));

  // --- this rank: its tensor-parallel split, its chunks, its groups, synchroniser and optimizer -----
  // Rank 0 keeps an unsplit copy of the model (the same initialisation) for step 0's reference.
  std::unique_ptr<workloads::Workload> reference = rank == 0 ? workloads::make_workload(wcfg) : nullptr;
  std::unique_ptr<comm::Communicator> tp_comm, dp_group;
  std::unique_ptr<TensorParallelGroup> tp_group;
  if (at.tp > 1) {
    std::vector<int> members;
    for (Count i = 0; i < at.tp; ++i) members.push_back(at.rank_at(at.stage, at.replica, i));
    tp_comm = world->split(members, fmt::format("tp-{}-{}", at.stage, at.replica));
    tp_group = std::make_unique<TensorParallelGroup>(*tp_comm);
    workload->staged()->split_tensor_parallel(*tp_group, spec.sequence_parallel);
  }
  PipelineRank stage(spec, at, *workload, world.get(), *memory, watchdog, faults);
  const auto& params = stage.params();
  if (at.dp > 1) {
    std::vector<int> members;
    for (Count r = 0; r < at.dp; ++r) members.push_back(at.rank_at(at.stage, r, at.t));
    dp_group = world->split(members, fmt::format("dp-{}-{}", at.stage, at.t));
  }
  {  // parameters of other stages are released
    torch::NoGradGuard no_grad;
    for (auto& p : all_params)
      if (std::none_of(params.begin(), params.end(), [&](const torch::Tensor& q) { return q.is_same(p); }))
        p.set_data(torch::empty({0}, p.options()));
  }
  // Sequence parallelism: the whole parameters whose gradient each tp rank holds in part, summed
  // over the group after the backward through one flat buffer (allocated once).
  std::vector<torch::Tensor> partial;
  for (const auto& p : workload->staged()->partial_gradient_parameters())
    if (std::any_of(params.begin(), params.end(), [&](const torch::Tensor& q) { return q.is_same(p); }))
      partial.push_back(p);
  torch::Tensor partial_flat;
  if (!partial.empty()) {
    std::int64_t n = 0;
    for (const auto& p : partial) n += p.numel();
    partial_flat = torch::empty({n}, params.front().options());
  }
  auto sum_partial_gradients = [&] {
    if (partial.empty() || faults.skip_partial_sum) return;
    torch::NoGradGuard no_grad;
    std::int64_t at_el = 0;
    for (auto& p : partial) {
      partial_flat.narrow(0, at_el, p.numel()).copy_(p.grad().reshape({-1}));
      at_el += p.numel();
    }
    tp_group->allreduce_sum(partial_flat, true, false);
    at_el = 0;
    for (auto& p : partial) {
      p.mutable_grad().copy_(partial_flat.narrow(0, at_el, p.numel()).view(p.sizes()));
      at_el += p.numel();
    }
  };
  // The stage's replicas: DDP (one reduction after the schedule), or zero1 (the optimizer state
  // sharded over them: each unit reduce-scattered after the schedule, the stepped shards
  // all-gathered), the plans a pipeline stage runs with.
  std::unique_ptr<comm::WindowSync> sync_owner;
  if (spec.sharding.sharding == Sharding::zero1)
    sync_owner = std::make_unique<comm::ShardedSync>(dp_group.get(), params, spec.sharding, Strategy::fused,
                                                    spec.accum_steps);
  else
    sync_owner = std::make_unique<comm::GradSync>(dp_group.get(), params, Strategy::fused);
  comm::WindowSync& sync = *sync_owner;
  auto optimizer = workloads::make_optimizer(sync.optimizer_parameters(), spec.optimizer, spec.lr);
  sync.zero_grad();
  const Seconds p2p = stage.measure_p2p(40);

  // --- the windows -------------------------------------------------------------------------------
  RankSteps steps;
  std::vector<WindowFigures> timed;
  std::vector<model::PipeOp> order0;
  Count in_flight = 0;
  std::vector<std::vector<double>> fwd_ops(static_cast<std::size_t>(at.v)), bwd_ops(fwd_ops.size());
  std::optional<WindowChecks> step0;
  std::string grads_hash0;
  Bytes resident = 0, optimizer_peak = 0;
  const Count k = spec.accum_steps;
  for (Count w = 0; w < spec.full_windows(); ++w) {
    const bool timed_window = w >= spec.warmup;
    if (w == spec.warmup) {
      memory->reset_peak();
      resident = memory->snapshot().allocated;
    }
    const auto t0 = Clock::now();
    Seconds instrumentation = 0;
    if (!(faults.skip_zero_grad && w > 0)) sync.zero_grad();
    steps.nonzero_at_start.push_back(nonzero_elements(sync.held_gradients()));
    // The window's real tokens over every replica: counted here (no batch built, no collective).
    const Count window_first = w * spec.global_batch();
    const double global_terms = static_cast<double>(workload->loss_terms(spec.seed, window_first, spec.global_batch()));
    std::vector<torch::Tensor> before_last;
    if (tp_group) tp_group->reset();
    WindowFigures f = stage.run_ops(w, global_terms, w == 1, w == 0 ? &before_last : nullptr);
    if (tp_group) {
      f.tp_counts = {tp_group->count(TensorParallelGroup::Op::allreduce, false, true),
                     tp_group->count(TensorParallelGroup::Op::allreduce, true, true),
                     tp_group->count(TensorParallelGroup::Op::all_gather, false, true),
                     tp_group->count(TensorParallelGroup::Op::all_gather, true, true),
                     tp_group->count(TensorParallelGroup::Op::reduce_scatter, false, true),
                     tp_group->count(TensorParallelGroup::Op::reduce_scatter, true, true),
                     tp_group->count(TensorParallelGroup::Op::all_gather, false, false),
                     tp_group->count(TensorParallelGroup::Op::all_gather, true, false)};
    }
    sum_partial_gradients();
    const auto t_ops = Clock::now();
    sync.begin_step(k);
    for (Count mi = 0; mi < k; ++mi) {
      sync.before_forward(mi);
      sync.before_backward(mi);
      sync.after_backward(mi);
    }
    const auto t_sync = Clock::now();
    if (w == 0) {  // the gradient checks (timed apart)
      const auto c0 = Clock::now();
      const auto reduced = sync.full_gradients();  // zero1: all-gathered from the shards
      const auto got = gather_full(*world, all_params, offsets, params, stage.origins(), reduced, at);
      const auto before = gather_full(*world, all_params, offsets, params, stage.origins(), before_last, at);
      grads_hash0 = hash_tensors(reduced);
      if (rank == 0) {
        step0 = check_window(*reference, reference->parameters(), spec.data_parallel_view(), spec.seed, 0, got, before,
                             id.tokens_per_sample > 0, [&] { watchdog.beat(); });
        reference.reset();
      }
      instrumentation += seconds(Clock::now() - c0);
      order0 = f.order;
    }
    if (w == 1) {
      memory->reset_peak();
    }
    const Bytes level_before_opt = memory->snapshot().allocated;
    const auto t_opt = Clock::now();
    optimizer->step();
    sync.after_optimizer_step();  // zero1: the stepped shards all-gathered
    const auto t_end = Clock::now();
    if (w == 1) optimizer_peak = memory->snapshot().peak_allocated - level_before_opt;
    if (faults.perturb_param && w == 0) {
      torch::NoGradGuard no_grad;
      sync.optimizer_parameters().front().add_(1e-3);
    }
    in_flight = std::max(in_flight, f.in_flight);
    const auto& st = sync.stats();
    steps.step_time.push_back(seconds(t_end - t0) - instrumentation);
    steps.compute.push_back(f.busy);
    steps.arrival.push_back(seconds(t_ops - t0));
    steps.exposed.push_back(seconds(t_sync - t_ops));
    steps.comm_total.push_back(st.comm_total);
    steps.optimizer.push_back(seconds(t_end - t_opt));
    steps.instrumentation.push_back(instrumentation);
    steps.collectives.push_back(st.collectives);
    steps.launched_in_backward.push_back(st.launched_in_backward);
    steps.collectives_per_micro.push_back(st.collectives_per_micro);
    steps.local_terms.push_back(f.local_terms);
    steps.local_samples.push_back(f.local_samples);
    steps.global_terms.push_back(static_cast<Count>(global_terms));
    steps.loss_sum.push_back(f.loss_sum);
    steps.g_small_sq.push_back(-1);
    steps.g_big_sq.push_back(-1);
    if (timed_window) {
      for (Count c = 0; c < at.v; ++c) {
        const auto ci = static_cast<std::size_t>(c);
        fwd_ops[ci].push_back(f.forward[ci] / static_cast<double>(std::max<Count>(1, f.forward_n[ci])));
        bwd_ops[ci].push_back(f.backward[ci] / static_cast<double>(std::max<Count>(1, f.backward_n[ci])));
      }
      timed.push_back(std::move(f));
    }
    watchdog.beat();
  }
  const Bytes peak = memory->snapshot().peak_allocated;
  const Bytes predicted = replay_stage_memory(stage.ops(), stage.parts(), resident, optimizer_peak);
  std::vector<double> fwd, bwd;
  auto mean = [](const std::vector<double>& x) {
    double t = 0;
    for (double y : x) t += y;
    return x.empty() ? 0.0 : t / static_cast<double>(x.size());
  };
  for (std::size_t c = 0; c < fwd_ops.size(); ++c) {
    fwd.push_back(mean(fwd_ops[c]));
    bwd.push_back(mean(bwd_ops[c]));
  }

  // --- every rank's record to rank 0 ---------------------------------------------------------------
  RankRecord mine = rank_identity(ctx, world.get());
  mine.peak_memory = peak;
  mine.memory_at_reset = resident;
  mine.comm_buffer_bytes = sync.buffer_bytes();
  mine.grads_hash_step0 = grads_hash0;
  mine.params_hash_final = hash_tensors(params);
  mine.steps = std::move(steps);
  json pipe =
      stage_json(at, rank, order0, in_flight, peak, predicted, resident, optimizer_peak, stage.parts(), fwd, bwd, timed);
  pipe["p2p"] = p2p;
  pipe["tp_counts"] = timed.empty() ? std::array<Count, 8>{} : timed.back().tp_counts;
  pipe["blocks"] = stage.blocks();
  pipe["embedding"] = stage.holds_unit(0);
  pipe["head"] = stage.holds_unit(workload->staged()->units() - 1);
  const auto texts = world->allgather_strings(json{{"record", to_json(mine)}, {"pipeline", pipe}}.dump());
  if (rank != 0) return finish(nullptr, true);

  // --- rank 0: the record --------------------------------------------------------------------------
  std::vector<RankRecord> ranks;
  std::vector<json> stages;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    const json j = json::parse(texts[r]);
    ranks.push_back(rank_record_from_json(j.at("record"), fmt::format("rank {} record", r)));
    stages.push_back(j.at("pipeline"));
  }
  facts.token_workload = id.tokens_per_sample > 0;
  facts.dependence = workload->batch_dependence();
  facts.expected_per_micro = sync.expected_per_micro(k);
  facts.expected_collectives = sync.expected_collectives(k);
  facts.buckets = sync.units();
  facts.launcher = ctx.launcher;
  facts.backend = std::string(to_string(world->backend()));
  facts.device = device.str();
  facts.cpu = device.is_cpu();
  facts.launch = opts.launch;
  add_record_checks(checks, facts, ranks, *step0, std::nullopt);
  RunRecord record = assemble_run(facts, std::move(checks), ranks);
  pipeline_checks(spec, stages, device.is_cpu(), record);
  return finish(&record, record.ok);
}

}  // namespace gaccum::runner
