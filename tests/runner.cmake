# Runner tests (included from tests/CMakeLists.txt): the check arithmetic and report (unit),
# the gradient hooks and the world_size-1 synchroniser (unit), the three strategies over real
# Gloo ranks (integration), and `gaccum-tune validate` end to end with its faults (integration).
gaccum_test(unit_runner LABEL unit TORCH SOURCES unit/test_runner.cpp LIBS gaccum::runner)
gaccum_test(unit_grad_sync LABEL unit TORCH SOURCES unit/test_grad_sync.cpp LIBS gaccum::comm)
# A CUDA LibTorch: comm/'s nccl.h (GACCUM_TORCH_NCCL_INCLUDE) against the NCCL loaded at run time.
if(GACCUM_TORCH_HAS_CUDA)
  gaccum_test(unit_c10d_nccl LABEL unit SOURCES unit/test_c10d_nccl.cpp LIBS gaccum::comm ${NCCL_LIBRARY})
  target_include_directories(unit_c10d_nccl SYSTEM BEFORE PRIVATE "${GACCUM_TORCH_NCCL_INCLUDE}")
  target_compile_definitions(unit_c10d_nccl PRIVATE GACCUM_TORCH_NCCL_INCLUDE_DIR="${GACCUM_TORCH_NCCL_INCLUDE}")
endif()

add_executable(grad_sync_test_worker integration/grad_sync_test_worker.cpp)
target_link_libraries(grad_sync_test_worker PRIVATE gaccum::comm)
gaccum_torch_pch(grad_sync_test_worker)
gaccum_target_defaults(grad_sync_test_worker)
gaccum_test(integration_grad_sync LABEL integration TORCH SOURCES integration/test_grad_sync.cpp LIBS gaccum::comm)
target_compile_definitions(integration_grad_sync PRIVATE
                           GACCUM_GRAD_SYNC_WORKER="$<TARGET_FILE:grad_sync_test_worker>")
add_dependencies(integration_grad_sync grad_sync_test_worker)

gaccum_test(integration_runner LABEL integration SOURCES integration/test_runner.cpp LIBS gaccum::core
            FIXTURES torchscript)
target_compile_definitions(integration_runner PRIVATE GACCUM_TUNE="$<TARGET_FILE:gaccum-tune>")
add_dependencies(integration_runner gaccum-tune)

# Bad input: exit 2 with one line on stderr, before any rank starts.
set(G $<TARGET_FILE:gaccum-tune>)
set(_v ${G} validate -o never-written.json)
gaccum_cli_test(validate-micro-batch-0 2 "--micro-batch" --one-line-stderr -- ${_v} --micro-batch 0)
gaccum_cli_test(validate-bad-strategy 2 "--strategy.*every-step" --one-line-stderr -- ${_v} --strategy sometimes)
gaccum_cli_test(validate-bad-workload 2 "--workload: unknown workload" --one-line-stderr -- ${_v} --workload gpt-huge)
gaccum_cli_test(validate-warmup-0 2 "--warmup: must be at least 1" --one-line-stderr -- ${_v} --warmup 0)
gaccum_cli_test(validate-world-size-0 2 "--world-size" --one-line-stderr -- ${_v} --world-size 0)
gaccum_cli_test(validate-small-dataset 2 "--dataset-size: 10 samples make 0 full window" --one-line-stderr --
                ${_v} --dataset-size 10)
gaccum_cli_test(validate-steps-and-dataset 2 "excludes" --one-line-stderr -- ${_v} --dataset-size 1000 --steps 3)
gaccum_cli_test(validate-bad-dtype 2 "--dtype" --one-line-stderr -- ${_v} --dtype float16)
gaccum_cli_test(validate-bad-timeout 2 "--timeout" --one-line-stderr -- ${_v} --timeout soon)
gaccum_cli_test(validate-bad-tolerance 2 "--tolerance" --one-line-stderr -- ${_v} --tolerance lots)
gaccum_cli_test(validate-bad-partial 2 "--partial-window" --one-line-stderr -- ${_v} --partial-window keep)
gaccum_cli_test(validate-bad-optimizer 2 "--optimizer" --one-line-stderr -- ${_v} --optimizer lion)
gaccum_cli_test(validate-missing-profile 2 "missing-profile.json" --one-line-stderr -- ${_v} --profile missing-profile.json)
gaccum_cli_test(validate-missing-tune 2 "--from-tune" --one-line-stderr -- ${_v} --from-tune missing-result.json)
gaccum_cli_test(validate-bad-device 2 "--device" --one-line-stderr -- ${_v} --device tpu)
gaccum_cli_test(validate-bad-sharding 2 "--sharding: unknown sharding 'zero4'" --one-line-stderr -- ${_v} --sharding zero4)
gaccum_cli_test(validate-zero1-every-step 2 "--sharding: zero1 with every-step: zero1 keeps full gradients" --one-line-stderr --
                ${_v} --sharding zero1 --strategy every-step)
# With tune's pick cached for the workload, a --sharding/--strategy given is still the run asked
# for (once ignored: the pick ran instead, exit 0).
gaccum_cli_test(validate-plan-flags-beat-cached-pick 2 "--sharding: zero1 with every-step: zero1 keeps full gradients" -- sh -c
  "rm -rf \"$1\" && export XDG_CACHE_HOME=\"$1/cache\" && \"$0\" tune --workload mlp-small --global-batch 32 --out \"$1/t\" > /dev/null && \"$0\" validate --workload mlp-small -o \"$1/v.json\" --sharding zero1 --strategy every-step"
  ${G} ${CMAKE_CURRENT_BINARY_DIR}/pick-vs-flags)
gaccum_cli_test(validate-sharding-one-rank 2 "--sharding: zero2 at world_size 1: there is nothing to shard across" --one-line-stderr --
                ${_v} --sharding zero2 --world-size 1)
gaccum_cli_test(validate-hsdp-no-group 2 "--sharding: hsdp needs its shard group size" --one-line-stderr --
                ${_v} --sharding hsdp --world-size 4)
gaccum_cli_test(validate-bad-output-dir 2 "-o: directory '/nonexistent-dir' does not exist" --one-line-stderr --
                ${G} validate -o /nonexistent-dir/v.json)

# A tune result whose picks are mixed-precision plans: validate runs fp32 only and says so (exit 2).
gaccum_cli_test(validate-from-tune-bf16 2 "picks\\[0\\] is a zero2 bf16 plan.*validate runs every sharding in fp32" --one-line-stderr -- sh -c
  "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --sharding zero2 --out \"$1\" >/dev/null && sed -i 's/\"precision\": \"fp32\"/\"precision\": \"bf16\"/' \"$1/result.json\" && \"$0\" validate --from-tune \"$1/result.json\""
  $<TARGET_FILE:gaccum-tune> ${CMAKE_CURRENT_BINARY_DIR}/tune-out/sharded-from-tune ${CMAKE_CURRENT_SOURCE_DIR}/data)
# The same short flags as predict and check.
gaccum_cli_test(validate-short-flags 2 "--micro-batch: 4611686018427387904 is above" --one-line-stderr --
  $<TARGET_FILE:gaccum-tune> validate -b 4611686018427387904 -k 2 -p 2 -o never-written.json)

# The reference kernel (core/canary.hpp): recorded by profile, compared by validate --profile, a
# machine slower than when profiled flagged (tests/integration/machine_speed.sh says what it checks).
add_test(NAME "integration: validate compares the machine's speed with the profile's"
         COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/integration/machine_speed.sh" ${G}
                 "${CMAKE_CURRENT_BINARY_DIR}/machine-speed")
set_tests_properties("integration: validate compares the machine's speed with the profile's" PROPERTIES
                     LABELS integration PASS_REGULAR_EXPRESSION "MACHINE-SPEED-OK" TIMEOUT 300)

# Pipeline runs (runner/pipeline_run.hpp): bad layouts are refused before any rank starts (exit 2).
gaccum_cli_test(validate-pp-world 2 "--world-size: 3 ranks do not split into 2 pipeline stage" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --world-size 3)
gaccum_cli_test(validate-pp-not-blocks 2 "--pp: workload mlp-small is not a sequence of blocks" --one-line-stderr --
                ${_v} --workload mlp-small --pp 2 --world-size 2)
gaccum_cli_test(validate-pp-chunks 2 "--pp x --virtual-stages: the model's 2 blocks do not split into 4" --one-line-stderr --
                ${_v} --workload gpt-tiny --pp 2 --virtual-stages 2 --world-size 2)
gaccum_cli_test(validate-pp-few-microbatches 2 "--schedule 1f1b with --pp 4 .*--accum-steps 2" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 4 --world-size 4 --accum-steps 2)
gaccum_cli_test(validate-pp-zb 2 "--schedule zb-h1: validate runs gpipe, 1f1b and interleaved-1f1b" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --world-size 2 --schedule zb-h1)
gaccum_cli_test(validate-pp-sharded 2 "--sharding zero2: tensor/pipeline-parallel runs reduce each stage's gradients.*or shard their optimizer state \\(zero1\\)" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --world-size 4 --sharding zero2)
gaccum_cli_test(validate-pp-zero1-lone 2 "--sharding zero1: each stage needs at least 2 dp replicas to shard over \\(world_size 2 = pp 2 x tp 1 x dp 1\\): raise --world-size" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --world-size 2 --sharding zero1)
gaccum_cli_test(validate-pp-every-step 2 "--strategy every-step: a pipeline stage reduces its gradients once" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --world-size 2 --strategy every-step)
gaccum_cli_test(validate-schedule-without-pp 2 "--schedule/--virtual-stages: need --pp 2 or more" --one-line-stderr --
                ${_v} --schedule gpipe)
gaccum_cli_test(validate-pp-profile 2 "--profile: a profile's cost model prices data-parallel plans" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --world-size 2 --profile whatever.json)
gaccum_cli_test(validate-pp-warmup 2 "--warmup: a pipeline run needs at least 2 untimed steps" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --world-size 2 --warmup 1)
gaccum_cli_test(validate-tp-heads 2 "--tp 3: the model's 4 heads do not split over 3 ranks" --one-line-stderr --
                ${_v} --workload gpt-tiny --tp 3 --world-size 3)
gaccum_cli_test(validate-tp-not-blocks 2 "--tp: workload mlp-small is not a sequence of blocks" --one-line-stderr --
                ${_v} --workload mlp-small --tp 2 --world-size 2)
# A user's TorchScript model runs block by block only when its forward() provably is a chain of
# submodule calls (workloads/torchscript.cpp); otherwise --pp is refused naming what broke the chain.
gaccum_cli_test(validate-pp-torchscript-op 2 "--pp: workload torchscript is not a sequence of blocks .*tiny_cnn.pt': its forward\\(\\) runs aten::relu .*write it as a sequence of blocks" --one-line-stderr --
                ${_v} --torchscript ${GACCUM_FIXTURE_DIR}/tiny_cnn.pt --input-shape 3,16,16 --pp 2 --world-size 2)
gaccum_cli_test(validate-pp-torchscript-dropout 2 "--pp: the model's dropout \\(2 \\(Dropout\\), \\.\\.\\.\\) draws its masks from one generator" --one-line-stderr --
                ${_v} --torchscript ${GACCUM_FIXTURE_DIR}/seq_dropout.pt --input-shape 16 --pp 2 --world-size 2)
gaccum_cli_test(validate-tp-torchscript 2 "--tp 2: the runner splits the built-in gpt's attention and MLP .*run this model with --pp or --sharding" --one-line-stderr --
                ${_v} --torchscript ${GACCUM_FIXTURE_DIR}/seq_mlp.pt --input-shape 16 --tp 2 --world-size 2)
set_tests_properties("cli: validate-pp-torchscript-op" "cli: validate-pp-torchscript-dropout" "cli: validate-tp-torchscript"
                     PROPERTIES FIXTURES_REQUIRED torchscript)
gaccum_cli_test(validate-sp-without-tp 2 "--sequence-parallel: needs --tp 2 or more" --one-line-stderr --
                ${_v} --workload gpt-tiny --sequence-parallel)
gaccum_cli_test(validate-tp-world 2 "--world-size: 6 ranks do not split into 2 pipeline stage\\(s\\) of 4 tensor-parallel" --one-line-stderr --
                ${_v} --workload gpt-tiny:layers=4 --pp 2 --tp 4 --world-size 6)
