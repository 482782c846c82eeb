// What/why: see terminal_printer.hpp.
#include "reports/terminal_printer.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "reports/row.hpp"
#include "reports/summary.hpp"

namespace gaccum::reports {
namespace {

// Wraps text at `width` columns with `indent` spaces on continuation lines.
std::string wrap(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out, line;
  bool bare = true;  // nothing but the continuation indent on the line yet
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto sp = text.find(' ', pos);
    std::string word = text.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
    pos = sp == std::string::npos ? text.size() : sp + 1;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = std::string(indent, ' ') + word;
    } else {
      line += (bare ? "" : " ") + word;
    }
    bare = line.empty();
  }
  return out + line;
}

}  // namespace

std::string print_terminal(const tuner::TuneResult& r, const ReportContext& ctx) {
  std::string o = wrap(headline(r), 100, 2) + "\n\n";
  const bool plans = plans_searched(r);
  // Sequence models also in the units LLM users read: tokens/s per GPU, and MFU where the GPU
  // compute model prices the step.
  const auto& best_pred = r.best().prediction;
  const bool tokens = best_pred.tokens_per_s > 0;
  const bool mfu = best_pred.compute.gpu_model;
  // B only for a range of global batches (an exact target is in the headline).
  const bool range = !r.request.exact();
  o += fmt::format("{:>4} {:>6} {:>5} {:>3}{} {:<10} {}{:>10} {:>11}{}{} {:>11} {:>10} {:>8}  {}\n", "rank", "b", "k",
                   "p", range ? fmt::format(" {:>6}", "B") : "", "strategy", plans ? fmt::format("{:<22} ", "plan") : "", "step", "samples/s",
                   tokens ? fmt::format(" {:>10}", "tok/s/GPU") : "", mfu ? fmt::format(" {:>5}", "MFU") : "",
                   "peak mem", "headroom", "comm", "binding");
  for (const auto& e : r.picks) {
    const auto& c = r.search.candidates[e.candidate];
    const auto& cfg = c.config();
    const auto& pr = c.prediction;
    o += fmt::format("{:>4} {:>6} {:>5} {:>3}{} {:<10} {}{:>10} {:>11.1f}{}{} {:>11} {:>10} {:>7.1f}%  {}\n", e.rank,
                     cfg.micro_batch, cfg.accum_steps, cfg.world_size,
                     range ? fmt::format(" {:>6}", cfg.global_batch()) : "", to_string(cfg.strategy),
                     plans ? fmt::format("{:<22} ", plan_cell(cfg)) : "", format_seconds(c.prediction.time.step_time),
                     c.prediction.throughput,
                     tokens ? fmt::format(" {:>10.0f}", pr.tokens_per_s / double(std::max<Count>(1, cfg.world_size))) : "",
                     mfu ? fmt::format(" {:>4.0f}%", 100 * pr.compute.mfu) : "", format_bytes(c.prediction.memory.peak),
                     format_bytes(Bytes(std::max<std::int64_t>(0, e.headroom))), e.comm_exposed_share * 100, e.binding);
  }
  o += wrap("  strategy: overlap = reduce once per step, overlapped with the last backward (DDP no_sync, DeepSpeed "
            "overlap_comm); fused = reduce once after the last backward, nothing overlapped (Horovod "
            "backward_passes_per_step); every-step = reduce on every micro-step. comm = exposed communication's "
            "share of the step. binding = what stops the next larger micro_batch: memory, measured-range (not "
            "profiled), divisibility (no divisor of the per-rank batch fits), whole-batch (accum_steps 1), "
            "objective (it fits but scores lower).",
            100, 4) +
       "\n";
  o += "\n" + wrap("Recommendation: " + recommendation(r), 100, 2) + "\n\n";
  if (r.trust.applies) o += wrap(r.trust.text, 100, 2) + "\n\n";
  const auto& e = r.picks.front();
  o += "Why #1:\n";
  for (const auto* line : {&e.binding_text, &e.compute_text, &e.recompute_text, &e.breakdown_text, &e.comm_text, &e.links_text, &e.headroom_text, &e.runner_up_text,
                           &e.world_size_text, &e.every_step.text})
    if (!line->empty()) o += wrap("  - " + *line, 100, 4) + "\n";
  if (plans) {
    o += wrap("  - " + e.plan_text, 100, 4) + "\n";
    o += "Other plans (best at the same global batch, or why none fits):\n";
    for (const auto& a : r.plan_alternatives) o += wrap("  - " + a.text, 100, 4) + "\n";
  }
  o += "World size (best throughput at each):\n";
  std::size_t skipped = 0;
  for (const auto& pt : r.pareto) {
    if (!pt.best) {
      ++skipped;
      continue;
    }
    o += wrap(fmt::format("  - world_size {:>3}: {:>10.1f} samples/s  {}", pt.world_size, pt.throughput, pt.verdict),
              100, 6) +
         "\n";
  }
  if (skipped > 0)
    o += fmt::format("  ({} other world size{} cannot meet the global batch within the limits)\n", skipped,
                     skipped == 1 ? "" : "s");
  o += wrap("Learning rate: " + r.lr.text, 100, 2) + "\n";
  o += wrap("Critical batch: " + r.critical.text, 100, 2) + "\n";
  if (!ctx.deepspeed_config.empty()) o += wrap(deepspeed_config_line(r, ctx), 100, 2) + "\n";
  if (!r.notes.empty()) {
    o += "Notes:\n";
    for (const auto& n : r.notes) o += wrap("  - " + n, 100, 4) + "\n";
  }
  return o;
}

}  // namespace gaccum::reports
