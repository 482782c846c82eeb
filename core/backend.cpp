// What/why: names and parsers of the backends and device kinds in backend.hpp.
#include "core/backend.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gaccum {

std::string_view to_string(Backend b) {
  return traits(b).name;
}

std::string_view to_string(DeviceKind d) {
  return d == DeviceKind::cuda ? "cuda" : "cpu";
}

Backend parse_backend(std::string_view text, std::string_view flag) {
  for (const auto& t : kBackendTraits)
    if (t.name == text) return t.backend;
  throw InputError(fmt::format("{}: unknown backend '{}': expected gloo or nccl", flag, text));
}

DeviceKind device_kind_of(std::string_view device) {
  return device.rfind("cuda", 0) == 0 ? DeviceKind::cuda : DeviceKind::cpu;
}

void to_json(nlohmann::json& j, Backend b) {
  j = std::string(to_string(b));
}

std::string_view to_string(CollectiveWait w) {
  return w == CollectiveWait::poll ? "poll" : "block";
}

std::optional<CollectiveWait> find_collective_wait(std::string_view text) {
  for (const auto w : {CollectiveWait::block, CollectiveWait::poll})
    if (to_string(w) == text) return w;
  return std::nullopt;
}

CollectiveWait parse_collective_wait(std::string_view text, std::string_view what) {
  if (const auto w = find_collective_wait(text)) return *w;
  throw InputError(fmt::format("{}: unknown collective wait '{}': expected block or poll", what, text));
}

CollectiveWait collective_wait_for(Backend backend, int ranks_on_host, int threads_per_rank, int cores) {
  if (backend != Backend::gloo || ranks_on_host < 1 || threads_per_rank < 1) return CollectiveWait::block;
  return static_cast<long>(ranks_on_host) * threads_per_rank <= cores ? CollectiveWait::poll : CollectiveWait::block;
}

}  // namespace gaccum
