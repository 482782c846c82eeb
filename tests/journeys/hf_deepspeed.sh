#!/usr/bin/env bash
# Journey 3: a HuggingFace-Trainer-style DeepSpeed config with "auto" everywhere
# (tests/data/check/ds-hf-auto.json: ZeRO-2, bf16 "auto", lr "auto") for Llama-2-7B on 64 H100,
# through check and tune: every inferred input is printed with its source (world size from the
# cluster, precision assumed from "auto", device memory, framework), each warning once, DeepSpeed's
# every-step under ZeRO-2 is its only way (no no_sync fix), and tune completes the config and
# ends with the check of it, which passes as printed.
# Usage: hf_deepspeed.sh GACCUM_TUNE WORK_DIR EXAMPLES_DIR DS_HF_AUTO_JSON
set -u
G=$1 W=$2 X=$3 DS=$4
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
spec=(--spec "$X/specs/llama2-7b.json" --cluster "$X/clusters/h100-8node-ib400.json")

"$G" check --deepspeed-config "$DS" "${spec[@]}" -b 1 -k 8 > check.txt 2>&1
rc=$?
[ $rc = 0 ] || fail "check exits $rc" check.txt
grep -Eq '^  world_size +64 +cluster .*h100-8node-ib400.json \(8 nodes x 8 GPUs; from flag --cluster\)' check.txt || fail "world size from the cluster" check.txt
grep -Eq '^  precision +bf16 +deepspeed .*bf16.enabled "auto" \(assumed on' check.txt || fail "precision assumed from auto" check.txt
grep -Eq '^  device_memory +79.6 GiB +cluster ' check.txt || fail "device memory" check.txt
grep -Eq '^  framework +deepspeed +deepspeed ' check.txt || fail "framework" check.txt
grep -q 'PASS    every-step under zero2 (DeepSpeed.s only way' check.txt || fail "ZeRO-2 every-step is not DeepSpeed's only way" check.txt
! grep -q 'no_sync' <(grep 'fix:' check.txt) || fail "a no_sync fix for DeepSpeed" check.txt
[ "$(grep -c 'optimizer.params.lr' check.txt)" = 1 ] || fail "the lr warning is not printed exactly once" check.txt
! grep -q 'train_batch_size: "auto"' check.txt || fail "filled auto batch fields still warned about" check.txt

"$G" tune --deepspeed-config "$DS" "${spec[@]}" --global-batch 512 --out t > tune.txt 2>&1 || fail "tune exit $?" tune.txt
tr -s '\n ' ' ' < tune.txt | grep -q 'Run as: DeepSpeed ZeRO stage 2' || fail "the pick is not DeepSpeed's" tune.txt
python3 - <<'PY' || fail "the completed config" t/deepspeed_config.json
import json, sys
d = json.load(open("t/deepspeed_config.json"))
ok = (d["train_batch_size"] == 512 and d["train_micro_batch_size_per_gpu"] * d["gradient_accumulation_steps"] * 64 == 512
      and d["bf16"]["enabled"] is True and d["zero_optimization"]["stage"] == 2)
sys.exit(0 if ok else 1)
PY
next_command tune.txt | grep -q '^check --deepspeed-config t/deepspeed_config.json --spec ' ||
  fail "the next command is not the check of the completed config" tune.txt
run_next tune.txt check2.txt || fail "the printed check of the completed config exits $?" check2.txt
grep -Eq '^ 1  batch arithmetic +PASS' check2.txt || fail "batch arithmetic" check2.txt
echo JOURNEY-HF-DEEPSPEED-OK
