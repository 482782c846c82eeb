// What: validate's measured gradient noise scales kept beside the cached profiles, one file per
//       workload (tuner/noise_source.hpp for the format, the estimator and the choice):
//         ${XDG_CACHE_HOME:-~/.cache}/gaccum-tune/profiles/noise-<workload hash>.json
//       keyed by the workload hash alone: B_noise belongs to the model and its data, not to the
//       hardware or the library versions that key the profiles.
// Why: `validate` measures B_simple at the real global batch; `tune` and `check` on the same
//      workload reuse it for the critical-batch verdict, and say where it came from, or say which
//      validate command measures one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/profile_source.hpp"
#include "core/profile.hpp"
#include "tuner/noise_source.hpp"

namespace gaccum::cli {

std::filesystem::path noise_scale_record_path(const std::string& workload_hash);

// Adds every run of validate's validation.json that measured B_simple (and whose accumulation
// checks passed) to the workload's record; the record's path, or nullopt when none did (or the
// cache cannot be written: one warning line on stderr).
std::optional<std::filesystem::path> record_validated_noise_scales(const std::string& workload_hash,
                                                                   const std::vector<nlohmann::json>& runs);

struct NoiseLookup {
  std::optional<tuner::NoiseChoice> recorded;  // set when it beats the profile's own estimate
  std::string validate_command;                // "gaccum-tune validate --workload gpt-tiny" ("" for specs)
};
// For a model built from a profile: the recorded measurement for its workload, and the validate
// command that measures one. `workload_args` are the validate flags naming a preset as the user
// typed it (e.g. "--workload gpt:layers=4"); "" (and any TorchScript workload) derives them from
// the profile's workload identity.
NoiseLookup lookup_noise_scale(const LoadedModel& l, const std::string& workload_args);

}  // namespace gaccum::cli
