# Profiler tests (included from tests/CMakeLists.txt).
gaccum_test(unit_memory LABEL unit TORCH SOURCES unit/test_memory_tracker.cpp LIBS gaccum::profiler)
gaccum_test(unit_profiler_plan LABEL unit SOURCES unit/test_profiler_plan.cpp LIBS gaccum::profiler)
gaccum_test(unit_profiler LABEL unit TORCH SOURCES unit/test_profiler_memory.cpp LIBS gaccum::profiler)

# Real rank processes: the tests re-execute gaccum-tune as `_worker --role profile-rank`.
gaccum_test(integration_profiler LABEL integration TORCH SOURCES integration/test_profiler.cpp LIBS gaccum::profiler)
target_compile_definitions(integration_profiler PRIVATE GACCUM_TUNE_BIN="$<TARGET_FILE:gaccum-tune>")
add_dependencies(integration_profiler gaccum-tune)

# CLI expectations (tests/cli/expect.sh).
set(G $<TARGET_FILE:gaccum-tune>)
gaccum_cli_test(profile-help 0 "--device-memory TEXT=96MiB" -- ${G} profile --help)
gaccum_cli_test(profile-bad-workload 2 "error: --workload: unknown workload 'nope'" --one-line-stderr
                -- ${G} profile --workload nope -o /dev/null)
gaccum_cli_test(profile-bad-cap 2 "error: .*--memory-cap" --one-line-stderr
                -- ${G} profile --memory-cap lots -o /dev/null)
gaccum_cli_test(profile-too-many-ranks 2 "error: --ranks: 512 ranks need 512 cores" --one-line-stderr
                -- ${G} profile --device cpu --ranks 1,512 -o /dev/null)
gaccum_cli_test(profile-cap-below-static 1
                "error: --memory-cap: gpt-tiny does not fit even at micro_batch 1: needs 8.18 MiB.*cap 4.00 MiB"
                --one-line-stderr
                -- ${G} profile --workload gpt-tiny --device cpu --device-memory 4MiB --memory-cap 100% -o /dev/null)

# GPU (label gpu): skipped (exit 77) with a message when no CUDA device answers.
if(GACCUM_CUDA_ENABLED)
  add_executable(profiler_gpu_check gpu/profiler_gpu_check.cpp)
  target_link_libraries(profiler_gpu_check PRIVATE gaccum::gpu)
  if(GACCUM_TORCH_HAS_CUDA)  # the `profile --device cuda` part needs a CUDA LibTorch
    target_compile_definitions(profiler_gpu_check PRIVATE GACCUM_TUNE_BIN="$<TARGET_FILE:gaccum-tune>")
    add_dependencies(profiler_gpu_check gaccum-tune)
  endif()
  gaccum_target_defaults(profiler_gpu_check)
  add_test(NAME "gpu: profiler NCCL probe and cuda profile" COMMAND profiler_gpu_check)
  set_tests_properties("gpu: profiler NCCL probe and cuda profile" PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endif()
if(GACCUM_TORCH_HAS_CUDA)
  add_executable(profiler_cuda_memory_check gpu/profiler_cuda_memory_check.cpp)
  target_link_libraries(profiler_cuda_memory_check PRIVATE gaccum::profiler)
  gaccum_torch_pch(profiler_cuda_memory_check)
  gaccum_target_defaults(profiler_cuda_memory_check)
  add_test(NAME "gpu: profiler CUDA memory stats" COMMAND profiler_cuda_memory_check)
  set_tests_properties("gpu: profiler CUDA memory stats" PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endif()
