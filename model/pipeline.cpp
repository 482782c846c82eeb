// What/why: see pipeline.hpp.
#include "model/pipeline.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::model {

const char* to_string(PipeOpKind k) {
  switch (k) {
    case PipeOpKind::forward: return "F";
    case PipeOpKind::backward: return "B";
    case PipeOpKind::weight: return "W";
  }
  return "?";
}

std::optional<std::string> schedule_rejection(Schedule s, Count p, Count v, Count m) {
  if (p < 1 || v < 1 || m < 1) return fmt::format("pp, virtual stages and microbatches must be at least 1");
  const auto& tr = traits(s);
  if (tr.chunks && v < 2)
    return fmt::format("{} runs at least 2 virtual stages per rank: set --virtual-stages 2 or more, or use 1f1b",
                       tr.name);
  if (!tr.chunks && v != 1)
    return fmt::format("{} runs one chunk per rank (virtual stages {}): use --schedule interleaved-1f1b, or "
                       "--virtual-stages 1",
                       tr.name, v);
  if (p == 1) return std::nullopt;
  if (s != Schedule::gpipe && m < p)
    return fmt::format("{} needs at least pp = {} microbatches per step (got m = {}): fewer leave stages without a "
                       "steady state (torch refuses, Megatron hangs); raise the accumulation steps to {} (a smaller "
                       "micro_batch or a larger global batch) or use gpipe",
                       tr.name, p, m, p);
  if (s == Schedule::interleaved_1f1b && m % p != 0) {
    const Count lo = m / p * p, hi = lo + p;
    return fmt::format("interleaved-1f1b runs microbatches in groups of pp = {} (Megatron-LM): m = {} is not a "
                       "multiple of {}; use m = {} or {}",
                       p, m, p, lo, hi);
  }
  return std::nullopt;
}

namespace {

PipeSchedule zb_h1_ops(Count p, Count m);

// Megatron-LM's interleaved order: the k-th forward (or backward) of a rank.
PipeOp interleaved_op(PipeOpKind kind, Count k, Count p, Count v) {
  const Count group = p * v;
  const Count in_group = k % group;
  Count chunk = in_group / p;
  if (kind == PipeOpKind::backward) chunk = v - 1 - chunk;
  return {kind, (k / group) * p + k % p, chunk};
}

// ZB-H1: 1f1b's forwards and (input-gradient) backwards in 1f1b's order; a weight gradient W(i)
// becomes available when B(i) is done and runs whenever the rank's next F or B cannot start yet,
// the rest after the last B. The order is fixed by replaying it once with F = B = W = one time
// unit and no P2P time (the zero-bubble paper's setting), so the lists are data like the others.
PipeSchedule zb_h1_ops(Count p, Count m) {
  PipeSchedule fb = schedule_ops(Schedule::one_f_one_b, p, 1, m);
  PipeSchedule out(static_cast<std::size_t>(p));
  const std::size_t n = static_cast<std::size_t>(m) * static_cast<std::size_t>(p);
  const auto at = [&](Count i, Count j) { return static_cast<std::size_t>(i) * static_cast<std::size_t>(p) + static_cast<std::size_t>(j); };
  std::vector<long long> fF(n, -1), fB(n, -1);  // finish step of each F and B
  std::vector<std::size_t> pos(static_cast<std::size_t>(p), 0);
  std::vector<Count> pending_w(static_cast<std::size_t>(p), 0), next_w(static_cast<std::size_t>(p), 0);
  std::size_t left = 0;
  for (const auto& ops : fb) left += ops.size();
  std::vector<std::pair<std::size_t, PipeOp>> started;  // this step's F and B, recorded after it
  for (long long step = 0; left > 0; ++step) {
    if (step > 16 * static_cast<long long>(n) + 64) throw std::logic_error("zb-h1: the unit replay did not finish");
    // Decide every rank's operation for this step from finish times before it.
    started.clear();
    for (Count r = 0; r < p; ++r) {
      const auto ru = static_cast<std::size_t>(r);
      bool ran = false;
      if (pos[ru] < fb[ru].size()) {
        const PipeOp& op = fb[ru][pos[ru]];
        bool ready = true;
        if (op.kind == PipeOpKind::forward) {
          ready = r == 0 || (fF[at(op.microbatch, r - 1)] >= 0 && fF[at(op.microbatch, r - 1)] <= step);
        } else {
          const long long own = fF[at(op.microbatch, r)];
          ready = own >= 0 && own <= step;
          if (r + 1 < p) {
            const long long nx = fB[at(op.microbatch, r + 1)];
            ready = ready && nx >= 0 && nx <= step;
          }
        }
        if (ready) {
          started.push_back({ru, op});
          out[ru].push_back(op);
          ++pos[ru];
          --left;
          ran = true;
        }
      }
      if (!ran && pending_w[ru] > 0) {
        out[ru].push_back({PipeOpKind::weight, next_w[ru]++, 0});
        --pending_w[ru];
      }
    }
    for (const auto& [ru, op] : started) {
      const Count r = static_cast<Count>(ru);
      if (op.kind == PipeOpKind::forward) fF[at(op.microbatch, r)] = step + 1;
      else {
        fB[at(op.microbatch, r)] = step + 1;
        ++pending_w[ru];
      }
    }
  }
  for (Count r = 0; r < p; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    while (next_w[ru] < m) out[ru].push_back({PipeOpKind::weight, next_w[ru]++, 0});
  }
  return out;
}

}  // namespace

PipeSchedule schedule_ops(Schedule s, Count p, Count v, Count m) {
  if (auto why = schedule_rejection(s, p, v, m)) throw InputError("--schedule: " + *why);
  PipeSchedule out(static_cast<std::size_t>(p));
  for (Count r = 0; r < p; ++r) {
    auto& ops = out[static_cast<std::size_t>(r)];
    const auto F = [&](Count i, Count c = 0) { ops.push_back({PipeOpKind::forward, i, c}); };
    const auto B = [&](Count i, Count c = 0) { ops.push_back({PipeOpKind::backward, i, c}); };
    switch (s) {
      case Schedule::gpipe:
        for (Count i = 0; i < m; ++i) F(i);
        for (Count i = 0; i < m; ++i) B(i);
        break;
      case Schedule::one_f_one_b: {
        const Count w = std::min(p - r - 1, m);
        for (Count i = 0; i < w; ++i) F(i);
        for (Count i = 0; i < m - w; ++i) {
          F(w + i);
          B(i);
        }
        for (Count i = m - w; i < m; ++i) B(i);
        break;
      }
      case Schedule::zb_h1:
        break;  // placed below, all ranks at once
      case Schedule::interleaved_1f1b: {
        const Count total = m * v;
        const Count w = std::min(2 * (p - r - 1) + (v - 1) * p, total);
        for (Count k = 0; k < w; ++k) ops.push_back(interleaved_op(PipeOpKind::forward, k, p, v));
        for (Count k = 0; k < total - w; ++k) {
          ops.push_back(interleaved_op(PipeOpKind::forward, w + k, p, v));
          ops.push_back(interleaved_op(PipeOpKind::backward, k, p, v));
        }
        for (Count k = total - w; k < total; ++k) ops.push_back(interleaved_op(PipeOpKind::backward, k, p, v));
        break;
      }
    }
  }
  if (s == Schedule::zb_h1) out = zb_h1_ops(p, m);
  return out;
}

double PipelineRun::bubble_fraction() const {
  if (!(makespan > 0) || idle.empty()) return 0;
  return std::accumulate(idle.begin(), idle.end(), 0.0) / double(idle.size()) / makespan;
}

PipelineRun simulate(const PipeSchedule& ops, Count v, const StageTimes& t) {
  const Count p = static_cast<Count>(ops.size());
  const Count S = p * v;  // model stages
  const auto stage_count = static_cast<std::size_t>(S);
  if (t.forward.size() != stage_count || t.backward.size() != stage_count || t.weight.size() != stage_count ||
      t.activations.size() != stage_count)
    throw std::logic_error(fmt::format("pipeline simulate: {} model stages but {} forward times", S, t.forward.size()));
  Count m = 0;
  for (const auto& rank_ops : ops)
    for (const auto& op : rank_ops) m = std::max(m, op.microbatch + 1);
  // Finish time of each operation, [microbatch * S + stage]; < 0: not run yet.
  const std::size_t n = static_cast<std::size_t>(m) * stage_count;
  std::vector<Seconds> fF(n, -1), fB(n, -1), fW(n, -1);
  const auto at = [&](Count i, Count j) { return static_cast<std::size_t>(i) * stage_count + static_cast<std::size_t>(j); };

  PipelineRun run;
  run.busy.assign(static_cast<std::size_t>(p), 0);
  run.idle.assign(static_cast<std::size_t>(p), 0);
  run.peak_in_flight.assign(static_cast<std::size_t>(p), 0);
  run.peak_activations.assign(static_cast<std::size_t>(p), 0);
  std::vector<std::size_t> pos(static_cast<std::size_t>(p), 0);
  std::vector<Seconds> free_at(static_cast<std::size_t>(p), 0);
  std::vector<Count> in_flight(static_cast<std::size_t>(p), 0);
  std::vector<double> held(static_cast<std::size_t>(p), 0);

  bool progress = true;
  std::size_t remaining = 0;
  for (const auto& rank_ops : ops) remaining += rank_ops.size();
  while (remaining > 0 && progress) {
    progress = false;
    for (Count r = 0; r < p; ++r) {
      const auto ru = static_cast<std::size_t>(r);
      while (pos[ru] < ops[ru].size()) {
        const PipeOp& op = ops[ru][pos[ru]];
        const Count j = op.chunk * p + r;
        const auto ju = static_cast<std::size_t>(j);
        Seconds ready = 0;
        bool blocked = false;
        switch (op.kind) {
          case PipeOpKind::forward:
            if (j > 0) {
              const Seconds prev = fF[at(op.microbatch, j - 1)];
              if (prev < 0) blocked = true;
              else ready = prev + t.p2p;
            }
            break;
          case PipeOpKind::backward: {
            const Seconds own = fF[at(op.microbatch, j)];
            if (own < 0) { blocked = true; break; }
            ready = own;
            if (j + 1 < S) {
              const Seconds next = fB[at(op.microbatch, j + 1)];
              if (next < 0) blocked = true;
              else ready = std::max(ready, next + t.p2p);
            }
            break;
          }
          case PipeOpKind::weight: {
            const Seconds own = fB[at(op.microbatch, j)];
            if (own < 0) blocked = true;
            else ready = own;
            break;
          }
        }
        if (blocked) break;
        const Seconds start = std::max(free_at[ru], ready);
        const Seconds dur = op.kind == PipeOpKind::forward    ? t.forward[ju]
                            : op.kind == PipeOpKind::backward ? t.backward[ju]
                                                              : t.weight[ju];
        const Seconds finish = start + dur;
        free_at[ru] = finish;
        run.busy[ru] += dur;
        if (op.kind == PipeOpKind::forward) {
          fF[at(op.microbatch, j)] = finish;
          ++in_flight[ru];
          held[ru] += t.activations[ju];
          run.peak_in_flight[ru] = std::max(run.peak_in_flight[ru], in_flight[ru]);
          run.peak_activations[ru] = std::max(run.peak_activations[ru], held[ru]);
        } else if (op.kind == PipeOpKind::backward) {
          fB[at(op.microbatch, j)] = finish;
          --in_flight[ru];
          held[ru] -= t.activations[ju];
        } else {
          fW[at(op.microbatch, j)] = finish;
        }
        ++pos[ru];
        --remaining;
        progress = true;
      }
    }
  }
  if (remaining > 0) {
    for (Count r = 0; r < p; ++r) {
      const auto ru = static_cast<std::size_t>(r);
      if (pos[ru] < ops[ru].size()) {
        const PipeOp& op = ops[ru][pos[ru]];
        throw InputError(fmt::format("pipeline schedule deadlocks: rank {} waits at {}({}, chunk {}) whose input never "
                                     "arrives",
                                     r, to_string(op.kind), op.microbatch, op.chunk));
      }
    }
  }
  run.makespan = *std::max_element(free_at.begin(), free_at.end());
  for (std::size_t r = 0; r < run.idle.size(); ++r) run.idle[r] = run.makespan - run.busy[r];
  return run;
}

}  // namespace gaccum::model
