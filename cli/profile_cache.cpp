// What/why: see profile_cache.hpp.
#include "cli/profile_cache.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/hash.hpp"
#include "core/version.hpp"
#include "profiler/hardware.hpp"
#include "profiler/profile_session.hpp"
#include "profiler/progress.hpp"

namespace gaccum::cli {
namespace {

namespace fs = std::filesystem;

fs::path profile_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "gaccum-tune" / "profiles";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "gaccum-tune" / "profiles";
  throw InputError(
      "--workload: neither XDG_CACHE_HOME nor HOME is set, so there is no profile cache; set one or "
      "pass --profile profile.json");
}

// Cache key: (workload hash, hardware, library versions) -> 16 hex digits.
// The optimizer joins the key: its state is part of the measured memory.
std::string profile_cache_key(const WorkloadIdentity& id, const std::string& device, Optimizer optimizer,
                              std::optional<Bytes> device_memory) {
  std::string hw = fmt::format("{}|{}|{}", device, profiler::cpu_model(), std::thread::hardware_concurrency());
  if (device_memory) hw += fmt::format("|device_memory={}", *device_memory);
  const std::string libs = fmt::format("{}|{}", GACCUM_VERSION_STRING, GACCUM_TORCH_VERSION);
  return hex64(fnv1a64(fmt::format("workload={};optimizer={};hardware={};libraries={}", id.hash, to_string(optimizer), hw, libs)));
}

// Measures a fresh profile of `cfg` on this machine with the profiler's defaults (on CPU: a
// 96 MiB "device", ranks up to the cores, threads per rank recorded), as `gaccum-tune profile`
// would; progress on stderr when it is a terminal.
Profile run_profiler(const workloads::WorkloadConfig& cfg, Optimizer optimizer,
                     std::optional<Bytes> device_memory) {
  profiler::ProfileRequest req;
  req.workload = cfg;
  req.device_memory = device_memory;
  req.device = cfg.device;
  req.optimizer = traits(optimizer).profiled_as;
  profiler::Progress progress(::isatty(STDERR_FILENO) == 1);
  Profile p = profiler::run_profile(req, progress);
  progress.clear();
  return p;
}

}  // namespace

fs::path profile_cache_directory() { return profile_cache_dir(); }

// Where the profile of (workload, optimizer, device memory) is cached.
static fs::path cached_profile_path(const WorkloadIdentity& id, const std::string& device, Optimizer optimizer,
                             std::optional<Bytes> device_memory) {
  return profile_cache_dir() /
         fmt::format("{}-{}.json", id.name, profile_cache_key(id, device, traits(optimizer).profiled_as, device_memory));
}

std::string cache_profile(const Profile& p, const std::string& device, Optimizer optimizer,
                          std::optional<Bytes> device_memory) {
  fs::path path;
  try {
    path = cached_profile_path(p.workload, device, optimizer, device_memory);
  } catch (const InputError&) {
    return "";  // no cache directory at all
  }
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  save_profile(p, path.string());
  return path.string();
}

std::string find_cached_profile(const workloads::WorkloadConfig& cfg, Optimizer optimizer,
                                std::optional<Bytes> device_memory) {
  const auto workload = workloads::make_workload(cfg);
  fs::path path;
  try {
    path = cached_profile_path(workload->identity(), cfg.device, optimizer, device_memory);
  } catch (const InputError&) {
    return "";  // no cache directory at all
  }
  std::error_code ec;
  return fs::exists(path, ec) ? path.string() : "";
}

Profile obtain_cached_profile(const workloads::WorkloadConfig& cfg, Optimizer optimizer, bool reprofile,
                              nlohmann::json& source, std::optional<Bytes> device_memory) {
  const auto workload = workloads::make_workload(cfg);
  const auto& id = workload->identity();
  const fs::path path = cached_profile_path(id, cfg.device, optimizer, device_memory);
  source = {{"kind", "profile"}, {"path", path.string()}, {"workload", id.name}, {"cache_key", path.stem().string()}};
  std::error_code ec;
  if (!reprofile && fs::exists(path, ec)) {
    try {
      Profile p = load_profile(path.string(), id.hash);
      // A staged model's profile carries its units and per-phase memory (what zero3's per-unit
      // gathering is priced from), and every profile the optimizer step's temporaries (a sharded
      // plan's step); one written before them is measured again.
      bool phased = p.workload.unit_tensors == id.unit_tensors;
      for (const auto& m : p.memory) phased = phased && (id.unit_tensors.empty() || !m.phases.empty());
      if (phased && p.optimizer_transient) {
        source["cached"] = true;
        return p;
      }
      std::cerr << fmt::format("gaccum-tune: cached profile {} predates {}; profiling again\n", path.string(),
                               phased ? "the optimizer step's measured temporaries" : "the model's per-unit memory phases");
    } catch (const InputError& e) {  // not JSON, truncated, another schema or workload: measure again
      std::cerr << fmt::format("gaccum-tune: cached profile {} is unusable ({}); profiling again\n", path.string(),
                               e.what());
    }
  }
  Profile p = run_profiler(cfg, optimizer, device_memory);
  save_profile(p, path.string());
  source["cached"] = false;
  return p;
}

}  // namespace gaccum::cli
