#!/usr/bin/env bash
# Runs the check-parsers fuzzer for a bounded number of iterations from a seed corpus.
# Usage: run_fuzz.sh FUZZER RUNS SEED_FILE_OR_DIR...
# The seeds are copied into a fresh corpus directory (libFuzzer writes new inputs into it);
# a crash, a sanitizer report or an uncaught exception makes libFuzzer exit non-zero.
set -eu
fuzzer=$1; runs=$2; shift 2
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
n=0
for s in "$@"; do
  if [ -d "$s" ]; then
    for f in "$s"/*; do [ -f "$f" ] && cp "$f" "$corpus/seed-$n-$(basename "$f")" && n=$((n + 1)); done
  elif [ -f "$s" ]; then
    cp "$s" "$corpus/seed-$n-$(basename "$s")"; n=$((n + 1))
  fi
done
echo "seeds: $n"
# crash-* / leak-* / timeout-* artifacts land in the working directory (CTest's: the build tree).
"$fuzzer" -runs="$runs" -seed=1 -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 "$corpus"
echo "FUZZ-OK"
