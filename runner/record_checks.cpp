// What/why: see record_checks.hpp. The checks over the records; run_assembly.cpp the figures.
#include "runner/record_checks.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace gaccum::runner {
namespace {

using nlohmann::json;

std::string fmt_g(double v) {
  return fmt::format("{:.3g}", v);
}
Status verdict(bool ok) {
  return ok ? Status::pass : Status::fail;
}

// The reference gradient is exactly zero (the loss does not depend on the parameters on this
// input): no comparison with it can tell a correct accumulation from a broken one.
bool zero_reference(const GradComparison& c) {
  return c.ref_l2 == 0 && c.within();
}

void gradient_checks(std::vector<CheckRecord>& out, const RunFacts& f, const WindowChecks& c0) {
  const RunSpec& spec = f.spec;
  const std::string reference =
      c0.micro_reference
          ? fmt::format(
                "the same {} micro-batches ({} samples) computed one after another in one process (the model "
                "has batch statistics or dropout, so they are not slices of one big batch)",
                spec.accum_steps * spec.data_parallel(), c0.samples)
          : fmt::format("one pass over the same {} samples", c0.samples);
  const std::string summary =
      fmt::format("step 0: the accumulated, {}, averaged gradient vs {}: "
                  "max |diff| {}, rel L2 {}, {} of {} elements outside rtol {} atol {}",
                  spec.model_parallel()
                      ? fmt::format("{} stage(s) x tp {}{}, {} over each stage's replicas and gathered from the "
                                    "stages and tensor-parallel shards",
                                    spec.pp, spec.tp, spec.pp > 1 ? fmt::format(" ({})", to_string(spec.schedule)) : "",
                                    spec.sharding.sharding == Sharding::none
                                        ? std::string("allreduced")
                                        : fmt::format("reduce-scattered ({}, all-gathered for the check)",
                                                      to_string(spec.sharding)))
                  : spec.sharding.sharding == Sharding::none
                      ? std::string("allreduced")
                      : fmt::format("reduce-scattered ({}, all-gathered for the check)", to_string(spec.sharding)),
                  reference, fmt_g(c0.equivalence.max_abs_diff), fmt_g(c0.equivalence.rel_l2),
                  c0.equivalence.violations, c0.equivalence.elements, spec.rtol, spec.atol) +
      (c0.equivalence.cancelling > 0
           ? fmt::format(" ({} element(s) whose micro-batch terms cancel judged against the terms' summed "
                         "magnitude, what a float32 sum of them is exact to)",
                         c0.equivalence.cancelling)
           : "");
  const json numbers{{"window", 0},
                     {"samples", c0.samples},
                     {"loss_terms", c0.terms},
                     {"reference", c0.micro_reference ? "micro_batches" : "one_batch"},
                     {"comparison", c0.equivalence.to_json()}};
  if (zero_reference(c0.equivalence))
    out.push_back(check_record(RunCheck::gradient_equivalence, Status::skip,
                               "cannot discriminate on this input: the reference gradient is exactly 0 (the loss does "
                               "not depend on the parameters here), so any accumulation would match it; " +
                                   summary,
                               numbers));
  else
    out.push_back(check_record(RunCheck::gradient_equivalence, verdict(c0.equivalence.within()), summary, numbers));

  const std::string held = spec.model_parallel() ? "every stage's gradient (gathered from the stages)"
                           : spec.sharding.sharding != Sharding::none &&
                                     !holds_whole_gradient(spec.strategy, spec.accum_steps)
                               ? "the reduced gradient (all-gathered shards)"
                               : "rank 0's gradient";
  const json control{{"comparison", c0.negative.to_json()}, {"last_micro_step_samples", c0.last_micro_samples}};
  if (!c0.negative.within())
    out.push_back(check_record(RunCheck::negative_control, Status::pass,
                               fmt::format("{} before its last micro-step differs from the reference as it must: "
                                           "{} of {} elements outside tolerance, rel L2 {}",
                                           held, c0.negative.violations, c0.negative.elements,
                                           fmt_g(c0.negative.rel_l2)),
                               control));
  else if (zero_reference(c0.negative) || c0.last_micro_samples == 0)
    out.push_back(check_record(
        RunCheck::negative_control, Status::skip,
        fmt::format("cannot discriminate on this input: {}, so {} before the last micro-step already equals it",
                    c0.last_micro_samples == 0 ? "the window's last micro-step has no samples on any rank"
                                               : "the reference gradient is exactly 0",
                    held),
        control));
  else
    out.push_back(check_record(RunCheck::negative_control, Status::fail,
                               fmt::format("{} before its last micro-step ({} samples across ranks) already equals the "
                                           "reference (rel L2 {}): the last micro-step's gradient is missing from the "
                                           "check, or the comparison cannot see it",
                                           held, c0.last_micro_samples, fmt_g(c0.negative.rel_l2)),
                               control));
}

CheckRecord zero_grad_check(const RunFacts& f, const std::vector<RankRecord>& ranks) {
  Count worst = 0;
  json per_rank = json::array();
  for (const auto& r : ranks) {
    Count mx = 0;
    for (auto v : r.steps.nonzero_at_start) mx = std::max(mx, v);
    per_rank.push_back(mx);
    worst = std::max(worst, mx);
  }
  const Count windows = f.spec.total_windows();
  return check_record(RunCheck::zero_grad_at_window_start, verdict(worst == 0),
          worst == 0
              ? fmt::format("every gradient element was exactly 0 at the start of all {} windows on all {} ranks",
                            windows, f.spec.world_size)
              : fmt::format("gradients were not zero at a window start: up to {} non-zero elements (per rank: {})",
                            worst, per_rank.dump()),
          json{{"max_nonzero_per_rank", per_rank}, {"windows", windows}});
}

// Tensor/pipeline runs: the replicas of one (stage, tp rank) hold the same parameters (rank =
// stage dp tp + replica tp + t); the groups differ.
CheckRecord parameters_check(const RunFacts& f, const std::vector<RankRecord>& ranks) {
  const Count dp = f.spec.data_parallel(), tp = f.spec.tp;
  const Count groups = f.spec.pp * tp;
  std::vector<std::set<std::string>> params(static_cast<std::size_t>(groups)), grads(params.size());
  json hashes = json::array();
  for (const auto& r : ranks) {
    const auto stage = f.spec.model_parallel() ? static_cast<std::size_t>(r.rank / (dp * tp) * tp + r.rank % tp)
                                               : 0;  // data parallel: one group
    params[stage].insert(r.params_hash_final);
    grads[stage].insert(r.grads_hash_step0);
    hashes.push_back(
        {{"rank", r.rank}, {"params_hash_final", r.params_hash_final}, {"grads_hash_step0", r.grads_hash_step0}});
  }
  std::size_t distinct_params = 0, distinct_grads = 0;
  bool same = true;
  for (std::size_t st = 0; st < params.size(); ++st) {
    same = same && params[st].size() == 1 && grads[st].size() == 1;
    distinct_params += params[st].size();
    distinct_grads += grads[st].size();
  }
  std::string detail;
  if (same && !f.spec.model_parallel())
    detail = fmt::format("parameters bitwise identical on all {} ranks after {} steps (FNV-1a {}), synced gradients "
                         "identical at step 0",
                         f.spec.world_size, f.spec.total_windows(), *params.front().begin());
  else if (same)
    detail = fmt::format("each of the {} (stage, tensor-parallel rank) groups' parameters bitwise identical on its {} "
                         "data-parallel replica(s) after {} steps, synced gradients identical at step 0",
                         groups, dp, f.spec.total_windows());
  else
    detail = fmt::format("ranks diverged: {} distinct parameter hashes, {} distinct step-0 gradient hashes over {} "
                         "group(s) (expected one per group)",
                         distinct_params, distinct_grads, groups);
  return check_record(RunCheck::parameters_identical, verdict(same), detail, json{{"per_rank", hashes}});
}

// token_normalisation: PASS when the run's gradient matches the window's real-token
// normalisation and the common mistake (each micro-batch's mean loss divided by accum_steps)
// would not; FAIL when the run's gradient misses it where the two differ; n/a when the two
// normalisations coincide on this input (every micro-batch the same number of real tokens), so
// no run could fail it: gradient_equivalence then covers the normalisation.
CheckRecord token_check(const RunFacts& f, const WindowChecks& c0) {
  if (!c0.by_k) {
    if (f.token_workload)
      return check_record(RunCheck::token_normalisation, Status::skip,
                          "one micro-batch per window (accum_steps 1, world_size 1): normalising by the window's "
                          "tokens and by the micro-batch's tokens coincide");
    return check_record(RunCheck::token_normalisation, Status::skip,
                        "the loss terms are samples (a fixed number per micro-batch): normalising by the window's "
                        "samples and dividing by accum_steps coincide");
  }
  const auto& alt = *c0.by_k;
  Count lo = 0, hi = 0;
  for (const auto& rank : c0.micro_terms)
    for (Count t : rank) {
      lo = lo == 0 ? t : std::min(lo, t);
      hi = std::max(hi, t);
    }
  json numbers{{"window_tokens", c0.terms},
               {"micro_batch_tokens", c0.micro_terms},
               {"runner", c0.equivalence.to_json()},
               {"divide_by_accum_steps", alt.to_json()}};
  if (c0.got_vs_by_k) numbers["runner_vs_divide_by_accum_steps"] = c0.got_vs_by_k->to_json();
  if (alt.within()) {
    const std::string why =
        lo == hi ? fmt::format("every micro-batch has the same {} real tokens, so normalising by the window's {} "
                               "tokens and dividing each micro-batch's mean by accum_steps give the same gradient",
                               lo, c0.terms)
                 : fmt::format("the micro-batches' real tokens ({} to {}) differ too little for the two "
                               "normalisations to differ beyond rtol {} atol {}",
                               lo, hi, f.spec.rtol, f.spec.atol);
    return check_record(RunCheck::token_normalisation, Status::skip,
                        fmt::format("cannot discriminate on this input: {} (rel L2 {} between them); "
                                    "gradient_equivalence covers the normalisation here, and inputs with padding "
                                    "(e.g. --input mask:SEQ) make the two differ",
                                    why, fmt_g(alt.rel_l2)),
                        numbers);
  }
  if (c0.equivalence.within())
    return check_record(
        RunCheck::token_normalisation, Status::pass,
        fmt::format("loss normalised by the window's {} real tokens across ranks (gradient rel L2 error {}); "
                    "dividing each micro-batch's mean by accum_steps would differ: rel L2 {}, {} of {} elements "
                    "outside tolerance",
                    c0.terms, fmt_g(c0.equivalence.rel_l2), fmt_g(alt.rel_l2), alt.violations, alt.elements),
        numbers);
  const bool made_the_mistake = c0.got_vs_by_k && c0.got_vs_by_k->within();
  return check_record(
      RunCheck::token_normalisation, Status::fail,
      made_the_mistake
          ? fmt::format("the accumulated gradient is the one dividing each micro-batch's mean loss by accum_steps "
                        "(rel L2 {} from it, {} from the window's {} real tokens): normalise each micro-batch's loss "
                        "sum by the window's real tokens across ranks",
                        fmt_g(c0.got_vs_by_k->rel_l2), fmt_g(c0.equivalence.rel_l2), c0.terms)
          : fmt::format("the accumulated gradient is not normalised by the window's {} real tokens (rel L2 {}) nor "
                        "by dividing each micro-batch's mean by accum_steps (rel L2 {}): see gradient_equivalence",
                        c0.terms, fmt_g(c0.equivalence.rel_l2),
                        c0.got_vs_by_k ? fmt_g(c0.got_vs_by_k->rel_l2) : std::string("?")),
      numbers);
}

CheckRecord partial_check(const RunFacts& f, const std::optional<WindowChecks>& partial) {
  const RunSpec& spec = f.spec;
  if (spec.partial_samples() == 0)
    return check_record(RunCheck::partial_window, Status::skip,
                        fmt::format("dataset of {} samples is a multiple of global_batch {}: no partial window",
                                    spec.effective_dataset_size(), spec.global_batch()));
  if (!spec.runs_partial_window())
    return check_record(RunCheck::partial_window, Status::pass,
                        fmt::format("last partial window of {} samples dropped (--partial-window drop, like drop_last)",
                                    spec.partial_samples()),
                        json{{"policy", "drop"}, {"samples", spec.partial_samples()}});
  const auto& pc = *partial;
  // The negative control cannot discriminate when the last micro-step holds no sample on any
  // rank: the gradient before it is already the window's.
  const bool control_applies = pc.last_micro_samples > 0;
  const bool ok = pc.equivalence.within() && (!pc.negative.within() || !control_applies);
  return check_record(
      RunCheck::partial_window, verdict(ok),
      fmt::format("last window of {} samples ({} loss terms; ranks/micro-steps past the end skipped compute but "
                  "joined the collectives) equals its {} gradient: max |diff| {}, {} violations; negative "
                  "control {}",
                  pc.samples, pc.terms, pc.micro_reference ? "micro-batch-by-micro-batch" : "one-pass",
                  fmt_g(pc.equivalence.max_abs_diff), pc.equivalence.violations,
                  control_applies ? fmt::format("{} violations", pc.negative.violations)
                                  : std::string("n/a (no rank has samples in the last micro-step, so the gradient "
                                                "before it is already the window's)")),
      json{{"policy", "run"},
           {"window", pc.window},
           {"samples", pc.samples},
           {"loss_terms", pc.terms},
           {"last_micro_step_samples", pc.last_micro_samples},
           {"comparison", pc.equivalence.to_json()},
           {"negative_control", pc.negative.to_json()}});
}

// The collectives against the strategy's definition, every rank, every step.
CheckRecord collectives_check(const RunFacts& f, const std::vector<RankRecord>& ranks) {
  const RunSpec& spec = f.spec;
  const auto& st = traits(spec.strategy);
  bool ok = true;
  for (const auto& r : ranks) {
    const auto& s = r.steps;
    for (std::size_t w = 0; w < s.collectives.size(); ++w) {
      if (s.collectives[w] != f.expected_collectives) ok = false;
      // Bucketed strategies: buckets must be launched by the hooks while backward runs.
      const bool full = static_cast<Count>(w) < spec.full_windows();
      if (full && spec.world_size > 1 && st.bucketed && s.launched_in_backward[w] < 1) ok = false;
      if (!st.bucketed && s.launched_in_backward[w] != 0) ok = false;
      if (s.collectives_per_micro[w] != f.expected_per_micro) ok = false;
    }
  }
  const bool sharded = spec.sharding.sharding != Sharding::none;
  // fmt, not operator+ on temporaries: GCC 12 -O3 reports a false stringop-overflow there.
  const std::string plan = sharded ? fmt::format("{} {}", to_string(spec.strategy), to_string(spec.sharding))
                                   : std::string(to_string(spec.strategy));
  const auto& s0 = ranks.front().steps;
  const std::vector<Count> per_micro0 =
      s0.collectives_per_micro.empty() ? std::vector<Count>{} : s0.collectives_per_micro.front();
  return check_record(
      RunCheck::collectives_match_strategy, verdict(ok),
      fmt::format("{}: {} {} per step on every rank and step (expected {}), per micro-step {} (expected {}), "
                  "{} launched from autograd hooks during backward",
                  plan, s0.collectives.empty() ? 0 : s0.collectives.front(),
                  sharded ? "collective(s) (reduce-scatter, all-gather)" : "gradient allreduce(s)",
                  f.expected_collectives, json(per_micro0).dump(), json(f.expected_per_micro).dump(),
                  s0.launched_in_backward.empty() ? 0 : s0.launched_in_backward.front()),
      json{{"expected_per_step", f.expected_collectives},
           {"expected_per_micro_step", f.expected_per_micro},
           {"buckets", f.buckets},
           {"per_micro_step", per_micro0}});
}

}  // namespace

void add_record_checks(std::vector<CheckRecord>& checks, const RunFacts& f, const std::vector<RankRecord>& ranks,
                       const WindowChecks& step0, const std::optional<WindowChecks>& partial) {
  gradient_checks(checks, f, step0);
  checks.push_back(zero_grad_check(f, ranks));
  checks.push_back(parameters_check(f, ranks));
  checks.push_back(token_check(f, step0));
  checks.push_back(partial_check(f, partial));
  checks.push_back(collectives_check(f, ranks));
}

}  // namespace gaccum::runner
