#!/usr/bin/env bash
# A scripted torch.nn.TransformerEncoder over token ids with a key-padding mask, dropout and a
# per-token loss, with the defaults only: tune profiles and recommends; validate proves the
# accumulation (dropout masks seeded per micro-batch, the loss normalised by the window's real
# tokens).
# Usage: token_encoder.sh GACCUM_TUNE WORK_DIR TOKEN_ENCODER_PT
set -u
G=$1 W=$2 ENC=$3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export XDG_CACHE_HOME="$W/cache"
fail() { echo "FAIL: $1"; [ -n "${2:-}" ] && cat "$2"; exit 1; }
flags=(--torchscript "$ENC" --input tokens:1000:32 --input pad-mask:32 --target tokens:1000)

"$G" tune "${flags[@]}" --out tune > tune.txt 2>&1 || fail "tune exit $?" tune.txt
grep -q 'Recommendation: Use micro_batch' tune.txt || fail "no recommendation" tune.txt
grep -q 'dropout: 6 layer' tune.txt || fail "dropout not reported" tune.txt

"$G" validate "${flags[@]}" -o v.json > v.txt 2>&1
rc=$?
cat v.txt
[ $rc = 0 ] || fail "validate exit $rc"
grep -q 'PASS  gradient_equivalence' v.txt || fail "gradient equivalence"
grep -q 'PASS  token_normalisation' v.txt || fail "token normalisation"
grep -q 'NOTE: dropout' v.txt || fail "no dropout note"
grep -q 'accumulation: CORRECT' v.txt || fail "accumulation not correct"
echo ENCODER-OK
