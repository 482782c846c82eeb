// What: the c10d implementation of check/rank_agreement.hpp's SettingsExchange: every rank
//       connects to the job's rendezvous store (MASTER_ADDR:MASTER_PORT; rank 0 hosts it unless
//       the launcher does), publishes its settings line, reads everyone's, and waits in a
//       barrier so the store outlives the slowest reader.
// Why: the only part of `check` that needs LibTorch; it lives in gaccum::check_dist, linked only
//      by the engine binary, behind a plain function so gaccum::check stays torch-free.
// Errors: RuntimeFailure when a peer is lost or `timeout` passes; InputError for a taken port.
#pragma once

#include <string>
#include <vector>

#include "core/rank_env.hpp"
#include "core/units.hpp"

namespace gaccum::check {

std::vector<std::string> exchange_settings_c10d(const RankContext& ctx, const std::string& mine, Seconds timeout);

}  // namespace gaccum::check
