#!/usr/bin/env bash
# GPU test (label gpu): `validate --device cuda --world-size 1` of gpt-tiny passes every check,
# and, where two or more GPUs answer, a 2-rank run on ProcessGroupNCCL (one process per GPU)
# passes them too, and a killed or hung rank on NCCL ends the run within timeout + 10 s.
# Skips (exit 77) with the reason when this build or machine cannot run CUDA.
# Usage: validate_cuda.sh GACCUM
set -u
G=$1
info=$("$G" version --json) || { echo "FAIL: gaccum-tune version --json"; exit 1; }
read -r torch_cuda ngpu reason < <(/usr/bin/python3 -c '
import json, sys
v = json.loads(sys.argv[1])
print(str(v["libtorch"]["cuda"]).lower(), len(v["devices"]), (v.get("no_device_reason") or "-").replace(" ", "_"))' "$info")
[ "$torch_cuda" = true ] || { echo "SKIP: this gaccum-tune is built against a CPU-only LibTorch (validate --device cuda needs a CUDA LibTorch)"; exit 77; }
[ "$ngpu" -ge 1 ] || { echo "SKIP: no CUDA device answers (${reason//_/ })"; exit 77; }
dir=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
run() {  # name world_size
  timeout 300 "$G" validate --workload gpt-tiny --device cuda -b 4 -k 2 -p "$2" --steps 3 -o "$dir/$1.json" \
    >"$dir/$1.out" 2>&1
  local rc=$?
  cat "$dir/$1.out"
  [ $rc = 0 ] || { echo "FAIL: validate --device cuda -p $2 exited $rc"; exit 1; }
  /usr/bin/python3 - "$dir/$1.json" <<'PY' || { echo "FAIL: $1 checks"; exit 1; }
import json, sys
v = json.load(open(sys.argv[1]))
assert v["ok"] and v["accumulation"] == "correct", (v["ok"], v["accumulation"])
assert all(r["ok"] for r in v["runs"]), [r.get("failure") for r in v["runs"]]
print("checks ok:", sys.argv[1], len(v["runs"][0]["checks"]), "checks")
PY
}
# A rank killed or hung on ProcessGroupNCCL ends the run, named, within --timeout + 10 s, with the
# documented exit code (docs/exit-codes.md: 86 a rank died, 88 a rank hung), as on Gloo.
fault() {  # fault expected_exit expected_text
  local t0=$(date +%s)
  GACCUM_TEST_FAULT="rank:1:$1" timeout 120 "$G" validate --workload gpt-tiny --device cuda -b 4 -k 2 -p 2 --steps 3 \
    --timeout 10s -o "$dir/fault-$1.json" >"$dir/fault-$1.out" 2>&1
  local rc=$? took=$(( $(date +%s) - t0 ))
  cat "$dir/fault-$1.out"
  [ $rc = "$2" ] || { echo "FAIL: NCCL fault $1 exited $rc, expected $2"; exit 1; }
  grep -q "$3" "$dir/fault-$1.out" || { echo "FAIL: NCCL fault $1 does not say '$3'"; exit 1; }
  [ $took -lt 20 ] || { echo "FAIL: NCCL fault $1 took $took s (timeout 10 s + 10 s)"; exit 1; }
  echo "NCCL fault $1: exit $rc in $took s"
}
run one 1
if [ "$ngpu" -ge 2 ]; then
  run two 2
  fault sigkill 86 "rank 1 (pid [0-9]*) was killed by SIGKILL"
  fault hang 88 "rank 1 (pid"
else
  echo "one GPU: the 2-rank NCCL run and the NCCL fault cases need two (skipped)"
fi
echo VALIDATE-CUDA-OK
