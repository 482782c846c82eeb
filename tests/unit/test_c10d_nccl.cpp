// Unit test for the c10d seam's NCCL headers (only in builds against a CUDA LibTorch):
// comm/ compiles ProcessGroupNCCL.hpp against the nccl.h named by GACCUM_TORCH_NCCL_INCLUDE
// (cmake/GaccumDeps.cmake), and ProcessGroupNCCL::Options holds the versioned ncclConfig_t, so
// that header must be the NCCL this process runs with. Checked without a GPU: ncclGetVersion
// needs no device. Also: exactly one libnccl is mapped (the raw probes and libtorch_cuda link the
// same one).
#include <catch2/catch.hpp>

#include <link.h>

#include <nccl.h>

#include <set>
#include <string>

#include <torch/cuda.h>

namespace {

int collect(struct dl_phdr_info* info, size_t, void* data) {
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  if (name.find("libnccl") != std::string::npos) static_cast<std::set<std::string>*>(data)->insert(name);
  return 0;
}

}  // namespace

TEST_CASE("c10d's nccl.h is the NCCL this process runs with", "[comm][nccl]") {
  (void)torch::cuda::device_count();  // libtorch_cuda is loaded (it links libnccl.so.2)
  int runtime = 0;
  REQUIRE(ncclGetVersion(&runtime) == ncclSuccess);
  INFO("nccl.h " << NCCL_MAJOR << "." << NCCL_MINOR << "." << NCCL_PATCH << " (" << NCCL_VERSION_CODE
                 << "), runtime " << runtime << " (include " << GACCUM_TORCH_NCCL_INCLUDE_DIR << ")");
  CHECK(runtime == NCCL_VERSION_CODE);
  std::set<std::string> loaded;
  dl_iterate_phdr(collect, &loaded);
  std::string names;
  for (const auto& n : loaded) names += n + " ";
  INFO("libnccl mapped: " << names);
  CHECK(loaded.size() == 1);
}
