"""Shared plumbing of the benchmark drivers in bench/ (accuracy.py, regret.py, ddp_compare.py).

What: finding the gaccum-tune binary, running it (printing the exact command with --verbose,
timing its wall clock), profiling a workload once and reusing the profile, reading
validation.json runs, atomic CSV/JSON writes, and small statistics (median, MAPE).
Why: every driver needs the same rules: one typed error (BenchError) that ends a driver with a
one-line message and exit code (2 bad input, 1 a run failed), outputs that are never half
written, and commands a reader can paste to reproduce a number. Python 3 standard library only.
"""
import csv
import io
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
TORCH_PYTHON_DEFAULT = "/usr/bin/python3"  # Debian's python3-torch (PyTorch 1.13)
STRATEGIES = ("overlap", "fused", "every-step")


class BenchError(Exception):
    """A driver failure: `code` 2 for bad input (flags, files), 1 for a run that failed."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def main_wrapper(main):
    """Runs main(argv) -> exit code; BenchError and Ctrl-C become one line on stderr."""
    try:
        sys.exit(main(sys.argv[1:]))
    except BenchError as e:
        print("error: %s" % e, file=sys.stderr)
        sys.exit(e.code)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)


def find_gaccum(explicit):
    """--gaccum, else $GACCUM_TUNE, else <repo>/build/gaccum-tune, else gaccum-tune on PATH."""
    for cand in (explicit, os.environ.get("GACCUM_TUNE"), os.path.join(REPO_DIR, "build", "gaccum-tune")):
        if cand:
            if os.path.isfile(cand) and os.access(cand, os.X_OK):
                return os.path.abspath(cand)
            if cand is explicit:
                raise BenchError("--gaccum: '%s' is not an executable file" % cand, 2)
    found = shutil.which("gaccum-tune")
    if found:
        return found
    raise BenchError("gaccum-tune not found: build it (cmake --build build --target gaccum-tune) "
                     "or pass --gaccum PATH", 2)


def vcpu_survey(gaccum, seconds, out_path):
    """bench/vcpu_survey (built beside gaccum-tune, in <build>/bench/) for `seconds` seconds: how
    steady this machine's cores are right now. Returns its JSON summary, or {"skipped": why}."""
    exe = os.path.join(os.path.dirname(gaccum), "bench", "vcpu_survey")
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        return {"skipped": "%s not built (cmake --build <build> --target vcpu_survey)" % exe}
    proc = subprocess.run([exe, str(int(seconds)), "--json", out_path], capture_output=True, text=True,
                          timeout=seconds + 120)
    if proc.returncode != 0 or not os.path.exists(out_path):
        return {"skipped": "vcpu_survey exit %d: %s" % (proc.returncode, last_line(proc.stderr))}
    j = read_json(out_path, "vcpu_survey")
    j.pop("ratios", None)
    return j


def describe_survey(j):
    """One line for a survey summary."""
    if "skipped" in j:
        return "vcpu survey skipped: %s" % j["skipped"]
    return ("%d of %d core-seconds > 1.2x slower than the fastest, %d > 1.5x, slowest %.2fx"
            % (j["over_1_2x"], j["core_seconds"], j["over_1_5x"], j["slowest_ratio"]))


class Runner:
    """Runs commands, echoing them (`+ cmd`) when verbose; keeps the list for the JSON record."""

    def __init__(self, verbose=False):
        self.verbose = verbose
        self.commands = []

    def run(self, cmd, timeout=None, env=None, check=True, what=None):
        """Returns (returncode, stdout, stderr, wall seconds). check: rc not in (0, 1, 3) -> BenchError
        (3: validate's accumulation was correct but a prediction missed its tolerance)."""
        text = shlex.join(cmd)
        self.commands.append(text)
        if self.verbose:
            print("+ " + text, flush=True)
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise BenchError("%s: did not finish within %.0f s: %s" % (what or cmd[0], timeout, text))
        except OSError as e:
            raise BenchError("%s: cannot run %s: %s" % (what or cmd[0], cmd[0], e), 2)
        wall = time.perf_counter() - t0
        if check and p.returncode not in (0, 1, 3):
            raise BenchError("%s: exit %d: %s (command: %s)" % (what or cmd[0], p.returncode,
                                                             last_line(p.stderr) or last_line(p.stdout), text),
                             2 if p.returncode == 2 else 1)
        return p.returncode, p.stdout, p.stderr, wall


def last_line(text):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


# --- files -------------------------------------------------------------------------------------

def write_atomic(path, text):
    """Writes `text` to a temporary file beside `path`, then renames it over `path`."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=d)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, doc):
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=False) + "\n")


def write_csv(path, columns, rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="raise")
    w.writeheader()
    for r in rows:
        w.writerow({c: fmt_cell(r.get(c, "")) for c in columns})
    write_atomic(path, buf.getvalue())


def fmt_cell(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "%.6g" % v
    return v


def read_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise BenchError("%s: '%s' does not exist" % (what, path), 2)
    except (OSError, ValueError) as e:
        raise BenchError("%s: '%s' is not readable JSON (%s)" % (what, path, e), 2)


# --- statistics --------------------------------------------------------------------------------

def median(values):
    return statistics.median(values) if values else float("nan")


def pct_error(predicted, measured):
    """Signed error of a prediction in percent of the measurement: (pred - meas) / meas * 100."""
    return (predicted - measured) / measured * 100.0 if measured else float("nan")


def error_summary(errors):
    """{"mape", "max", "mean_signed", "n"} over signed percentage errors."""
    vals = [e for e in errors if e == e]
    if not vals:
        return {"mape": float("nan"), "max": float("nan"), "mean_signed": float("nan"), "n": 0}
    return {"mape": sum(abs(e) for e in vals) / len(vals), "max": max(abs(e) for e in vals),
            "mean_signed": sum(vals) / len(vals), "n": len(vals)}


# --- gaccum-tune -------------------------------------------------------------------------------

def profile_path_for(profile_dir, workload):
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in workload)
    return os.path.join(profile_dir, safe + ".json")


def get_profile(runner, gaccum, workload, profile_dir, reprofile=False, extra_args=(), source=None):
    """A profile of `workload` in profile_dir (measured now unless one is there, or reprofile).

    Returns {"path", "reused", "wall_s"}; wall_s is the profile's measured wall time (recorded
    beside it in <name>.wall.json when this function made it; None for a profile made elsewhere).
    source: the model flags (e.g. ["--torchscript", F, "--input-shape", "3,32,32"]) instead of
    ["--workload", workload]; `workload` then only names the file.
    """
    path = profile_path_for(profile_dir, workload)
    side = path[:-5] + ".wall.json"
    if os.path.exists(path) and not reprofile:
        prof = read_json(path, "--profile-dir")
        name = prof.get("workload", {}).get("name")
        if source is None and name != workload:
            raise BenchError("--profile-dir: %s profiles workload '%s', not '%s' (remove it or pass --reprofile)"
                             % (path, name, workload), 2)
        wall = None
        if os.path.exists(side):
            wall = read_json(side, "--profile-dir").get("wall_s")
        return {"path": path, "reused": True, "wall_s": wall}
    os.makedirs(profile_dir, exist_ok=True)
    cmd = [gaccum, "profile"] + (list(source) if source else ["--workload", workload]) + ["-o", path, "-q"] + \
        list(extra_args)
    rc, out, err, wall = runner.run(cmd, timeout=1800, check=False, what="profile %s" % workload)
    if rc != 0 or not os.path.exists(path):
        raise BenchError("profile %s: exit %d: %s" % (workload, rc, last_line(err) or last_line(out)),
                         2 if rc == 2 else 1)
    write_json(side, {"workload": workload, "wall_s": wall, "command": shlex.join(cmd)})
    return {"path": path, "reused": False, "wall_s": wall}


def profile_points(profile):
    """(micro_batch sizes with compute measured, with memory measured, largest fitting, cap bytes)."""
    compute = sorted({int(c["micro_batch"]) for c in profile.get("compute", [])})
    memory = sorted({int(m["micro_batch"]) for m in profile.get("memory", [])})
    fitting = int(profile.get("max_micro_batch_fitting") or (max(memory) if memory else 1))
    cap = int(profile.get("settings", {}).get("memory_cap", 0))
    return compute, memory, fitting, cap


def predict(runner, gaccum, profile_path, b, k, p, strategy):
    """The cost model's prediction of one config (`gaccum-tune predict --json`)."""
    cmd = [gaccum, "predict", "--profile", profile_path, "--micro-batch", str(b), "--accum-steps", str(k),
           "--world-size", str(p), "--strategy", strategy, "--json"]
    rc, out, err, _ = runner.run(cmd, timeout=120, check=False, what="predict")
    if rc != 0:
        raise BenchError("predict b=%d k=%d p=%d %s: exit %d: %s" % (b, k, p, strategy, rc, last_line(err)),
                         2 if rc == 2 else 1)
    try:
        doc = json.loads(out)
        return doc["predictions"][0]
    except (ValueError, KeyError, IndexError) as e:
        raise BenchError("predict: unexpected output (%s): %s" % (e, out[:200]))


def validate(runner, gaccum, out_json, b, k, p, strategy, steps, warmup, workload=None, profile=None,
             extra=(), timeout=1800):
    """One `gaccum-tune validate` run; returns (run dict, wall seconds).

    A completed run is returned even when a prediction missed its tolerance (exit 1); a run
    whose ranks failed, or one without output, raises BenchError naming the config.
    """
    cmd = [gaccum, "validate"]
    if workload:
        cmd += ["--workload", workload]
    cmd += ["--micro-batch", str(b), "--accum-steps", str(k), "--world-size", str(p), "--strategy", strategy,
            "--steps", str(steps), "--warmup", str(warmup)]
    if profile:
        cmd += ["--profile", profile]
    cmd += list(extra) + ["-o", out_json]
    if os.path.exists(out_json):
        os.unlink(out_json)
    what = "validate b=%d k=%d p=%d %s" % (b, k, p, strategy)
    rc, out, err, wall = runner.run(cmd, timeout=timeout, check=False, what=what)
    if rc == 2:
        raise BenchError("%s: bad input: %s" % (what, last_line(err)), 2)
    if not os.path.exists(out_json):
        raise BenchError("%s: exit %d, no %s written: %s" % (what, rc, out_json, last_line(err) or last_line(out)))
    doc = read_json(out_json, what)
    runs = doc.get("runs") or []
    if len(runs) != 1:
        raise BenchError("%s: %s holds %d runs, expected 1" % (what, out_json, len(runs)))
    run = runs[0]
    if "failure" in run or "measured" not in run:
        raise BenchError("%s: the run failed: %s" % (what, run.get("failure") or run.get("stopped") or "no measurements"))
    return run, wall


def failed_checks(run):
    """Names of the correctness checks (not predictions) that failed in a validation run."""
    return [c.get("name", "?") for c in run.get("checks", []) if c.get("status") == "fail"]


def parse_int_list(text, flag):
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise BenchError("%s: invalid list '%s': expected e.g. 1,2" % (flag, text), 2)
    if not vals or any(v < 1 for v in vals):
        raise BenchError("%s: invalid list '%s': expected positive integers, e.g. 1,2" % (flag, text), 2)
    return vals


def positive(value, flag):
    if value < 1:
        raise BenchError("%s: must be at least 1, got %d" % (flag, value), 2)
    return value


def cpu_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def cpu_busy_sample():
    """(busy CPU seconds of the whole machine, this process's + its reaped children's CPU seconds,
    CPU seconds the hypervisor stole, all CPU seconds), from /proc/stat and os.times()."""
    try:
        with open("/proc/stat") as f:
            v = [float(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / tick
    t = os.times()
    return busy, t.user + t.system + t.children_user + t.children_system, v[7] / tick, sum(v) / tick


# The bench's start check uses the thresholds of a disturbed phase (core/host.hpp
# kDisturbedOthersCores, kDisturbedSteal).
DISTURBED_OTHERS_CORES = 0.25
DISTURBED_STEAL = 0.05


def machine_activity(seconds=2.0):
    """{"others_cores", "steal"} over `seconds` of this process sleeping, as core/host.hpp's
    MachineActivity measures a profile phase or a run: the cores other processes kept busy
    (/proc/stat busy time minus this process's own CPU time) and the share of the CPU time the
    hypervisor stole. nan where /proc/stat is missing."""
    a = cpu_busy_sample()
    time.sleep(seconds)
    b = cpu_busy_sample()
    if a is None or b is None:
        return {"others_cores": float("nan"), "steal": float("nan")}
    total = b[3] - a[3]
    return {"others_cores": max(0.0, ((b[0] - a[0]) - (b[1] - a[1])) / seconds),
            "steal": (b[2] - a[2]) / total if total > 0 else 0.0}


def others_cores(seconds=2.0):
    """Cores other processes keep busy (see machine_activity)."""
    return machine_activity(seconds)["others_cores"]


def machine_state():
    """{"load1", "others_cores", "steal"}: what the machine is doing right now."""
    m = machine_activity()
    return {"load1": load_average(), "others_cores": m["others_cores"], "steal": m["steal"]}


def machine_busy_reason(state):
    """Why the machine is not quiet enough to time on ('' when it is): other processes above
    DISTURBED_OTHERS_CORES, or the hypervisor stealing above DISTURBED_STEAL of the CPU time."""
    why = []
    if state["others_cores"] == state["others_cores"] and state["others_cores"] > DISTURBED_OTHERS_CORES:
        why.append("other processes keep %.2f cores busy (load average %.2f)" % (state["others_cores"],
                                                                                 state["load1"]))
    if state.get("steal", 0) == state.get("steal", 0) and state.get("steal", 0) > DISTURBED_STEAL:
        why.append("the hypervisor steals %.1f%% of the CPU time" % (100 * state["steal"]))
    return " and ".join(why)


def quiet_machine_note(ranks):
    """A warning line when the machine looks busy (timings then are noisy), else ''."""
    load = load_average()
    cores = cpu_cores()
    notes = []
    if ranks > cores:
        notes.append("%d ranks on %d cores: oversubscribed" % (ranks, cores))
    if load == load and load > 0.5:
        notes.append("load average %.2f before the run (other work running: timings are noisy)" % load)
    return "; ".join(notes)
