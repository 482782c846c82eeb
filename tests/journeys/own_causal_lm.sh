#!/usr/bin/env bash
# Journey 1: a causal LM of the user's own (scripts/make-torchscript-fixture.py causal_lm.pt: token
# ids in, a token per position out, every sample 64 real tokens), taken through the README's path
# as a new user would: profile -o (which fills the cache), tune (which must reuse it and end with
# the next command), validate with the model flags only (the cached pick and profile), then the
# printed next command itself. Asserts the verdicts, the printed inputs and the next command; and
# that a deliberately wrong normalisation on a padded input FAILs.
# Usage: own_causal_lm.sh GACCUM_TUNE WORK_DIR CAUSAL_LM_PT
set -u
G=$1 W=$2 LM=$3
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
flags=(--torchscript "$LM" --input tokens:200:64 --target tokens:200)

# 1. profile -o: written, and cached for tune, check and validate.
"$G" profile "${flags[@]}" --time-budget 10s -o lm-profile.json > profile.txt 2>&1 || fail "profile exit $?" profile.txt
grep -q '^cached as .*/gaccum-tune/profiles/torchscript-.*json (tune, check and validate on this workload reuse it)' profile.txt ||
  fail "profile -o did not fill the cache" profile.txt

# 2. tune: reuses the cache (no second profile), recommends, labels the plan's frameworks (not
#    Megatron-LM or torchtitan: they build their own models; --framework megatron is refused) and
#    ends with the command to run on the pick.
"$G" tune "${flags[@]}" --out tune > tune.txt 2>&1 || fail "tune exit $?" tune.txt
grep -q '^Profile: cached ' tune.txt || fail "tune profiled again instead of using profile -o's cache" tune.txt
rec=$(tr -s '\n ' ' ' < tune.txt | grep -o 'Recommendation: Use micro_batch [0-9]* with accum_steps [0-9]* on [0-9]* rank')
[ -n "$rec" ] || fail "no recommendation" tune.txt
read -r b k p <<< "$(echo "$rec" | sed -E 's/.*micro_batch ([0-9]+) with accum_steps ([0-9]+) on ([0-9]+) rank/\1 \2 \3/')"
if [ "$p" -gt 1 ]; then
  tr -s '\n ' ' ' < tune.txt | grep -q 'Runs on DDP' || fail "the pick's frameworks are not named" tune.txt
  # A module of the user's own: Megatron-LM and torchtitan build their own transformers.
  tr -s '\n ' ' ' < tune.txt | grep -Eq 'Runs on [^.]*(Megatron-LM|torchtitan)' &&
    fail "the user's own module is labelled as running on Megatron-LM or torchtitan" tune.txt
fi
"$G" tune "${flags[@]}" --framework megatron --out tune-megatron > megatron.txt 2>&1
rc=$?
[ $rc = 2 ] || fail "tune --framework megatron on the user's own module exited $rc, expected 2" megatron.txt
grep -q 'Megatron-LM trains its own model definitions (GPTModel), not a module of your own: use DDP, FSDP or DeepSpeed' megatron.txt ||
  fail "tune --framework megatron did not name Megatron-LM's rule and the fix" megatron.txt
[ ! -e tune-megatron ] || fail "a refused tune wrote its output directory" megatron.txt
grep -A1 '^Next: run the pick for real' tune.txt | tail -1 > next.txt
grep -q '^  gaccum-tune validate --from-tune tune/result.json --top 1 --torchscript .*causal_lm.pt --input tokens:200:64 --target tokens:200$' next.txt ||
  fail "tune's next command is not the validate of its pick" tune.txt

# 3. validate with the model flags only: the cached pick, the cached profile (an informational
#    prediction), a correct accumulation whose token control is n/a (no padding: it cannot
#    discriminate), never a false INCORRECT.
"$G" validate "${flags[@]}" -o v.json > v.txt 2>&1 || fail "validate exit $?" v.txt
grep -q '^validate: the pick of the last tune on this workload' v.txt || fail "validate did not default to the cached pick" v.txt
grep -Eq "^validate torchscript  micro_batch $b  accum_steps $k  world_size $p " v.txt || fail "validated b k p are not the pick's ($b $k $p)" v.txt
grep -q 'PASS  gradient_equivalence' v.txt || fail "gradient equivalence" v.txt
grep -q 'n/a   token_normalisation         cannot discriminate on this input' v.txt || fail "token control not n/a" v.txt
grep -q '^accumulation: CORRECT' v.txt || fail "accumulation not CORRECT" v.txt
grep -q 'informational, from the cached profile' v.txt || fail "the cached profile's prediction is not informational" v.txt
grep -q '^result: PASS' v.txt || fail "result not PASS" v.txt

# 4. The printed next command, as printed.
# --from-tune makes the prediction a verdict, and timing under a parallel test suite is not a quiet
# machine's: exit 3 (correct accumulation, missed prediction) is accepted here, accuracy is
# bench/'s business; the accumulation must be CORRECT.
run_next tune.txt v-next.txt -o v-next.json
rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || fail "the next command exit $rc" v-next.txt
grep -q '^accumulation: CORRECT' v-next.txt || fail "the next command's accumulation" v-next.txt

# 5. A deliberately wrong normalisation (each micro-batch's mean / accum_steps) on padded input FAILs.
GACCUM_TEST_BREAK=normalise-by-k "$G" validate --torchscript "$LM" --input tokens:200:64 --input mask:64 --target tokens:200 \
  -b 2 -k 2 -p 2 --steps 1 --warmup 1 --timeout 60s -o bad.json > bad.txt 2>&1
rc=$?
[ $rc = 1 ] || fail "a wrong normalisation exited $rc, expected 1" bad.txt
grep -q 'FAIL  token_normalisation' bad.txt || fail "token_normalisation did not FAIL" bad.txt
grep -q '^accumulation: INCORRECT' bad.txt || fail "accumulation not INCORRECT" bad.txt
echo JOURNEY-OWN-LM-OK
