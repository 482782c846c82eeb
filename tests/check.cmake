# `gaccum-tune check` tests (included from tests/CMakeLists.txt): unit tests of the parsers and
# of each check against hand-computed numbers (unit/fake_cost_model.hpp), CLI expectations for
# the exit-code matrix and every bad-input case, a golden JSON verdict, a two-rank --distributed
# run started like torchrun, and a libFuzzer run over the job / DeepSpeed / profile parsers.
gaccum_test(unit_check LABEL unit SOURCES unit/test_check_parsers.cpp unit/test_check_checks.cpp
                                           unit/test_framework_configs.cpp unit/test_framework_emit.cpp LIBS gaccum::check)

set(G $<TARGET_FILE:gaccum-tune>)
set(D "${CMAKE_CURRENT_SOURCE_DIR}/data")
set(C "${CMAKE_CURRENT_SOURCE_DIR}/data/check")
set(X "${PROJECT_SOURCE_DIR}/examples")
set(P "${D}/small-profile.json")

# Exit-code matrix: 0 (pass, or warnings without --strict), 1 (a failure, or warnings with
# --strict), 2 (bad input).
gaccum_cli_test(check-pass 0 "verdict: PASS \\(0 fail, 0 warn, 5 pass, 3 skip\\) -> exit 0" --
  ${G} check --profile ${P} -b 32 -k 1 -p 2 --noise-scale 1000)
gaccum_cli_test(check-warn 0 "throughput vs best +WARN .*b=32 k=1 p=2 overlap" --
  ${G} check --profile ${P} -b 4 -k 8 -p 2 --noise-scale 1000)
gaccum_cli_test(check-warn-strict 1 "verdict: WARN .*--strict: warnings fail\\) -> exit 1" --
  ${G} check --profile ${P} -b 4 -k 8 -p 2 --noise-scale 1000 --strict)
gaccum_cli_test(check-fail-arithmetic 1 "batch arithmetic +FAIL +micro_batch 4 x accum_steps 8 x world_size 2 = 64 != global_batch 96" --
  ${G} check --profile ${P} -b 4 -k 8 -p 2 --global-batch 96)
gaccum_cli_test(check-fail-memory 1 "peak memory +FAIL +predicted peak 22.9 MiB per rank > cap 16.0 MiB: out of memory" --
  ${G} check --profile ${P} -b 32 -k 1 -p 2 --memory-cap 16MiB)
gaccum_cli_test(check-fail-every-step 1 "gradient sync strategy +FAIL +every-step \\(DDP without no_sync\\) allreduces on each of the 4 micro-steps" --
  ${G} check --profile ${P} -b 8 -k 4 -p 2 --strategy every-step)
gaccum_cli_test(check-fail-lr 1 "learning rate scaling +FAIL +lr 0.0003 is 0.35x the square-root scaling" --
  ${G} check --profile ${P} -b 4 -k 8 -p 2 --lr 3e-4 --lr-ref 3e-4@8)
gaccum_cli_test(check-epoch-remainder 0 "last accumulation window +WARN +dataset_size 10000 = 156 x global_batch 64 \\+ 16" --
  ${G} check --profile ${P} -b 4 -k 8 -p 2 --dataset-size 10000)
gaccum_cli_test(check-no-model 0 "no cost model \\(memory, efficiency and strategy checks skipped\\)" --
  ${G} check -b 4 -k 8 -p 2)
gaccum_cli_test(check-json 0 "\"schema\": \"gaccum-tune/check\"" --
  ${G} check --profile ${P} -b 4 -k 8 -p 2 --json)
gaccum_cli_test(check-help 0 "Exit codes: 0 no check failed, 1 a check failed" -- ${G} check --help)

# Job files (JSON and YAML give the same verdict), sources in the JSON, flags over the job file.
gaccum_cli_test(check-job-yaml 0 "micro_batch +8 +job file .*gpt-tiny-cpu.yaml" --
  ${G} check --job ${X}/jobs/gpt-tiny-cpu.yaml --profile ${P})
gaccum_cli_test(check-job-json-same 0 "JOBS-SAME" -- sh -c
  "\"$0\" check --job \"$1/jobs/gpt-tiny-cpu.yaml\" --profile \"$2\" --json | grep -v gpt-tiny-cpu > \"$3/check-y.json\" && \"$0\" check --job \"$1/jobs/gpt-tiny-cpu.json\" --profile \"$2\" --json | grep -v gpt-tiny-cpu > \"$3/check-j.json\" && cmp \"$3/check-y.json\" \"$3/check-j.json\" && echo JOBS-SAME"
  ${G} ${X} ${P} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-flag-over-job 0 "FLAG-OVER-JOB-OK" -- sh -c
  "\"$0\" check --job \"$1\" --profile \"$2\" -k 2 --global-batch 32 --json | grep -A2 '\"accum_steps\": {' | tr -d '\\n ' | grep -q '\"value\":2,\"source\":\"flag--accum-steps\"' && echo FLAG-OVER-JOB-OK"
  ${G} ${X}/jobs/gpt-tiny-cpu.yaml ${P})
gaccum_cli_test(check-unknown-key-warns 0 "^  .*job-unknown-key.yaml: unknown key 'micro_bach' ignored \\(did you mean 'micro_batch'\\?\\)" --
  ${G} check --job ${C}/job-unknown-key.yaml)
# A warning is printed once: in the table's "warnings:" block, or on stderr beside --json.
gaccum_cli_test(check-warning-once 0 "^TABLE 1 JSON-STDERR 1 JSON 1$" -- sh -c
  "t=$(\"$0\" check --job \"$1\" 2>&1 | grep -c \"unknown key 'micro_bach'\") && e=$(\"$0\" check --job \"$1\" --json 2>&1 >/dev/null | grep -c \"unknown key 'micro_bach'\") && j=$(\"$0\" check --job \"$1\" --json 2>/dev/null | grep -c \"unknown key 'micro_bach'\") && echo TABLE $t JSON-STDERR $e JSON $j"
  ${G} ${C}/job-unknown-key.yaml)

# DeepSpeed: the world size from a flag or the launcher's environment, DeepSpeed's own rule.
gaccum_cli_test(check-deepspeed 0 "accum_steps +16 +deepspeed .*ds_config.json gradient_accumulation_steps" --
  ${G} check --deepspeed-config ${X}/deepspeed/ds_config.json --world-size 8)
gaccum_cli_test(check-deepspeed-env 0 "world_size +8 +environment WORLD_SIZE" -- env RANK=0 WORLD_SIZE=8
  ${G} check --deepspeed-config ${X}/deepspeed/ds_config.json)
gaccum_cli_test(check-deepspeed-slurm 0 "world_size +8 +environment SLURM_NTASKS \\(slurm\\)" -- env -u RANK -u WORLD_SIZE SLURM_PROCID=3 SLURM_NTASKS=8
  ${G} check --deepspeed-config ${X}/deepspeed/ds_config.json)
gaccum_cli_test(check-deepspeed-spec 0 "verdict: WARN \\(0 fail, 1 warn, 5 pass, 2 skip\\)" --
  ${G} check --deepspeed-config ${X}/deepspeed/ds_config.json --world-size 8 --spec ${X}/specs/gpt-1.3b.json
  --cluster ${X}/clusters/dgx-h100-1node.json --memory-cap 90% --lr-ref 3e-4@256 --dataset-size 10000000)
gaccum_cli_test(check-job-deepspeed-yaml 0 "micro_batch +4 +deepspeed .*ds_config.json train_micro_batch_size_per_gpu" --
  ${G} check --job ${X}/jobs/gpt-1.3b-deepspeed.yaml)
gaccum_cli_test(check-job-spec-json 0 "gaccum-tune check: gpt2-small \\(spec" -- ${G} check --job ${X}/jobs/gpt2-small-dgx.json)

# The profile-first path shared with `tune` (cli/profile_cache.cpp): the job's workload is
# profiled once (real ranks, ~30 s), the second run reads the cache.
gaccum_cli_test(check-workload-cached 0 "CHECK-CACHED-OK" -- sh -c
  "rm -rf \"$1\" && export XDG_CACHE_HOME=\"$1/cache\" && ( \"$0\" check --job \"$2/jobs/gpt-tiny-cpu.yaml\" > /dev/null || [ $? = 1 ] ) && \"$0\" check --job \"$2/jobs/gpt-tiny-cpu.yaml\" --json | grep -q '\"cached\": true' && echo CHECK-CACHED-OK"
  ${G} ${CMAKE_CURRENT_BINARY_DIR}/check-first ${X})
set_tests_properties("cli: check-workload-cached" PROPERTIES TIMEOUT 900)

# Bad input: exit 2, one line on stderr naming the field.
gaccum_cli_test(check-bad-json 2 "bad-malformed.json: not valid JSON" --one-line-stderr -- ${G} check --job ${C}/bad-malformed.json)
gaccum_cli_test(check-bad-yaml 2 "bad-malformed.yaml: not valid YAML" --one-line-stderr -- ${G} check --job ${C}/bad-malformed.yaml)
gaccum_cli_test(check-bad-missing-batch 2 "micro_batch: not given" --one-line-stderr -- ${G} check --job ${C}/job-missing-batch.yaml)
gaccum_cli_test(check-bad-missing-path 2 "torchscript: missing required field 'path'" --one-line-stderr --
  ${G} check --job ${C}/job-torchscript-no-path.yaml)
gaccum_cli_test(check-bad-missing-world 2 "world_size: not given" --one-line-stderr -- env -u RANK -u WORLD_SIZE -u SLURM_NTASKS ${G} check -b 4 -k 2)
gaccum_cli_test(check-bad-zero-flag 2 "--micro-batch: invalid value '0'" --one-line-stderr -- ${G} check -b 0 -k 2 -p 2)
gaccum_cli_test(check-bad-zero-job 2 "job-zero.json.micro_batch: expected a positive integer" --one-line-stderr -- ${G} check --job ${C}/job-zero.json)
gaccum_cli_test(check-bad-negative-flag 2 "--accum-steps: invalid value '-2'" --one-line-stderr -- ${G} check -b 4 --accum-steps=-2 -p 2)
gaccum_cli_test(check-bad-negative-job 2 "job-negative.yaml.accum_steps" --one-line-stderr -- ${G} check --job ${C}/job-negative.yaml)
gaccum_cli_test(check-bad-fraction-flag 2 "--world-size: invalid value '2.5'" --one-line-stderr -- ${G} check -b 4 -p 2.5)
gaccum_cli_test(check-bad-fraction-job 2 "job-fraction.yaml.world_size: expected an integer, got 2.5" --one-line-stderr -- ${G} check --job ${C}/job-fraction.yaml)
gaccum_cli_test(check-bad-overflow-flag 2 "--global-batch: invalid value '99999999999999999999': expected an integer below 2\\^63" --one-line-stderr --
  ${G} check -b 4 -p 2 --global-batch 99999999999999999999)
gaccum_cli_test(check-bad-overflow-job 2 "job-overflow.json.global_batch: 1e\\+20 does not fit in 64 bits" --one-line-stderr -- ${G} check --job ${C}/job-overflow.json)
gaccum_cli_test(check-bad-overflow-product 2 "micro_batch 16777216 x accum_steps 16777216 x world_size 16777216 overflows 64 bits" --one-line-stderr --
  ${G} check -b 16777216 -k 16777216 -p 16777216)
gaccum_cli_test(check-bad-implausible 2 "micro_batch \\(from flag --micro-batch\\): 4294967296 is implausibly large" --one-line-stderr --
  ${G} check -b 4294967296 -p 2)
gaccum_cli_test(check-bad-deepspeed-inconsistent 2 "ds-inconsistent.json: inconsistent batch fields: train_batch_size 512 != train_micro_batch_size_per_gpu 4 x gradient_accumulation_steps 8 x world_size 8" --one-line-stderr --
  ${G} check --deepspeed-config ${C}/ds-inconsistent.json --world-size 8)
gaccum_cli_test(check-bad-deepspeed-missing 2 "missing required field 'train_batch_size' or 'train_micro_batch_size_per_gpu'" --one-line-stderr --
  ${G} check --deepspeed-config ${C}/ds-missing-batch.json --world-size 8)
gaccum_cli_test(check-bad-deepspeed-no-world 2 "world_size: needed to apply DeepSpeed's batch rule" --one-line-stderr --
  env -u RANK -u WORLD_SIZE -u SLURM_NTASKS ${G} check --deepspeed-config ${C}/ds-missing-batch.json)
gaccum_cli_test(check-bad-other-workload 2 "profile is for workload 'gpt-tiny' \\(hash 00000000deadbeef\\), not 'mlp-small'" --one-line-stderr --
  ${G} check --job ${C}/job-other-workload.yaml)
gaccum_cli_test(check-bad-other-workload-flag 2 "not 'gpt-tiny:layers=9' .*layers = 2 in the profile" --one-line-stderr --
  ${G} check --profile ${P} --workload gpt-tiny:layers=9 -b 4 -p 2)
gaccum_cli_test(check-bad-profile-version 2 "profile schema version 99 is not supported" --one-line-stderr --
  ${G} check --profile ${C}/profile-v99.json -b 4 -p 2)
gaccum_cli_test(check-bad-profile-malformed 2 "malformed-profile.json" --one-line-stderr --
  ${G} check --profile ${D}/malformed-profile.json -b 4 -p 2)
gaccum_cli_test(check-bad-optimizer 2 "--optimizer: unknown optimizer 'rmsprop'" --one-line-stderr -- ${G} check -b 4 -p 2 --optimizer rmsprop)
gaccum_cli_test(check-bad-lr-ref 2 "--lr-ref: invalid value '3e-4'" --one-line-stderr -- ${G} check -b 4 -p 2 --lr 1e-3 --lr-ref 3e-4)
gaccum_cli_test(check-bad-missing-job 2 "--job: cannot read" --one-line-stderr -- ${G} check --job ${C}/no-such-job.yaml)
gaccum_cli_test(check-bad-distributed-no-env 2 "--distributed: no launcher environment" --one-line-stderr --
  env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS -u OMPI_COMM_WORLD_RANK -u PMI_RANK ${G} check --distributed -b 4 -p 2)

# The golden verdict: byte-identical JSON for the same inputs (run from the job's directory so
# the paths in it are relative). Regenerate: cd tests/data/check && gaccum-tune check --job
# job-small.yaml --json > verdict-golden.json
gaccum_cli_test(check-golden-json 0 "GOLDEN-OK" -- sh -c
  "cd \"$1\" && \"$0\" check --job job-small.yaml --json > \"$2/check-golden-out.json\" && diff -u verdict-golden.json \"$2/check-golden-out.json\" && echo GOLDEN-OK"
  ${G} ${C} ${CMAKE_CURRENT_BINARY_DIR})

# --distributed with two rank processes started as torchrun starts them.
foreach(mode agree mismatch badinput missing probe-badinput)
  add_test(NAME "integration: check --distributed ${mode}"
           COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/check/distributed_check.sh" ${G} ${P} ${mode})
  set_tests_properties("integration: check --distributed ${mode}" PROPERTIES LABELS integration TIMEOUT 180
                       PASS_REGULAR_EXPRESSION "DISTRIBUTED-${mode}-OK")
endforeach()

# libFuzzer over the job / DeepSpeed / profile parsers, built with clang++ as its own CMake
# project (tests/fuzz/), only when clang++ can link -fsanitize=fuzzer.
find_program(GACCUM_CLANGXX NAMES clang++ clang++-14)
set(GACCUM_HAVE_LIBFUZZER OFF)
if(GACCUM_CLANGXX)
  set(_probe "${CMAKE_CURRENT_BINARY_DIR}/fuzz-probe")
  file(WRITE "${_probe}.cpp"
       "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
  execute_process(COMMAND "${GACCUM_CLANGXX}" -fsanitize=fuzzer,address,undefined "${_probe}.cpp" -o "${_probe}"
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(GACCUM_HAVE_LIBFUZZER ON)
  endif()
endif()
if(GACCUM_HAVE_LIBFUZZER)
  include(ExternalProject)
  ExternalProject_Add(check_parsers_fuzz
    SOURCE_DIR "${CMAKE_CURRENT_SOURCE_DIR}/fuzz"
    BINARY_DIR "${CMAKE_CURRENT_BINARY_DIR}/fuzz"
    CMAKE_ARGS -DCMAKE_CXX_COMPILER=${GACCUM_CLANGXX} -DGACCUM_SOURCE_DIR=${PROJECT_SOURCE_DIR}
    BUILD_ALWAYS ON
    INSTALL_COMMAND "")
  add_test(NAME "fuzz: check parsers (20000 runs)"
           COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_fuzz.sh" "${CMAKE_CURRENT_BINARY_DIR}/fuzz/check_parsers_fuzz" 20000
                   "${X}/jobs" "${X}/deepspeed" "${P}" "${C}" "${CMAKE_CURRENT_SOURCE_DIR}/fuzz/seeds"
                   "${PROJECT_SOURCE_DIR}/examples/specs" "${PROJECT_SOURCE_DIR}/examples/clusters")
  set_tests_properties("fuzz: check parsers (20000 runs)" PROPERTIES LABELS integration TIMEOUT 600
                       PASS_REGULAR_EXPRESSION "FUZZ-OK")
  message(STATUS "check: libFuzzer target check_parsers_fuzz (${GACCUM_CLANGXX})")
else()
  message(STATUS "check: clang++ with libFuzzer not found: the parser fuzz test is not built")
endif()

# Plans from a DeepSpeed config: the LLaMA-2-7B job at ZeRO stage 3 + bf16 fits; the same job at
# stage 0 fails peak memory and names the ZeRO stage that fits. On the H100 cluster the GPU compute
# model exposes part of stage 3's per-micro-step reduce-scatters (calibrated overlap < 1), so the
# config is a throughput warning (not a failure) whose fix keeps the global batch.
set(F ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh)
gaccum_cli_test(check-deepspeed-zero3 0 "peak memory +PASS .*throughput vs best +WARN .*global_batch 1024 on 64 ranks.*fix: set train_micro_batch_size_per_gpu 2 and gradient_accumulation_steps 8.*sharding +zero3 .*verdict: WARN" -- ${F} ${G} check --deepspeed-config
  ${C}/ds-llama2-7b-zero3-b1.json --world-size 64 --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json)
# The example as shipped is the best setting that fits (micro_batch 4 would not: the fp32 loss's
# 16k x 32000 logits at its peak) and passes.
gaccum_cli_test(check-deepspeed-zero3-example 0 "peak memory +PASS .*micro_batch up to 3 fits.*throughput vs best +PASS .*verdict: PASS" -- ${F} ${G} check --deepspeed-config
  ${X}/deepspeed/llama2-7b-zero3.json --world-size 64 --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json)
gaccum_cli_test(check-deepspeed-stage0 1 "peak memory +FAIL .*fix: shard the model: zero[123] with .* below the 79.6 GiB hard limit. run as: DeepSpeed ZeRO stage [123]" --
  ${F} ${G} check --deepspeed-config ${C}/ds-llama2-7b-stage0.json --world-size 64 --spec ${X}/specs/llama2-7b.json
  --cluster ${X}/clusters/h100-8node-ib400.json)
gaccum_cli_test(check-sharding-flag 0 "sharding +zero3 +flag --sharding" --
  ${G} check --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 16 -p 64 --sharding fsdp
  --strategy every-step)
# A HuggingFace-style DeepSpeed config with "auto" batch fields: the flags fill them; without them
# the error names the flags that would.
gaccum_cli_test(check-deepspeed-auto 0 "micro_batch +4 +flag --micro-batch" -- ${G} check --deepspeed-config ${C}/ds-hf-auto.json
  --profile ${P} -b 4 -k 8 -p 2)
gaccum_cli_test(check-deepspeed-auto-unfilled 2 "\"auto\" or absent and nothing fills them: pass --global-batch" --one-line-stderr --
  ${G} check --deepspeed-config ${C}/ds-hf-auto.json --profile ${P} -p 2)
gaccum_cli_test(check-json-bad-input 2 "\"verdict\": \"error\".*\"exit_code\": 2" -- ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh
  ${G} check --deepspeed-config ${C}/ds-hf-auto.json --profile ${P} -p 2 --json)

# `check --json` answers with an error verdict also when CLI11 rejects the flags, and unexpected
# arguments are named in the order they were typed.
gaccum_cli_test(check-json-bad-flag 2 "\"verdict\": \"error\".*\"error\": \"unexpected arguments: --bogus 1 " --
  ${CMAKE_CURRENT_SOURCE_DIR}/cli/flat.sh ${G} check --json --bogus 1)
gaccum_cli_test(validate-extras-in-order 2 "unexpected arguments: --bogus x extra \\(see gaccum-tune validate --help\\)" --one-line-stderr --
  ${G} validate --bogus x -b 2 extra)

# Nothing silent: the world size comes from the cluster when nothing else gives it, an "auto"
# bf16 is a 16-bit run assumed (with its source), and the device memory is an input with its
# source; a profile that measured only fp32 prices it at fp32 and says so.
gaccum_cli_test(check-world-size-from-cluster 0 "world_size +64 +cluster .*h100-8node-ib400.json \\(8 nodes x 8 GPUs; from flag --cluster\\)" --
  ${G} check --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8 --precision bf16
  --sharding zero1)
gaccum_cli_test(check-deepspeed-auto-bf16 0 "precision +bf16 +deepspeed .*ds-hf-auto.json bf16.enabled \"auto\" \\(assumed on" --
  ${G} check --deepspeed-config ${C}/ds-hf-auto.json --spec ${X}/specs/llama2-7b.json
  --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8)
gaccum_cli_test(check-deepspeed-auto-fp32-flag 0 "precision +fp32 +flag --precision" --
  ${G} check --deepspeed-config ${C}/ds-hf-auto.json --spec ${X}/specs/llama2-7b.json
  --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8 --precision fp32)
gaccum_cli_test(check-deepspeed-auto-fp32-profile 0 "precision +fp32 +deepspeed .*\"auto\" \\(assumed on.*; but this profile measured fp32 .*: priced at fp32" --
  ${G} check --deepspeed-config ${C}/ds-hf-auto.json --profile ${P} -b 4 -k 8 -p 2)
gaccum_cli_test(check-device-memory-input 0 "device_memory +79.6 GiB +cluster .*h100-8node-ib400.json \\(NVIDIA H100" --
  ${G} check --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8 -p 64
  --precision bf16 --sharding zero1)
gaccum_cli_test(check-unconfirmed-caveat 0 "CAVEAT: the predicted time and memory of this job are priced from 1 measurement" --
  ${G} check --profile ${D}/disturbed-profile.json -b 32 -k 8 -p 2)

# The job's framework: a DeepSpeed config means DeepSpeed (its ZeRO 2 every-step is its only way,
# not a FAIL, and no no_sync fix); --framework refuses a plan the framework cannot run, with its fix.
gaccum_cli_test(check-framework-deepspeed-config 0 "FRAMEWORK-DS-OK" -- sh -c
  "\"$0\" check --deepspeed-config \"$1\" --spec \"$2/specs/llama2-7b.json\" --cluster \"$2/clusters/h100-8node-ib400.json\" -b 1 -k 8 > \"$3/check-fw-ds.txt\" && grep -Eq 'framework +deepspeed +deepspeed .*ds-hf-auto.json \\(the engine that reads it\\)' \"$3/check-fw-ds.txt\" && grep -q 'PASS    every-step under zero2 (DeepSpeed.s only way: DeepSpeed has no no_sync()' \"$3/check-fw-ds.txt\" && ! grep -q 'fix: no_sync' \"$3/check-fw-ds.txt\" && echo FRAMEWORK-DS-OK"
  ${G} ${C}/ds-hf-auto.json ${X} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-framework-refuses 1 "FAIL    DeepSpeed cannot run strategy overlap under zero3: DeepSpeed has no no_sync\\(\\)" --
  ${G} check --framework deepspeed --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8
  --sharding zero3 --strategy overlap --precision bf16)
gaccum_cli_test(check-framework-refuses-fix 1 "fix: strategy every-step: DeepSpeed ZeRO stage 3$" --
  ${G} check --framework deepspeed --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8
  --sharding zero3 --strategy overlap --precision bf16)
gaccum_cli_test(check-framework-horovod-fix 1 "fix: reduce once per optimizer step: Horovod backward_passes_per_step=k \\(strategy fused\\)$" --
  ${G} check --framework horovod --profile ${P} -b 4 -k 8 -p 2 --strategy every-step)
# A DeepSpeed job's fix is in the config's own fields.
gaccum_cli_test(check-framework-deepspeed-fix-terms 0 "fix: set train_micro_batch_size_per_gpu 2 and gradient_accumulation_steps 4$" --
  ${G} check --deepspeed-config ${C}/ds-hf-auto.json --spec ${X}/specs/llama2-7b.json
  --cluster ${X}/clusters/h100-8node-ib400.json -b 1 -k 8)
gaccum_cli_test(check-job-framework 1 "FAIL    DeepSpeed cannot run strategy overlap under zero3" --
  ${G} check --job ${C}/job-framework.yaml --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json)
gaccum_cli_test(check-job-framework-bad 2 "job-bad-framework.yaml.framework: unknown framework 'jax'" --one-line-stderr -- sh -c
  "printf 'micro_batch: 1\\nframework: jax\\n' > \"$1/job-bad-framework.yaml\" && exec \"$0\" check --job \"$1/job-bad-framework.yaml\""
  ${G} ${CMAKE_CURRENT_BINARY_DIR})

# The trainers' files (what tune --emit writes): bad fields are one line naming the file and field.
gaccum_cli_test(check-hf-args-bad-fsdp 2 "hf-bad.json: fsdp \"zero_shard auto_wrap\": expected full_shard, shard_grad_op, hybrid_shard or no_shard$" --one-line-stderr -- sh -c
  "printf '{\"per_device_train_batch_size\": 2, \"fsdp\": \"zero_shard auto_wrap\"}' > \"$1/hf-bad.json\" && exec \"$0\" check --hf-args \"$1/hf-bad.json\" -p 8"
  ${G} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-hf-args-bad-batch 2 "hf-bad-b.json: per_device_train_batch_size: expected a positive integer, got 0$" --one-line-stderr -- sh -c
  "printf '{\"per_device_train_batch_size\": 0}' > \"$1/hf-bad-b.json\" && exec \"$0\" check --hf-args \"$1/hf-bad-b.json\" -p 8"
  ${G} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-accelerate-bad-type 2 "acc-bad.yaml: distributed_type TPU: priced here are NO, MULTI_GPU, MULTI_CPU, FSDP and DEEPSPEED$" --one-line-stderr -- sh -c
  "printf 'distributed_type: TPU\\nnum_processes: 8\\n' > \"$1/acc-bad.yaml\" && exec \"$0\" check --accelerate-config \"$1/acc-bad.yaml\" -b 2"
  ${G} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-lightning-bad-strategy 2 "pl-bad.yaml: trainer.strategy 'horovod': priced here are auto, ddp\\*, fsdp and deepspeed" --one-line-stderr -- sh -c
  "printf 'trainer:\\n  devices: 8\\n  strategy: horovod\\n' > \"$1/pl-bad.yaml\" && exec \"$0\" check --lightning-config \"$1/pl-bad.yaml\" -b 2"
  ${G} ${CMAKE_CURRENT_BINARY_DIR})
gaccum_cli_test(check-two-trainer-files 2 "give the one config the job launches with$" --one-line-stderr -- sh -c
  "printf 'trainer:\\n  devices: 8\\n' > \"$1/pl-two.yaml\" && exec \"$0\" check --lightning-config \"$1/pl-two.yaml\" --hf-args \"$1/pl-two.yaml\" -b 2"
  ${G} ${CMAKE_CURRENT_BINARY_DIR})
# Lightning: devices x num_nodes is the world size; FSDP reduces on every micro-batch.
gaccum_cli_test(check-lightning-fsdp 0 "world_size +16 +lightning config .*trainer.devices x trainer.num_nodes.*strategy +every-step +lightning config" -- sh -c
  "printf 'trainer:\\n  devices: 8\\n  num_nodes: 2\\n  strategy: fsdp\\n  precision: bf16-mixed\\n  accumulate_grad_batches: 4\\n' > \"$1/pl-fsdp.yaml\" && \"$0\" check --lightning-config \"$1/pl-fsdp.yaml\" -b 2 --spec \"$2/specs/llama2-7b.json\" --cluster \"$2/clusters/h100-8node-ib400.json\" | tr -s '\\n' ' '"
  ${G} ${CMAKE_CURRENT_BINARY_DIR} ${X})
# Nothing chose an optimizer: check prints the one the model prices (the spec's adamw), not "adam default".
gaccum_cli_test(check-spec-optimizer 0 "optimizer +adamw +the spec's optimizer \\(.*llama2-7b.json\\)" -- ${F} ${G} check
  --spec ${X}/specs/llama2-7b.json --cluster ${X}/clusters/h100-8node-ib400.json -b 2 -k 4 -p 8 --sharding zero3)
