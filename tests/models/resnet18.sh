#!/usr/bin/env bash
# torchvision's ResNet-18 (20 BatchNorm layers; raises at micro_batch 1) with the defaults only:
# tune profiles it (a CPU device sized to the model, micro_batch 1 recorded as the model raising,
# with its own message) and recommends micro_batch >= 2; check refuses micro_batch 1 with that
# message; validate with the defaults proves the accumulation against the same micro-batches in
# one process, then once more against the cached profile (the prediction verdict may be held or
# missed: exit 0 or 3; the accumulation is always correct).
# Usage: resnet18.sh GACCUM_TUNE WORK_DIR RESNET18_PT
set -u
G=$1 W=$2 RN=$3
if [ ! -f "$RN" ]; then echo "SKIPPED: no resnet18.pt (needs python3-torchvision)"; exit 0; fi
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
fail() { echo "FAIL: $1"; [ -n "${2:-}" ] && cat "$2"; exit 1; }

"$G" tune --torchscript "$RN" --input-shape 3,32,32 --out tune > tune.txt 2>&1 || fail "tune exit $?" tune.txt
grep -q 'Recommendation: Use micro_batch' tune.txt || fail "no recommendation" tune.txt
grep -q 'Recommendation: Use micro_batch 1 ' tune.txt && fail "picked micro_batch 1" tune.txt
grep -q 'micro_batch >= 2 only: the model raised at micro_batch 1: .*Expected more than 1 value per channel' tune/result.json \
  || fail "the model's message is not in the notes" tune/result.json
prof=$(ls cache/gaccum-tune/profiles/torchscript-*.json)  # beside it: pick-*.json (tune's pick)
grep -q '"min_micro_batch": 2' "$prof" || fail "profile has no min_micro_batch 2" "$prof"
grep -q 'derived from the model' "$prof" || fail "the CPU device size was not derived" "$prof"

"$G" check --torchscript "$RN" --input-shape 3,32,32 -b 1 -k 8 -p 2 > check.txt 2>&1
rc=$?
[ $rc = 1 ] || fail "check -b 1 exit $rc, expected 1" check.txt
grep -q 'micro_batch 1 is below 2, the smallest the model ran at' check.txt || fail "check does not say why" check.txt

# The model flags only: the last tune's pick, priced from the cached profile (informational).
"$G" validate --torchscript "$RN" --input-shape 3,32,32 -o v1.json > v1.txt 2>&1
rc=$?
cat v1.txt
[ $rc = 0 ] || fail "validate exit $rc"
grep -q '^validate: the pick of the last tune on this workload' v1.txt || fail "not the cached pick"
grep -q 'accumulation: CORRECT' v1.txt || fail "accumulation not correct"
grep -q 'PASS  gradient_equivalence .*same [0-9]* micro-batches' v1.txt || fail "not the micro-batch reference"
grep -q 'NOTE: BatchNorm (20 layer(s)' v1.txt || fail "no BatchNorm note"
grep -q 'informational, from the cached profile' v1.txt || fail "the cached profile's prediction is not informational"

# A small micro_batch of a BatchNorm model is warned about.
"$G" validate --torchscript "$RN" --input-shape 3,32,32 -b 4 -k 8 -p 2 --steps 1 --warmup 1 -o v1b.json > v1b.txt 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || fail "validate -b 4 exit $rc" v1b.txt
grep -q 'PASS  gradient_equivalence .*same 16 micro-batches' v1b.txt || fail "not the micro-batch reference" v1b.txt
grep -q 'WARNING: micro_batch 4 < 16: BatchNorm' v1b.txt || fail "no BatchNorm warning" v1b.txt

"$G" validate --torchscript "$RN" --input-shape 3,32,32 -b 8 -k 2 -p 2 --profile "$prof" -o v2.json > v2.txt 2>&1
rc=$?
cat v2.txt
[ $rc = 0 ] || [ $rc = 3 ] || fail "validate --profile exit $rc, expected 0 or 3"
grep -q 'accumulation: CORRECT' v2.txt || fail "accumulation not correct"
grep -Eq 'prediction:   (HELD|MISSED)' v2.txt || fail "no prediction verdict"
echo RESNET-OK
