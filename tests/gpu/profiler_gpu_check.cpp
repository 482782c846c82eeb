// GPU check for the profiler (label gpu): the raw NCCL allreduce probe on device 0 (one rank)
// with #wrong == 0 over a size sweep, and a short `gaccum-tune profile --device cuda` run when
// LibTorch has CUDA. Exits 77 (CTest: skipped) with a message when no CUDA device answers.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpu/device_query.hpp"
#include "gpu/nccl_allreduce.hpp"

int main() {
  auto report = gaccum::gpu::query_cuda();
  if (report.devices.empty()) {
    std::printf("SKIP: no CUDA device answers (%s)\n", report.no_device_reason.c_str());
    return 77;
  }
  int failures = 0;
  gaccum::gpu::IdExchange ex;
  std::string id;
  ex.publish = [&](const std::string& s) { id = s; };
  ex.fetch = [&] { return id; };
  gaccum::gpu::NcclAllreduceProbe probe(0, 1, 0, ex);
  std::printf("%12s %10s %12s %7s\n", "size(B)", "iters", "time(us)", "#wrong");
  for (gaccum::Bytes s = 4096; s <= (gaccum::Bytes(64) << 20); s *= 4) {
    auto r = probe.run(s, 2, 5);
    double mean = 0;
    for (double t : r.samples) mean += t;
    mean /= double(r.samples.size());
    std::printf("%12llu %10zu %12.1f %7lld\n", static_cast<unsigned long long>(r.bytes), r.samples.size(), mean * 1e6,
                static_cast<long long>(r.wrong));
    if (r.wrong != 0 || r.samples.size() != 5) ++failures;
  }
#ifdef GACCUM_TUNE_BIN
  const std::string cmd = std::string(GACCUM_TUNE_BIN) +
                          " profile --workload gpt-tiny --device cuda --iters 3 --time-budget 20s -o /tmp/gaccum_gpu_profile.json";
  std::printf("running: %s\n", cmd.c_str());
  if (std::system(cmd.c_str()) != 0) ++failures;
#endif
  std::printf("%s\n", failures ? "FAIL" : "OK");
  return failures ? 1 : 0;
}
