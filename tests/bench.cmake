# Benchmark smoke tests (included from tests/CMakeLists.txt): the reduced, fast versions of the
# issue-8 benchmark drivers in bench/ run against the built gaccum-tune. They fail on crashes,
# broken or missing output, failed correctness checks, a fit-but-exceeded config (accuracy) and a
# window-0 loss mismatch with PyTorch DDP (ddp_compare), never on timing noise: error
# percentages, regret and the throughput ratio are reported, not gated. The full benchmarks are
# documented commands (bench/run-all, each driver's docstring), run on a quiet machine.
# Also here: CLI expectations for the validate changes the benchmarks needed (--torchscript,
# the reported loss, token_normalisation with one micro-batch per window).
find_package(Python3 3.8 COMPONENTS Interpreter)
set(G $<TARGET_FILE:gaccum-tune>)
set(_bench_out "${CMAKE_CURRENT_BINARY_DIR}/bench-smoke")

if(Python3_Interpreter_FOUND)
  add_test(NAME "bench: accuracy smoke"
           COMMAND ${Python3_EXECUTABLE} "${PROJECT_SOURCE_DIR}/bench/accuracy.py" --smoke --reprofile
                   --gaccum ${G} --out-dir "${_bench_out}/accuracy" --profile-dir "${_bench_out}/accuracy-profiles")
  add_test(NAME "bench: regret smoke"
           COMMAND ${Python3_EXECUTABLE} "${PROJECT_SOURCE_DIR}/bench/regret.py" --smoke
                   --gaccum ${G} --out-dir "${_bench_out}/regret")
  # Sharded plans: gated on correctness and byte-exact memory (deterministic), not on step time.
  add_test(NAME "bench: sharded smoke"
           COMMAND ${Python3_EXECUTABLE} "${PROJECT_SOURCE_DIR}/bench/sharded.py" --smoke
                   --gaccum ${G} --out-dir "${_bench_out}/sharded" --profile-dir "${_bench_out}/sharded-profiles")
  # Pipeline schedules: gated on every check and byte-exact stage memory, not on timing.
  add_test(NAME "bench: pipeline smoke"
           COMMAND ${Python3_EXECUTABLE} "${PROJECT_SOURCE_DIR}/bench/pipeline.py" --smoke
                   --gaccum ${G} --out-dir "${_bench_out}/pipeline")
  set_tests_properties("bench: accuracy smoke" "bench: regret smoke" "bench: sharded smoke" "bench: pipeline smoke" PROPERTIES
                       LABELS integration TIMEOUT 900 RUN_SERIAL TRUE)
  # Published GPU runs (bench/published.py): every row priced with the shipped calibration, none
  # dropped silently; CSV, JSON and the chart written. No fit here (the full run cross-validates).
  add_test(NAME "bench: published smoke"
           COMMAND ${Python3_EXECUTABLE} "${PROJECT_SOURCE_DIR}/bench/published.py" --smoke
                   --gaccum ${G} --out-dir "${_bench_out}/published")
  set_tests_properties("bench: published smoke" PROPERTIES LABELS integration TIMEOUT 300
                       PASS_REGULAR_EXPRESSION "published runs: 226 priced, 0 not priced.*shipped calibration.*226 rows.*file llm-foundry-mpt.json +216 rows.*file megatron-narayanan2021-table1.json +10 rows.*meg21-t1-145.6b +tp 8 x pp 8 interleaved-1f1b.*groups differing only in micro_batch: [0-9]+.*wrote .*published.svg")

  # The cores survey the benchmarks record (bench/vcpu_survey.cpp), through benchlib as they call
  # it: 1 second, its JSON summary read back; a bad argument is exit 2.
  if(GACCUM_BUILD_BENCH)
    add_test(NAME "bench: vcpu_survey smoke"
             COMMAND ${Python3_EXECUTABLE} -c "import sys, os, shutil, subprocess, tempfile; sys.path.insert(0, sys.argv[1]); import benchlib as bl; d = tempfile.mkdtemp(); j = bl.vcpu_survey(sys.argv[2], 1, os.path.join(d, 's.json')); assert j.get('core_seconds', 0) >= 1 and j['slowest_ratio'] >= 1 and 'ratios' not in j, j; print(bl.describe_survey(j)); shutil.rmtree(d); assert subprocess.run([sys.argv[3], 'nope'], capture_output=True).returncode == 2; print('SURVEY-OK')"
                     "${PROJECT_SOURCE_DIR}/bench" "${CMAKE_BINARY_DIR}/gaccum-tune" $<TARGET_FILE:vcpu_survey>)
    set_tests_properties("bench: vcpu_survey smoke" PROPERTIES LABELS integration TIMEOUT 120
                         PASS_REGULAR_EXPRESSION "SURVEY-OK")
  endif()

  # The DDP side needs PyTorch (Debian's python3-torch at /usr/bin/python3).
  find_program(GACCUM_BENCH_TORCH_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  set(_torch_rc 1)
  if(GACCUM_BENCH_TORCH_PYTHON)
    execute_process(COMMAND "${GACCUM_BENCH_TORCH_PYTHON}" -c "import torch.distributed as d; assert d.is_gloo_available()"
                    RESULT_VARIABLE _torch_rc OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(_torch_rc EQUAL 0)
    add_test(NAME "bench: ddp_compare smoke"
             COMMAND ${Python3_EXECUTABLE} "${PROJECT_SOURCE_DIR}/bench/ddp_compare.py" --smoke
                     --python "${GACCUM_BENCH_TORCH_PYTHON}" --gaccum ${G} --out-dir "${_bench_out}/ddp")
    set_tests_properties("bench: ddp_compare smoke" PROPERTIES
                         LABELS integration TIMEOUT 600 RUN_SERIAL TRUE)
  else()
    message(STATUS "no python3 with torch.distributed (Gloo) at /usr/bin: bench ddp_compare smoke test not added")
  endif()
else()
  message(STATUS "no Python 3.8+ interpreter: benchmark smoke tests not added")
endif()

# validate --torchscript (the DDP comparison's model) and its loss in validation.json.
set(_fx "${GACCUM_FIXTURE_DIR}/tiny_cnn.pt")
gaccum_cli_test(validate-torchscript-loss 0 "VALIDATE-LOSS-OK" -- sh -c
  "\"$0\" validate --torchscript \"$1\" --input-shape 3,16,16 --micro-batch 2 --accum-steps 2 --world-size 2 --steps 1 --warmup 1 --threads-per-rank 1 -o \"$2/ts-loss.json\" > /dev/null && grep -q '\"first_window\": [0-9]' \"$2/ts-loss.json\" && grep -q '\"loss\": [0-9]' \"$2/ts-loss.json\" && echo VALIDATE-LOSS-OK"
  ${G} ${_fx} ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties("cli: validate-torchscript-loss" PROPERTIES FIXTURES_REQUIRED torchscript TIMEOUT 300)
gaccum_cli_test(validate-torchscript-missing-file 2 "--torchscript: a TorchScript file is required" --one-line-stderr --
  ${G} validate --workload torchscript -o never-written.json)
gaccum_cli_test(validate-torchscript-with-preset 2 "--torchscript: use it with --workload torchscript" --one-line-stderr --
  ${G} validate --workload mlp-small --torchscript model.pt -o never-written.json)
# gpt with accum_steps 1 on one rank: the two normalisations coincide, so the check is n/a, not a failure.
gaccum_cli_test(validate-gpt-one-micro-batch 0 "n/a +token_normalisation +one micro-batch per window" --
  ${G} validate --workload gpt-tiny --micro-batch 2 --accum-steps 1 --world-size 1 --steps 1 --warmup 1
  -o ${CMAKE_CURRENT_BINARY_DIR}/gpt-k1-p1.json)

# Tool speed, smoke versions: each Google Benchmark program runs briefly (its numbers are printed,
# never gated), and bench/tune-speed times a cold and a cached `tune` and `check` (about 40 s).
if(GACCUM_BUILD_BENCH)
  foreach(_b bench_predict bench_tuner bench_check)
    add_test(NAME "bench: ${_b} smoke" COMMAND $<TARGET_FILE:${_b}> --benchmark_min_time=0.01)
    set_tests_properties("bench: ${_b} smoke" PROPERTIES LABELS integration TIMEOUT 300)
  endforeach()
endif()
add_test(NAME "bench: tune-speed smoke"
         COMMAND "${PROJECT_SOURCE_DIR}/bench/tune-speed" "${PROJECT_BINARY_DIR}" "${_bench_out}/tune-speed")
set_tests_properties("bench: tune-speed smoke" PROPERTIES LABELS integration TIMEOUT 600 RUN_SERIAL TRUE
                     PASS_REGULAR_EXPRESSION "tune-speed gpt-tiny: tune cold [0-9.]+ s")
