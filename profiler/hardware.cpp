// What/why: see hardware.hpp.
#include "profiler/hardware.hpp"

#include <sched.h>
#include <unistd.h>

#include <torch/version.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "comm/communicator.hpp"
#include "core/backend.hpp"
#include "core/version.hpp"
#include "gpu/device_query.hpp"

namespace gaccum::profiler {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  return "unknown CPU";
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

std::string host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

HardwareInfo describe_hardware(const std::string& device, int threads_per_rank, Bytes device_memory) {
  HardwareInfo h;
  h.host = host_name();
  h.cpu_cores = usable_cores();
  h.threads_per_rank = threads_per_rank;
  h.device_memory = device_memory;
  if (device_kind_of(device) == DeviceKind::cuda) {
    h.device_kind = to_string(DeviceKind::cuda);
    const int index = device.size() > 5 ? std::stoi(device.substr(5)) : 0;
    auto report = gpu::query_cuda();
    h.driver = report.driver_version;
    for (const auto& d : report.devices)
      if (d.index == index) {
        h.device_name = d.name;
        h.sm_count = d.sm_count;
        if (h.device_memory == 0) h.device_memory = d.total_memory;
      }
  } else {
    h.device_kind = to_string(DeviceKind::cpu);
    h.device_name = cpu_model();
  }
  return h;
}

std::string blas_library() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const auto name = std::filesystem::path(path).filename().string();
    if (name.rfind("libblas", 0) == 0 || name.rfind("libopenblas", 0) == 0 || name.rfind("libmkl_rt", 0) == 0) {
      std::error_code ec;
      auto real = std::filesystem::canonical(path, ec);
      return ec ? path : real.string();
    }
  }
  return "";
}

bool is_reference_blas(const std::string& path) { return path.find("/blas/libblas") != std::string::npos; }

LibraryVersions library_versions() {
  LibraryVersions v;
  v.tool = GACCUM_VERSION_STRING;
  v.libtorch = TORCH_VERSION;
  auto report = gpu::query_cuda();
  if (report.compiled) {
    v.cuda = report.runtime_version;
    v.nccl = report.nccl_version;
  }
  v.gloo = comm::gloo_version();
  return v;
}

}  // namespace gaccum::profiler
