// What: the c10d backends (gloo, nccl) and the device kinds they serve (cpu, cuda), one traits
//       table each: name and, for a backend, its device kind.
// Why: the runner, the profiler and comm/ choose the backend from the device and compare names;
//      typed values make a misspelt "ncll" a compile error and keep one spelling in flags and JSON.
#pragma once

#include <array>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace gaccum {

enum class DeviceKind { cpu, cuda };

enum class Backend { gloo, nccl };

struct BackendTraits {
  Backend backend;
  std::string_view name;  // the spelling in flags and JSON
  DeviceKind device;      // gloo runs on CPU tensors here, nccl on CUDA tensors
};

inline constexpr std::array<BackendTraits, 2> kBackendTraits{{
    {Backend::gloo, "gloo", DeviceKind::cpu},
    {Backend::nccl, "nccl", DeviceKind::cuda},
}};

constexpr const BackendTraits& traits(Backend b) {
  return kBackendTraits[static_cast<std::size_t>(b)];
}

// The backend this project uses for a device kind: gloo for cpu, nccl for cuda.
constexpr Backend backend_for(DeviceKind d) {
  return d == DeviceKind::cuda ? Backend::nccl : Backend::gloo;
}

// "gloo", "nccl".
std::string_view to_string(Backend b);
// "cpu", "cuda".
std::string_view to_string(DeviceKind d);
// InputError naming `flag`: expected gloo or nccl.
Backend parse_backend(std::string_view text, std::string_view flag = "--backend");
// The kind of a LibTorch device string: "cuda" or "cuda:N" is cuda, anything else cpu.
DeviceKind device_kind_of(std::string_view device);
// A JSON field holding a Backend is its name (never the enum's integer).
void to_json(nlohmann::json& j, Backend b);

}  // namespace gaccum
