#!/usr/bin/env bash
# The reference kernel (core/canary.hpp) end to end: a profile records it before and after each
# rank group; `validate --profile` compares its own reading with the profile's and says so
# ("machine speed: ... x its time while the profile was measured"). A profile whose readings are
# made 10x faster stands for a machine that was 10x faster when profiled: the run is flagged as
# disturbed, naming the kernel; a profile without readings (an older gaccum-tune) says "not compared".
# Usage: machine_speed.sh GACCUM_TUNE WORK_DIR
set -u
G=$1 W=$2
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
PY=/usr/bin/python3
fail() { echo "FAIL: $1"; [ -n "${2:-}" ] && cat "$2"; exit 1; }

"$G" profile --workload mlp-small --ranks 1 --micro-batches 2,4,8 --time-budget 5s -q -o p.json > prof.txt 2>&1 \
  || fail "profile exit $?" prof.txt
"$PY" - p.json <<'PY' || fail "the profile's conditions carry no reference-kernel readings" p.json
import json, sys
p = json.load(open(sys.argv[1]))
c = p["conditions"]
assert c, "no conditions"
for x in c:
    k = x["canary"]
    assert k["before_s"] > 0 and k["after_s"] > 0, k
    assert k["kernel"].startswith("matmul 128x128 fp32 x2, 1 thread, "), k
print("canary readings:", [(x["phase"], round(1e3 * x["canary"]["before_s"], 3), round(1e3 * x["canary"]["after_s"], 3)) for x in c])
PY
# The same machine: a note with the ratio (its value depends on what else runs beside the tests).
"$G" validate --workload mlp-small -b 4 -k 2 -p 1 --steps 3 --profile p.json -o v1.json > v1.txt 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || fail "validate exit $rc" v1.txt
grep -Eq 'NOTE: machine speed: the reference kernel took [0-9.]+ (us|ms) in this run, [0-9.]+x its time while the profile was measured' v1.txt \
  || fail "no machine-speed note" v1.txt

# A profile taken on a machine 10x faster (the margin covers the tests running beside each other).
"$PY" - p.json fast.json nocanary.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
for x in p["conditions"]:
    x["canary"]["before_s"] /= 10
    x["canary"]["after_s"] /= 10
json.dump(p, open(sys.argv[2], "w"))
for x in p["conditions"]:
    del x["canary"]
json.dump(p, open(sys.argv[3], "w"))
PY
"$G" validate --workload mlp-small -b 4 -k 2 -p 1 --steps 3 --profile fast.json -o v2.json > v2.txt 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || fail "validate (fast profile) exit $rc" v2.txt
grep -q 'accumulation: CORRECT' v2.txt || fail "accumulation not correct" v2.txt
grep -Eq 'WARNING: this run was measured while .*the reference kernel took [0-9.]+x its reference time .*one core ran slower' v2.txt \
  || fail "no warning that the machine ran slower than when profiled" v2.txt
"$PY" - v2.json <<'PY' || fail "validation.json does not record the comparison" v2.json
import json, sys
m = json.load(open(sys.argv[1]))["runs"][0]["environment"]["machine"]
assert m["disturbed"], m
assert m["canary"]["vs_reference"] > 3, m["canary"]
print("vs_reference", round(m["canary"]["vs_reference"], 2))
PY
"$G" validate --workload mlp-small -b 4 -k 2 -p 1 --steps 3 --profile nocanary.json -o v3.json > v3.txt 2>&1
rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || fail "validate (old profile) exit $rc" v3.txt
grep -q 'NOTE: machine speed: not compared (the profile has no reference-kernel reading of this build' v3.txt \
  || fail "no 'not compared' note" v3.txt
echo MACHINE-SPEED-OK
