// What: check 3, "the same micro_batch and accum_steps on every rank": each rank publishes
//       (micro_batch, accum_steps, world_size, global_batch, strategy, lr, config hash) as one
//       JSON line, every rank gathers all of them, and each compares the lot:
//         FAIL  a compared field differs (naming the ranks and values), a rank could not read its
//               inputs, or the job's world_size differs from the ranks the launcher started;
//         WARN  the fields agree but the configuration hashes differ (different job/DeepSpeed
//               file contents or other settings, e.g. dataset_size);
//         PASS  all agree;  SKIP  without --distributed.
//       Every rank computes the same verdict from the same gathered lines, so all exit alike.
// Why: a rank with a different accum_steps desynchronises DDP's collectives (hang or wrong
//      averages); it must be caught before launch. The exchange itself (c10d) is behind the plain
//      SettingsExchange function so this file, and `check` without --distributed, need no
//      LibTorch (check/rank_agreement_c10d.hpp provides the c10d one).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "check/check_inputs.hpp"
#include "check/checks.hpp"

namespace gaccum::check {

struct RankSettings {
  int rank = 0;
  Count micro_batch = 0, accum_steps = 0, world_size = 0, global_batch = 0;
  std::string strategy;
  std::optional<double> lr;
  std::string config_hash;
  std::string error;  // non-empty: this rank could not resolve its inputs (its one-line error)
};

// config_hash: of the resolved values (not their sources, which name per-node paths) and the
// job / DeepSpeed file contents (`extra`, e.g. their canonical hashes).
std::string config_hash(const ResolvedJob& job, const std::string& extra);
RankSettings rank_settings(const ResolvedJob& job, int rank, const std::string& config_hash);
RankSettings failed_rank_settings(int rank, const std::string& error);

std::string encode(const RankSettings& s);  // one JSON line
// Never throws: a line that cannot be read becomes a RankSettings with `error` set.
RankSettings decode_rank_settings(const std::string& line, int rank);

// all: indexed by rank. launcher_world_size: ranks the launcher started.
CheckResult check_rank_agreement(const std::vector<RankSettings>& all, Count launcher_world_size,
                                 const std::string& launcher);
CheckResult rank_agreement_skipped();

// Sends this rank's line, returns every rank's line indexed by rank (RuntimeFailure on a
// timeout or a lost peer).
using SettingsExchange = std::function<std::vector<std::string>(const std::string& mine)>;

// "0-3, 5, 7-8"
std::string rank_list(const std::vector<int>& ranks);

}  // namespace gaccum::check
