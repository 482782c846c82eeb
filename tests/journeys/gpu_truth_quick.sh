#!/usr/bin/env bash
# bench/gpu_truth.py (the GPU truth the device check measures) stays runnable where no GPU is:
# --quick runs its GEMM sweep and training steps at toy sizes on the CPU, the gaccum-tune/runs file
# it writes is read by `calibrate --evaluate` (all 20 points priced), and --report prints the
# model against the measurements. Needs PY, a python with torch >= 2.5 (RMSNorm, SDPA with
# grouped-query attention): scripts/test-torch2's venv; skips (exit 77) without it.
# Usage: gpu_truth_quick.sh GACCUM_TUNE WORK_DIR SOURCE_DIR [PY]
set -u
G=$1 W=$2 S=$3 PY=${4:-}
[ -n "$PY" ] || { echo "SKIP: no python with torch 2.x (GACCUM_FRAMEWORKS_PYTHON; scripts/test-torch2 sets it)"; exit 77; }
"$PY" -c 'import sys, torch; v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]); sys.exit(0 if v >= (2, 5) else 1)' \
  || { echo "SKIP: $PY has no torch >= 2.5"; exit 77; }
rm -rf "$W" && mkdir -p "$W" || exit 1
"$PY" "$S/bench/gpu_truth.py" --out "$W" --quick > "$W/measure.out" 2>&1 || { cat "$W/measure.out"; echo "FAIL: gpu_truth.py --quick"; exit 1; }
grep -q "gpu_truth: 60 GEMM shapes, 20 training points, 0 skipped" "$W/measure.out" || { cat "$W/measure.out"; echo "FAIL: not every point measured"; exit 1; }
"$G" calibrate --evaluate --runs "$W/gpu-truth-runs.json" > "$W/evaluate.out" 2>&1 || { cat "$W/evaluate.out"; echo "FAIL: calibrate --evaluate"; exit 1; }
grep -q "runs: 20 read, 20 priced, 0 not priced" "$W/evaluate.out" || { cat "$W/evaluate.out"; echo "FAIL: runs not all priced"; exit 1; }
"$PY" "$S/bench/gpu_truth.py" --report "$W" --gaccum "$G" > "$W/report.out" 2>&1 || { cat "$W/report.out"; echo "FAIL: --report"; exit 1; }
grep -q "GEMM time error of the model: median" "$W/report.out" && grep -q "step time error: median" "$W/report.out" \
  || { cat "$W/report.out"; echo "FAIL: the report lacks its summaries"; exit 1; }
echo GPU-TRUTH-QUICK-OK
