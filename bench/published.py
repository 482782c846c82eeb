#!/usr/bin/env python3
"""Predicts published GPU training runs and holds every prediction against them.

What: runs `gaccum-tune calibrate` on runs files (default: bench/data/published/*.json, the
llm-foundry MPT rows and Megatron's Table 1: tensor/pipeline rows, priced and never fitted,
their micro_batch and virtual stages the best predicted that fits since the table omits them)
and reports, per row and per group, predicted vs
published tokens/s per GPU (and the predicted GEMM efficiency and MFU beside the published MFU),
the summary (median, p90 and max |error|, signed mean) for
  - the shipped calibration (`calibrate --evaluate`: what `predict --spec --cluster` prints), and
  - cross-validation (`calibrate --cross-validate model|gpu`: each row predicted by a fit that
    did not see its model size, or its GPU part),
the groups of rows that differ only in micro_batch (and accum_steps): predicted vs published
gain and whether the predicted order matches, and every row that cannot be priced with its
reason (counted, never dropped). Writes published.csv, published.json and published.svg (a
predicted-vs-published scatter, log axes) into --out-dir.
Why: the analytic path's compute model is judged on data it did not see (docs/DESIGN.md,
Calibration); the smoke version (--smoke: the shipped calibration only, no fit) runs in CI.

Usage:
  python3 bench/published.py [--cross-validate model] [--rows] [--out-dir DIR] [FILES...]
  python3 bench/published.py --smoke --out-dir /tmp/pub
"""
import argparse
import glob
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def summary(errors):
    """|error| median, p90 (linear interpolation), max, signed mean; errors in percent."""
    if not errors:
        return None
    a = sorted(abs(e) for e in errors)

    def q(f):
        pos = f * (len(a) - 1)
        i = int(math.floor(pos))
        j = min(i + 1, len(a) - 1)
        return a[i] + (a[j] - a[i]) * (pos - i)

    return {"rows": len(a), "median_abs_pct": q(0.5), "p90_abs_pct": q(0.9), "max_abs_pct": a[-1],
            "signed_mean_pct": statistics.mean(errors)}


def fmt_summary(s):
    if not s:
        return "no rows"
    return "%d rows: |error| median %.1f%%, p90 %.1f%%, max %.1f%%, signed mean %+.1f%%" % (
        s["rows"], s["median_abs_pct"], s["p90_abs_pct"], s["max_abs_pct"], s["signed_mean_pct"])


def run_json(gaccum, files, extra, verbose):
    import subprocess
    cmd = [gaccum, "calibrate", "--json"] + extra
    for f in files:
        cmd += ["--runs", f]
    if verbose:
        print("+ " + " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise benchlib.BenchError("%s failed (exit %d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()),
                                  2 if p.returncode == 2 else 1)
    return json.loads(p.stdout)


def published_mfu(files):
    """Published MFU per row id (llm-foundry rows), for the MFU column."""
    out = {}
    for f in files:
        with open(f) as fh:
            data = json.load(fh)
        if isinstance(data, list):
            for r in data:
                m = r.get("measured", {}).get("mfu_pct")
                if m is not None and "id" in r:
                    out[r["id"]] = m
    return out


def svg_scatter(rows, key, path):
    """Predicted vs published tokens/s/GPU, log-log, the y = x line and +-10% lines."""
    pts = [(r["published_tokens_per_s_per_gpu"], r[key]) for r in rows if r.get(key)]
    if not pts:
        return
    lo = min(min(p) for p in pts) / 1.3
    hi = max(max(p) for p in pts) * 1.3
    W, H, M = 640, 640, 60

    def sx(v):
        return M + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (W - 2 * M)

    def sy(v):
        return H - M - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (H - 2 * M)

    colours = {"a100-sxm-40gb": "#1f77b4", "a100-sxm-80gb": "#2ca02c", "h100-sxm-80gb": "#d62728"}
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
             'font-size="12">' % (W, H),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="20" font-size="14">gaccum-tune: predicted vs published tokens/s per GPU (%s)</text>'
             % (M, "cross-validated" if key.startswith("cross") else "shipped calibration")]
    for f, dash in ((1.0, ""), (1.1, "4,4"), (1 / 1.1, "4,4")):
        parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="%s"/>'
                     % (sx(lo), sy(lo * f), sx(hi / f if f > 1 else hi), sy(min(hi, hi * f)), dash))
    decade = 10 ** math.floor(math.log10(lo))
    while decade < hi:
        for m in (1, 2, 5):
            v = decade * m
            if lo <= v <= hi:
                parts.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (sx(v), H - M + 18, v))
                parts.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (M - 6, sy(v) + 4, v))
        decade *= 10
    parts.append('<text x="%d" y="%d" text-anchor="middle">published tokens/s per GPU</text>' % (W // 2, H - 15))
    parts.append('<text x="15" y="%d" transform="rotate(-90 15 %d)" text-anchor="middle">predicted</text>'
                 % (H // 2, H // 2))
    for r in rows:
        if not r.get(key):
            continue
        parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s" fill-opacity="0.7"><title>%s: %.0f vs %.0f'
                     '</title></circle>' % (sx(r["published_tokens_per_s_per_gpu"]), sy(r[key]),
                                            colours.get(r["gpu"], "#9467bd"), r["id"],
                                            r[key], r["published_tokens_per_s_per_gpu"]))
    y = 40
    for gpu, c in colours.items():
        parts.append('<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d">%s</text>'
                     % (W - 170, y, c, W - 160, y + 4, gpu))
        y += 16
    parts.append("</svg>")
    benchlib.write_atomic(path, "\n".join(parts) + "\n")


def micro_batch_groups(rows, key):
    """Groups of rows equal in all but micro_batch / accum_steps: predicted vs published order."""
    groups = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    out = []
    for g, rs in sorted(groups.items()):
        mbs = {r["micro_batch"] for r in rs}
        if len(mbs) < 2:
            continue
        rs = sorted(rs, key=lambda r: r["micro_batch"])
        pub = [r["published_tokens_per_s_per_gpu"] for r in rs]
        pred = [r[key] for r in rs]
        order_pub = sorted(range(len(rs)), key=lambda i: pub[i])
        order_pred = sorted(range(len(rs)), key=lambda i: pred[i])
        out.append({"group": g, "micro_batches": [r["micro_batch"] for r in rs],
                    "published": pub, "predicted": pred,
                    "published_gain_pct": 100 * (pub[-1] / pub[0] - 1),
                    "predicted_gain_pct": 100 * (pred[-1] / pred[0] - 1),
                    "order_matches": order_pub == order_pred})
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="runs files (default: bench/data/published/*.json)")
    ap.add_argument("--gaccum", help="gaccum-tune binary (default: build/gaccum-tune)")
    ap.add_argument("--cross-validate", default="model", choices=["model", "gpu", "none"],
                    help="hold out one model size (default) or GPU part at a time; none: shipped calibration only")
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--smoke", action="store_true", help="shipped calibration only (no fit): the CI smoke run")
    ap.add_argument("--out-dir", default="bench-out/published")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    gaccum = benchlib.find_gaccum(a.gaccum)
    files = a.files or sorted(glob.glob(os.path.join(benchlib.BENCH_DIR, "data", "published", "*.json")))
    if not files:
        raise benchlib.BenchError("no runs files given or found in bench/data/published", 2)
    for f in files:
        if not os.path.isfile(f):
            raise benchlib.BenchError("%s: no such file" % f, 2)
    os.makedirs(a.out_dir, exist_ok=True)
    cv_mode = "none" if a.smoke else a.cross_validate

    shipped = run_json(gaccum, files, ["--evaluate"], a.verbose)
    rows = {r["id"]: dict(r) for r in shipped["rows"]}
    for r in rows.values():
        r["shipped_tokens_per_s_per_gpu"] = r.pop("predicted_tokens_per_s_per_gpu")
        r["shipped_error_pct"] = r.pop("error_pct")
    if cv_mode != "none":
        cv = run_json(gaccum, files, ["--cross-validate", cv_mode], a.verbose)
        for r in cv["rows"]:
            if r["id"] in rows:
                rows[r["id"]]["cross_validated_tokens_per_s_per_gpu"] = r.get("cross_validated_tokens_per_s_per_gpu")
                rows[r["id"]]["cross_validated_error_pct"] = r.get("cross_validated_error_pct")
                rows[r["id"]]["refit_tokens_per_s_per_gpu"] = r["predicted_tokens_per_s_per_gpu"]
    mfu = published_mfu(files)
    rows = list(rows.values())
    for r in rows:
        r["published_mfu_pct"] = mfu.get(r["id"])

    if a.rows:
        print("%-66s %9s %9s %7s %7s %5s %5s %5s" % ("row", "published", "predicted", "error", "CV err", "GEMM",
                                                   "MFU", "pMFU"))
        for r in rows:
            cv = r.get("cross_validated_error_pct")
            print("%-66s %9.0f %9.0f %6.1f%% %7s %4.0f%% %4.0f%% %5s" % (
                r["id"][:66], r["published_tokens_per_s_per_gpu"], r["shipped_tokens_per_s_per_gpu"],
                r["shipped_error_pct"], "%.1f%%" % cv if cv is not None else "-", 100 * r["gemm_efficiency"],
                100 * r["mfu"], "%.0f%%" % r["published_mfu_pct"] if r["published_mfu_pct"] else "-"))

    print("published runs: %d priced, %d not priced" % (len(rows), len(shipped["not_priced"])))
    reasons = {}
    for n in shipped["not_priced"]:
        reasons.setdefault(n["reason"], []).append(n["id"])
    for why, ids in sorted(reasons.items()):
        print("  not priced (%d): %s" % (len(ids), why))
    mem = [r["memory_error_pct"] for r in rows if r.get("memory_error_pct") is not None]
    if mem:
        print("peak memory, rows that report it (predicted vs published): " + fmt_summary(summary(mem)))
    # Every published run ran: a predicted peak over its device's memory is a false DOES NOT FIT.
    false_oom = [r for r in rows if r.get("device_memory_bytes")
                 and r["predicted_peak_memory_bytes"] > r["device_memory_bytes"]]
    print("runs that ran, predicted over their device's memory (a false DOES NOT FIT): %d of %d" % (
        len(false_oom), len(rows)))
    for r in false_oom:
        print("  %s: predicted %.1f GiB on a %.1f GiB device" % (
            r["id"], r["predicted_peak_memory_bytes"] / 2**30, r["device_memory_bytes"] / 2**30))
    s_shipped = summary([r["shipped_error_pct"] for r in rows])
    print("shipped calibration (what predict prints): " + fmt_summary(s_shipped))
    by_gpu = {}
    for r in rows:
        by_gpu.setdefault(r["gpu"], []).append(r)
    for gpu, rs in sorted(by_gpu.items()):
        print("  %-14s %s" % (gpu, fmt_summary(summary([r["shipped_error_pct"] for r in rs]))))
    by_file = {}
    for r in rows:
        by_file.setdefault(os.path.basename(r["file"]), []).append(r)
    per_file = {}
    for f, rs in sorted(by_file.items()):
        per_file[f] = {"shipped": summary([r["shipped_error_pct"] for r in rs])}
        print("  file %-32s %s" % (f, fmt_summary(per_file[f]["shipped"])))
    for r in rows:
        if r.get("pp") is not None:
            print("    %-44s tp %d x pp %d %s v %d%s, micro_batch %d x m %d%s: bubble %.1f%%, %.0f vs %.0f tokens/s/GPU "
                  "(%+.1f%%)" % (r["id"][:44], r["tp"], r["pp"], r["schedule"] or "-", r["virtual_stages"],
                                 " x cp %d" % r["cp"] if (r.get("cp") or 1) > 1 else "",
                                 r["micro_batch"], r["accum_steps"], " (chosen)" if r.get("layout_chosen") else "",
                                 100 * r["bubble_fraction"], r["shipped_tokens_per_s_per_gpu"],
                                 r["published_tokens_per_s_per_gpu"], r["shipped_error_pct"]))
    s_cv = None
    if cv_mode != "none":
        s_cv = summary([r["cross_validated_error_pct"] for r in rows if r.get("cross_validated_error_pct") is not None])
        print("cross-validated by %s (each row from a fit that did not see its %s): %s"
              % (cv_mode, cv_mode, fmt_summary(s_cv)))
        worst = sorted((r for r in rows if r.get("cross_validated_error_pct") is not None),
                       key=lambda r: -abs(r["cross_validated_error_pct"]))[:5]
        for r in worst:
            print("  worst: %-64s %+.1f%%" % (r["id"][:64], r["cross_validated_error_pct"]))
        for f, rs in sorted(by_file.items()):
            per_file[f]["cross_validated"] = summary([r["cross_validated_error_pct"] for r in rs
                                                      if r.get("cross_validated_error_pct") is not None])
            print("  file %-32s %s" % (f, fmt_summary(per_file[f]["cross_validated"])))
    key = "cross_validated_tokens_per_s_per_gpu" if cv_mode != "none" else "shipped_tokens_per_s_per_gpu"
    groups = micro_batch_groups(rows, key)
    matches = sum(1 for g in groups if g["order_matches"])
    print("groups differing only in micro_batch: %d, predicted order matches in %d" % (len(groups), matches))
    for g in groups:
        print("  %s: micro_batch %s published %s predicted %s (gain %+.1f%% vs %+.1f%%)%s" % (
            g["group"], g["micro_batches"], ["%.0f" % x for x in g["published"]],
            ["%.0f" % x for x in g["predicted"]], g["published_gain_pct"], g["predicted_gain_pct"],
            "" if g["order_matches"] else "  ORDER DIFFERS"))

    cols = ["id", "gpu", "model", "seq_len", "world_size", "micro_batch", "accum_steps", "sharding", "precision",
            "checkpointing", "published_tokens_per_s_per_gpu", "shipped_tokens_per_s_per_gpu", "shipped_error_pct",
            "cross_validated_tokens_per_s_per_gpu", "cross_validated_error_pct", "gemm_efficiency", "mfu",
            "published_mfu_pct", "predicted_peak_memory_bytes", "device_memory_bytes", "published_peak_memory_bytes",
            "memory_error_pct",
            "tp", "pp", "cp", "virtual_stages", "schedule", "bubble_fraction", "layout_chosen"]
    benchlib.write_csv(os.path.join(a.out_dir, "published.csv"), cols,
                       [{c: (r.get(c) if r.get(c) is not None else "") for c in cols} for r in rows])
    benchlib.write_atomic(os.path.join(a.out_dir, "published.json"), json.dumps({
        "files": files, "cross_validate": cv_mode, "shipped": s_shipped, "cross_validated": s_cv, "per_file": per_file,
        "calibrations": shipped["calibrations"], "micro_batch_groups": groups, "rows": rows,
        "false_does_not_fit": [r["id"] for r in false_oom],
        "not_priced": shipped["not_priced"]}, indent=2) + "\n")
    svg_scatter(rows, key, os.path.join(a.out_dir, "published.svg"))
    print("wrote %s/published.csv, published.json, published.svg" % a.out_dir)
    return 0


if __name__ == "__main__":
    benchlib.main_wrapper(main)
