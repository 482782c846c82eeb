# Finds every third-party dependency once, so folder CMakeLists only name targets.
# LibTorch: Debian's libtorch-dev (1.13, CPU) by default, or a CUDA LibTorch 2.x found through
# CMAKE_PREFIX_PATH (e.g. `python3 -c 'import torch;print(torch.utils.cmake_prefix_path)'`).

find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(CLI11 CONFIG QUIET)
if(NOT TARGET CLI11::CLI11)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 SYSTEM INTERFACE "${CLI11_INCLUDE_DIR}")
endif()
find_package(yaml-cpp REQUIRED)
# TOML (torchtitan configs): Debian's libtomlplusplus-dev.
find_package(tomlplusplus 3 REQUIRED)
if(NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp INTERFACE IMPORTED)
  target_link_libraries(yaml-cpp::yaml-cpp INTERFACE yaml-cpp)
endif()

# --- LibTorch ---------------------------------------------------------------------------------
# TorchConfig.cmake looks for libtorch/libc10 with find_library(... PATHS <prefix>/lib), which
# searches the system first: with Debian's libtorch-dev installed, a pip torch would silently
# link Debian's libtorch.so. Point those cache entries at the chosen prefix before it runs.
set(_gaccum_torch_cfgs "")
if(Torch_DIR)
  list(APPEND _gaccum_torch_cfgs "${Torch_DIR}/TorchConfig.cmake")
endif()
foreach(_p IN LISTS CMAKE_PREFIX_PATH)
  list(APPEND _gaccum_torch_cfgs "${_p}/Torch/TorchConfig.cmake" "${_p}/share/cmake/Torch/TorchConfig.cmake")
endforeach()
foreach(_cfg IN LISTS _gaccum_torch_cfgs)
  if(EXISTS "${_cfg}")
    get_filename_component(_tprefix "${_cfg}/../../../.." ABSOLUTE)
    foreach(_lib torch c10 torch_cpu)
      if(EXISTS "${_tprefix}/lib/lib${_lib}.so")
        set(${_lib}_LIBRARY "${_tprefix}/lib/lib${_lib}.so" CACHE FILEPATH "LibTorch ${_lib}" FORCE)
      endif()
    endforeach()
    if(EXISTS "${_tprefix}/lib/libtorch.so")
      set(TORCH_LIBRARY "${_tprefix}/lib/libtorch.so" CACHE FILEPATH "LibTorch" FORCE)
    endif()
    # A pip torch's libtorch_cuda needs the NCCL of its nvidia-nccl wheel (newer symbols than the
    # toolkit's); our raw NCCL probes must link that one too, or libnccl.so.2 resolves twice.
    get_filename_component(_wheel_nccl "${_tprefix}/../nvidia/nccl" ABSOLUTE)
    if(EXISTS "${_wheel_nccl}/include/nccl.h" AND EXISTS "${_wheel_nccl}/lib/libnccl.so.2")
      set(NCCL_INCLUDE_DIR "${_wheel_nccl}/include" CACHE PATH "NCCL headers (the pip torch's wheel)" FORCE)
      set(NCCL_LIBRARY "${_wheel_nccl}/lib/libnccl.so.2" CACHE FILEPATH "NCCL (the pip torch's wheel)" FORCE)
      # At link time ld resolves libtorch_cuda's libnccl.so.2 through our rpath (the toolkit's
      # older NCCL) before libtorch_cuda's own RUNPATH: name the wheel's first.
      set(_gaccum_torch_rpath_link "${_wheel_nccl}/lib")
      # ProcessGroupNCCL.hpp includes <nccl.h>, and ProcessGroupNCCL::Options holds the versioned
      # ncclConfig_t: the c10d seam (comm/) must see the NCCL headers this LibTorch was built with.
      set(GACCUM_TORCH_NCCL_INCLUDE "${_wheel_nccl}/include")
    endif()
    break()
  endif()
endforeach()
# A CUDA LibTorch adds -gencode flags for TORCH_CUDA_ARCH_LIST to every CUDA target that links it;
# without a GPU to detect, its default list starts at sm_50, which CUDA 13 no longer supports.
# Default to A100/H100/H200 (sm_80, sm_90) unless the user chose (-DTORCH_CUDA_ARCH_LIST or env).
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
endif()
find_package(Torch REQUIRED)
# TORCH_CXX_FLAGS carries -D_GLIBCXX_USE_CXX11_ABI=...; it must match for every TU we link.
separate_arguments(GACCUM_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
add_library(gaccum_torch INTERFACE)
add_library(gaccum::torch ALIAS gaccum_torch)
target_link_libraries(gaccum_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(gaccum_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_compile_options(gaccum_torch INTERFACE ${GACCUM_TORCH_CXX_FLAGS})
if(_gaccum_torch_rpath_link)
  target_link_options(gaccum_torch INTERFACE "LINKER:-rpath-link,${_gaccum_torch_rpath_link}")
endif()
set(GACCUM_TORCH_VERSION "${Torch_VERSION}")
# LibTorch 2.x ships its own {fmt} headers (v12 in torch 2.15; c10d headers include them) ahead of
# Debian's libfmt 9 on the include path. Sources that include LibTorch then use those headers
# header-only (a distinct inline namespace, fmt::v12, so no clash with libfmt.so.9 elsewhere).
foreach(_inc IN LISTS TORCH_INCLUDE_DIRS)
  if(EXISTS "${_inc}/fmt/base.h")
    target_compile_definitions(gaccum_torch INTERFACE FMT_HEADER_ONLY=1)
    break()
  endif()
endforeach()

# Which c10d backends this LibTorch ships. Debian's 1.13 has Gloo; CUDA builds add NCCL.
include(CheckCXXSourceCompiles)
set(GACCUM_TORCH_HAS_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA OR USE_CUDA)
  set(GACCUM_TORCH_HAS_CUDA ON)
endif()
# The NCCL headers of the c10d seam: the LibTorch's own (its nvidia-nccl wheel, above), else the
# ones next to the LibTorch's headers, else the toolkit's with a warning (a mismatched nccl.h
# changes the layout of ProcessGroupNCCL::Options).
if(GACCUM_TORCH_HAS_CUDA AND NOT GACCUM_TORCH_NCCL_INCLUDE)
  find_path(_gaccum_torch_nccl nccl.h HINTS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  if(_gaccum_torch_nccl)
    set(GACCUM_TORCH_NCCL_INCLUDE "${_gaccum_torch_nccl}")
  else()
    find_path(_gaccum_any_nccl nccl.h HINTS /usr/local/cuda/include)
    if(_gaccum_any_nccl)
      set(GACCUM_TORCH_NCCL_INCLUDE "${_gaccum_any_nccl}")
      message(WARNING "c10d NCCL headers: this LibTorch carries no nccl.h; using ${_gaccum_any_nccl}, which may not "
                      "be the NCCL it was built with (install the matching nvidia-nccl wheel)")
    endif()
  endif()
endif()
find_library(GACCUM_GLOO_LIBRARY gloo)
find_path(GACCUM_GLOO_INCLUDE gloo/config.h HINTS ${TORCH_INCLUDE_DIRS})
if(GACCUM_GLOO_INCLUDE)
  set(GACCUM_HAS_GLOO ON)
else()
  set(GACCUM_HAS_GLOO OFF)
  message(WARNING "gloo headers not found: install libgloo-dev (scripts/install-deps)")
endif()

# --- CUDA toolkit + NCCL (raw probes in gpu/) -------------------------------------------------
set(GACCUM_CUDA_ENABLED OFF)
if(NOT GACCUM_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib /usr/local/cuda/lib
          /usr/local/cuda/lib64)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    if(NOT CMAKE_CUDA_ARCHITECTURES)  # unset, or OFF as a CUDA LibTorch's config leaves it
      # sm_80 (A100) and sm_90 (H100/H200); override with -DCMAKE_CUDA_ARCHITECTURES=...
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(GACCUM_CUDA_ENABLED ON)
    add_library(gaccum_nccl INTERFACE)
    add_library(gaccum::nccl ALIAS gaccum_nccl)
    target_include_directories(gaccum_nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(gaccum_nccl INTERFACE ${NCCL_LIBRARY})
    file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
           GACCUM_NCCL_HEADER_VERSION "${_nccl_ver}")
  elseif(GACCUM_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GACCUM_WITH_CUDA=ON but CUDA toolkit/nvcc/NCCL not found "
                        "(nvcc=${CMAKE_CUDA_COMPILER} nccl.h=${NCCL_INCLUDE_DIR} libnccl=${NCCL_LIBRARY})")
  endif()
endif()

# --- test and benchmark frameworks ------------------------------------------------------------
if(GACCUM_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
if(GACCUM_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
