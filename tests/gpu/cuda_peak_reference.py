#!/usr/bin/env python3
"""What: PyTorch's own count of the profiler's CUDA memory sweep. For a profile of a TorchScript
model (classes:N target, one float input) made with `profile --device cuda --micro-batches LIST`,
this replays in Python, in a fresh process, exactly the steps of profiler/memory_sweep.cpp on the
same caching allocator and prints torch.cuda.max_memory_allocated for each point beside the
profile's numbers:

  base   = allocated bytes after CUDA is initialised (one tiny tensor, cache emptied)
  load   = torch.jit.load, .to(cuda), train()             -> weights   (allocated - base)
  grads  = zeros_like for every trainable parameter        -> gradients
  state  = the optimizer built, one step on zero gradients  -> optimizer_state
  point b, in the profile's (ascending) order: zero the gradients, synchronize, empty the cache,
         reset the peak; twice: inputs [b, D...] made on the CPU and copied, cross-entropy summed
         over the b samples / b, backward; one optimizer step; zero the gradients
         -> peak = max_memory_allocated - base

Why: the profiler's peak is read from c10's counters by C++; this is the independent check that
the step it measured is the step a PyTorch user runs and counts (issue 18). The graph executor's
optimisation is off, as in workloads/torchscript.cpp, so both run the same graph; the optimizers
run their single-tensor (foreach=False) form, the one LibTorch's C++ optimizers implement.

Usage: cuda_peak_reference.py PROFILE MODEL.pt   (exit 0: every number equal; 1: a difference;
77: no CUDA in this Python's torch). Values the sampler draws do not change the bytes, so the
inputs here are not the profiler's stream.
"""
import json
import sys

import torch
import torch.nn.functional as F


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-4])
        return 2
    prof = json.load(open(sys.argv[1]))
    model_path = sys.argv[2]
    w = prof["workload"]
    hyper = w.get("hyper", {})
    inputs, target = hyper.get("inputs", []), hyper.get("target", "")
    if len(inputs) != 1 or not inputs[0].startswith("float:") or not target.startswith("classes:"):
        print("FAIL: the reference replays one float input and a classes:N target, the profile has %s -> %s"
              % (inputs, target))
        return 1
    shape = [int(d) for d in inputs[0][len("float:"):].split(",")]
    classes = int(target[len("classes:"):])
    optimizer = prof["settings"].get("optimizer", "adam")
    if optimizer not in ("adam", "adamw", "sgd"):
        print("FAIL: optimizer %s is not replayed here" % optimizer)
        return 1
    if not torch.cuda.is_available():
        print("SKIP: this Python's torch has no CUDA device (torch.cuda.is_available() is false)")
        return 77
    if prof["hardware"].get("device_kind") != "cuda":
        print("FAIL: %s is not a CUDA profile (hardware.device_kind %s)" % (sys.argv[1], prof["hardware"].get("device_kind")))
        return 1
    dev = torch.device("cuda:0")  # profile --device cuda

    torch._C._set_graph_executor_optimize(False)
    torch.backends.cuda.matmul.allow_tf32 = False  # engine/exact_math.cpp: no TF32 in the profiler
    torch.backends.cudnn.allow_tf32 = False
    torch.cuda.set_device(dev)
    torch.empty(1, device=dev)
    torch.cuda.empty_cache()
    sync = lambda: torch.cuda.synchronize(dev)
    alloc = lambda: torch.cuda.memory_allocated(dev)
    base = alloc()

    model = torch.jit.load(model_path).to(dev)
    model.train()
    sync()
    weights = alloc() - base
    params = [p for p in model.parameters() if p.requires_grad]
    before = alloc()
    for p in params:
        p.grad = torch.zeros_like(p)
    sync()
    gradients = alloc() - before
    before = alloc()
    lr = 1e-3
    if optimizer == "adam":
        opt = torch.optim.Adam(params, lr=lr, foreach=False)
    elif optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, foreach=False)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9, foreach=False)
    opt.step()
    sync()
    optimizer_state = alloc() - before

    def zero_grad():
        with torch.no_grad():
            for p in params:
                p.grad.zero_()

    failures = 0
    points = sorted(prof["memory"], key=lambda m: m["micro_batch"])

    def compare(what, ours, theirs):
        nonlocal failures
        same = ours == theirs
        failures += 0 if same else 1
        print("%s %-28s torch %12d  profile %12d  diff %+d" % ("ok  " if same else "FAIL", what, ours, theirs,
                                                                theirs - ours))

    first = points[0] if points else {}
    compare("weights", weights, first.get("weights", -1))
    compare("gradients", gradients, first.get("gradients", -1))
    compare("optimizer_state", optimizer_state, first.get("optimizer_state", -1))
    for m in points:
        b = m["micro_batch"]
        zero_grad()
        sync()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        for _ in range(2):
            x = torch.randn([b] + shape).to(dev)
            y = torch.randint(0, classes, (b,)).to(dev)
            loss = F.cross_entropy(model(x), y, reduction="sum") / float(b)
            loss.backward()
            del x, y, loss
            sync()
        opt.step()
        zero_grad()
        sync()
        compare("peak at micro_batch %d" % b, torch.cuda.max_memory_allocated(dev) - base, m["peak"])
    print("torch %s, cuda %s, device %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name(dev)))
    print("FAIL" if failures else "OK: the profile's CUDA memory equals torch.cuda.max_memory_allocated")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
