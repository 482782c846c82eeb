#!/usr/bin/env bash
# Journey 2: Llama-2-7B planned for 64 H100 (examples/specs, examples/clusters) with nothing but the
# model, the cluster and the global batch: tune labels its pick with the frameworks that run it,
# ends with the check that gates the launch, and that command passes as printed; --framework
# narrows the plans to one framework's; validate --from-tune on a spec result says what to run.
# Usage: plan_64_gpus.sh GACCUM_TUNE WORK_DIR EXAMPLES_DIR
set -u
G=$1 W=$2 X=$3
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
spec=(--spec "$X/specs/llama2-7b.json" --cluster "$X/clusters/h100-8node-ib400.json")

"$G" tune "${spec[@]}" --global-batch 512 --out t64 > tune.txt 2>&1 || fail "tune exit $?" tune.txt
flat=$(tr -s '\n ' ' ' < tune.txt)
echo "$flat" | grep -q 'Recommendation: Use micro_batch [0-9]* with accum_steps [0-9]* on 64 ranks' || fail "no 64-rank pick" tune.txt
echo "$flat" | grep -q 'Plan: zero[0-9] ([a-z ,]*), bf16' || fail "the plan is not in words" tune.txt
echo "$flat" | grep -q 'Runs on [A-Z]' || fail "the pick names no framework" tune.txt
frameworks=$(python3 - <<'PY'
import csv
rows = list(csv.DictReader(open("t64/result.csv")))
best = [r for r in rows if r["rank"] == "1"][0]
print(best["frameworks"])
PY
)
[ -n "$frameworks" ] || fail "the pick's CSV row has no frameworks" t64/result.csv
grep -q '^Next: a spec cannot run on this machine; gate the launch with the pick.s plan:' tune.txt || fail "no next command" tune.txt
next_command tune.txt | grep -q '^check --spec .* -p 64 --strategy [a-z-]* --sharding [a-z0-9:]* --precision bf16' ||
  fail "the next command is not the check of the pick" tune.txt
run_next tune.txt check.txt || fail "the printed check exits $? on the pick" check.txt
grep -Eq '^  world_size +64 +flag --world-size' check.txt || fail "check's inputs lack the world size" check.txt
grep -Eq '^  device_memory +79.6 GiB +cluster ' check.txt || fail "check's inputs lack the device memory and its source" check.txt
grep -Eq '^ 2  peak memory +PASS' check.txt || fail "the pick does not fit by check" check.txt

# One framework's plans only: every ranked multi-rank row is one it runs, and the pick says how.
"$G" tune "${spec[@]}" --global-batch 512 --framework deepspeed --out t64-ds > tune-ds.txt 2>&1 || fail "tune --framework exit $?" tune-ds.txt
tr -s '\n ' ' ' < tune-ds.txt | grep -q 'Run as: DeepSpeed ZeRO stage [0-3]' || fail "the DeepSpeed pick is not spelled as DeepSpeed" tune-ds.txt
python3 - <<'PY' || fail "a row DeepSpeed cannot run was searched" t64-ds/result.csv
import csv, sys
bad = [r for r in csv.DictReader(open("t64-ds/result.csv"))
       if int(r["world_size"]) > 1 and "deepspeed" not in r["frameworks"].split()]
sys.exit(1 if bad else 0)
PY
next_command tune-ds.txt | grep -q -- '--framework deepspeed$' || fail "the next command drops --framework" tune-ds.txt

# A spec result cannot be run here: validate says so and what to run instead, one line, exit 2.
"$G" validate --from-tune t64/result.json > v.txt 2>&1
rc=$?
[ $rc = 2 ] || fail "validate --from-tune on a spec exits $rc, expected 2" v.txt
grep -q 'the picks were priced from the spec .*; gate the launch with `gaccum-tune check --spec' v.txt || fail "validate on a spec result" v.txt
[ "$(wc -l < v.txt)" = 1 ] || fail "more than one line" v.txt
echo JOURNEY-64-GPUS-OK
