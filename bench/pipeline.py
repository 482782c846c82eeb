#!/usr/bin/env python3
"""Pipeline schedules run for real against the schedule simulation (issue 36's benchmark).

What: runs `gaccum-tune validate --pp P --schedule S` on the built-in gpt (gpt-tiny:layers=L,
L blocks) for each schedule (gpipe, 1f1b, interleaved-1f1b with v 2), --repeats times round-robin
(drift hits every schedule alike). Per schedule: the measured bubble (idle over the makespan,
averaged over ranks) vs the simulated one (model/pipeline.hpp simulate replaying the run's own mean
forward/backward times and its ping-pong point-to-point time) and the closed form
(p - 1)/(v m + p - 1); measured vs predicted step time (simulated makespan + the measured gradient
sync and optimizer step); per-stage peak memory vs the replay of the stage's operation list
(runner/pipeline_run.hpp replay_stage_memory; target: byte-exact on CPU). Every run must pass every
check (gradient equivalence, schedule order, microbatches in flight, stage memory).
Why: the pipeline plans' bubble and per-stage memory are predictions; a real schedule checks them.

Timing rules: at most one rank per core (2 stages, 1 thread per rank, on the 2-core reference
machine); --pp above the cores is allowed for the memory and correctness figures, and the timing
columns are then marked oversubscribed. Run on a quiet machine: the load average before and after
is recorded and a warning printed when it says other work ran.

Commands:
  full run (docs/BENCHMARKS.md numbers):  python3 bench/pipeline.py --out-dir bench-out/pipeline
  CI smoke (1 repeat, few steps; fails on a crash, a failed check or memory that is not
  byte-exact, never on timing):
                              python3 bench/pipeline.py --smoke --out-dir bench-out/pipeline-smoke
Outputs: <out-dir>/pipeline.csv (one row per schedule), <out-dir>/pipeline.json (rows, load
averages, the commands run), <out-dir>/runs/*.json (each validation.json).
Exit: 0 done (timing is reported, not enforced), 1 a run or check failed / memory not byte-exact,
2 bad input.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

SCHEDULES = (("gpipe", 1), ("1f1b", 1), ("interleaved-1f1b", 2))
COLUMNS = ("workload", "pp", "schedule", "virtual_stages", "micro_batch", "accum_steps", "repeats", "oversubscribed",
           "bubble_measured_pct", "bubble_simulated_pct", "bubble_closed_form_pct", "bubble_runs_pct",
           "step_time_measured_s", "step_time_predicted_s", "step_time_error_pct", "makespan_measured_s",
           "makespan_simulated_s", "p2p_s", "stage_peaks_measured", "stage_peaks_predicted", "memory_exact",
           "in_flight_measured", "in_flight_model")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8, help="gpt blocks (gpt-tiny:layers=L)")
    ap.add_argument("--pp", type=int, default=2)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--accum-steps", type=int, default=8, help="microbatches m")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out-dir", default="bench-out/pipeline")
    ap.add_argument("--gaccum")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    for flag, v in (("--layers", a.layers), ("--pp", a.pp), ("--micro-batch", a.micro_batch),
                    ("--accum-steps", a.accum_steps), ("--steps", a.steps), ("--repeats", a.repeats)):
        bl.positive(v, flag)
    if a.pp < 2:
        raise bl.BenchError("--pp: a pipeline needs at least 2 stages", 2)
    if a.warmup < 2:
        raise bl.BenchError("--warmup: pipeline runs need at least 2 (validate's rule)", 2)
    steps, repeats = (2, 1) if a.smoke else (a.steps, a.repeats)
    workload = "gpt-tiny:layers=%d" % a.layers
    gaccum = bl.find_gaccum(a.gaccum)
    runner = bl.Runner(a.verbose)
    note = bl.quiet_machine_note(a.pp)
    if note and not a.smoke:
        print("warning: %s" % note, flush=True)
    oversubscribed = a.pp > bl.cpu_cores()
    load_before = bl.load_average()
    runs_dir = os.path.join(a.out_dir, "runs")
    os.makedirs(runs_dir, exist_ok=True)

    results = {s: [] for s in SCHEDULES}
    for rep in range(repeats):
        for schedule, v in SCHEDULES:
            if a.layers % (a.pp * v):
                raise bl.BenchError("--layers %d do not split into pp %d x v %d chunks" % (a.layers, a.pp, v), 2)
            out = os.path.join(runs_dir, "%s-v%d-r%d.json" % (schedule, v, rep))
            run, _ = bl.validate(runner, gaccum, out, a.micro_batch, a.accum_steps, a.pp, "fused", steps, a.warmup,
                                 workload=workload,
                                 extra=["--pp", str(a.pp), "--schedule", schedule, "--virtual-stages", str(v),
                                        "--threads-per-rank", "1"])
            failed = bl.failed_checks(run)
            if failed:
                raise bl.BenchError("%s: checks failed: %s (see %s)" % (schedule, ", ".join(failed), out))
            results[(schedule, v)].append(run)
    load_after = bl.load_average()

    rows, problems = [], []
    for schedule, v in SCHEDULES:
        runs = results[(schedule, v)]
        pipes = [r["pipeline"] for r in runs]
        measured = [float(r["measured"]["step_time"]["median"]) for r in runs]
        predicted = [float(p["predicted_step_time_s"]) for p in pipes]
        t_m, t_p = bl.median(measured), bl.median(predicted)
        ranks = pipes[0]["ranks"]
        peaks_m = [int(rk["peak_memory"]) for rk in ranks]
        peaks_p = [int(rk["predicted_peak"]) for rk in ranks]
        exact = all(int(rk["peak_memory"]) == int(rk["predicted_peak"]) for p in pipes for rk in p["ranks"])
        if not exact:
            problems.append("%s: a stage's peak is not byte-exact: %s vs %s predicted" % (schedule, peaks_m, peaks_p))
        rows.append({
            "workload": workload, "pp": a.pp, "schedule": schedule, "virtual_stages": v,
            "micro_batch": a.micro_batch, "accum_steps": a.accum_steps, "repeats": len(runs),
            "oversubscribed": oversubscribed,
            "bubble_measured_pct": 100 * bl.median([float(p["bubble_fraction"]) for p in pipes]),
            "bubble_simulated_pct": 100 * bl.median([float(p["predicted_bubble_fraction"]) for p in pipes]),
            "bubble_closed_form_pct": 100 * float(pipes[0]["closed_form_bubble_fraction"]),
            "bubble_runs_pct": " ".join("%.1f" % (100 * float(p["bubble_fraction"])) for p in pipes),
            "step_time_measured_s": t_m, "step_time_predicted_s": t_p,
            "step_time_error_pct": bl.pct_error(t_p, t_m),
            "makespan_measured_s": bl.median([float(p["makespan_s"]) for p in pipes]),
            "makespan_simulated_s": bl.median([float(p["predicted_makespan_s"]) for p in pipes]),
            "p2p_s": bl.median([float(p["p2p_s"]) for p in pipes]),
            "stage_peaks_measured": " ".join(str(x) for x in peaks_m),
            "stage_peaks_predicted": " ".join(str(x) for x in peaks_p),
            "memory_exact": exact,
            "in_flight_measured": " ".join(str(rk["in_flight"]) for rk in ranks),
            "in_flight_model": " ".join(str(rk["in_flight_model"]) for rk in ranks),
        })

    bl.write_csv(os.path.join(a.out_dir, "pipeline.csv"), COLUMNS, rows)
    bl.write_json(os.path.join(a.out_dir, "pipeline.json"), {
        "workload": workload, "config": {"pp": a.pp, "micro_batch": a.micro_batch, "accum_steps": a.accum_steps,
                                          "steps": steps, "warmup": a.warmup, "repeats": repeats},
        "load_average_before": load_before, "load_average_after": load_after,
        "targets": {"stage_peak_memory": "byte-exact"}, "rows": rows, "problems": problems,
        "commands": runner.commands})
    for r in rows:
        print("pipeline %s pp %d %-16s v %d: bubble %.1f%% measured, %.1f%% simulated (%.1f%% closed form); step "
              "%.2f ms vs %.2f ms predicted (%+.1f%%); stage peaks %s B (%s)%s"
              % (r["workload"], r["pp"], r["schedule"], r["virtual_stages"], r["bubble_measured_pct"],
                 r["bubble_simulated_pct"], r["bubble_closed_form_pct"], r["step_time_measured_s"] * 1e3,
                 r["step_time_predicted_s"] * 1e3, r["step_time_error_pct"], r["stage_peaks_measured"],
                 "byte-exact" if r["memory_exact"] else "predicted " + r["stage_peaks_predicted"],
                 " [oversubscribed: timing not representative]" if r["oversubscribed"] else ""))
    print("pipeline: load average %.2f before, %.2f after" % (load_before, load_after))
    for p in problems:
        print("error: %s" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    bl.main_wrapper(main)
