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


# Products beyond int64 and values the ranks would refuse stop at the flag.
# 10^14 - 1 used to loop over every accum_steps for minutes.
gaccum_cli_test(harden-huge-global-batch 2 "--global-batch: 99999999999999 is above the largest accepted value 2\\^40"
                --one-line-stderr -- ${G} tune --profile ${D}/small-profile.json --global-batch 99999999999999 --out ${H}/never)
# 4 x 2^62 x 4 printed global_batch 0 with exit 0.
gaccum_cli_test(harden-predict-overflow 2 "--accum-steps: 4611686018427387904 is above the largest accepted value 2\\^40"
                --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 4 -k 4611686018427387904 -p 4)
gaccum_cli_test(harden-predict-product 2 "--micro-batch x --accum-steps x --world-size: global batch 1048576 x 1048576 x 2 is above the largest accepted 2\\^40"
                --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 1048576 -k 1048576 -p 2)
gaccum_cli_test(harden-predict-huge-b 2 "--micro-batch: 9223372036854775807 is above the largest accepted value"
                --one-line-stderr -- ${G} predict --profile ${D}/small-profile.json -b 9223372036854775807 --extrapolate)
# check has its own limits and checked products (check/check_inputs.cpp, tests/check.cmake).
gaccum_cli_test(harden-check-overflow 2 "micro_batch \\(from flag --micro-batch\\): 4611686018427387904 is implausibly large"
                --one-line-stderr -- ${G} check --profile ${D}/small-profile.json -b 4611686018427387904 -k 4 -p 4)
gaccum_cli_test(harden-tune-accum 2 "--max-accum-steps: .* is above the largest accepted" --one-line-stderr --
                ${G} tune --profile ${D}/small-profile.json --max-accum-steps 9223372036854775807 --out ${H}/never)
set(_hv ${G} validate -o ${H}/never.json)
gaccum_cli_test(harden-validate-micro-batch 2 "--micro-batch: 4611686018427387904 is above the largest accepted"
                --one-line-stderr -- ${_hv} --micro-batch 4611686018427387904)
gaccum_cli_test(harden-validate-threads 2 "--threads-per-rank: 99999999999 is above the largest accepted value 1024"
                --one-line-stderr -- ${_hv} --threads-per-rank 99999999999)
gaccum_cli_test(harden-validate-seed 2 "--seed" --one-line-stderr -- ${_hv} --seed -1)
gaccum_cli_test(harden-validate-lr-inf 2 "--lr: invalid learning rate 'inf'" --one-line-stderr -- ${_hv} --lr inf)
gaccum_cli_test(harden-validate-lr-nan 2 "--lr: invalid learning rate 'nan'" --one-line-stderr -- ${_hv} --lr nan)
gaccum_cli_test(harden-validate-lr-0 2 "--lr: invalid learning rate '0'" --one-line-stderr -- ${_hv} --lr 0)

# Implausible profiles (hand-edited copies of small-profile.json) are exit 2 naming the field;
# peaks of ~1.8e19 B used to hang check/tune (a cap search stepping one byte at a time).
file(READ "${D}/small-profile.json" _prof)
string(REPLACE "\"peak\": 9167024," "\"peak\": 18000000000000000000," _huge "${_prof}")
file(WRITE "${H}/huge-peak-profile.json" "${_huge}")
string(REGEX REPLACE "\"comm_alone\": [0-9.]+" "\"comm_alone\": -0.5" _negov "${_prof}")
file(WRITE "${H}/negative-overlap-profile.json" "${_negov}")
gaccum_cli_test(harden-huge-peak-tune 2 "huge-peak-profile.json.memory\\[0\\].peak: 18000000000000000000 bytes is not a plausible"
                --one-line-stderr -- ${G} tune --profile ${H}/huge-peak-profile.json --out ${H}/never)
gaccum_cli_test(harden-huge-peak-check 2 "memory\\[0\\].peak" --one-line-stderr --
                ${G} check --profile ${H}/huge-peak-profile.json -b 4 -k 2 -p 2)
gaccum_cli_test(harden-negative-overlap 2 "negative-overlap-profile.json.overlap\\[0\\].comm_alone: must be non-negative"
                --one-line-stderr -- ${G} predict --profile ${H}/negative-overlap-profile.json -b 4 -p 2)

# Output that cannot be written is a failure, not exit 0 with the answer lost.
gaccum_cli_test(harden-dev-full 1 "cannot write to standard output" --one-line-stderr -- sh -c
  "\"$0\" predict --profile \"$1/small-profile.json\" -b 4 --json > /dev/full" ${G} ${D})

# A directory given as a file names the cause (it used to read as empty: "not valid JSON").
gaccum_cli_test(harden-dir-profile 2 "is a directory, not a file" --one-line-stderr --
                ${G} predict --profile ${H} -b 4)
gaccum_cli_test(harden-dir-job 2 "--job: '.*' is a directory, not a file" --one-line-stderr -- ${G} check --job ${H})
gaccum_cli_test(harden-dir-deepspeed 2 "--deepspeed-config: '.*' is a directory, not a file" --one-line-stderr --
                ${G} check --deepspeed-config ${H} --profile ${D}/small-profile.json)

# A request larger than the host's memory is named as such, never "internal error": out of
# memory, exit 87 (docs/exit-codes.md).
gaccum_cli_test(harden-micro-batches-beyond-host-memory 87 "out of host memory .*lower --micro-batch" --one-line-stderr --
  ${G} profile --workload mlp-small --micro-batches 4000000000 --ranks 1 -o ${H}/huge.json)

# A local launch of more ranks than any host runs is refused before forking.
gaccum_cli_test(harden-validate-world-size-beyond-host 2 "--world-size: 100000 ranks on one host with [0-9]+ cores; a local launch runs at most" --one-line-stderr --
  ${G} validate --world-size 100000 -b 1 -k 1)

# A MASTER_PORT that accepts but never answers: the hung rank names MASTER_ADDR and MASTER_PORT.
find_program(GACCUM_PY3 NAMES python3)
gaccum_cli_test(harden-hung-master-port 88 "no progress .* before step 0 \\(connecting through MASTER_ADDR=127.0.0.1 MASTER_PORT=[0-9]+" --
  ${CMAKE_CURRENT_SOURCE_DIR}/cli/hung_master.sh ${G} ${GACCUM_PY3})

# ---- issue 38: records that hold, timeouts that are enforced, values checked at the flag ------------
# Out-of-range values stop at the flag (exit 2), before any rank starts.
gaccum_cli_test(harden-timeout-overflow-validate 2 "--timeout: invalid value '99999999999999999999999d': expected a duration of at most 36525d"
                --one-line-stderr -- ${G} validate --timeout 99999999999999999999999d -o ${H}/never.json)
gaccum_cli_test(harden-timeout-overflow-profile 2 "--timeout: invalid value '99999999999999999999999d': expected a duration of at most 36525d"
                --one-line-stderr -- ${G} profile --timeout 99999999999999999999999d -o ${H}/never.json)
gaccum_cli_test(harden-profile-threads 2 "--threads-per-rank: 99999 is above the largest accepted value 1024"
                --one-line-stderr -- ${G} profile --threads-per-rank 99999 -o ${H}/never.json)
gaccum_cli_test(harden-profile-seed 2 "--seed: invalid value '-1': expected 0 or a positive integer"
                --one-line-stderr -- ${G} profile --seed=-1 -o ${H}/never.json)

# Hostile models (scripts/make-torchscript-fixture.py), input [b, 4].
set(_fx "${GACCUM_FIXTURE_DIR}")
# A NaN loss: exit 2 naming the model, no profile written (it used to be an exit-0 profile that
# predict refused).
gaccum_cli_test(harden-profile-nan-loss 2 "the model '.*nan_loss.pt': the loss is nan at micro_batch [0-9]+ \\(not a finite number\\)"
  --one-line-stderr -- sh -c "rm -f \"$1\"\n\"$0\" profile --torchscript \"$2/nan_loss.pt\" --input-shape 4 --ranks 1 -q -o \"$1\"\ncode=$?\ntest ! -e \"$1\" || code=99\nexit $code"
  ${G} ${H}/nan.json ${_fx})
# A forward that does not return: profile stops itself after --timeout + 2 s, exit 88, naming the
# phase (it ran on past 90 s); in a rank process, the rank is named.
gaccum_cli_test(harden-profile-forward-hangs 88 "gaccum-tune: error: profile: no progress for [0-9.]+ s in the memory sweep at micro_batch [0-9]+ \\(hung\\?\\)"
  --one-line-stderr -- timeout 60 ${G} profile --torchscript ${_fx}/hang.pt --input-shape 4 --ranks 1 --timeout 3s -q -o ${H}/hang.json)
gaccum_cli_test(harden-profile-rank-hangs 88 "rank 0 .*no progress for [0-9.]+ s in the compute probe \\(hung\\?\\)"
  --one-line-stderr -- timeout 60 ${G} profile --torchscript ${_fx}/hang_in_ranks.pt --input-shape 4 --ranks 1
  --micro-batches 1 --grad-norm-batches 2 --device-memory 96MiB --timeout 3s -q -o ${H}/hang.json)
# A forward that asks for 4 TiB: out of memory, 87, in validate's ranks and in profile's own sweep.
gaccum_cli_test(harden-validate-forward-4tib 87 "rank [01] .*out of memory" --
  ${G} validate --torchscript ${_fx}/huge_alloc.pt --input-shape 4 -b 2 -k 2 -p 2 --steps 1 --warmup 1 --timeout 20s
  -o ${H}/huge-v.json)
gaccum_cli_test(harden-profile-forward-4tib 87 "out of (host )?memory" --one-line-stderr --
  ${G} profile --torchscript ${_fx}/huge_alloc.pt --input-shape 4 --ranks 1 -q -o ${H}/huge-p.json)
set_tests_properties("cli: harden-profile-nan-loss" "cli: harden-profile-forward-hangs" "cli: harden-profile-rank-hangs"
                     "cli: harden-validate-forward-4tib" "cli: harden-profile-forward-4tib" PROPERTIES
                     FIXTURES_REQUIRED torchscript)

# A corrupt cached profile is measured again (one line says so), not reported as bad input.
gaccum_cli_test(harden-corrupt-cached-profile 0 "cached profile .* is unusable .*not valid JSON.*; profiling again" --
  sh -c "rm -rf \"$1\" && XDG_CACHE_HOME=\"$1\" \"$0\" predict --workload mlp-small -b 2 >/dev/null && for f in \"$1\"/gaccum-tune/profiles/mlp-small-*.json\ndo\nprintf '{\"schema' > \"$f\"\ndone\nXDG_CACHE_HOME=\"$1\" \"$0\" predict --workload mlp-small -b 2"
  ${G} ${H}/cache)
set_tests_properties("cli: harden-corrupt-cached-profile" PROPERTIES TIMEOUT 600)

# cluster fit: a level its measurements cannot determine is refused; a 0 latency is never written
# as measured without a warning (and the file's provenance says it is not resolved). Each log is tests/data/nccl-tests/h100-1node-all_reduce.txt's header (18 lines, 8 ranks on
# one node) with the rows given: sh -c 'LOG HEADER-SOURCE ROW... -- COMMAND...' writes LOG and
# runs COMMAND LOG.
set(_nt "${CMAKE_CURRENT_SOURCE_DIR}/data/nccl-tests/h100-1node-all_reduce.txt")
set(_rows "           8             2     float     sum      -1    22.57    0.00    0.00       0    22.36    0.00    0.00       0"
          "   134217728      33554432     float     sum      -1    691.1  194.22  339.88       0    707.1  189.82  332.19       0"
          "  2147483648     536870912     float     sum      -1    10237  209.78  367.11       0   9983.2  215.11  376.44       0")
list(GET _rows 0 _row8)
list(GET _rows 1 _row128m)
list(GET _rows 2 _row2g)
string(REPLACE "22.57" "9999.0" _row8_slow "${_row8}")      # 8 B slower than 2 GiB: times fall
string(REPLACE "10237" "22.00" _row2g_fast "${_row2g}")
string(REPLACE "691.1" "300.0" _row128m_fast "${_row128m}")  # intercept below 0: latency unresolved
string(REPLACE "10237" "9000" _row2g_neg "${_row2g}")
set(_log sh -c "head -n 18 \"$1\" > \"$0\" && shift\nwhile [ \"$1\" != -- ]\ndo\necho \"$1\" >> \"$0\"\nshift\ndone\nshift\nexec \"$@\" \"$0\"")
set(_fit ${G} cluster fit --device-memory 80GiB -o ${H}/fit.json --nccl-tests)
gaccum_cli_test(harden-cluster-fit-one-row 2 "cluster fit: intra_node: 1 measurement\\(s\\), all at one message size \\(128 MiB\\) and rank count, cannot tell latency from bandwidth"
  --one-line-stderr -- ${_log} ${H}/one-row.txt ${_nt} "${_row128m}" -- ${_fit})
gaccum_cli_test(harden-cluster-fit-one-size 2 "cluster fit: intra_node: 2 measurement\\(s\\), all at one message size \\(128 MiB\\)"
  --one-line-stderr -- ${_log} ${H}/one-size.txt ${_nt} "${_row128m}" "${_row128m_fast}" -- ${_fit})
gaccum_cli_test(harden-cluster-fit-times-fall 0 "warning: intra_node latency written as 0 us, a bound, not a measurement: the measured times do not grow with the message size \\(10 ms at 8 B, 22 us at 2.00 GiB"
  -- ${_log} ${H}/fall.txt ${_nt} "${_row8_slow}" "${_row2g_fast}" -- ${_fit})
gaccum_cli_test(harden-cluster-fit-latency-bound 0 "warning: intra_node latency written as 0 us, a bound, not a measurement: the fit's latency came out negative"
  -- ${_log} ${H}/neg.txt ${_nt} "${_row128m_fast}" "${_row2g_neg}" -- ${_fit})

# Every file reader goes through one guarded open (core/atomic_file.hpp): a FIFO, a device, a
# UTF-16 or invalid-UTF-8 file is exit 2 at once with one line naming the file, never a read that
# blocks forever or eats /dev/zero.
gaccum_cli_test(harden-fifo-job 2 "--job: '.*fifo' is a FIFO, not a regular file" --one-line-stderr -- sh -c
  "rm -f \"$1/fifo\" && mkfifo \"$1/fifo\" && exec timeout 10 \"$0\" check --job \"$1/fifo\"" ${G} ${H})
gaccum_cli_test(harden-fifo-deepspeed 2 "--deepspeed-config: '.*fifo2' is a FIFO" --one-line-stderr -- sh -c
  "rm -f \"$1/fifo2\" && mkfifo \"$1/fifo2\" && exec timeout 10 \"$0\" check --deepspeed-config \"$1/fifo2\" -p 2" ${G} ${H})
gaccum_cli_test(harden-dev-zero-spec 2 "--spec: '/dev/zero' is a character device, not a regular file" --one-line-stderr --
  timeout 10 ${G} predict --spec /dev/zero --cluster ${PROJECT_SOURCE_DIR}/examples/clusters/dgx-h100-1node.json -b 1)
gaccum_cli_test(harden-dev-zero-profile 2 "profile: '/dev/zero' is a character device" --one-line-stderr --
  timeout 10 ${G} predict --profile /dev/zero -b 1)
gaccum_cli_test(harden-utf16-deepspeed 2 "--deepspeed-config: '.*u16.json' is UTF-16 \\(byte-order mark FF FE\\): save it as UTF-8" --one-line-stderr -- sh -c
  "printf '\\377\\376{\\000}\\000' > \"$1/u16.json\" && exec \"$0\" check --deepspeed-config \"$1/u16.json\" -b 1 -k 1 -p 1" ${G} ${H})
gaccum_cli_test(harden-bad-utf8-job 2 "--job: '.*bad8.yaml' is not valid UTF-8 \\(byte 13 is 0xC3\\)" --one-line-stderr -- sh -c
  "printf 'micro_batch: \\303\\050\\n' > \"$1/bad8.yaml\" && exec \"$0\" check --job \"$1/bad8.yaml\"" ${G} ${H})
# An unknown subcommand is named before its flags are read; a launcher variable that is not a
# number is named, not reported as "not given".
gaccum_cli_test(harden-unknown-subcommand-help 2 "unknown subcommand 'report': expected one of version, workloads" --one-line-stderr --
  ${G} report --help)
gaccum_cli_test(harden-garbage-world-size 2 "world_size: not given: launcher environment ignored \\(environment: WORLD_SIZE='abc' is not a valid integer" --one-line-stderr --
  env RANK=0 WORLD_SIZE=abc ${G} check --profile ${D}/small-profile.json -b 1 -k 1)
# A global-batch range whose search would not fit in memory is refused with the fix, at once
# (it used to take 24 s and 4.6 GB, and abort on std::bad_alloc under a 4 GiB limit).
gaccum_cli_test(harden-global-batch-range-huge 2 "--global-batch-range: 697332 configs to price .* above the 200000 a search keeps: narrow the global batch range" --one-line-stderr -- sh -c
  "ulimit -v 4000000 && exec \"$0\" tune --spec \"$1/specs/gpt2-small.json\" --cluster \"$1/clusters/dgx-h100-1node.json\" --global-batch-range 1-1000 --out \"$2/range-huge\""
  ${G} ${PROJECT_SOURCE_DIR}/examples ${H})
