// Unit test for the raw NCCL probe's failure path, run on any machine (no GPU needed): asking for
// a device that cannot exist fails in the constructor with a RuntimeFailure naming the CUDA call
// and file:line, publishes no ncclUniqueId, and releases what the constructor had created (the
// destructor of a throwing constructor never runs: gpu/nccl_allreduce.cu). A build without the
// CUDA toolkit says it was not built.
#include <catch2/catch.hpp>

#include <string>

#include "core/error.hpp"
#include "gpu/nccl_allreduce.hpp"

using namespace gaccum;

TEST_CASE("raw NCCL probe: a device that does not exist is a RuntimeFailure naming the call, nothing published",
          "[gpu][unit]") {
  int published = 0, fetched = 0;
  gpu::IdExchange exchange{[&](const std::string&) { ++published; }, [&] {
                             ++fetched;
                             return std::string();
                           }};
  std::string what;
  try {
    gpu::NcclAllreduceProbe probe(0, 1, /*device=*/4096, exchange, /*timeout=*/5);
  } catch (const RuntimeFailure& e) {
    what = e.what();
  }
  if (gpu::nccl_probe_compiled()) {
    CHECK(what.find("CUDA cudaSetDevice(device) failed (") != std::string::npos);
    CHECK(what.find("nccl_allreduce.cu:") != std::string::npos);
  } else {
    CHECK(what.find("built without the CUDA toolkit/NCCL") != std::string::npos);
  }
  CHECK(published == 0);
  CHECK(fetched == 0);
}
