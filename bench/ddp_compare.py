#!/usr/bin/env python3
"""The runner against PyTorch DDP (issue 8, benchmark 3).

What: trains the same TorchScript model with the same data, loss, optimizer (Adam, lr 1e-3),
micro_batch, accum_steps, world_size (2) and threads per rank (1) over Gloo on this machine
  - with `gaccum-tune validate --torchscript M --strategy overlap` (LibTorch c10d, our runner),
  - with PyTorch DDP and no_sync() on the first k-1 micro-steps (bench/ddp_peer.py, run by
    Debian's /usr/bin/python3 with python3-torch),
interleaved in one benchmark run (--repeats rounds, the order alternating each round), and
reports the throughput ratio gaccum / DDP (median of each side's per-run medians; target >=
1.0) and both losses: window 0 must agree to float rounding (same initial weights from the
file, same samples: ddp_peer.py regenerates the runner's counter-based data stream bit for
bit), and every later window is reported side by side (Adam in C++ and in Python may round
differently, so they may drift apart slowly).
Why: a user should not lose speed by using our runner instead of the DDP they know, and the
comparison is only meaningful if both train the same thing.

Models: --model resnet18-gn (default: torchvision's ResNet-18 layout with GroupNorm, 11.2 M
parameters, input 3x32x32; GroupNorm keeps accumulation exact, so the runner's gradient checks
pass, and neither side has buffers to synchronise), --model tiny-cnn (the tests' fixture, input
3x16x16: overhead-dominated), or --torchscript FILE --input-shape C,H,W.
Fairness notes: DDP's data is generated before its first step (untimed); the runner builds each
micro-batch inside its timed step, so this favours DDP slightly. DDP runs with
broadcast_buffers=False (the runner does not broadcast buffers) and its default 25 MiB buckets.
Step time on both sides: per window the slowest rank, median over the timed windows.

Commands:
  full run (docs/BENCHMARKS.md numbers):  python3 bench/ddp_compare.py --out-dir bench-out/ddp
                              python3 bench/ddp_compare.py --model tiny-cnn --out-dir bench-out/ddp-tiny
  CI smoke (tiny-cnn, b 4 k 2, 4 steps, 1 round; fails on crashes, broken output, a window-0
  loss mismatch or a failed runner check, never on the throughput ratio):
                              python3 bench/ddp_compare.py --smoke --out-dir bench-out/ddp-smoke
Outputs: <out-dir>/ddp_compare.csv (one row per run: runner, round, throughput, losses),
<out-dir>/ddp_compare.json (summary, per-window losses of both, commands run), runs/*.json.
Exit: 0 done (the ratio target is reported, not enforced), 1 a run failed or the losses
disagree, 2 bad input (e.g. no PyTorch at --python).
"""
import argparse
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

PEER = os.path.join(bl.BENCH_DIR, "ddp_peer.py")
MODELS = {"resnet18-gn": "3,32,32", "tiny-cnn": "3,16,16"}
GRACE_S = 30.0
LOSS0_RTOL = 1e-5  # window 0: same weights, same samples; only summation order may differ
COLUMNS = ["runner", "round", "model", "micro_batch", "accum_steps", "world_size", "global_batch",
           "threads_per_rank", "steps", "step_time_median_s", "throughput", "loss_first_window", "loss_last_window",
           "result_json"]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ddp(runner, python, a, model, shape, out_json, timeout):
    """world_size ddp_peer.py processes; kills the rest when one fails; returns (doc, wall)."""
    port = free_port()
    cmd = [python, PEER, "run", "--model", model, "--input-shape", shape, "--target", a.target,
           "-b", str(a.micro_batch), "-k", str(a.accum_steps), "--steps", str(a.steps), "--warmup", str(a.warmup),
           "--seed", str(a.seed), "--lr", str(a.lr), "--optimizer", "adam", "--threads", str(a.threads_per_rank),
           "--timeout", str(int(timeout)), "-o", out_json]
    runner.commands.append("RANK=0..%d WORLD_SIZE=%d MASTER_ADDR=127.0.0.1 MASTER_PORT=%d %s"
                           % (a.world_size - 1, a.world_size, port, " ".join(cmd)))
    if runner.verbose:
        print("+ " + runner.commands[-1], flush=True)
    if os.path.exists(out_json):
        os.unlink(out_json)
    procs = []
    t0 = time.perf_counter()
    err_dir = os.path.dirname(out_json)
    try:
        for r in range(a.world_size):
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(a.world_size), LOCAL_RANK=str(r),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS=str(a.threads_per_rank))
            err = open(os.path.join(err_dir, "ddp-rank%d.err" % r), "w")
            procs.append((subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err), err))
        deadline = time.monotonic() + timeout
        failed = None
        written_at = None  # ranks get GRACE_S to exit once rank 0 has written the result
        while any(p.poll() is None for p, _ in procs):
            for r, (p, _) in enumerate(procs):
                if p.poll() not in (None, 0) and failed is None:
                    failed = (r, p.returncode)
            if written_at is None and os.path.exists(out_json):
                written_at = time.monotonic()
            if failed or time.monotonic() > deadline:
                break
            if written_at is not None and time.monotonic() - written_at > GRACE_S:
                lingering = [r for r, (p, _) in enumerate(procs) if p.poll() is None]
                print("warning: DDP rank(s) %s still running %.0f s after the result was written; stopped"
                      % (",".join(map(str, lingering)), GRACE_S), file=sys.stderr)
                break
            time.sleep(0.05)
        for r, (p, _) in enumerate(procs):
            if p.poll() not in (None, 0) and failed is None:
                failed = (r, p.returncode)
        if failed is None and written_at is None and any(p.poll() is None for p, _ in procs):
            failed = (-1, "timeout after %.0f s" % timeout)
    finally:
        for p, err in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            err.close()
    wall = time.perf_counter() - t0
    if failed:
        r, code = failed
        said = ""
        if r >= 0:
            with open(os.path.join(err_dir, "ddp-rank%d.err" % r)) as f:
                said = bl.last_line(f.read())
        raise bl.BenchError("DDP rank %s failed (%s): %s" % (r if r >= 0 else "?", code, said or "no message"))
    return bl.read_json(out_json, "DDP result"), wall


def check_torch(python):
    try:
        p = subprocess.run([python, "-c", "import torch, torch.distributed as d; print(torch.__version__, "
                                          "d.is_available() and d.is_gloo_available())"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise bl.BenchError("--python: cannot run '%s' (%s); install python3-torch or pass --python" % (python, e), 2)
    if p.returncode != 0 or not p.stdout.strip().endswith("True"):
        raise bl.BenchError("--python: '%s' has no PyTorch with Gloo (%s); use Debian's /usr/bin/python3 with "
                            "python3-torch" % (python, bl.last_line(p.stderr) or p.stdout.strip()), 2)
    return p.stdout.split()[0]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--model", default=None, help="resnet18-gn (default) or tiny-cnn: written into --out-dir")
    ap.add_argument("--torchscript", help="your own TorchScript model instead of --model (needs --input-shape)")
    ap.add_argument("--input-shape", help="per-sample input shape, e.g. 3,32,32")
    ap.add_argument("--target", default="classes:10")
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--accum-steps", type=int, default=4)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--threads-per-rank", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5, help="interleaved rounds (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run (default %(default)s)")
    ap.add_argument("--python", default=bl.TORCH_PYTHON_DEFAULT, help="Python with PyTorch (default %(default)s)")
    ap.add_argument("--gaccum", help="gaccum-tune binary (default: $GACCUM_TUNE, build/gaccum-tune, PATH)")
    ap.add_argument("--out-dir", default="bench-out/ddp")
    ap.add_argument("--smoke", action="store_true", help="CI: tiny-cnn, b 4 k 2, 4 steps, 1 round")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every command run")
    a = ap.parse_args(argv)
    if a.smoke:
        a.model = a.model or "tiny-cnn"
        a.micro_batch, a.accum_steps, a.steps, a.warmup, a.repeats = 4, 2, 4, 1, 1
    for flag in ("micro_batch", "accum_steps", "world_size", "threads_per_rank", "steps", "warmup", "repeats"):
        bl.positive(getattr(a, flag), "--" + flag.replace("_", "-"))
    if a.world_size < 2:
        raise bl.BenchError("--world-size: the comparison needs at least 2 ranks (DDP with world_size 1 does "
                            "not communicate)", 2)
    gaccum = bl.find_gaccum(a.gaccum)
    torch_version = check_torch(a.python)
    runner = bl.Runner(a.verbose)
    out_dir = a.out_dir
    runs_dir = os.path.join(out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    note = bl.quiet_machine_note(a.world_size * a.threads_per_rank)
    if note:
        print("warning: %s" % note, file=sys.stderr)

    if a.torchscript:
        if a.model:
            raise bl.BenchError("--torchscript and --model: give one", 2)
        if not a.input_shape:
            raise bl.BenchError("--input-shape: required with --torchscript, e.g. 3,32,32", 2)
        model, model_name, shape = os.path.abspath(a.torchscript), os.path.basename(a.torchscript), a.input_shape
        if not os.path.isfile(model):
            raise bl.BenchError("--torchscript: '%s' does not exist" % a.torchscript, 2)
    else:
        model_name = a.model or "resnet18-gn"
        if model_name not in MODELS:
            raise bl.BenchError("--model: unknown '%s': expected %s" % (model_name, " or ".join(MODELS)), 2)
        shape = a.input_shape or MODELS[model_name]
        model = os.path.abspath(os.path.join(out_dir, model_name + ".pt"))
        rc, out, err, _ = runner.run([a.python, PEER, "write-model", "--arch", model_name, model], timeout=300,
                                     check=False, what="write-model")
        if rc != 0:
            raise bl.BenchError("write-model %s: %s" % (model_name, bl.last_line(err)))

    B = a.micro_batch * a.accum_steps * a.world_size
    rows, gaccum_runs, ddp_runs = [], [], []
    for rnd in range(a.repeats):
        order = ("gaccum", "ddp") if rnd % 2 == 0 else ("ddp", "gaccum")
        for who in order:
            if who == "gaccum":
                path = os.path.join(runs_dir, "gaccum-r%d.json" % rnd)
                run, _ = bl.validate(runner, gaccum, path, a.micro_batch, a.accum_steps, a.world_size, "overlap",
                                     a.steps, a.warmup,
                                     extra=["--torchscript", model, "--input-shape", shape, "--target", a.target,
                                            "--threads-per-rank", str(a.threads_per_rank), "--seed", str(a.seed),
                                            "--lr", repr(a.lr), "--optimizer", "adam", "--device", "cpu"],
                                     timeout=a.timeout)
                failed = bl.failed_checks(run)
                if failed:
                    raise bl.BenchError("gaccum-tune validate failed its checks: %s (%s)" % (", ".join(failed), path))
                if "loss" not in run["measured"]:
                    raise bl.BenchError("gaccum-tune validate reports no loss (%s): rebuild gaccum-tune" % path)
                m = run["measured"]
                gaccum_runs.append(run)
                tput, med, loss = m["throughput_samples_per_s"], m["step_time"]["median"], m["loss"]
            else:
                path = os.path.join(runs_dir, "ddp-r%d.json" % rnd)
                doc, _ = run_ddp(runner, a.python, a, model, shape, path, a.timeout)
                ddp_runs.append(doc)
                m = doc["measured"]
                tput, med, loss = m["throughput_samples_per_s"], m["step_time"]["median"], m["loss"]
            rows.append({"runner": who, "round": rnd, "model": model_name, "micro_batch": a.micro_batch,
                         "accum_steps": a.accum_steps, "world_size": a.world_size, "global_batch": B,
                         "threads_per_rank": a.threads_per_rank, "steps": a.steps, "step_time_median_s": med,
                         "throughput": tput, "loss_first_window": loss["first_window"],
                         "loss_last_window": loss["last_window"], "result_json": os.path.relpath(path, out_dir)})

    g_tput = bl.median([r["throughput"] for r in rows if r["runner"] == "gaccum"])
    d_tput = bl.median([r["throughput"] for r in rows if r["runner"] == "ddp"])
    ratio = g_tput / d_tput
    per_round = [next(r["throughput"] for r in rows if r["runner"] == "gaccum" and r["round"] == i) /
                 next(r["throughput"] for r in rows if r["runner"] == "ddp" and r["round"] == i)
                 for i in range(a.repeats)]
    g_loss = [s["loss"] for s in gaccum_runs[0]["steps"] if not s.get("partial")]
    d_loss = [s["loss"] for s in ddp_runs[0]["steps"]]
    if len(g_loss) != len(d_loss):
        raise bl.BenchError("the runs trained %d and %d windows" % (len(g_loss), len(d_loss)))
    rel = [abs(x - y) / max(abs(y), 1e-30) for x, y in zip(g_loss, d_loss)]
    loss0_ok = rel[0] <= LOSS0_RTOL
    # Runs of one side must reproduce themselves exactly (deterministic data and kernels).
    g_repro = all(r["measured"]["loss"] == gaccum_runs[0]["measured"]["loss"] for r in gaccum_runs)
    line = ("ddp_compare %s b=%d k=%d p=%d (B=%d, %d thread/rank, Gloo): gaccum %.1f vs DDP no_sync %.1f samples/s, "
            "ratio %.3f (target >= 1.0; per-round %s) | loss window 0: gaccum %.6f DDP %.6f (rel diff %.1e, %s) | "
            "last window: gaccum %.6f DDP %.6f (rel diff %.1e) over %d windows"
            % (model_name, a.micro_batch, a.accum_steps, a.world_size, B, a.threads_per_rank, g_tput, d_tput, ratio,
               ",".join("%.3f" % x for x in per_round), g_loss[0], d_loss[0], rel[0],
               "same" if loss0_ok else "DIFFERENT", g_loss[-1], d_loss[-1], rel[-1], len(g_loss)))
    print(line, flush=True)
    csv_path = os.path.join(out_dir, "ddp_compare.csv")
    json_path = os.path.join(out_dir, "ddp_compare.json")
    bl.write_csv(csv_path, COLUMNS, rows)
    bl.write_json(json_path, {
        "kind": "gaccum-bench/ddp-compare", "smoke": a.smoke, "targets": {"throughput_ratio": 1.0},
        "summary": line, "model": model_name, "model_file": model, "input_shape": shape,
        "config": {"micro_batch": a.micro_batch, "accum_steps": a.accum_steps, "world_size": a.world_size,
                   "global_batch": B, "threads_per_rank": a.threads_per_rank, "steps": a.steps, "warmup": a.warmup,
                   "repeats": a.repeats, "seed": a.seed, "lr": a.lr, "optimizer": "adam",
                   "gaccum_strategy": "overlap", "ddp": "no_sync on the first k-1 micro-steps, broadcast_buffers=False"},
        "environment": {"torch_python": torch_version, "cores": bl.cpu_cores(), "load_note": note, "gaccum": gaccum},
        "throughput": {"gaccum_median": g_tput, "ddp_median": d_tput, "ratio": ratio, "ratio_per_round": per_round},
        "loss": {"gaccum": g_loss, "ddp": d_loss, "rel_diff": rel, "window0_rtol": LOSS0_RTOL,
                 "window0_same": loss0_ok, "gaccum_runs_reproduce": g_repro},
        "command": " ".join(["python3", "bench/ddp_compare.py"] + argv), "commands_run": runner.commands})
    print("wrote %s and %s" % (csv_path, json_path))
    if not loss0_ok:
        raise bl.BenchError("window-0 losses differ: gaccum %.9g vs DDP %.9g (rel %.2e > %.0e): the two sides do not "
                            "train the same model on the same data" % (g_loss[0], d_loss[0], rel[0], LOSS0_RTOL))
    if not g_repro:
        raise bl.BenchError("gaccum-tune validate runs of the same config report different losses")
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
