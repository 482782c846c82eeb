#!/usr/bin/env bash
# Starts `gaccum-tune check --distributed` as two rank processes the way torchrun does (RANK,
# WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; rank 0 hosts the store), waits for both and
# checks their exit codes and output.
# Usage: distributed_check.sh GACCUM PROFILE MODE
#   agree     both ranks run b=4 k=8        -> both exit 0, "all 2 ranks agree"
#   mismatch  rank 1 runs accum_steps 4     -> both exit 1, the message names ranks and values
#   badinput  rank 1 passes --micro-batch 0 -> rank 1 exits 2, rank 0 exits 1 naming rank 1
#   missing   rank 1 is never started        -> rank 0 exits 1 within its timeout, naming rank 1
#   probe-badinput  as badinput, both ranks with --probe-links: nothing is timed, and rank 0 says
#                   only that rank 1 failed (no probe table, no "nothing to time" warning)
set -u
G=$1; P=$2; MODE=$3
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
       || echo $((20000 + $$ % 20000)))
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args1=(-b 4 -k 8)
common=()
to=60s
case $MODE in
  agree) ;;
  missing) to=5s ;;
  mismatch) args1=(-b 4 -k 4) ;;
  missing)
    [ "$rc0" = 1 ] || fail "expected exit 1 on rank 0, got $rc0"
    grep -q "rank(s) 1 of 2 did not join within 5 s" "$dir/out0" "$dir/err0" || fail "rank 0 does not name the missing rank 1" ;;
  badinput) args1=(-b 0 -k 8) ;;
  probe-badinput) args1=(-b 0 -k 8)
    common=(--probe-links --probe-device cpu --cluster "$(dirname "$0")/../../examples/clusters/dgx-h100-1node.json") ;;
  *) echo "unknown mode $MODE"; exit 2 ;;
esac
run_rank() {  # rank, args...
  local r=$1; shift
  env -u SLURM_PROCID -u SLURM_NTASKS -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u TORCHELASTIC_RUN_ID \
      RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      timeout 120 "$G" check --distributed --timeout $to --profile "$P" --noise-scale 1000 "${common[@]}" "$@" \
      >"$dir/out$r" 2>"$dir/err$r"
  echo $? >"$dir/rc$r"
}
run_rank 0 -b 4 -k 8 &
if [ "$MODE" = missing ]; then
  echo none >"$dir/rc1"; : >"$dir/out1"; : >"$dir/err1"
else
  run_rank 1 "${args1[@]}" &
fi
wait
rc0=$(cat "$dir/rc0"); rc1=$(cat "$dir/rc1")
for r in 0 1; do echo "--- rank $r (exit $(cat "$dir/rc$r"))"; cat "$dir/out$r" "$dir/err$r"; done
fail() { echo "FAIL: $*"; exit 1; }
case $MODE in
  agree)
    [ "$rc0" = 0 ] && [ "$rc1" = 0 ] || fail "expected exit 0 on both ranks, got $rc0 and $rc1"
    grep -q "same settings on every rank  PASS    all 2 ranks agree: micro_batch 4, accum_steps 8" "$dir/out0" || fail "rank 0: no agreement line"
    grep -q "all 2 ranks agree" "$dir/out1" || fail "rank 1: no agreement line" ;;
  mismatch)
    [ "$rc0" = 1 ] && [ "$rc1" = 1 ] || fail "expected exit 1 on both ranks, got $rc0 and $rc1"
    for r in 0 1; do
      grep -q "FAIL    accum_steps differs: 8 on rank 0, 4 on rank 1" "$dir/out$r" || fail "rank $r does not name the ranks"
    done ;;
  missing)
    [ "$rc0" = 1 ] || fail "expected exit 1 on rank 0, got $rc0"
    grep -q "rank(s) 1 of 2 did not join within 5 s" "$dir/out0" "$dir/err0" || fail "rank 0 does not name the missing rank 1" ;;
  badinput)
    [ "$rc0" = 1 ] && [ "$rc1" = 2 ] || fail "expected exits 1 (rank 0) and 2 (rank 1), got $rc0 and $rc1"
    grep -q "rank 1 could not check its job: --micro-batch" "$dir/out0" || fail "rank 0 does not name rank 1's error"
    [ "$(wc -l <"$dir/err1")" = 1 ] || fail "rank 1: stderr is not one line" ;;
  probe-badinput)
    [ "$rc0" = 1 ] && [ "$rc1" = 2 ] || fail "expected exits 1 (rank 0) and 2 (rank 1), got $rc0 and $rc1"
    grep -q "rank 1 could not check its job: --micro-batch" "$dir/out0" || fail "rank 0 does not name rank 1's error"
    ! grep -q "link probe" "$dir/out0" "$dir/err0" || fail "rank 0 printed a link probe though rank 1 failed" ;;
esac
echo "DISTRIBUTED-$MODE-OK"
