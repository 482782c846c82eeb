#!/usr/bin/python3
"""One rank of the PyTorch DDP side of bench/ddp_compare.py (and the writer of its model).

What: trains a TorchScript model with torch.nn.parallel.DistributedDataParallel over Gloo, with
gradient accumulation the way PyTorch users write it (no_sync() on the first accum_steps-1
micro-steps), on exactly the data stream `gaccum-tune validate --torchscript` trains on, and
(rank 0) writes per-window step times and losses as JSON. `write-model` writes the benchmark's
TorchScript model.

Why: the runner-against-DDP benchmark (issue 8) must compare the same model, data, loss,
optimizer and batch settings; this file is the DDP half. Needs PyTorch: run it with Debian's
/usr/bin/python3 (python3-torch 1.13), not the default pyenv python3.

Data (must match workloads/torchscript.cpp and workloads/synthetic_rng.hpp bit for bit):
  sample i of stream `seed`: key = sm(sm(sm(seed) ^ i) ^ (purpose * 0x632be59bd9b4e019)),
  sm = splitmix64, purpose 5; bits(k) = sm(key ^ (k * 0xd1b54a32d192ed03)); uniform(k) =
  (bits(k) >> 11) * 2^-53; normal(k) = sqrt(-2 log(uniform(2k) + 2^-54)) * cos(2 pi uniform(2k+1))
  (glibc log/cos through Python's math module, as the C++ side calls them); input element j
  (C order over input_shape) = normal(j + 1) in float64, then cast to the model dtype; class
  label = bits(0) mod N; regression target j = normal(j) of purpose 6.
  Rank r, micro-step m of window w reads samples w*B + (r*k + m)*b .. +b (B = b*k*p), the
  runner's layout (workloads::sample_offset).
Loss: sum of per-sample losses (cross-entropy or squared error) * world_size / B per
  micro-batch, so DDP's gradient average equals the gradient of the window's mean loss, as in
  runner/accumulation_loop.hpp. The reported loss of a window is sum over ranks of the loss sums / B.
Timing: per window, zero_grad .. optimizer.step(), each rank's wall time; per window the
  slowest rank; the data is generated before the first window (not timed, unlike the runner,
  which builds each micro-batch inside the step: this favours DDP slightly).

Usage:
  ddp_peer.py write-model --arch resnet18-gn|tiny-cnn OUT.pt
  RANK=r WORLD_SIZE=p MASTER_ADDR=127.0.0.1 MASTER_PORT=port \\
    ddp_peer.py run --model M.pt --input-shape 3,32,32 [--target classes:10] -b 8 -k 4 \\
      [--steps 20 --warmup 3 --seed 0 --lr 1e-3 --optimizer adam --threads 1] -o out.json
"""
import argparse
import contextlib
import datetime
import json
import math
import os
import statistics
import sys
import time

MASK = (1 << 64) - 1


def splitmix64_int(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def splitmix64_np(np, x):
    """splitmix64 over a numpy uint64 array (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def sample_key(seed, sample, purpose):
    inner = splitmix64_int(splitmix64_int(seed) ^ sample)
    return splitmix64_int(inner ^ ((purpose * 0x632BE59BD9B4E019) & MASK))


def bits(np, key, ks):
    """bits(k) for an array of draws ks (uint64)."""
    mixed = np.uint64(key) ^ (ks * np.uint64(0xD1B54A32D192ED03))
    return splitmix64_np(np, mixed)


def normals(np, key, first_k, count):
    """normal(first_k), ..., normal(first_k + count - 1) of one sample's stream (float64 list)."""
    ks = np.arange(first_k, first_k + count, dtype=np.uint64)
    b1 = bits(np, key, np.uint64(2) * ks)
    b2 = bits(np, key, np.uint64(2) * ks + np.uint64(1))
    u1 = (b1 >> np.uint64(11)).astype(np.float64) * 2.0**-53 + 2.0**-54
    u2 = (b2 >> np.uint64(11)).astype(np.float64) * 2.0**-53
    log, cos, sqrt = math.log, math.cos, math.sqrt
    return [sqrt(-2.0 * log(a)) * cos(6.283185307179586 * c) for a, c in zip(u1.tolist(), u2.tolist())]


def make_batch(torch, np, seed, first, count, shape, target_kind, width, dtype):
    """Samples [first, first+count) of stream `seed`: (input [count, *shape], target)."""
    per = 1
    for d in shape:
        per *= d
    x = np.empty((count, per), dtype=np.float64)
    if target_kind == "classes":
        y = np.empty((count,), dtype=np.int64)
    else:
        y = np.empty((count, width), dtype=np.float64)
    for s in range(count):
        key = sample_key(seed, first + s, 5)
        x[s, :] = normals(np, key, 1, per)
        if target_kind == "classes":
            label = int(bits(np, key, np.zeros(1, dtype=np.uint64))[0]) % width
            y[s] = label
        else:
            y[s, :] = normals(np, sample_key(seed, first + s, 6), 0, width)
    xt = torch.from_numpy(x).reshape([count] + list(shape)).to(dtype)
    yt = torch.from_numpy(y) if target_kind == "classes" else torch.from_numpy(y).to(dtype)
    return xt, yt


def sample_offset(step, rank, micro, b, k, p):
    return step * b * k * p + (rank * k + micro) * b


# --- model writer --------------------------------------------------------------------------------

def fixture_module():
    """scripts/make-torchscript-fixture.py as a module (its TinyCnn is the tests' fixture model)."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "make-torchscript-fixture.py")
    spec = importlib.util.spec_from_file_location("make_torchscript_fixture", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_model(arch, out):
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        """torchvision's BasicBlock with GroupNorm (per-sample statistics: accumulation is exact)."""

        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.gn1 = nn.GroupNorm(32, cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.gn2 = nn.GroupNorm(32, cout)
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(32, cout))
            else:
                self.down = nn.Sequential()

        def forward(self, x):
            out = torch.relu(self.gn1(self.conv1(x)))
            out = self.gn2(self.conv2(out))
            return torch.relu(out + self.down(x))

    class ResNet18GN(nn.Module):
        """ResNet-18 layout (7x7/2 stem, max-pool, 2-2-2-2 basic blocks 64..512, 10 classes)."""

        def __init__(self, classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.gn1 = nn.GroupNorm(32, 64)
            self.pool = nn.MaxPool2d(3, 2, 1)
            layers = []
            cin = 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            x = self.pool(torch.relu(self.gn1(self.conv1(x))))
            x = self.layers(x)
            return self.fc(torch.flatten(torch.mean(x, dim=(2, 3)), 1))

    torch.manual_seed(0)
    if arch == "resnet18-gn":
        model = ResNet18GN()
    elif arch == "tiny-cnn":
        model = fixture_module().TinyCnn()  # the tests' fixture model: [b,3,H,W] -> [b,10]
    else:
        raise SystemExit("error: write-model --arch: unknown '%s': expected resnet18-gn or tiny-cnn" % arch)
    tmp = out + ".tmp-%d" % os.getpid()
    torch.jit.script(model).save(tmp)
    os.replace(tmp, out)
    params = sum(p.numel() for p in model.parameters())
    print("wrote %s (%s, %d parameters)" % (out, arch, params))


# --- one DDP rank --------------------------------------------------------------------------------

def parse_target(text):
    kind, _, width = text.partition(":")
    if kind not in ("classes", "regression") or not width.isdigit() or int(width) < 1:
        raise SystemExit("error: --target: invalid value '%s': expected classes:N or regression:D" % text)
    return kind, int(width)


def run_rank(a):
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = int(os.environ["MASTER_PORT"])
    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    shape = [int(d) for d in a.input_shape.split(",")]
    kind, width = parse_target(a.target)
    dtype = torch.float64 if a.dtype == "float64" else torch.float32
    b, k, p = a.micro_batch, a.accum_steps, world
    B = b * k * p
    windows = a.warmup + a.steps

    # The whole run's micro-batches of this rank, generated before timing.
    t_data = time.perf_counter()
    data = []
    for w in range(windows):
        data.append([make_batch(torch, np, a.seed, sample_offset(w, rank, m, b, k, p), b, shape, kind, width, dtype)
                     for m in range(k)])
    data_s = time.perf_counter() - t_data

    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (addr, port), rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=a.timeout))
    model = torch.jit.load(a.model)
    model.to(dtype)
    model.train()
    ddp = DDP(model, broadcast_buffers=a.broadcast_buffers)
    params = [q for q in ddp.parameters() if q.requires_grad]
    if a.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=a.lr)
    elif a.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=a.lr)
    else:
        opt = torch.optim.SGD(params, lr=a.lr, momentum=0.9)
    scale = float(world) / float(B)

    def loss_sum(out, y):
        if kind == "classes":
            return F.cross_entropy(out, y, reduction="sum")
        return (out - y).pow(2).sum()

    step_times, loss_sums = [], []
    dist.barrier()
    for w in range(windows):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        micro_losses = []
        for m in range(k):
            x, y = data[w][m]
            ctx = ddp.no_sync() if (a.no_sync and m < k - 1) else contextlib.nullcontext()
            with ctx:
                ls = loss_sum(ddp(x), y)
                (ls * scale).backward()
            micro_losses.append(ls.detach())
        opt.step()
        step_times.append(time.perf_counter() - t0)
        loss_sums.append(float(sum(float(v) for v in micro_losses)))

    gathered = [None] * world
    dist.all_gather_object(gathered, {"rank": rank, "step_time": step_times, "loss_sum": loss_sums,
                                      "data_s": data_s, "threads": torch.get_num_threads()})
    dist.barrier()
    # No destroy_process_group(): the process ends with os._exit (see the end of this file).
    if rank != 0:
        return 0
    per_window = [max(g["step_time"][w] for g in gathered) for w in range(windows)]
    timed = per_window[a.warmup:]
    median = statistics.median(timed)
    losses = [sum(g["loss_sum"][w] for g in gathered) / B for w in range(windows)]
    doc = {
        "kind": "gaccum-bench/ddp-peer",
        "config": {"model": os.path.abspath(a.model), "input_shape": shape, "target": a.target,
                   "micro_batch": b, "accum_steps": k, "world_size": p, "global_batch": B,
                   "steps": a.steps, "warmup": a.warmup, "seed": a.seed, "optimizer": a.optimizer, "lr": a.lr,
                   "dtype": a.dtype, "no_sync": a.no_sync, "broadcast_buffers": a.broadcast_buffers,
                   "threads_per_rank": a.threads},
        "environment": {"torch": torch.__version__, "backend": "gloo",
                        "threads": [g["threads"] for g in gathered],
                        "data_generation_s": [g["data_s"] for g in gathered]},
        "measured": {"step_time": {"median": median, "min": min(timed), "max": max(timed)},
                     "throughput_samples_per_s": B / median,
                     "loss": {"first_window": losses[0], "last_window": losses[-1]}},
        "steps": [{"window": w, "timed": w >= a.warmup, "step_time": per_window[w], "loss": losses[w],
                   "per_rank_step_time": [g["step_time"][w] for g in gathered]} for w in range(windows)],
    }
    tmp = a.output + ".tmp-%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.output)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    wm = sub.add_parser("write-model", help="write the benchmark's TorchScript model")
    wm.add_argument("--arch", default="resnet18-gn", help="resnet18-gn (default) or tiny-cnn")
    wm.add_argument("out")
    r = sub.add_parser("run", help="one DDP rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment)")
    r.add_argument("--model", required=True)
    r.add_argument("--input-shape", required=True)
    r.add_argument("--target", default="classes:10")
    r.add_argument("-b", "--micro-batch", type=int, required=True)
    r.add_argument("-k", "--accum-steps", type=int, required=True)
    r.add_argument("--steps", type=int, default=20)
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--lr", type=float, default=1e-3)
    r.add_argument("--optimizer", default="adam", choices=["adam", "adamw", "sgd"])
    r.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--timeout", type=float, default=120)
    r.add_argument("--sync-every-step", dest="no_sync", action="store_false",
                   help="allreduce on every micro-step (DDP without no_sync)")
    r.add_argument("--broadcast-buffers", action="store_true",
                   help="DDP broadcast_buffers=True (off by default: the runner does not sync buffers)")
    r.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "write-model":
        write_model(a.arch, a.out)
        return 0
    for name in ("micro_batch", "accum_steps", "steps", "warmup", "threads"):
        if getattr(a, name) < 1:
            raise SystemExit("error: --%s: must be at least 1" % name.replace("_", "-"))
    for var in ("RANK", "WORLD_SIZE", "MASTER_PORT"):
        if var not in os.environ:
            raise SystemExit("error: %s is not set: ddp_peer.py run is started by bench/ddp_compare.py" % var)
    return run_rank(a)


if __name__ == "__main__":
    # End without the interpreter's teardown: torch 1.13's Gloo/c10d threads (and the TCPStore
    # that rank 0 hosts) can keep a finished rank from exiting; all output is flushed first.
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (print(e.code, file=sys.stderr) or 2)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
