// What: `gaccum-tune version`: the tool, LibTorch, CUDA, NCCL and Gloo versions, the backends
//       this build offers, and the devices the CUDA runtime finds ("no device" when none answers).
// Why: the first thing to paste into a bug report, and the proof that the CUDA/NCCL probes are
//      compiled and linked in this build.
#include <torch/cuda.h>

#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "comm/communicator.hpp"
#include "core/units.hpp"
#include "core/version.hpp"
#include "gpu/device_query.hpp"
#include "profiler/hardware.hpp"

namespace gaccum::cli {
namespace {

struct VersionOptions {
  bool json = false;
};

int run_version(const VersionOptions& o) {
  auto cuda = gpu::query_cuda();
  const bool torch_cuda = torch::cuda::is_available();
  std::vector<std::string> backends;
  for (const auto& b : comm::available_backends()) backends.push_back(b == Backend::gloo ? "gloo (c10d, CPU)" : "nccl (c10d, GPU)");
  if (cuda.compiled) backends.push_back("nccl-probe (raw NCCL " + cuda.nccl_version + ", GPU)");
  const unsigned cores = std::thread::hardware_concurrency();

  if (o.json) {
    nlohmann::json j;
    j["tool"] = GACCUM_VERSION_STRING;
    j["build"] = {{"type", GACCUM_BUILD_TYPE}, {"compiler", GACCUM_COMPILER}};
    j["libtorch"] = {{"version", GACCUM_TORCH_VERSION}, {"cuda", torch_cuda}};
    j["cuda"] = {{"compiled", cuda.compiled}, {"runtime", cuda.runtime_version}, {"driver", cuda.driver_version}};
    j["nccl"] = cuda.nccl_version;
    j["gloo"] = comm::gloo_version();
    j["backends"] = comm::available_backends();
    if (cuda.compiled) j["backends"].push_back("nccl-probe");
    j["devices"] = nlohmann::json::array();
    for (const auto& d : cuda.devices)
      j["devices"].push_back({{"index", d.index},
                              {"name", d.name},
                              {"memory_bytes", d.total_memory},
                              {"sm_count", d.sm_count},
                              {"capability", fmt::format("{}.{}", d.capability_major, d.capability_minor)}});
    if (cuda.devices.empty()) j["no_device_reason"] = cuda.no_device_reason;
    j["cpu"] = {{"model", profiler::cpu_model()}, {"cores", cores}};
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  fmt::print("gaccum-tune {} ({}, {})\n", GACCUM_VERSION_STRING, GACCUM_BUILD_TYPE, GACCUM_COMPILER);
  fmt::print("  LibTorch  {} ({})\n", GACCUM_TORCH_VERSION, torch_cuda ? "CUDA" : "CPU");
  if (cuda.compiled) {
    fmt::print("  CUDA      runtime {}, driver {}\n", cuda.runtime_version,
               cuda.driver_version.empty() ? "none" : cuda.driver_version);
    fmt::print("  NCCL      {} (ncclGetVersion)\n", cuda.nccl_version);
  } else {
    fmt::print("  CUDA      not built ({})\n", cuda.no_device_reason);
  }
  auto gloo = comm::gloo_version();
  fmt::print("  Gloo      {}\n", gloo.empty() ? "unknown" : gloo);
  fmt::print("  backends  {}\n", fmt::join(backends, ", "));
  if (cuda.devices.empty()) {
    fmt::print("  devices   no device ({})\n", cuda.no_device_reason);
  } else {
    for (const auto& d : cuda.devices)
      fmt::print("  device {}  {}, {}, {} SMs, sm_{}{}\n", d.index, d.name, format_bytes(d.total_memory), d.sm_count,
                 d.capability_major, d.capability_minor);
  }
  fmt::print("  CPU       {}, {} cores\n", profiler::cpu_model(), cores);
  return kExitOk;
}

}  // namespace

void add_version_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<VersionOptions>();
  auto* sub = app.add_subcommand("version", "Show versions of the tool and its libraries, backends and devices");
  sub->add_flag("--json", o->json, "Print one JSON object");
  sub->callback([o, &action] { action = [o] { return run_version(*o); }; });
}

}  // namespace gaccum::cli
