// What: one rank's part of a validation run: joins the job (a rendezvous that names missing
//       ranks), agrees with the other ranks on the run's identity, trains total_windows()
//       accumulation windows with the chosen gradient-sync strategy while checking and timing
//       them, and (rank 0) assembles the run record: config, environment, per-step raw times of
//       every rank, each check with its numbers, and the measured figures.
// Why: docs/DESIGN.md, Runner. The same function runs under our own launcher (`_worker --role
//      validate-rank`) and under torchrun/Slurm/mpirun (`gaccum-tune validate` on every rank).
//
// Per window w (one optimizer step), on every rank, all inside the step's wall-clock time:
//   zero_grad and the zero check (every gradient element exactly 0) -> [token workloads: the
//   window's k micro-batches are built and the window's real tokens allreduced across ranks]
//   -> k micro-steps: forward, loss_sum * world_size / window_loss_terms, backward, with the
//   strategy's synchronisation (comm/grad_sync.hpp) -> optimizer step.
//   The loss scale world_size / global_terms makes the averaged gradient equal the gradient of
//   the mean loss over every real token (samples for non-sequence workloads) of the window.
// Step 0 (never timed) also carries the gradient checks on rank 0: the one-pass reference
// gradient of the same samples, the negative control (rank 0's gradient before its last
// micro-step), and for token workloads the gradient that a per-micro-batch mean divided by
// accum_steps gives. The partial window (if run) is checked the same way and never timed.
// Instrumentation inside timed steps (each one read pass over the gradients): the zero check,
// the norm after micro-step 0 and the norm after the sync (gradient noise scale).
// Peak memory: the tracker's high-water mark over the timed steps (reset before the first).
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "comm/rank_env.hpp"
#include "runner/run_spec.hpp"

namespace gaccum::runner {

struct RankRunOptions {
  nlohmann::json launch = nlohmann::json::object();  // launcher-side facts for the record
  std::string key_prefix = "gaccum";                 // store namespace (one per run of a job)
  // Rank 0 only: receives the run record before any rank exits and returns the exit code all
  // ranks then use (0 or 1), e.g. after writing it and comparing it with a prediction.
  std::function<int(const nlohmann::json& record)> deliver;
};

// Returns this process's exit code (0 every check passed, 1 a check failed; the record was
// delivered either way). Throws InputError, RuntimeFailure (c10d failures start with "c10d"),
// std::bad_alloc / c10::Error on failures; validate_rank_role maps them to exit codes.
int run_validation_rank(const RunSpec& spec, const comm::RankContext& ctx, const RankRunOptions& opts);

// The `_worker --role validate-rank` entry point: args {"spec": RunSpec, "result": path,
// "launch": {...}}; rank 0 writes the record to "result". Maps failures to exit codes
// (comm::kExitPeerLost when a collective or the store failed, kExitOutOfMemory, 2 bad input,
// 1 otherwise) and reports them with report_rank_error.
int validate_rank_role(const nlohmann::json& args);

// Writes "rank R: msg" to stderr and to $GACCUM_ERROR_FILE when set (one line; the launcher
// side quotes it when naming the failed rank).
void report_rank_error(int rank, const std::string& msg);

// "in step 3 micro-step 2" / "before step 0": where this rank is (for error messages).
std::string rank_position();

// Maps an exception escaping a rank to its exit code and reports it (used by both entry points).
int rank_failure_exit_code(int rank, std::exception_ptr e);

}  // namespace gaccum::runner
