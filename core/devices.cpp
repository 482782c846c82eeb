// What/why: see devices.hpp.
#include "core/devices.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {

void require_gpu_per_rank(Count ranks_on_host, int visible_gpus, std::string_view field, std::string_view fix) {
  if (ranks_on_host <= visible_gpus) return;
  throw InputError(
      fmt::format("{}: {} rank(s) on this host need {} GPU(s) (one process per GPU: NCCL refuses two "
                  "ranks on one device); {} visible: {}",
                  field, ranks_on_host, ranks_on_host, visible_gpus, fix));
}

}  // namespace gaccum
