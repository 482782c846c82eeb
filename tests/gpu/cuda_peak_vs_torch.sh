#!/usr/bin/env bash
# GPU test (label gpu): the CUDA memory sweep's numbers equal PyTorch's own counter. A generated
# TorchScript model (Linear-GELU-LayerNorm-Linear, input 256, classes:10) is profiled with
# `profile --device cuda --micro-batches 2,8,32 --ranks 1`; tests/gpu/cuda_peak_reference.py
# replays the sweep's steps in PyTorch on the same caching allocator and compares weights,
# gradients, optimizer state and every point's peak (torch.cuda.max_memory_allocated), byte for byte.
# The Python is $GACCUM_PYTHON, else python3; it must carry the torch this LibTorch came from
# (same version), else the test skips: another torch may allocate differently.
# Skips (exit 77) with the reason when this build, machine or Python cannot run CUDA.
# Usage: cuda_peak_vs_torch.sh GACCUM_TUNE
set -u
G=$1
here=$(cd "$(dirname "$0")" && pwd)
PY=${GACCUM_PYTHON:-python3}
info=$("$G" version --json) || { echo "FAIL: gaccum-tune version --json"; exit 1; }
read -r torch_cuda ngpu libtorch reason < <(/usr/bin/python3 -c '
import json, sys
v = json.loads(sys.argv[1])
print(str(v["libtorch"]["cuda"]).lower(), len(v["devices"]), v["libtorch"]["version"],
      (v.get("no_device_reason") or "-").replace(" ", "_"))' "$info")
[ "$torch_cuda" = true ] || { echo "SKIP: this gaccum-tune is built against a CPU-only LibTorch (the CUDA sweep needs a CUDA LibTorch)"; exit 77; }
[ "$ngpu" -ge 1 ] || { echo "SKIP: no CUDA device answers (${reason//_/ })"; exit 77; }
pyinfo=$("$PY" -c 'import torch; print(torch.__version__.split("+")[0], str(torch.cuda.is_available()).lower())' 2>&1 | tail -n 1)
read -r pytorch pycuda <<<"$pyinfo"
[ "${pycuda:-}" = true ] || { echo "SKIP: $PY has no CUDA torch ($pyinfo); set GACCUM_PYTHON to the Python of the pip torch"; exit 77; }
[ "$pytorch" = "${libtorch%%+*}" ] || { echo "SKIP: $PY has torch $pytorch, this build LibTorch $libtorch (the allocation pattern may differ)"; exit 77; }
dir=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
"$PY" -c '
import sys, torch
m = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024), torch.nn.Linear(1024, 10))
torch.jit.script(m).save(sys.argv[1])' "$dir/mlp.pt" || { echo "FAIL: could not script the model"; exit 1; }
timeout 300 "$G" profile --torchscript "$dir/mlp.pt" --input-shape 256 --device cuda --micro-batches 2,8,32 \
  --ranks 1 --time-budget 10s -o "$dir/profile.json" >"$dir/profile.out" 2>&1
rc=$?
[ $rc = 0 ] || { cat "$dir/profile.out"; echo "FAIL: profile --device cuda exited $rc"; exit 1; }
"$PY" "$here/cuda_peak_reference.py" "$dir/profile.json" "$dir/mlp.pt"
rc=$?
[ $rc = 0 ] || { echo "FAIL: the profile's CUDA memory is not PyTorch's (exit $rc)"; exit 1; }
echo CUDA-PEAK-OK
