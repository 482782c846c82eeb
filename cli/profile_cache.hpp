// What: the profile-first path shared by `tune --workload` and `check --workload`: a profile of
//       the workload on this machine from the cache, or measured now (as `gaccum-tune profile`
//       would, progress on stderr) and cached at
//         ${XDG_CACHE_HOME:-~/.cache}/gaccum-tune/profiles/<name>-<key>.json
//       key = 16 hex digits of (workload hash, optimizer whose state is measured, hardware, tool
//       and LibTorch versions).
// Why: the second run of a command on the same workload and machine costs a file read, not a
//      profiling run. Needs LibTorch (the workload's identity hash, the profiler), so it belongs
//      to the engine binary; cli/profile_source.hpp is the torch-free rest.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "workloads/workload.hpp"

namespace gaccum::cli {

// ${XDG_CACHE_HOME:-~/.cache}/gaccum-tune/profiles (InputError when neither variable is set).
std::filesystem::path profile_cache_directory();

// The profile measures traits(optimizer).profiled_as (core/optimizer.hpp: LAMB keeps Adam's two
// moments and is profiled as Adam). `cfg.device` must be resolved (not "auto"). Fills `source` with {"kind": "profile", "path",
// "workload", "cache_key", "cached": bool}. An unusable cached file is re-measured (one line on
// stderr says why).
// `device_memory`: the CPU "device" size to profile with (--device-memory); it joins the cache key.
Profile obtain_cached_profile(const workloads::WorkloadConfig& cfg, Optimizer optimizer, bool reprofile,
                              nlohmann::json& source, std::optional<Bytes> device_memory = std::nullopt);

// Stores `p` (a profile `gaccum-tune profile` measured on this machine with optimizer `optimizer`
// on device `device`, resolved) where obtain_cached_profile looks for its workload, so that tune,
// check and validate --workload reuse it. Returns the path; "" when there is no cache directory.
std::string cache_profile(const Profile& p, const std::string& device, Optimizer optimizer,
                          std::optional<Bytes> device_memory = std::nullopt);

// The cached profile obtain_cached_profile would read for (cfg, optimizer, device_memory), if
// that file exists; never measures. "" when there is none.
std::string find_cached_profile(const workloads::WorkloadConfig& cfg, Optimizer optimizer,
                                std::optional<Bytes> device_memory = std::nullopt);

}  // namespace gaccum::cli
