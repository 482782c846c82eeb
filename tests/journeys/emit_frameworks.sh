#!/usr/bin/env bash
# Journey 4: tune --emit writes the pick in each framework's own file, and `gaccum-tune check`
# reads every one back as printed and passes. Three plans: Llama-3.1-8B from its config.json on
# 64 H100 (DeepSpeed ZeRO-1 under the trainers), the same pinned to FSDP (the trainers' FSDP
# spellings), and Llama-3-70B on 256 H100 with --tp auto --pp auto (Megatron-LM and torchtitan
# layouts; the data-parallel-only formats take the best data-parallel plan or say why not).
# Each check's --json inputs must equal what the file says (micro_batch, accum_steps, world_size,
# sharding, precision), launch.sh and megatron_args.sh must pass bash -n, and a bad --emit name is
# a one-line error with exit 2. With PY set to a python that has transformers, accelerate,
# lightning, jsonargparse and deepspeed, the files are also loaded by those libraries
# (tests/frameworks/parse_emitted.py); otherwise that part says SKIP. A measured profile gets the
# trainers' files, not Megatron-LM's or torchtitan's (they build their own models).
# Usage: emit_frameworks.sh GACCUM_TUNE WORK_DIR EXAMPLES_DIR PARSER [PY]
set -u
G=$1 W=$2 X=$3 PARSER=$4 PY=${5:-}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
cluster8="$X/clusters/h100-8node-ib400.json"

# run_checks TUNE_STDOUT: every "gaccum-tune check" line tune printed, as printed; each must pass,
# and its resolved inputs must be the ones the emitted file states.
run_checks() {
  local n=0 line
  while read -r line; do
    n=$((n + 1))
    eval "\"$G\" ${line#gaccum-tune } --json" > "check$n.json" 2> "check$n.err" || fail "exit $? from: $line" "check$n.err"
    python3 - "check$n.json" "$line" <<'PY' || fail "check $n resolved other inputs than its file: $line" "check$n.json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["verdict"] in ("pass", "warn"), doc["verdict"]  # warn: a slower plan the framework forces (said why)
inputs = doc["inputs"]
for key in ("micro_batch", "accum_steps", "world_size", "global_batch"):
    assert isinstance(inputs[key]["value"], int) and inputs[key]["value"] >= 1, key
PY
  done < <(grep -E '^    gaccum-tune check' "$1" | sed -e 's/^    //')
  [ "$n" -ge 1 ] || fail "tune printed no check line" "$1"
  echo "$n checks passed"
}

"$G" tune --model-config "$X/hf/llama-3.1-8b.json" --seq-len 4096 --cluster "$cluster8" --global-batch 512 \
  --world-sizes 64 --lr-ref 3e-4@1024 --emit all --out ds > ds.txt 2>&1 || fail "tune exit $?" ds.txt
for f in hf_training_args.json hf_deepspeed_config.json accelerate_config.yaml accelerate_deepspeed_config.json \
         lightning_trainer.yaml torchtitan.toml megatron_args.sh deepspeed_config.json launch.sh; do
  [ -s "ds/$f" ] || fail "ds/$f not written" ds.txt
done
[ -x ds/launch.sh ] || fail "launch.sh is not executable" ds.txt
bash -n ds/launch.sh && bash -n ds/megatron_args.sh || fail "a script does not parse" ds/launch.sh
grep -q '"per_device_train_batch_size": 1' ds/hf_training_args.json || fail "hf batch" ds/hf_training_args.json
run_checks ds.txt

"$G" tune --model-config "$X/hf/llama-3.1-8b.json" --seq-len 4096 --cluster "$cluster8" --global-batch 512 \
  --world-sizes 64 --framework fsdp --sharding zero3 --emit hf,accelerate,lightning --out fsdp > fsdp.txt 2>&1 ||
  fail "tune fsdp exit $?" fsdp.txt
grep -q '"fsdp": "full_shard auto_wrap"' fsdp/hf_training_args.json || fail "no FSDP in the HF arguments" fsdp/hf_training_args.json
grep -q 'fsdp_sharding_strategy: FULL_SHARD' fsdp/accelerate_config.yaml || fail "no FULL_SHARD" fsdp/accelerate_config.yaml
grep -q 'lightning_trainer.yaml: not written\|lightning_trainer.yaml ' fsdp.txt || fail "lightning neither written nor refused" fsdp.txt
run_checks fsdp.txt

"$G" tune --spec builtin:llama3-70b --cluster "$X/clusters/h100-2048node-ib400.json" --global-batch 1024 \
  --world-sizes 256 --tp auto --pp auto --emit all --out big > big.txt 2>&1 || fail "tune 70b exit $?" big.txt
grep -qE -- '--tensor-model-parallel-size (2|4|8)( |$)' big/megatron_args.sh || fail "no tp in the Megatron arguments" big/megatron_args.sh
# Megatron-LM's and torchtitan's files come from the search run as each (their fp32 gradients,
# Megatron-LM's loss), so each file's check prices what tune priced (run_checks below passes).
grep -q 'megatron_args.sh *the best plan of the same search run as Megatron-LM' big.txt ||
  fail "megatron_args.sh not from Megatron-LM's own search" big.txt
grep -q 'hf_training_args.json: not written: no plan tune ranked runs there' big.txt || fail "hf not refused with a reason" big.txt
run_checks big.txt

# A measured profile (not a spec): the trainers' files are written and read back; Megatron-LM and
# torchtitan, which build their own models, are not written and say why.
"$G" tune --profile "$(cd "$(dirname "$0")/.." && pwd)/data/small-profile.json" --global-batch 64 --emit all --out prof \
  > prof.txt 2>&1 || fail "tune on a profile exit $?" prof.txt
grep -q 'megatron_args.sh: not written: no plan tune ranked runs there (Megatron-LM trains its own model definitions' prof.txt ||
  fail "Megatron-LM written for a profiled model" prof.txt
[ ! -e prof/torchtitan.toml ] || fail "torchtitan written for a profiled model" prof.txt
run_checks prof.txt

"$G" tune --model-config "$X/hf/gpt2.json" --cluster "$cluster8" --global-batch 64 --emit hf,keras --out bad > bad.txt 2>&1
code=$?
[ "$code" = 2 ] || fail "--emit keras exits $code, not 2" bad.txt
[ "$(wc -l < bad.txt)" = 1 ] && grep -q "^gaccum-tune: error: --emit: 'keras' is not a format" bad.txt || fail "not one line naming --emit" bad.txt
[ ! -e bad ] || fail "a refused --emit wrote files" bad.txt

if [ -n "$PY" ]; then
  for d in ds:64 fsdp:64 big:256; do
    "$PY" "$PARSER" "${d%:*}" "${d#*:}" > "parse-${d%:*}.txt" 2>&1
    code=$?
    [ "$code" = 77 ] && { grep SKIP "parse-${d%:*}.txt"; break; }
    [ "$code" = 0 ] || fail "the frameworks' loaders refused ${d%:*}" "parse-${d%:*}.txt"
    grep -E '^(hf|accelerate|lightning|deepspeed|torchtitan|parsed)' "parse-${d%:*}.txt"
  done
else
  echo "SKIP: the frameworks' own loaders (set GACCUM_FRAMEWORKS_PYTHON to a python with transformers, accelerate, lightning, jsonargparse, deepspeed)"
fi
echo JOURNEY-EMIT-OK
