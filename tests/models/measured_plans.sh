#!/usr/bin/env bash
# Plans measured, not assumed. Mixed precision: `profile --precision bf16` of the built-in gpt-tiny (2
# ranks: the overlap probe's bf16 buckets on Gloo) and of a scripted TransformerEncoder the test
# suite wrote. The tracking allocator must see 2-byte weights and gradients and exactly 12 bytes
# per parameter of Adam state (fp32 master + two fp32 moments), and activations below the fp32
# profile's at every micro_batch; tune must price bf16 plans from the bf16 profile and refuse fp32.
# Activation checkpointing: `profile --checkpointing full` of gpt-tiny (each block recomputed in
# backward) must keep the model states and measure fewer activations at every micro_batch; tune
# must pick a checkpointed plan from it and refuse --checkpointing none.
# Usage: measured_plans.sh GACCUM_TUNE WORK_DIR TOKEN_ENCODER_PT
set -u
G=$1 W=$2 ENC=$3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
fail() { echo "FAIL: $1"; [ -n "${2:-}" ] && cat "$2"; exit 1; }
quick=(--time-budget 5s --micro-batches 1,2,4,8)

"$G" profile --workload gpt-tiny --precision bf16 --ranks 1,2 "${quick[@]}" -o gpt-bf16.json > gpt-bf16.txt 2>&1 ||
  fail "profile bf16 exit $?" gpt-bf16.txt
"$G" profile --workload gpt-tiny --ranks 1 "${quick[@]}" -o gpt-fp32.json > gpt-fp32.txt 2>&1 ||
  fail "profile fp32 exit $?" gpt-fp32.txt
grep -q 'precision bf16 measured on CPU: memory is exact' gpt-bf16.txt || fail "no bf16 note" gpt-bf16.txt
"$G" profile --workload gpt-tiny --checkpointing full --ranks 1 "${quick[@]}" -o gpt-ckpt.json > gpt-ckpt.txt 2>&1 ||
  fail "profile checkpointing exit $?" gpt-ckpt.txt
enc=(--torchscript "$ENC" --input tokens:1000:32 --input pad-mask:32 --target tokens:1000)
"$G" profile "${enc[@]}" --precision bf16 --ranks 1 "${quick[@]}" -o enc-bf16.json > enc-bf16.txt 2>&1 ||
  fail "profile encoder bf16 exit $?" enc-bf16.txt

python3 - <<'PY' || exit 1
import json, sys
def load(p): return json.load(open(p))
ok = True
for name in ("gpt-bf16.json", "enc-bf16.json"):
    p = load(name); w = p["workload"]; psi = w["param_count"]
    if w["dtype"] != "bfloat16" or w["param_bytes"] != 2 * psi:
        print(f"FAIL: {name}: dtype {w['dtype']}, param_bytes {w['param_bytes']} for {psi} parameters"); ok = False
    for m in p["memory"]:
        # weights may hold buffers beyond the parameters (the encoder's); gradients and state may not.
        if m["gradients"] != 2 * psi or m["optimizer_state"] != 12 * psi or m["weights"] < 2 * psi:
            print(f"FAIL: {name} micro_batch {m['micro_batch']}: weights {m['weights']} gradients {m['gradients']} "
                  f"optimizer {m['optimizer_state']}, expected 2/2/12 x {psi}"); ok = False
bf, fp = load("gpt-bf16.json"), load("gpt-fp32.json")
psi = bf["workload"]["param_count"]
for mb, mf in zip(bf["memory"], fp["memory"]):
    if mb["micro_batch"] != mf["micro_batch"] or not mb["activations"] < mf["activations"]:
        print(f"FAIL: micro_batch {mb['micro_batch']}: bf16 activations {mb['activations']} not below fp32 "
              f"{mf['activations']}"); ok = False
if fp["memory"][0]["weights"] != 4 * psi: print("FAIL: fp32 weights"); ok = False
ck = load("gpt-ckpt.json")
if ck["workload"]["hyper"].get("checkpoint") != 1: print("FAIL: checkpoint not in the profile's workload"); ok = False
for mc, mf in zip(ck["memory"], fp["memory"]):
    same = all(mc[k] == mf[k] for k in ("micro_batch", "weights", "gradients", "optimizer_state"))
    if not same or not mc["activations"] < mf["activations"]:
        print(f"FAIL: checkpointed micro_batch {mc['micro_batch']}: activations {mc['activations']} vs "
              f"{mf['activations']} without, or the states differ"); ok = False
if not any(o["concurrent_ranks"] == 2 for o in bf["optimizer"]): print("FAIL: no 2-rank group"); ok = False
if not bf.get("overlap"): print("FAIL: no overlap measurement (bf16 buckets on Gloo)"); ok = False
sys.exit(0 if ok else 1)
PY

"$G" tune --profile gpt-bf16.json --global-batch 32 --out tune > tune.txt 2>&1 || fail "tune exit $?" tune.txt
tr '\n' ' ' < tune.txt | grep -q 'Plan: [^.]*bf16' || fail "tune did not pick a bf16 plan" tune.txt
"$G" tune --profile gpt-bf16.json --global-batch 32 --precision fp32 --out tune-fp32 > fp32.txt 2>&1
rc=$?
[ $rc = 2 ] || fail "tune --precision fp32 on a bf16 profile: exit $rc, expected 2" fp32.txt
grep -q 'this profile measured bf16 .*--precision fp32' fp32.txt || fail "refusal does not name the fix" fp32.txt
"$G" predict --profile gpt-bf16.json -b 4 -k 2 -p 2 --sharding zero2 > predict.txt 2>&1 || fail "predict exit $?" predict.txt
grep -q 'zero2 .*bf16' predict.txt || fail "predict plan" predict.txt
"$G" tune --profile gpt-ckpt.json --global-batch 32 --out tune-ckpt > ckpt.txt 2>&1 || fail "tune ckpt exit $?" ckpt.txt
tr -s '\n ' ' ' < ckpt.txt | grep -q 'Plan: no sharding, fp32, full activation checkpointing' || fail "tune did not pick a checkpointed plan" ckpt.txt
"$G" tune --profile gpt-ckpt.json --global-batch 32 --checkpointing none --out tune-none > none.txt 2>&1
rc=$?
[ $rc = 2 ] || fail "tune --checkpointing none on a checkpointed profile: exit $rc, expected 2" none.txt
grep -q 'with full activation checkpointing .*--checkpointing none' none.txt || fail "refusal does not name the fix" none.txt
echo MEASURED-PLANS-OK
