#!/usr/bin/env python3
"""Tuner regret against an exhaustive grid (issue 8, benchmark 2).

What: for one workload and a global batch target B (default mlp-small, B = 64, world_size 1..2)
  1. profiles the workload (wall time measured: part of the tool's cost),
  2. runs `gaccum-tune tune` on that profile (wall time measured) and takes its pick,
  3. enumerates every feasible setting (micro_batch x accum_steps x world_size x strategy with
     b*k*p = B, k <= --max-accum-steps, b <= the profile's largest fitting micro_batch, predicted
     peak <= the profile's memory cap; world_size 1 runs once since it synchronises nothing) and
     runs each for real with `gaccum-tune validate` (its wall time is the grid's cost),
  4. confirms: the tuner's pick and the --confirm-top best grid configs run again, interleaved,
     --confirm-repeats times (order rotated each round); medians of their throughputs,
and reports regret = (best confirmed throughput - pick's) / best * 100 (target <= 2%) and the
cost fraction (profile + tune wall time) / (grid wall time) (target <= 10%).
Why: the tuner is only worth using if its pick is as good as trying everything, at a fraction
of the cost. The confirmation round exists because the best of many single noisy runs is biased
upward (winner's curse): the regret is a ratio measured in one interleaved run.
The grid includes the tuner's safety margin zone (the tuner keeps peak <= cap x (1 - margin)): a
better config there counts as regret.

Timing rules: world_size <= cores, 1 thread per rank (the profile's threads_per_rank); a quiet
machine (the script warns when the load average says otherwise).

Commands:
  full run (docs/BENCHMARKS.md numbers):  python3 bench/regret.py --workload mlp-small --global-batch 64 \\
                                  --out-dir bench-out/regret
                              python3 bench/regret.py --workload gpt-tiny --global-batch 64 \\
                                  --out-dir bench-out/regret-gpt
  CI smoke (B = 8, 3 steps, 1 confirmation round; fails on crashes, broken output, a pick
  outside the grid or a failed correctness check, never on the regret value):
                              python3 bench/regret.py --smoke --out-dir bench-out/regret-smoke
Outputs: <out-dir>/regret.csv (one row per grid config: measured and predicted throughput,
ranks, wall time), <out-dir>/regret.json (summary, confirmation runs, commands run).
Exit: 0 done (targets reported, not enforced), 1 a run failed, 2 bad input.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

TARGETS = {"regret_pct": 2.0, "cost_fraction_pct": 10.0}
COLUMNS = ["workload", "micro_batch", "accum_steps", "world_size", "global_batch", "strategy",
           "throughput_measured", "throughput_predicted", "step_time_measured_s", "step_time_predicted_s",
           "peak_memory_measured_bytes", "peak_memory_predicted_bytes", "memory_cap_bytes", "measured_fit",
           "rank_measured", "rank_predicted", "tuner_pick", "checks_ok", "failed_checks", "wall_s", "validation_json"]


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_grid(runner, gaccum, profile_path, profile, B, world_sizes, max_k):
    """Feasible (b, k, p, strategy, prediction) with b*k*p = B."""
    _, _, fitting, cap = bl.profile_points(profile)
    grid = []
    for p in world_sizes:
        if B % p:
            continue
        for b in divisors(B // p):
            k = B // p // b
            if b > fitting or k > max_k:
                continue
            for strategy in (("overlap",) if p == 1 else bl.STRATEGIES):
                pred = bl.predict(runner, gaccum, profile_path, b, k, p, strategy)
                if cap > 0 and pred["peak_memory"] > cap:
                    continue
                grid.append((b, k, p, strategy, pred))
    return grid


def key_of(b, k, p, strategy):
    # world_size 1 synchronises nothing: every strategy is the same run.
    return (b, k, p, "overlap" if p == 1 else strategy)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--workload", default="mlp-small")
    ap.add_argument("--global-batch", type=int, default=64)
    ap.add_argument("--world-sizes", default="1,2", help="comma list (default %(default)s; <= cores when timing)")
    ap.add_argument("--max-accum-steps", type=int, default=64)
    ap.add_argument("--gaccum", help="gaccum-tune binary (default: $GACCUM_TUNE, build/gaccum-tune, PATH)")
    ap.add_argument("--out-dir", default="bench-out/regret")
    ap.add_argument("--profile-dir", help="where the profile is written (default: <out-dir>/profile)")
    ap.add_argument("--reuse-profile", action="store_true",
                    help="reuse a profile in --profile-dir made by this script (its recorded wall time counts)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per validate run (default %(default)s)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--confirm-top", type=int, default=3, help="best grid configs re-run with the pick (default 3)")
    ap.add_argument("--confirm-repeats", type=int, default=3, help="interleaved rounds (default %(default)s)")
    ap.add_argument("--smoke", action="store_true", help="CI: global batch 8, 3 steps, 1 confirmation round")
    ap.add_argument("--verbose", "-v", action="store_true", help="print every command run")
    a = ap.parse_args(argv)
    if a.smoke:
        if a.global_batch == 64:
            a.global_batch = 8
        a.steps, a.warmup, a.confirm_repeats, a.confirm_top = min(a.steps, 3), 1, 1, 2
    for flag in ("global_batch", "max_accum_steps", "steps", "warmup", "confirm_top", "confirm_repeats"):
        bl.positive(getattr(a, flag), "--" + flag.replace("_", "-"))
    world_sizes = bl.parse_int_list(a.world_sizes, "--world-sizes")
    gaccum = bl.find_gaccum(a.gaccum)
    runner = bl.Runner(a.verbose)
    out_dir = a.out_dir
    runs_dir = os.path.join(out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    note = bl.quiet_machine_note(max(world_sizes))
    if note:
        print("warning: %s" % note, file=sys.stderr)

    # 1. profile (timed).
    profile_dir = a.profile_dir or os.path.join(out_dir, "profile")
    prof = bl.get_profile(runner, gaccum, a.workload, profile_dir, reprofile=not a.reuse_profile)
    if prof["wall_s"] is None:
        raise bl.BenchError("--reuse-profile: %s has no recorded wall time (made elsewhere); drop --reuse-profile"
                            % prof["path"], 2)
    profile = bl.read_json(prof["path"], "profile")
    cap = bl.profile_points(profile)[3]

    # 2. tune (timed).
    tune_dir = os.path.join(out_dir, "tune")
    cmd = [gaccum, "tune", "--profile", prof["path"], "--global-batch", str(a.global_batch),
           "--world-sizes", ",".join(map(str, world_sizes)), "--max-accum-steps", str(a.max_accum_steps),
           "--out", tune_dir, "--force"]
    rc, out, err, tune_wall = runner.run(cmd, timeout=600, check=False, what="tune")
    if rc != 0:
        raise bl.BenchError("tune: exit %d: %s" % (rc, bl.last_line(err) or bl.last_line(out)), 2 if rc == 2 else 1)
    result = bl.read_json(os.path.join(tune_dir, "result.json"), "tune result")
    try:
        pc = result["picks"][0]["config"]
        pick = key_of(pc["micro_batch"], pc["accum_steps"], pc["world_size"], pc["strategy"])
    except (KeyError, IndexError, TypeError):
        raise bl.BenchError("tune: %s/result.json has no picks[0].config" % tune_dir)

    # 3. the exhaustive grid (timed: the cost the tuner saves).
    grid = enumerate_grid(runner, gaccum, prof["path"], profile, a.global_batch, world_sizes, a.max_accum_steps)
    if not grid:
        raise bl.BenchError("no feasible configuration for global_batch %d on world sizes %s"
                            % (a.global_batch, a.world_sizes), 2)
    keys = [key_of(*g[:4]) for g in grid]
    if pick not in keys:
        raise bl.BenchError("the tuner's pick b=%d k=%d p=%d %s is not in the feasible grid (%d configs)"
                            % (pick + (len(grid),)))
    rows, grid_wall = [], 0.0
    for b, k, p, strategy, pred in grid:
        path = os.path.join(runs_dir, "grid-b%d-k%d-p%d-%s.json" % (b, k, p, strategy))
        run, wall = bl.validate(runner, gaccum, path, b, k, p, strategy, a.steps, a.warmup, workload=a.workload,
                                profile=prof["path"], extra=["--tolerance", "1000%"])
        grid_wall += wall
        m = run["measured"]
        rows.append({"workload": a.workload, "micro_batch": b, "accum_steps": k, "world_size": p,
                     "global_batch": b * k * p, "strategy": strategy,
                     "throughput_measured": m["throughput_samples_per_s"], "throughput_predicted": pred["throughput"],
                     "step_time_measured_s": m["step_time"]["median"], "step_time_predicted_s": pred["step_time"],
                     "peak_memory_measured_bytes": m["peak_memory"], "peak_memory_predicted_bytes": pred["peak_memory"],
                     "memory_cap_bytes": cap, "measured_fit": cap <= 0 or m["peak_memory"] <= cap,
                     "tuner_pick": key_of(b, k, p, strategy) == pick, "checks_ok": not bl.failed_checks(run),
                     "failed_checks": ";".join(bl.failed_checks(run)), "wall_s": wall,
                     "validation_json": os.path.relpath(path, out_dir)})
    for col, rank_key in (("throughput_measured", "rank_measured"), ("throughput_predicted", "rank_predicted")):
        for i, r in enumerate(sorted(rows, key=lambda r: -r[col])):
            r[rank_key] = i + 1
    bad = [r for r in rows if not r["checks_ok"]]
    if bad:
        r = bad[0]
        raise bl.BenchError("grid b=%d k=%d p=%d %s failed a correctness check: %s"
                            % (r["micro_batch"], r["accum_steps"], r["world_size"], r["strategy"], r["failed_checks"]))

    # 4. confirmation: pick + best measured, interleaved rounds, medians.
    fitting_rows = [r for r in rows if r["measured_fit"]]
    best_grid = sorted(fitting_rows, key=lambda r: -r["throughput_measured"])
    confirm = [pick] + [key_of(r["micro_batch"], r["accum_steps"], r["world_size"], r["strategy"])
                        for r in best_grid[:a.confirm_top]]
    confirm = list(dict.fromkeys(confirm))
    samples = {c: [] for c in confirm}
    for rnd in range(a.confirm_repeats):
        order = confirm[rnd % len(confirm):] + confirm[:rnd % len(confirm)]
        for b, k, p, strategy in order:
            path = os.path.join(runs_dir, "confirm-b%d-k%d-p%d-%s-r%d.json" % (b, k, p, strategy, rnd))
            run, _ = bl.validate(runner, gaccum, path, b, k, p, strategy, a.steps, a.warmup, workload=a.workload)
            samples[(b, k, p, strategy)].append(run["measured"]["throughput_samples_per_s"])
    med = {c: bl.median(v) for c, v in samples.items()}
    best = max(med, key=lambda c: med[c])
    regret = (med[best] - med[pick]) / med[best] * 100.0
    grid_best = best_grid[0] if best_grid else rows[0]
    pick_row = next(r for r in rows if r["tuner_pick"])
    regret_single = (grid_best["throughput_measured"] - pick_row["throughput_measured"]) / \
        grid_best["throughput_measured"] * 100.0
    tool_wall = prof["wall_s"] + tune_wall
    fraction = tool_wall / grid_wall * 100.0

    def cfg(c):
        return "b=%d k=%d p=%d %s" % c

    line = ("regret %s B=%d: tuner pick %s %.1f samples/s vs best %s %.1f samples/s (medians of %d interleaved "
            "rounds): regret %.2f%% (target 2) | grid-run regret %.2f%% | profile %.1f s + tune %.2f s = %.1f%% of "
            "the %d-config grid's %.1f s (target 10) | pick's measured rank %d of %d"
            % (a.workload, a.global_batch, cfg(pick), med[pick], cfg(best), med[best], a.confirm_repeats, regret,
               regret_single, prof["wall_s"], tune_wall, fraction, len(rows), grid_wall, pick_row["rank_measured"],
               len(rows)))
    print(line, flush=True)
    csv_path = os.path.join(out_dir, "regret.csv")
    json_path = os.path.join(out_dir, "regret.json")
    bl.write_csv(csv_path, COLUMNS, rows)
    bl.write_json(json_path, {
        "kind": "gaccum-bench/regret", "smoke": a.smoke, "targets": TARGETS, "summary": line,
        "workload": a.workload, "global_batch": a.global_batch, "world_sizes": world_sizes,
        "settings": {"steps": a.steps, "warmup": a.warmup, "confirm_top": a.confirm_top,
                     "confirm_repeats": a.confirm_repeats, "max_accum_steps": a.max_accum_steps,
                     "cores": bl.cpu_cores(), "load_note": note, "gaccum": gaccum},
        "tuner_pick": cfg(pick), "best_confirmed": cfg(best), "regret_pct": regret,
        "regret_single_grid_run_pct": regret_single,
        "confirmation": [{"config": cfg(c), "throughputs": samples[c], "median": med[c]} for c in confirm],
        "profile": prof, "profile_wall_s": prof["wall_s"], "tune_wall_s": tune_wall, "grid_wall_s": grid_wall,
        "grid_configs": len(rows), "cost_fraction_pct": fraction,
        "command": " ".join(["python3", "bench/regret.py"] + argv), "commands_run": runner.commands})
    print("wrote %s and %s" % (csv_path, json_path))
    if a.smoke:
        for r in rows:
            if not (r["throughput_measured"] > 0 and r["throughput_predicted"] > 0):
                raise bl.BenchError("smoke: broken throughput in grid row b=%d k=%d p=%d %s"
                                    % (r["micro_batch"], r["accum_steps"], r["world_size"], r["strategy"]))
        if not (regret == regret and fraction > 0):
            raise bl.BenchError("smoke: regret or cost fraction not computed")
    return 0


if __name__ == "__main__":
    bl.main_wrapper(main)
