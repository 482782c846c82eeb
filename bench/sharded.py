#!/usr/bin/env python3
"""Sharded plans run for real against the cost model (issue 13's benchmark).

What: profiles a workload once (gpt-tiny:layers=8 by default: 10 units, which zero3 gathers one
at a time; or reuses <profile-dir>/<workload>.json),
then runs each data-parallel plan at one (micro_batch, accum_steps, world_size) with
`gaccum-tune validate --sharding S --strategy T --profile P`: DDP (none) with overlap, zero1 with
overlap, zero2 and zero3 with every-step (sharded gradients) and overlap (no_sync). Per plan:
measured vs predicted peak memory (bytes; the target on CPU is byte-exact), measured vs predicted
resident memory (held between steps: model states + buffers), measured vs predicted step time
(target: within 5%), and the memory each plan saves against DDP (measured peaks). Each plan runs
--repeats times, round-robin over the plans (drift hits every plan alike); its measured step time
is the median of the runs' medians (each the median over --steps timed steps, slowest rank per step).
Why: a planner that prices sharded accumulation is checked against real sharded runs, as plain
DDP is by bench/accuracy.py.

Timing rules: at most one rank per core (2 ranks on the 2-core reference machine, 1 thread per
rank); run on a quiet machine: the load average before and after is recorded and a warning
printed when it says other work ran. Memory figures do not depend on load.

With --profile-each-round the workload is profiled again (its micro_batch, ranks 1 and p) before
each round of plans, each run is compared with its own round's prediction, and a plan's error is
the median of its runs' errors: what the model misses, apart from how far the machine drifted
since one profile at the start (this VM's cores change speed within seconds: docs/DESIGN.md,
"Measurement quality"). Every row also gives the runs' errors' mean and its standard error
(stdev / sqrt(repeats)): over many rounds, mean +- 2 se bounds the model's own bias where single
runs scatter by the machine's minute-to-minute drift.

Commands:
  full run (docs/BENCHMARKS.md numbers):  python3 bench/sharded.py --out-dir bench-out/sharded
  the model's own error:      python3 bench/sharded.py --profile-each-round --repeats 15 --steps 60
  CI smoke (zero2 every-step and zero3 overlap, 1 repeat, few steps; fails on a crash, a failed
  check or memory that is not byte-exact, never on step-time error):
                              python3 bench/sharded.py --smoke --out-dir bench-out/sharded-smoke
Outputs: <out-dir>/sharded.csv (one row per plan), <out-dir>/sharded.json (rows, load averages,
the commands run), <out-dir>/runs/*.json (each validation.json).
Exit: 0 done (step-time targets are reported, not enforced), 1 a run or check failed / memory not
byte-exact, 2 bad input.
"""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

PLANS = (("none", "overlap"), ("zero1", "overlap"), ("zero2", "every-step"), ("zero2", "overlap"),
         ("zero3", "every-step"), ("zero3", "overlap"))
SMOKE_PLANS = (("none", "overlap"), ("zero2", "every-step"), ("zero3", "overlap"))
TARGET_STEP_TIME_PCT = 5.0
COLUMNS = ("workload", "micro_batch", "accum_steps", "world_size", "sharding", "strategy", "repeats",
           "peak_measured", "peak_predicted", "peak_diff_bytes", "resident_measured", "resident_predicted",
           "saved_vs_ddp_pct", "step_time_measured_s", "step_time_predicted_s", "step_time_error_pct",
           "step_time_runs_s", "step_time_run_errors_pct", "step_time_run_error_mean_pct",
           "step_time_run_error_se_pct", "comm_exposed_measured_s", "comm_exposed_predicted_s",
           "compute_measured_s", "compute_predicted_s", "straggler_wait_measured_s", "collectives_per_step")


def rows_of(run):
    return {r["figure"]: r for r in run.get("comparison", {}).get("rows", [])}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="gpt-tiny:layers=8")
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--accum-steps", type=int, default=4)
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile-dir", default="bench-out/profiles")
    ap.add_argument("--reprofile", action="store_true")
    ap.add_argument("--profile-each-round", action="store_true",
                    help="profile again before each round of plans (only the micro_batch and ranks 1,p): each run "
                         "is predicted from a profile at most a round old, so the error is the model's, not the "
                         "machine's drift since one profile at the start")
    ap.add_argument("--out-dir", default="bench-out/sharded")
    ap.add_argument("--gaccum")
    ap.add_argument("--survey-seconds", type=int, default=10,
                    help="bench/vcpu_survey before and after the runs, seconds each (0: none; none with --smoke)")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    for flag, v in (("--micro-batch", a.micro_batch), ("--accum-steps", a.accum_steps),
                    ("--world-size", a.world_size), ("--steps", a.steps), ("--warmup", a.warmup),
                    ("--repeats", a.repeats)):
        bl.positive(v, flag)
    if a.world_size < 2:
        raise bl.BenchError("--world-size: sharded plans need at least 2 ranks", 2)
    plans = SMOKE_PLANS if a.smoke else PLANS
    steps, warmup, repeats = (2, 1, 1) if a.smoke else (a.steps, a.warmup, a.repeats)

    gaccum = bl.find_gaccum(a.gaccum)
    runner = bl.Runner(a.verbose)
    note = bl.quiet_machine_note(a.world_size)
    if note and not a.smoke:
        print("warning: %s" % note, flush=True)
    load_before = bl.load_average()
    survey_s = 0 if a.smoke else a.survey_seconds
    os.makedirs(a.out_dir, exist_ok=True)
    survey_before = bl.vcpu_survey(gaccum, survey_s, os.path.join(a.out_dir, "vcpu-before.json")) if survey_s else {}
    extra = ["--micro-batches", "2,4", "--ranks", "1,2", "--time-budget", "10s"] if a.smoke else []
    prof = bl.get_profile(runner, gaccum, a.workload, a.profile_dir, a.reprofile or a.smoke, extra)
    runs_dir = os.path.join(a.out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)

    results = {plan: [] for plan in plans}
    round_profiles = []
    for rep in range(repeats):
        round_prof = prof
        if a.profile_each_round:
            round_prof = bl.get_profile(runner, gaccum, "%s-r%d" % (a.workload, rep), runs_dir, True,
                                        ["--micro-batches", str(a.micro_batch), "--ranks", "1,%d" % a.world_size],
                                        source=["--workload", a.workload])
            round_profiles.append(round_prof)
        for sharding, strategy in plans:
            out = os.path.join(runs_dir, "%s-%s-r%d.json" % (sharding, strategy, rep))
            run, _ = bl.validate(runner, gaccum, out, a.micro_batch, a.accum_steps, a.world_size, strategy, steps,
                                 warmup, workload=a.workload, profile=round_prof["path"],
                                 extra=["--sharding", sharding, "--tolerance", "1000%"])
            failed = bl.failed_checks(run)
            if failed:
                raise bl.BenchError("%s %s: checks failed: %s (see %s)" % (sharding, strategy, ", ".join(failed), out))
            results[(sharding, strategy)].append(run)
    load_after = bl.load_average()
    survey_after = bl.vcpu_survey(gaccum, survey_s, os.path.join(a.out_dir, "vcpu-after.json")) if survey_s else {}

    ddp_peak = None
    rows, problems = [], []
    for sharding, strategy in plans:
        runs = results[(sharding, strategy)]
        rws = [rows_of(r) for r in runs]
        peak_m = [int(r["peak_memory"]["measured"]) for r in rws]
        peak_p = int(rws[0]["peak_memory"]["predicted"])
        res_m = int(rws[0]["resident_memory"]["measured"])
        res_p = int(rws[0]["resident_memory"]["predicted"])
        if len(set(peak_m)) != 1:
            problems.append("%s %s: peak memory differs between repeats: %s" % (sharding, strategy, peak_m))
        if peak_m[0] != peak_p or res_m != res_p:
            problems.append("%s %s: memory not byte-exact: peak %d vs %d predicted, resident %d vs %d"
                            % (sharding, strategy, peak_m[0], peak_p, res_m, res_p))
        if sharding == "none":
            ddp_peak = peak_m[0]
        times = [float(r["step_time"]["measured"]) for r in rws]
        t_m = bl.median(times)
        # One profile: one prediction. A profile per round: each run against its round's, the
        # median of those errors, and the median prediction beside the median measurement.
        preds = [float(r["step_time"]["predicted"]) for r in rws]
        t_p = bl.median(preds)
        run_errors = [bl.pct_error(tp, tm) for tp, tm in zip(preds, times)]
        error = bl.median(run_errors) if a.profile_each_round else bl.pct_error(t_p, t_m)
        # The runs' errors as a sample: their mean and its standard error (stdev / sqrt(n)); with a
        # profile per round, mean +- 2 se is where the model's own bias lies, about 95% of the time.
        err_mean = statistics.mean(run_errors)
        err_se = statistics.stdev(run_errors) / math.sqrt(len(run_errors)) if len(run_errors) > 1 else float("nan")
        rows.append({
            "workload": a.workload, "micro_batch": a.micro_batch, "accum_steps": a.accum_steps,
            "world_size": a.world_size, "sharding": sharding, "strategy": strategy, "repeats": len(runs),
            "peak_measured": peak_m[0], "peak_predicted": peak_p, "peak_diff_bytes": peak_m[0] - peak_p,
            "resident_measured": res_m, "resident_predicted": res_p,
            "saved_vs_ddp_pct": (1.0 - peak_m[0] / ddp_peak) * 100.0 if ddp_peak else float("nan"),
            "step_time_measured_s": t_m, "step_time_predicted_s": t_p,
            "step_time_error_pct": error,
            "step_time_runs_s": " ".join("%.5f" % t for t in times),
            "step_time_run_errors_pct": " ".join("%+.1f" % e for e in run_errors),
            "step_time_run_error_mean_pct": err_mean, "step_time_run_error_se_pct": err_se,
            "comm_exposed_measured_s": bl.median([float(r["comm_exposed"]["measured"]) for r in rws]),
            "comm_exposed_predicted_s": bl.median([float(r["comm_exposed"]["predicted"]) for r in rws]),
            "compute_measured_s": bl.median([float(r["compute"]["measured"]) for r in rws]),
            "compute_predicted_s": bl.median([float(r["compute"]["predicted"]) for r in rws]),
            # comm_exposed is the last rank to arrive's; the others' wait for it is apart
            # (runner/checks.hpp split_exposed); the model prices no straggler wait.
            "straggler_wait_measured_s": bl.median([float(r["measured"].get("straggler_wait", 0.0)) for r in runs]),
            "collectives_per_step": int(rws[0]["collectives_per_step"]["measured"]),
        })

    bl.write_csv(os.path.join(a.out_dir, "sharded.csv"), COLUMNS, rows)
    bl.write_json(os.path.join(a.out_dir, "sharded.json"), {
        "workload": a.workload, "config": {"micro_batch": a.micro_batch, "accum_steps": a.accum_steps,
                                            "world_size": a.world_size, "steps": steps, "warmup": warmup,
                                            "repeats": repeats, "profile_each_round": a.profile_each_round},
        "profile": prof, "round_profiles": round_profiles, "load_average_before": load_before, "load_average_after": load_after,
        "vcpu_survey_before": survey_before, "vcpu_survey_after": survey_after,
        "targets": {"peak_memory": "byte-exact", "step_time_pct": TARGET_STEP_TIME_PCT},
        "rows": rows, "problems": problems, "commands": runner.commands})
    for r in rows:
        print("sharded %s %-5s %-10s peak %d B (predicted %+d B), saved %.1f%% vs DDP; step %.2f ms vs %.2f ms "
              "predicted (%+.1f%%; runs' errors: mean %+.1f%% +- %.1f%% (2 se))"
              % (r["workload"], r["sharding"], r["strategy"], r["peak_measured"],
                 r["peak_predicted"] - r["peak_measured"], r["saved_vs_ddp_pct"],
                 r["step_time_measured_s"] * 1e3, r["step_time_predicted_s"] * 1e3,
                 r["step_time_error_pct"], r["step_time_run_error_mean_pct"], 2 * r["step_time_run_error_se_pct"]))
    print("sharded: load average %.2f before, %.2f after" % (load_before, load_after))
    if survey_s:
        print("sharded: cores before: %s; after: %s" % (bl.describe_survey(survey_before), bl.describe_survey(survey_after)))
    for p in problems:
        print("error: %s" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    bl.main_wrapper(main)
