# Hardening tests (included from tests/CMakeLists.txt): hostile input ends with exit 2 and one
# line naming the cause, fast, never a crash, hang or wrong answer with exit 0. Unit tests in
# unit/test_harden.cpp; the CLI expectations below run the binary on generated files.
gaccum_test(unit_harden LABEL unit SOURCES unit/test_harden.cpp LIBS gaccum::core gaccum::tuner)
target_compile_definitions(unit_harden PRIVATE GACCUM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

set(G $<TARGET_FILE:gaccum-tune>)
set(D "${CMAKE_CURRENT_SOURCE_DIR}/data")
set(H "${CMAKE_CURRENT_BINARY_DIR}/harden")
file(MAKE_DIRECTORY "${H}")

# A JSON document nested 200,000 levels deep (400 KB): it used to overflow the stack (SIGSEGV).
string(REPEAT "[" 200000 _open)
string(REPEAT "]" 200000 _close)
file(WRITE "${H}/deep.json" "${_open}${_close}")
gaccum_cli_test(harden-deep-profile 2 "deep.json: JSON nested deeper than 512" --one-line-stderr --
                ${G} predict --profile ${H}/deep.json -b 4)
gaccum_cli_test(harden-deep-spec 2 "deep.json: JSON nested deeper than 512" --one-line-stderr --
                ${G} predict --spec ${H}/deep.json --cluster ${PROJECT_SOURCE_DIR}/examples/clusters/dgx-h100-1node.json -b 4)
gaccum_cli_test(harden-deep-cluster 2 "deep.json: JSON nested deeper than 512" --one-line-stderr --
                ${G} tune --profile ${D}/small-profile.json --cluster ${H}/deep.json --out ${H}/never)
gaccum_cli_test(harden-deep-job 2 "deep.json.*nested deeper than" --one-line-stderr --
                ${G} check --job ${H}/deep.json)
gaccum_cli_test(harden-deep-validate-profile 2 "deep.json: JSON nested deeper than 512" --one-line-stderr --
                ${G} validate --profile ${H}/deep.json -o ${H}/never.json)

# A prime global batch near the 2^40 limit: the diagnosis (tuner/infeasibility.cpp) used to step
# through every accum_steps; it answers at once.
gaccum_cli_test(harden-large-prime-global-batch 1 "no feasible config for global_batch 1099511627689.*accum_steps binds"
                --one-line-stderr -- sh -c
  "timeout 20 \"$0\" tune --profile \"$1/small-profile.json\" --global-batch 1099511627689 --out \"$2\""
  ${G} ${D} ${H}/never)


