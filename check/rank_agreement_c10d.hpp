// What: the c10d implementation of check/rank_agreement.hpp's SettingsExchange: every rank
//       connects to the job's rendezvous store (MASTER_ADDR:MASTER_PORT; rank 0 hosts it unless
//       the launcher does), publishes its settings line, reads everyone's, and waits in a
//       barrier so the store outlives the slowest reader.
// Why: the only part of `check` that needs LibTorch; it lives in gaccum::check_dist, linked only
//      by the engine binary, behind a plain function so gaccum::check stays torch-free.
//       `with_comm` (optional) runs on every rank with the connected communicator and everyone's
//       lines, before that barrier: `check --probe-links` measures the job's allreduce there, on
//       `backend`/`device` (Gloo on cpu by default; NCCL on cuda:<local rank> for a GPU probe).
// Errors: RuntimeFailure when a peer is lost or `timeout` passes; InputError for a taken port.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/rank_env.hpp"
#include "core/units.hpp"

namespace gaccum::comm {
class Communicator;
}

namespace gaccum::check {

struct C10dOptions {
  Backend backend = Backend::gloo;
  std::string device = "cpu";
  std::function<void(comm::Communicator&, const std::vector<std::string>& lines)> with_comm;
};

std::vector<std::string> exchange_settings_c10d(const RankContext& ctx, const std::string& mine, Seconds timeout,
                                                const C10dOptions& opts = {});

}  // namespace gaccum::check
