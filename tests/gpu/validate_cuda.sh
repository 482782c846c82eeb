#!/usr/bin/env bash
# GPU test (label gpu): `validate --device cuda --world-size 1` of gpt-tiny passes every check,
# and, where two or more GPUs answer, a 2-rank run on ProcessGroupNCCL (one process per GPU)
# passes them too. Skips (exit 77) with the reason when this build or machine cannot run CUDA.
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
run one 1
if [ "$ngpu" -ge 2 ]; then run two 2; else echo "one GPU: the 2-rank NCCL run needs two (skipped)"; fi
echo VALIDATE-CUDA-OK
