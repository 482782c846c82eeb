# Profiler tests (included from tests/CMakeLists.txt).
gaccum_test(unit_memory LABEL unit TORCH SOURCES unit/test_memory_tracker.cpp LIBS gaccum::profiler)
gaccum_test(unit_profiler_plan LABEL unit SOURCES unit/test_profiler_plan.cpp LIBS gaccum::profiler)
gaccum_test(unit_profiler LABEL unit TORCH SOURCES unit/test_profiler_memory.cpp LIBS gaccum::profiler)
gaccum_test(unit_gpu_probe LABEL unit SOURCES unit/test_gpu_probe.cpp LIBS gaccum::gpu)

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

# `validate --device cuda` at world_size 1 (and 2 where two GPUs answer); skips without CUDA.
add_test(NAME "gpu: validate --device cuda" COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/gpu/validate_cuda.sh" ${G})
set_tests_properties("gpu: validate --device cuda" PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)

# The CUDA memory sweep against torch.cuda.max_memory_allocated of the same steps in PyTorch
# ($GACCUM_PYTHON: the pip torch this LibTorch came from); skips without CUDA or that Python.
add_test(NAME "gpu: profile cuda memory equals PyTorch's counter"
         COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/gpu/cuda_peak_vs_torch.sh" ${G})
set_tests_properties("gpu: profile cuda memory equals PyTorch's counter" PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)

# The prepared GPU check (scripts/device-check) on this build: here its GPU steps skip, saying why.
add_test(NAME "integration: device-check --here"
         COMMAND sh -c "d=$(mktemp -d) && OUT=$d BUILD_DIR=\"$1\" \"$2\" --here && grep -q 'device-check: ok' $d/summary.txt && grep -q '^cuda: ' $d/summary.txt && rm -rf $d"
                 sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR}/scripts/device-check)
set_tests_properties("integration: device-check --here" PROPERTIES LABELS integration)

# Multi-node: `profile` as 2 nodes x 2 ranks under a torchrun-style environment on loopback, a
# cluster fitted from it, and `tune` of a 16-node job with every comm term labelled.
add_test(NAME "integration: profile 2 nodes x 2 ranks, cluster fit, tune 16 nodes"
         COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/multinode/two_nodes.sh" ${G})
set_tests_properties("integration: profile 2 nodes x 2 ranks, cluster fit, tune 16 nodes" PROPERTIES
                     LABELS integration PASS_REGULAR_EXPRESSION "TWO-NODES-OK" TIMEOUT 600)

# cluster fit from nccl-tests logs (tests/data/nccl-tests) and its errors.
set(NT "${CMAKE_CURRENT_SOURCE_DIR}/data/nccl-tests")
gaccum_cli_test(cluster-fit-nccl-tests 0 "inter_node.*measured.*16 ranks, 2 nodes x 8" -- ${G} cluster fit
                --nccl-tests ${NT}/h100-1node-all_reduce.txt --nccl-tests ${NT}/h100-2node-all_reduce.txt --nodes 16
                --device-memory 80GiB -o ${CMAKE_CURRENT_BINARY_DIR}/fitted-h100.json)
gaccum_cli_test(cluster-fit-no-intra 2 "no one-node measurement for intra_node.*all_reduce_perf -g 8" --one-line-stderr
                -- ${G} cluster fit --nccl-tests ${NT}/h100-2node-all_reduce.txt --device-memory 80GiB -o /dev/null)
gaccum_cli_test(cluster-fit-no-memory 2 "--device-memory: nccl-tests logs do not say" --one-line-stderr
                -- ${G} cluster fit --nccl-tests ${NT}/h100-1node-all_reduce.txt -o /dev/null)
gaccum_cli_test(cluster-fit-missing-log 2 "--nccl-tests" --one-line-stderr
                -- ${G} cluster fit --nccl-tests /nonexistent/log.txt --device-memory 80GiB -o /dev/null)
gaccum_cli_test(cluster-fit-wrong-op 2 "contradict" --one-line-stderr
                -- ${G} cluster fit --nccl-tests reduce_scatter:${NT}/h100-1node-all_reduce.txt --device-memory 80GiB
                -o /dev/null)
gaccum_cli_test(cluster-fit-nothing 2 "give at least one --nccl-tests" --one-line-stderr -- ${G} cluster fit -o /dev/null)
# A fitted 16-node cluster (16 x 8 GPUs) prices a one-node profile at world_size 64, links labelled.
gaccum_cli_test(cluster-fit-predict 0 "links intra described, inter measured|links intra measured, inter measured"
                -- sh -c "\"$0\" cluster fit --nccl-tests \"$1/h100-1node-all_reduce.txt\" --nccl-tests \"$1/h100-2node-all_reduce.txt\" --nodes 16 --device-memory 80GiB -o \"$2/fit-pred.json\" >/dev/null && \"$0\" predict --profile \"$3/small-profile.json\" --cluster \"$2/fit-pred.json\" -b 4 -k 2 -p 64"
                ${G} ${NT} ${CMAKE_CURRENT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/data)
# check's drift warning: a fitted cluster dated 2020 (tests/data/cluster-fitted-2020.json).
gaccum_cli_test(check-cluster-age 0 "^  cluster .*cluster-fitted-2020.json: its numbers are [0-9]+ days old" -- sh -c
  "\"$0\" check --profile \"$1/small-profile.json\" --cluster \"$1/cluster-fitted-2020.json\" -b 4 -k 2 -p 8 --noise-scale 1000 2>&1"
  ${G} ${CMAKE_CURRENT_SOURCE_DIR}/data)
gaccum_cli_test(check-cluster-undated 0 "^  cluster .*has no date" -- sh -c
  "\"$0\" check --profile \"$1/small-profile.json\" --cluster \"$2/clusters/dgx-h100-1node.json\" --cluster-max-age 30d -b 4 -k 2 -p 8 --noise-scale 1000 2>&1"
  ${G} ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/examples)
# The drift probe (the 2 x 2 run is in tests/multinode/two_nodes.sh): it needs every rank and a
# cluster to compare with.
gaccum_cli_test(check-probe-needs-distributed 2 "--probe-links: .*add --distributed" --one-line-stderr --
  ${G} check --profile ${CMAKE_CURRENT_SOURCE_DIR}/data/small-profile.json -b 4 -k 2 -p 8 --probe-links)
gaccum_cli_test(check-probe-needs-cluster 2 "--probe-links: .*give --cluster" --one-line-stderr -- env RANK=0 WORLD_SIZE=1
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 ${G} check --profile ${CMAKE_CURRENT_SOURCE_DIR}/data/small-profile.json
  -b 4 -k 2 -p 1 --distributed --probe-links)
gaccum_cli_test(check-probe-tolerance 2 "--probe-tolerance: must be above 0%" --one-line-stderr -- env RANK=0 WORLD_SIZE=1
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 ${G} check --profile ${CMAKE_CURRENT_SOURCE_DIR}/data/small-profile.json
  --cluster ${PROJECT_SOURCE_DIR}/examples/clusters/dgx-h100-1node.json -b 4 -k 2 -p 1 --distributed --probe-links
  --probe-tolerance 0)
