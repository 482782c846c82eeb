// What: the c10d backends (gloo, nccl) and the device kinds they serve (cpu, cuda), one traits
//       table each: name and, for a backend, its device kind.
// Why: the runner, the profiler and comm/ choose the backend from the device and compare names;
//      typed values make a misspelt "ncll" a compile error and keep one spelling in flags and JSON.
#pragma once

#include <array>
#include <optional>
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

// How a rank's host thread waits for a collective to finish (comm/communicator.hpp):
//   block  the backend's wait(): the thread sleeps on a futex and its core may idle
//   poll   asks the work whether it finished, yielding the core between asks (sched_yield), then
//          wait() (which returns at once, or throws the collective's error)
// Why poll: a CPU rank stands for a GPU, and a GPU's host thread spins on its stream by default.
// On a VM an idle core is halted, and waking it takes milliseconds: measured on the reference VM
// (2026-12-03, Firecracker, haltpoll cpuidle), a 1 MiB Gloo all-to-all after 3 ms of compute took
// 0.27-0.35 ms median but 1.1-1.4 ms mean with blocking waits (p90 3.4 ms), 0.41-0.61 ms mean
// with polling (docs/DESIGN.md, "Waiting for collectives on CPU").
enum class CollectiveWait { block, poll };
// "block", "poll".
std::string_view to_string(CollectiveWait w);
// The wait named `text`, if it is one.
std::optional<CollectiveWait> find_collective_wait(std::string_view text);
// InputError naming `what` unless "block" or "poll".
CollectiveWait parse_collective_wait(std::string_view text, std::string_view what);
// The rule every timed rank uses (profile and validate alike): poll on Gloo when the ranks of this
// host fit its cores (ranks_on_host x threads_per_rank <= cores), so the polling takes no core
// from compute; block otherwise (an oversubscribed host, correctness runs) and on NCCL (blocking
// wait, comm/communicator.hpp nccl_env_defaults).
CollectiveWait collective_wait_for(Backend backend, int ranks_on_host, int threads_per_rank, int cores);

}  // namespace gaccum
