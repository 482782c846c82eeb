#!/usr/bin/env python3
"""What: GPU truth for the GPU compute model (model/gpu_compute.cpp), measured with PyTorch on a
      real GPU: (1) the bf16 GEMMs of a transformer layer at the token counts micro_batch x seq_len
      gives them (achieved TFLOP/s per shape), and (2) whole training steps of Llama-style and
      GPT-style layer stacks at micro_batch 1..16, with and without full activation
      checkpointing: step time and peak memory (allocated and reserved).
Why:  the shipped efficiencies are fitted to published multi-GPU runs; this measures, on one GPU
      where no collective hides anything, what a micro-batch costs, and writes it as a
      gaccum-tune/runs file so `gaccum-tune calibrate --evaluate --runs FILE` holds the model's
      predictions against it (and `calibrate --runs FILE` can fit to it).

The training step is the one the model prices as precision bf16: 2-byte weights and gradients,
fp32 master weights and AdamW state (16 bytes per parameter), gradients accumulated over
accum_steps micro-steps, then the optimizer step on the master copy and a copy back to bf16.
Attention is torch's scaled_dot_product_attention (causal; FlashAttention on Hopper/Ampere in bf16).

Usage (on the GPU machine; scripts/device-check runs it):
    python3 bench/gpu_truth.py --out DIR            # DIR/gpu-truth.json, gpu-truth-runs.json, gemm.csv
    python3 bench/gpu_truth.py --out DIR --quick    # tiny shapes, CPU allowed: checks the script itself
Then, anywhere (no torch needed), the model against what was measured:
    python3 bench/gpu_truth.py --report DIR [--gaccum build/gaccum-tune]
      GEMMs: measured TFLOP/s vs the model's peak x gemm x wave (or its HBM floor) per shape;
      steps: `calibrate --evaluate --json --runs DIR/gpu-truth-runs.json`, step time and reserved
      peak memory, predicted vs measured, per point, and the error summary.
"""
import argparse
import json
import math
import os
import sys
import time

import subprocess

try:
    import torch
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint
    Module = torch.nn.Module
except ImportError:  # --report needs no torch
    torch = None
    Module = object

# The models measured, as gaccum-tune/spec objects (the same object goes into the runs file).
LLAMA = {
    "schema": "gaccum-tune/spec", "name": "llama3-8b-8layers", "layers": 8, "hidden": 4096, "heads": 32,
    "kv_heads": 8, "seq_len": 2048, "vocab": 32000, "ffn_hidden": 14336, "gated_mlp": True,
    "attention": "flash", "bias": False, "norm": "rmsnorm", "learned_positions": False,
    "tied_embeddings": False, "dropout": False, "dtype": "bf16", "optimizer": "adamw",
    "_source": "bench/gpu_truth.py: Llama 3 8B's layer (GQA 32/8 heads, SwiGLU 14336, RMSNorm, no biases), 8 layers, vocabulary 32000, measured on one GPU",
}
GPT = {
    "schema": "gaccum-tune/spec", "name": "gpt-2048-8layers", "layers": 8, "hidden": 2048, "heads": 16,
    "seq_len": 2048, "vocab": 50304, "ffn_hidden": 8192, "gated_mlp": False, "attention": "flash",
    "bias": True, "norm": "layernorm", "learned_positions": True, "tied_embeddings": False,
    "dropout": False, "dtype": "bf16", "optimizer": "adamw",
    "_source": "bench/gpu_truth.py: GPT-style layer (MHA 16 heads, GELU MLP 8192, LayerNorm, biases, learned positions), 8 layers, measured on one GPU",
}
QUICK = {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 32, "vocab": 128, "ffn_hidden": 128}


def device_id(name):
    """The catalogue id (gaccum-tune devices) of torch.cuda.get_device_name()."""
    n = name.lower()
    if "h200" in n: return "h200"
    if "h100" in n and "pcie" in n: return "h100-pcie-80gb"
    if "h100" in n: return "h100-sxm-80gb"
    if "a100" in n and "40" in n: return "a100-sxm-40gb"
    if "a100" in n: return "a100-sxm-80gb"
    return None


class Block(Module):
    def __init__(self, m):
        super().__init__()
        d, h = m["hidden"], m["heads"]
        kv = m.get("kv_heads", h)
        self.h, self.kv, self.hd = h, kv, d // h
        bias = m["bias"]
        Norm = torch.nn.RMSNorm if m["norm"] == "rmsnorm" else torch.nn.LayerNorm
        self.n1, self.n2 = Norm(d), Norm(d)
        self.qkv = torch.nn.Linear(d, (h + 2 * kv) * self.hd, bias=bias)
        self.o = torch.nn.Linear(d, d, bias=bias)
        self.gated = m["gated_mlp"]
        f = m["ffn_hidden"]
        self.up = torch.nn.Linear(d, 2 * f if self.gated else f, bias=bias)
        self.down = torch.nn.Linear(f, d, bias=bias)

    def forward(self, x):  # x: [b, s, d]
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).split([self.h * self.hd, self.kv * self.hd, self.kv * self.hd], -1)
        q = q.view(b, s, self.h, self.hd).transpose(1, 2)
        k = k.view(b, s, self.kv, self.hd).transpose(1, 2)
        v = v.view(b, s, self.kv, self.hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv != self.h)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
        u = self.up(self.n2(x))
        if self.gated:
            g, u = u.chunk(2, -1)
            u = F.silu(g) * u
        else:
            u = F.gelu(u, approximate="tanh")
        return x + self.down(u)


class LM(Module):
    def __init__(self, m, ckpt):
        super().__init__()
        self.emb = torch.nn.Embedding(m["vocab"], m["hidden"])
        self.pos = torch.nn.Embedding(m["seq_len"], m["hidden"]) if m["learned_positions"] else None
        self.blocks = torch.nn.ModuleList(Block(m) for _ in range(m["layers"]))
        Norm = torch.nn.RMSNorm if m["norm"] == "rmsnorm" else torch.nn.LayerNorm
        self.nf = Norm(m["hidden"])
        self.head = torch.nn.Linear(m["hidden"], m["vocab"], bias=False)
        self.ckpt = ckpt

    def forward(self, ids, labels):  # ids, labels: [b, s] int64
        x = self.emb(ids)
        if self.pos is not None:
            x = x + self.pos.weight[: ids.shape[1]]
        for blk in self.blocks:
            x = checkpoint(blk, x, use_reentrant=False) if self.ckpt else blk(x)
        logits = self.head(self.nf(x)).float()  # the loss in fp32, as the model prices it
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def gemm_sweep(dev, m, token_counts, iters):
    """Forward GEMMs of one layer and the head at each token count: [(name, M, N, K, s, TFLOP/s)]."""
    d, f, h = m["hidden"], m["ffn_hidden"], m["heads"]
    kv = m.get("kv_heads", h)
    shapes = [("qkv", d, (h + 2 * kv) * (d // h)), ("attn_out", d, d),
              ("mlp_up", d, 2 * f if m["gated_mlp"] else f), ("mlp_down", f, d), ("head", d, m["vocab"])]
    rows = []
    for M in token_counts:
        for name, K, N in shapes:
            a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            w = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
            for _ in range(3):
                F.linear(a, w)
            sync(dev)
            t0 = time.perf_counter()
            for _ in range(iters):
                F.linear(a, w)
            sync(dev)
            s = (time.perf_counter() - t0) / iters
            rows.append({"model": m["name"], "gemm": name, "M": M, "N": N, "K": K, "seconds": s,
                         "tflops": 2.0 * M * N * K / s / 1e12})
            del a, w
    return rows


def train_point(dev, m, micro_batch, accum, ckpt, steps):
    """Build the model, run 1 warm-up step and `steps` timed steps; times and peak memory."""
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    with torch.device(dev):  # initialised on the device: a 2B-parameter model in a second, not a minute
        model = LM(m, ckpt)
    master = [p.detach().clone().float() for p in model.parameters()]  # fp32 master weights
    model.to(torch.bfloat16)
    for p in master:
        p.requires_grad_(True)
    opt = torch.optim.AdamW(master, lr=1e-4, fused=dev.type == "cuda")
    s, V = m["seq_len"], m["vocab"]
    gen = torch.Generator(device=dev).manual_seed(1)
    ids = torch.randint(0, V, (accum, micro_batch, s), device=dev, generator=gen)
    labels = torch.randint(0, V, (accum, micro_batch, s), device=dev, generator=gen)
    micro, opt_t, step_t = [], [], []
    for it in range(steps + 1):
        sync(dev)
        t0 = time.perf_counter()
        for a in range(accum):
            loss = model(ids[a], labels[a]) / accum
            loss.backward()
        sync(dev)
        t1 = time.perf_counter()
        for p, q in zip(master, model.parameters()):
            p.grad = q.grad.float()
            q.grad = None
        opt.step()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            for p, q in zip(master, model.parameters()):
                q.copy_(p)
        sync(dev)
        t2 = time.perf_counter()
        if it > 0:  # the first step warms up (kernels chosen, optimizer state created)
            micro.append((t1 - t0) / accum)
            opt_t.append(t2 - t1)
            step_t.append(t2 - t0)
    out = {"micro_step_s": sorted(micro)[len(micro) // 2], "optimizer_s": sorted(opt_t)[len(opt_t) // 2],
           "step_s": sorted(step_t)[len(step_t) // 2], "steps": steps,
           "parameters": sum(p.numel() for p in master), "loss": float(loss.detach()) * accum}
    if dev.type == "cuda":
        out["max_memory_allocated"] = torch.cuda.max_memory_allocated()
        out["max_memory_reserved"] = torch.cuda.max_memory_reserved()
    del model, master, opt, ids, labels, loss
    return out


def model_gemm_tflops(dev, M, N, K):
    """The model's achieved TFLOP/s of one bf16 GEMM (model/gpu_compute.cpp gemm_time)."""
    c = dev["calibration"]
    tile_m, tile_n = {"ampere": (128, 128), "hopper": (128, 256), "blackwell": (128, 256), "cdna3": (256, 256)}[dev["generation"]]
    tiles = math.ceil(M / tile_m) * math.ceil(N / tile_n)
    waves = math.ceil(tiles / dev["sms"])
    wave = tiles / (waves * dev["sms"])
    flops = 2.0 * M * N * K
    t = max(flops / (dev["bf16_tflops"] * 1e12 * c["gemm"] * wave),
            2.0 * (M * K + K * N + M * N) / (dev["hbm_GBps"] * 1e9 * c["memory"])) + c["overhead_s"]
    return flops / t / 1e12


def print_report(d, gaccum):
    truth = json.load(open(os.path.join(d, "gpu-truth.json")))
    devs = json.loads(subprocess.run([gaccum, "devices", "--json"], check=True, capture_output=True, text=True).stdout)
    dev = next(x for x in devs["devices"] if x["id"] == truth["device"])
    print("%s (%s), torch %s, CUDA %s, measured %s" % (truth["device_name"], truth["device"], truth["torch"],
                                                       truth["cuda"], truth["date_utc"]))
    print("\nGEMMs, bf16 forward: measured TFLOP/s (model's) by M = tokens")
    errs = []
    for model in sorted({r["model"] for r in truth["gemm"]}):
        for g in ("qkv", "attn_out", "mlp_up", "mlp_down", "head"):
            rows = [r for r in truth["gemm"] if r["model"] == model and r["gemm"] == g]
            cells = []
            for r in rows:
                p = model_gemm_tflops(dev, r["M"], r["N"], r["K"])
                errs.append(100.0 * (p / r["tflops"] - 1))
                cells.append("%d:%.0f(%.0f)" % (r["M"], r["tflops"], p))
            if rows:
                print("  %-20s %-8s N=%-6d K=%-6d %s" % (model, g, rows[0]["N"], rows[0]["K"], " ".join(cells)))
    if errs:
        a = sorted(abs(e) for e in errs)
        print("  GEMM time error of the model: median |%.1f%%|, max |%.1f%%|, signed mean %+.1f%% (%d shapes)"
              % (a[len(a) // 2], a[-1], sum(errs) / len(errs), len(errs)))
    ev = json.loads(subprocess.run([gaccum, "calibrate", "--evaluate", "--json", "--runs",
                                    os.path.join(d, "gpu-truth-runs.json")], check=True, capture_output=True,
                                   text=True).stdout)
    meas = {("%s-%s-mb%d-%s" % (truth["device"], t["model"], t["micro_batch"], t["checkpointing"])): t for t in truth["train"]}
    print("\nTraining steps (1 GPU, accum_steps 4): step time and reserved peak, measured vs predicted")
    terr, merr = [], []
    for r in ev["rows"]:
        t = meas.get(r["id"])
        tok = r["micro_batch"] * r["accum_steps"] * r["seq_len"]
        pred_step = tok / r["predicted_tokens_per_s_per_gpu"]
        line = "  %-44s step %.4f s, predicted %.4f (%+.1f%%)  GEMM eff %.0f%% MFU %.0f%%" % (
            r["id"], t["step_s"], pred_step, 100 * (pred_step / t["step_s"] - 1), 100 * r["gemm_efficiency"], 100 * r["mfu"])
        terr.append(100 * (pred_step / t["step_s"] - 1))
        if "max_memory_reserved" in t:
            merr.append(100.0 * (r["predicted_peak_memory_bytes"] / t["max_memory_reserved"] - 1))
            line += "  peak %.2f GiB, predicted %.2f (%+.1f%%)" % (t["max_memory_reserved"] / 2**30,
                                                                  r["predicted_peak_memory_bytes"] / 2**30, merr[-1])
        print(line)
    for name, e in (("step time", terr), ("peak memory", merr)):
        if e:
            a = sorted(abs(x) for x in e)
            print("  %s error: median |%.1f%%|, max |%.1f%%|, signed mean %+.1f%% (%d points)"
                  % (name, a[len(a) // 2], a[-1], sum(e) / len(e), len(e)))
    for s_ in truth["skipped"]:
        print("  not measured: %s (%s)" % (s_["point"], s_["why"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="where the measurements go")
    ap.add_argument("--report", metavar="DIR", help="no measuring: the model against DIR's measurements")
    ap.add_argument("--gaccum", default="build/gaccum-tune", help="with --report: the gaccum-tune binary")
    ap.add_argument("--quick", action="store_true", help="tiny shapes (checks the script; CPU allowed)")
    ap.add_argument("--budget", type=float, default=240, help="seconds: points left when it runs out are skipped and listed")
    args = ap.parse_args()
    if args.report:
        return print_report(args.report, args.gaccum)
    if not args.out:
        ap.error("--out DIR (or --report DIR)")
    if torch is None:
        sys.exit("gpu_truth.py: measuring needs PyTorch (python3 -c 'import torch' fails)")
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if dev.type == "cpu" and not args.quick:
        sys.exit("gpu_truth.py: no CUDA device answers; run it on a GPU (or --quick to check the script)")
    torch.backends.cuda.matmul.allow_tf32 = False
    name = torch.cuda.get_device_name() if dev.type == "cuda" else "cpu"
    dev_id = device_id(name) or "h100-sxm-80gb"
    models = [dict(LLAMA), dict(GPT)]
    if args.quick:
        for mm in models:
            mm.update(QUICK)
            if "kv_heads" in mm: mm["kv_heads"] = 2
    t_start = time.perf_counter()
    report = {"device_name": name, "device": dev_id, "torch": torch.__version__, "cuda": torch.version.cuda,
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gemm": [], "train": [], "skipped": []}
    tokens = [m_ * (64 if args.quick else 512) for m_ in (1, 2, 4, 8, 16, 32)]
    for m in models:
        report["gemm"] += gemm_sweep(dev, m, tokens, 2 if args.quick else 20)
    with open(os.path.join(args.out, "gemm.csv"), "w") as fh:
        fh.write("model,gemm,M,N,K,seconds,tflops\n")
        for r in report["gemm"]:
            fh.write("{model},{gemm},{M},{N},{K},{seconds:.6e},{tflops:.1f}\n".format(**r))
    print("GEMM bf16 TFLOP/s by M (tokens):")
    for m in models:
        for g in ("qkv", "attn_out", "mlp_up", "mlp_down", "head"):
            vals = [r for r in report["gemm"] if r["model"] == m["name"] and r["gemm"] == g]
            print("  %-20s %-8s %s" % (m["name"], g, " ".join("%d:%.0f" % (r["M"], r["tflops"]) for r in vals)))

    accum = 4
    points = [(m, b, c) for c in (False, True) for m in models for b in (1, 2, 4, 8, 16)]
    runs = []
    for m, b, c in points:
        key = "%s mb%d %s" % (m["name"], b, "full" if c else "none")
        if time.perf_counter() - t_start > args.budget:
            report["skipped"].append({"point": key, "why": "time budget"})
            continue
        try:
            r = train_point(dev, m, b, accum, c, 1 if args.quick else 3)
        except torch.OutOfMemoryError as e:
            report["skipped"].append({"point": key, "why": "out of memory: " + str(e).split("\n")[0][:160]})
            torch.cuda.empty_cache()
            print("  %-36s out of memory" % key, flush=True)
            continue
        r.update({"model": m["name"], "micro_batch": b, "accum_steps": accum, "checkpointing": "full" if c else "none"})
        report["train"].append(r)
        tok = b * accum * m["seq_len"]
        print("  %-36s step %.4f s (micro-step %.4f, optimizer %.4f) %.0f tokens/s  peak alloc %.2f GiB reserved %.2f GiB"
              % (key, r["step_s"], r["micro_step_s"], r["optimizer_s"], tok / r["step_s"],
                 r.get("max_memory_allocated", 0) / 2**30, r.get("max_memory_reserved", 0) / 2**30), flush=True)
        meas = {"step_time_s": r["step_s"]}
        if "max_memory_reserved" in r:
            meas["peak_memory"] = str(r["max_memory_reserved"])
        runs.append({"id": "%s-%s-mb%d-%s" % (dev_id, m["name"], b, r["checkpointing"]), "model": m, "device": dev_id,
                     "gpus": 1, "gpus_per_node": 1,
                     "plan": {"micro_batch": b, "accum_steps": accum, "sharding": "none", "precision": "bf16",
                              "checkpointing": r["checkpointing"]},
                     "measured": meas})
    report["seconds"] = time.perf_counter() - t_start
    with open(os.path.join(args.out, "gpu-truth.json"), "w") as fh:
        json.dump(report, fh, indent=1)
    with open(os.path.join(args.out, "gpu-truth-runs.json"), "w") as fh:
        json.dump({"schema": "gaccum-tune/runs",
                   "_source": "bench/gpu_truth.py on one %s (torch %s, CUDA %s), %s" % (name, torch.__version__, torch.version.cuda, report["date_utc"]),
                   "runs": runs}, fh, indent=1)
    print("gpu_truth: %d GEMM shapes, %d training points, %d skipped, %.0f s -> %s"
          % (len(report["gemm"]), len(report["train"]), len(report["skipped"]), report["seconds"], args.out))


if __name__ == "__main__":
    main()
