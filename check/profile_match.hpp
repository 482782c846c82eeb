// What: is this profile a measurement of the workload the job names? Without LibTorch the
//       workload's exact identity hash cannot be recomputed, so the check is: the profile's
//       workload name equals the job's (a preset such as "gpt-tiny", or "torchscript"), each
//       override in "name:key=value,..." equals the profile's recorded hyper-parameter, and, when
//       the job gives workload_hash, the hashes are equal.
// Why: checking a job against another model's profile gives confident wrong answers; this is a
//      ProfileError (exit 2) naming both workloads and the fix.
#pragma once

#include <optional>
#include <string>

#include "core/profile.hpp"

namespace gaccum::check {

// `workload`: "gpt-tiny" or "gpt-tiny:layers=4,hidden=512x512"; `where` names the fields'
// sources in the message (e.g. "job file job.yaml").
void require_profile_of(const Profile& profile, const std::string& profile_path,
                        const std::optional<std::string>& workload, const std::optional<std::string>& workload_hash,
                        const std::string& where);

}  // namespace gaccum::check
