// What: the last `tune` pick of each profiled workload, kept beside the cached profiles:
//         ${XDG_CACHE_HOME:-~/.cache}/gaccum-tune/profiles/pick-<workload hash>.json
//         {"schema": "gaccum-tune/tune-pick", "workload_hash", "result": absolute path of the
//          tune's result.json, "created_utc"}
// Why: profile -> tune -> validate is one journey: `validate` on the same workload without
//      -b/-k/-p, --strategy or --sharding runs tune's pick (validate --from-tune on that result, top 1), not an arbitrary
//      default.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace gaccum::cli {

// Records `result_json` as the pick of `workload_hash`. Never fails the tune: a cache that cannot
// be written loses a convenience (one warning line on stderr).
void record_tune_pick(const std::string& workload_hash, const std::filesystem::path& result_json);

// The result.json of the last tune on `workload_hash`, when the record and that file still exist.
std::optional<std::filesystem::path> find_tune_pick(const std::string& workload_hash);

}  // namespace gaccum::cli
