# The user's journeys end to end (included from tests/CMakeLists.txt; tests/journeys/*.sh say what
# each asserts): a causal LM of one's own through profile -> tune -> validate; a 64-GPU plan of a
# spec through tune -> check; a HuggingFace-style DeepSpeed config with "auto" everywhere through
# check and tune.
set(G $<TARGET_FILE:gaccum-tune>)
set(J "${CMAKE_CURRENT_BINARY_DIR}/journeys")
set(JX "${PROJECT_SOURCE_DIR}/examples")
gaccum_cli_test(journey-own-causal-lm 0 "JOURNEY-OWN-LM-OK" --
  "${CMAKE_CURRENT_SOURCE_DIR}/journeys/own_causal_lm.sh" ${G} ${J}/own-lm "${GACCUM_FIXTURE_DIR}/causal_lm.pt")
set_tests_properties("cli: journey-own-causal-lm" PROPERTIES FIXTURES_REQUIRED torchscript TIMEOUT 600)
gaccum_cli_test(journey-64-gpus 0 "JOURNEY-64-GPUS-OK" --
  "${CMAKE_CURRENT_SOURCE_DIR}/journeys/plan_64_gpus.sh" ${G} ${J}/64-gpus ${JX})
gaccum_cli_test(journey-hf-deepspeed 0 "JOURNEY-HF-DEEPSPEED-OK" --
  "${CMAKE_CURRENT_SOURCE_DIR}/journeys/hf_deepspeed.sh" ${G} ${J}/hf-ds ${JX}
  "${CMAKE_CURRENT_SOURCE_DIR}/data/check/ds-hf-auto.json")
# tune --emit and check reading each file back; the frameworks' own loaders when
# GACCUM_FRAMEWORKS_PYTHON names a python that has them (scripts/test-torch2 installs them).
gaccum_cli_test(journey-emit-frameworks 0 "JOURNEY-EMIT-OK" --
  "${CMAKE_CURRENT_SOURCE_DIR}/journeys/emit_frameworks.sh" ${G} ${J}/emit ${JX}
  "${CMAKE_CURRENT_SOURCE_DIR}/frameworks/parse_emitted.py" "$ENV{GACCUM_FRAMEWORKS_PYTHON}")
set_tests_properties("cli: journey-emit-frameworks" PROPERTIES LABELS "integration;frameworks")
# bench/gpu_truth.py at toy sizes on the CPU: its runs file read by calibrate, its report printed
# (the frameworks' python: torch 2.x); skipped without it.
add_test(NAME "integration: gpu_truth.py --quick"
         COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/journeys/gpu_truth_quick.sh" ${G} ${J}/gpu-truth ${PROJECT_SOURCE_DIR}
                 "$ENV{GACCUM_FRAMEWORKS_PYTHON}")
set_tests_properties("integration: gpu_truth.py --quick" PROPERTIES LABELS "integration;frameworks" SKIP_RETURN_CODE 77
                     PASS_REGULAR_EXPRESSION "GPU-TRUTH-QUICK-OK" TIMEOUT 600)
