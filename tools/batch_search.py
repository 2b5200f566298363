#!/usr/bin/env python3
"""Batch-size search: for each model and mode, the batch where throughput
levels off (the knee), the batch of peak throughput and the largest batch
that runs, measured with the torchbench program one probe at a time.

    tools/batch_search.py MODEL... [-o OUT.json] [options]
    tools/tb batch-search MODEL... [-o OUT.json] [options]

MODEL is a model name or a regular expression that matches whole names
(`resnet.*`); --mode train|eval|both (default both) picks the modes, and a
mode a model does not support (or cannot run at the chosen precision) is
skipped. Per model and mode:

- the start b0 is --start-batch (1), or the model's smallest batch when it
  needs more; a fixed-batch model is probed once at its batch (stopped_by
  "fixed_batch"). Both are read from the program's own listing
  (--benchmark_list_tests), which resolves a requested batch it cannot run;
- the search probes b0, 2 b0, 4 b0, ... until the first failure (out of
  memory, error, crash, timeout), the cap, --max-batch (65536), or, with
  --stop-on-plateau, two doublings in a row that gain under 2 % samples/s.
  The cap (--cap-seconds, default 1.0 on the CPU, none on a GPU) stops at
  the first batch whose median step is longer; that probe still counts;
- after a failure at 2g with g the last batch that ran, the largest batch
  that runs is bisected between g and 2g (over multiples of b0 when b0 is
  the model's smallest batch, whose multiples are what it runs); a cap does
  not bisect.

Each probe is one torchbench process (its own session, so an out-of-memory
error, crash or hang costs that probe only), one instance with
--benchmark_repetitions (5) of --benchmark_min_time (0.01 s), and
--torchbench_fail_on_error=false; --extra-flag=FLAG (repeatable) passes a
flag on, e.g. --extra-flag=--torchbench_precision=bf16. From its JSON: the
median and interquartile range of the repetitions' real_time (the step
time), the median items_per_second (samples/s), the largest peak_mem and,
when there, the median gpu_busy_pct. An errored instance whose message
starts with "out of memory" (after a "setup failed: " or similar prefix) is
status "oom", any other "error"; a process killed by a signal or ending
without a result (or with a damaged one, named) is "crashed" (with its last
stderr line), one past
--probe-timeout (600 s) "timeout".

Summary per search: b_knee, the smallest batch whose samples/s is at least
--knee-fraction (0.95) of the peak; b_peak and peak_samples_per_s; b_max_ok,
the largest batch that ran; oom_edge, the smallest batch that failed (after
bisection; null when none failed, the failure's kind is stopped_by);
stopped_by: cap, oom, error, crashed, timeout, max_batch, fixed_batch,
plateau, or interrupted.

Output: a table on stdout (each probe as it finishes on stderr) and the JSON
document (-o, default results/batch-search-<time>.json under the caller's
directory), written after every search, to a temporary file renamed over
it: {"tool": "torchbench-batch-search", "version": 1, "context" (the first
probe's Google Benchmark context), "settings", "searches": [{"model",
"mode", "start_batch", "probes": [...], "summary": {...}}],
"suggested_batch_sizes": {device_name: {model: {"eval_batch_size": knee,
"train_batch_size": knee}}}}, the last in the spirit of TorchBench's
metadata.yaml. Ctrl-C (or SIGTERM) ends the probe running, writes what was
measured and exits 130.

Exit status: 0 done (failed probes are results, not errors), 2 bad input or
usage (no program, no model matches, a flag the program refuses), 130
interrupted.
"""

import argparse
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile

from tbench import errors, files, program, results

OK, BAD_INPUT, INTERRUPTED = 0, 2, 130
DEFAULT_PROGRAM = program.DEFAULT
MODES = {"train": ["Train"], "eval": ["Eval"], "both": ["Train", "Eval"]}
# A batch no model is fixed at: listed beside the start batch, it tells a
# model with a smallest batch (both listed) from a fixed-batch one (one).
LIST_PROBE_BATCH = 2**20 + 1
OOM_RE = re.compile(r"^(?:[\w ]+ failed: )?out of memory")
NAME_RE = re.compile(r"^([^/]+)/(Train|Eval)/batch_size:(\d+)$")
# Flags the tool sets itself, each with the option that sets it.
OWN_FLAGS = {
    "benchmark_filter": "MODEL and --mode", "torchbench_batch_sizes": "the search",
    "torchbench_device": "--device", "benchmark_repetitions": "--repetitions",
    "benchmark_min_time": "--min-time", "benchmark_out": "-o",
    "benchmark_out_format": "-o", "benchmark_list_tests": "the search",
    "torchbench_fail_on_error": "the search",
    "torchbench_isolate": "the search (a process per probe)",
    "torchbench_shard": "the search", "torchbench_journal": "the search",
    "torchbench_resume": "the search",
}
# Variables that would make each probe one shard of a sharded run.
SHARD_ENV = ("SLURM_", "JOB_COMPLETION_INDEX", "TORCHBENCH_SHARD")


class UsageError(Exception):
    """Bad input: one message, exit 2."""


# ---------------------------------------------------------------------------
# The search, on any probe function (the tests give it a fake one).

def new_probe(batch, status, step_ms=None, iqr_ms=None, samples_per_s=None,
              peak_mem=None, gpu_busy=None, message=None):
    return {"batch_size": batch, "status": status, "step_ms_median": step_ms,
            "step_ms_iqr": iqr_ms, "samples_per_s": samples_per_s,
            "peak_mem_bytes": peak_mem, "gpu_busy_pct": gpu_busy, "message": message}


def search(probe, start, *, fixed=False, granularity=1, cap_seconds=None, max_batch=65536,
           stop_on_plateau=False, probes=None):
    """Runs one search; returns (probes, stopped_by).

    probe(batch) returns a probe dict (new_probe). Probes are appended to
    `probes` as they finish, so a caller interrupted mid-search keeps them.
    """
    probes = [] if probes is None else probes

    def run(batch):
        result = probe(batch)
        probes.append(result)
        return result

    if fixed:
        result = run(start)
        return probes, "fixed_batch" if result["status"] == "ok" else result["status"]

    batch, good, failed, stopped_by = start, None, None, None
    rates = []  # samples/s along the doubling
    while True:
        result = run(batch)
        if result["status"] != "ok":
            failed, stopped_by = batch, result["status"]
            break
        good = batch
        rates.append(result["samples_per_s"] or 0.0)
        if cap_seconds and result["step_ms_median"] / 1e3 > cap_seconds:
            stopped_by = "cap"
            break
        if (stop_on_plateau and len(rates) >= 3 and rates[-1] < 1.02 * rates[-2]
                and rates[-2] < 1.02 * rates[-3]):
            stopped_by = "plateau"
            break
        if 2 * batch > max_batch:
            stopped_by = "max_batch"
            break
        batch *= 2

    if failed is not None and good is not None:
        lo, hi = good, failed  # lo runs, hi fails
        while hi - lo > granularity:
            mid = lo + (hi - lo) // (2 * granularity) * granularity
            if mid <= lo:
                break
            if run(mid)["status"] == "ok":
                lo = mid
            else:
                hi = mid
    return probes, stopped_by


def summarize(probes, stopped_by, knee_fraction=0.95):
    ok = [p for p in probes if p["status"] == "ok"]
    failed = [p["batch_size"] for p in probes if p["status"] != "ok"]
    summary = {"b_knee": None, "b_peak": None, "peak_samples_per_s": None,
               "b_max_ok": None, "oom_edge": min(failed) if failed else None,
               "stopped_by": stopped_by}
    if ok:
        by_batch = sorted(ok, key=lambda p: p["batch_size"])
        peak = max(by_batch, key=lambda p: p["samples_per_s"] or 0.0)  # first (smallest) of ties
        rate = peak["samples_per_s"] or 0.0
        knee = next(p for p in by_batch if (p["samples_per_s"] or 0.0) >= knee_fraction * rate)
        summary.update(b_knee=knee["batch_size"], b_peak=peak["batch_size"],
                       peak_samples_per_s=rate, b_max_ok=by_batch[-1]["batch_size"])
    return summary


def suggestions(searches, context, device):
    """{device_name: {model: {"<mode>_batch_size": knee}}}, TorchBench metadata style."""
    out = {}
    for s in searches:
        knee = s["summary"]["b_knee"]
        if knee is not None:
            out.setdefault(s["model"], {})[f"{s['mode'].lower()}_batch_size"] = knee
    return {context.get("device_name") or device: out}


# ---------------------------------------------------------------------------
# The torchbench program.

def child_env():
    return {k: v for k, v in os.environ.items() if not k.startswith(SHARD_ENV)}


last_line = errors.last_line


def list_batch(start):
    return max(LIST_PROBE_BATCH, 2 * start + 1)


def run_listing(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"cannot list the benchmarks of {cmd[0]}: {e}") from e


def list_instances(program, device, start, extra_flags):
    """{model: {mode: [batch, ...]}} in the program's order, for the start
    batch and list_batch(start)."""
    cmd = [program, f"--torchbench_device={device}",
           f"--torchbench_batch_sizes={start},{list_batch(start)}", "--benchmark_list_tests",
           *extra_flags]
    p = run_listing(cmd)
    if p.returncode != 0:
        raise UsageError(f"{program} refused the listing (exit {p.returncode}): "
                         f"{last_line(p.stderr) or 'no message'}")
    listing = {}
    for line in p.stdout.splitlines():
        m = NAME_RE.match(line.strip())
        if m:
            listing.setdefault(m[1], {}).setdefault(m[2], []).append(int(m[3]))
    return listing


def plan(batches, start):
    """(start batch, fixed, granularity) from the batches a listing of
    (start, list_batch(start)) gave for one model and mode."""
    own = [b for b in batches if b != list_batch(start)]
    if len(batches) == 1 and own:
        return own[0], True, 1        # fixed: both requests ran at its batch
    first = own[0] if own else list_batch(start)
    return first, False, first if first > start else 1


def usable_device(program):
    p = run_listing([program, "--torchbench_device=cuda", "--benchmark_list_tests"])
    return "cuda" if p.returncode == 0 else "cpu"


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def read_result(path, batch):
    """A probe dict from the program's JSON, or None when there is none. A
    file that is there but damaged is a "crashed" probe naming it (the
    program writes it whole, by rename: something else broke it)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) else f"not valid JSON: {e}"
        return new_probe(batch, "crashed", message=f"its result {path} is damaged "
                         f"({why})"), None
    rows = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        return new_probe(batch, "crashed", message=f"its result {path} is damaged (not "
                         "Google Benchmark JSON: no benchmarks list)"), None
    context = doc.get("context") if isinstance(doc.get("context"), dict) else None
    errored = [r for r in rows if r.get("error_occurred")]
    if errored:
        message = str(errored[0].get("error_message", ""))
        return new_probe(batch, "oom" if OOM_RE.match(message) else "error",
                         message=message), context
    reps = [r for r in rows if r.get("run_type") == "iteration"]
    if not reps:
        return None, context
    steps = [results.real_time(r) for r in reps]
    q1, median, q3 = quartiles(steps)
    rates = [r["items_per_second"] for r in reps if "items_per_second" in r]
    mems = [r["peak_mem"] for r in reps if "peak_mem" in r]
    busy = [r["gpu_busy_pct"] for r in reps if "gpu_busy_pct" in r]
    rate = statistics.median(rates) if rates else batch * 1e3 / median
    return new_probe(batch, "ok", step_ms=median, iqr_ms=q3 - q1, samples_per_s=rate,
                     peak_mem=int(max(mems)) if mems else None,
                     gpu_busy=statistics.median(busy) if busy else None), context


class Prober:
    """Runs probes of one model and mode, each as its own torchbench process."""

    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.context = None  # the first probe's

    def command(self, model, mode, batch, out):
        a = self.args
        return [a.torchbench, program.filter_flag([f"{model}/{mode}/batch_size:{batch}"]),
                f"--torchbench_batch_sizes={batch}", f"--torchbench_device={a.device}",
                f"--benchmark_repetitions={a.repetitions}", f"--benchmark_min_time={a.min_time}",
                f"--benchmark_out={out}", "--benchmark_out_format=json",
                "--torchbench_fail_on_error=false", *a.extra_flag]

    def __call__(self, model, mode, batch):
        out = os.path.join(self.workdir, "probe.json")
        err = os.path.join(self.workdir, "probe.stderr")
        if os.path.exists(out):
            os.unlink(out)
        with open(err, "w+", encoding="utf-8", errors="replace") as stderr:
            child = subprocess.Popen(self.command(model, mode, batch, out), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=stderr, env=child_env(),
                                     start_new_session=True)
            try:
                code = child.wait(timeout=self.args.probe_timeout)
            except subprocess.TimeoutExpired:
                stop(child, signal.SIGKILL)
                return new_probe(batch, "timeout",
                                 message=f"no result after {self.args.probe_timeout:g} s")
            except BaseException:  # Ctrl-C, SIGTERM: the probe ends with the search
                stop(child, signal.SIGINT, grace=10)
                raise
            stderr.seek(0)
            stderr_text = stderr.read()
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else -code
            hint = " (the kernel's out-of-memory killer?)" if code == -signal.SIGKILL else ""
            return new_probe(batch, "crashed", message=f"killed by {name}{hint}: "
                             f"{last_line(stderr_text) or 'no message'}")
        result, context = read_result(out, batch)
        if context and self.context is None:
            self.context = context
        if result is None:
            return new_probe(batch, "crashed", message=f"exit {code} without a result: "
                             f"{last_line(stderr_text) or 'no message'}")
        if result["status"] == "crashed":  # its result is damaged
            result["message"] = (f"exit {code}, {result['message']}: "
                                 f"{last_line(stderr_text) or 'no message'}")
        return result


def stop(child, sig, grace=0.0):
    """Signals the child's session and waits up to `grace` seconds; whatever
    happens (a second Ctrl-C included), the child does not outlive this."""
    try:
        os.killpg(child.pid, sig)
        child.wait(timeout=grace)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    finally:
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            child.wait()


# ---------------------------------------------------------------------------
# Output.

def fmt(value, spec=""):
    return "-" if value is None else format(value, spec)


def size(value):
    if value is None:
        return "-"
    return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.1f} MiB"


def describe_probe(model, mode, p):
    if p["status"] != "ok":
        return f"{model} {mode} batch {p['batch_size']}: {p['status']}: {p['message']}"
    return (f"{model} {mode} batch {p['batch_size']}: ok, {p['step_ms_median']:.2f} ms/step "
            f"(IQR {p['step_ms_iqr']:.2f}), {p['samples_per_s']:.1f} samples/s, "
            f"peak_mem {size(p['peak_mem_bytes'])}")


def table(searches):
    head = ["model", "mode", "probes", "b_knee", "b_peak", "peak samples/s", "b_max_ok",
            "oom_edge", "stopped_by"]
    rows = [head]
    for s in searches:
        m = s["summary"]
        rows.append([s["model"], s["mode"], str(len(s["probes"])), fmt(m["b_knee"]),
                     fmt(m["b_peak"]), fmt(m["peak_samples_per_s"], ".1f"), fmt(m["b_max_ok"]),
                     fmt(m["oom_edge"]), m["stopped_by"]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i in (0, 1, 8) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in rows)


def document(args, context, searches, interrupted):
    doc = {"tool": "torchbench-batch-search", "version": 1, "context": context or {},
           "settings": {"cap_seconds": args.cap_seconds, "knee_fraction": args.knee_fraction,
                        "repetitions": args.repetitions, "device": args.device,
                        "extra_flags": args.extra_flag, "min_time": args.min_time,
                        "max_batch": args.max_batch, "start_batch": args.start_batch,
                        "probe_timeout": args.probe_timeout,
                        "stop_on_plateau": args.stop_on_plateau, "torchbench": args.torchbench},
           "searches": searches,
           "suggested_batch_sizes": suggestions(searches, context or {}, args.device)}
    if interrupted:
        doc["interrupted"] = True
    return doc


# ---------------------------------------------------------------------------
# Command line.

def positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"'{text}' is not positive")
        return value
    return parse


def parse_args(argv):
    p = errors.ArgumentParser(prog="batch-search", tool="batch-search", with_usage=True,
                              description="Batch-size search: knee, peak and largest batch per "
                              "model and mode (see the module docstring of tools/batch_search.py).")
    p.add_argument("models", nargs="+", metavar="MODEL", help="model name or regex (whole name)")
    p.add_argument("--mode", choices=sorted(MODES), default="both")
    p.add_argument("--device", default="auto", help="cpu, cuda[:i], or auto (cuda when usable)")
    p.add_argument("--torchbench", metavar="PATH", default=DEFAULT_PROGRAM,
                   help="the torchbench program (default build/benchmarks/torchbench)")
    p.add_argument("-o", "--output", metavar="OUT.json")
    p.add_argument("--cap-seconds", type=positive(float), default=None,
                   help="stop doubling after a median step longer than this "
                   "(default 1.0 on the CPU, none on a GPU)")
    p.add_argument("--max-batch", type=positive(int), default=65536)
    p.add_argument("--start-batch", type=positive(int), default=1)
    p.add_argument("--probe-timeout", type=positive(float), default=600.0)
    p.add_argument("--repetitions", type=positive(int), default=5)
    p.add_argument("--min-time", type=positive(float), default=0.01,
                   help="--benchmark_min_time of each repetition, seconds")
    p.add_argument("--knee-fraction", type=positive(float), default=0.95)
    p.add_argument("--stop-on-plateau", action="store_true",
                   help="stop after two doublings that each gain under 2%% samples/s")
    p.add_argument("--extra-flag", action="append", default=[], metavar="FLAG",
                   help="a flag for every probe, e.g. --extra-flag=--torchbench_precision=bf16")
    args = p.parse_args(argv)
    if args.knee_fraction > 1:
        p.error(f"--knee-fraction {args.knee_fraction:g} is above 1")
    for flag in args.extra_flag:
        name = flag.lstrip("-").split("=")[0]
        if not flag.startswith("--"):
            p.error(f"--extra-flag {flag}: not a --flag (write --extra-flag=--torchbench_...)")
        if name in OWN_FLAGS:
            p.error(f"--extra-flag {flag}: the search sets --{name} itself ({OWN_FLAGS[name]})")
    return args


def select(listing, patterns, modes):
    """[(model, mode, batches)] for the models a pattern matches wholly."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as e:
            raise UsageError(f"MODEL '{pattern}' is not a regular expression: {e}") from None
    chosen = [(model, mode, batches[mode]) for model, batches in listing.items()
              if any(c.fullmatch(model) for c in compiled)
              for mode in modes if mode in batches]
    for pattern, c in zip(patterns, compiled):
        if chosen and not any(c.fullmatch(model) for model in listing):
            log(f"note: MODEL '{pattern}' matches no model")
    if not chosen:
        raise UsageError(f"no model matches {' '.join(patterns)} in mode(s) {'/'.join(modes)} "
                         f"(the program lists {len(listing)} models: "
                         f"{' '.join(sorted(listing)) or 'none'})")
    return chosen


def run(args):
    args.torchbench = os.path.abspath(args.torchbench)
    if not (os.path.isfile(args.torchbench) and os.access(args.torchbench, os.X_OK)):
        raise UsageError(f"no torchbench program at {args.torchbench} (build it with "
                         "tools/tb build, or pass --torchbench PATH)")
    if args.device == "auto":
        args.device = usable_device(args.torchbench)
    if args.cap_seconds is None and args.device == "cpu":
        args.cap_seconds = 1.0
    if args.output is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        args.output = os.path.join("results", f"batch-search-{stamp}.json")
    listing = list_instances(args.torchbench, args.device, args.start_batch, args.extra_flag)
    chosen = select(listing, args.models, MODES[args.mode])

    searches, interrupted = [], False
    with tempfile.TemporaryDirectory(prefix="batch-search-") as workdir:
        prober = Prober(args, workdir)
        try:
            for model, mode, batches in chosen:
                start, fixed, granularity = plan(batches, args.start_batch)
                note = (" (fixed batch)" if fixed else " (its smallest batch)"
                        if start != args.start_batch else "")
                log(f"{model} {mode}: from batch {start}{note}")
                entry = {"model": model, "mode": mode, "start_batch": start, "probes": []}
                searches.append(entry)

                def probe(batch, model=model, mode=mode):
                    result = prober(model, mode, batch)
                    log(describe_probe(model, mode, result))
                    return result

                _, stopped_by = search(probe, start, fixed=fixed, granularity=granularity,
                                       cap_seconds=args.cap_seconds, max_batch=args.max_batch,
                                       stop_on_plateau=args.stop_on_plateau,
                                       probes=entry["probes"])
                entry["summary"] = summarize(entry["probes"], stopped_by, args.knee_fraction)
                files.write_json(
                    args.output, document(args, prober.context, searches, False), indent=1)
        except KeyboardInterrupt:
            interrupted = True
            if searches and "summary" not in searches[-1]:
                if searches[-1]["probes"]:
                    searches[-1]["summary"] = summarize(searches[-1]["probes"], "interrupted",
                                                        args.knee_fraction)
                else:
                    searches.pop()
            log("interrupted: writing what was measured")
    print(table(searches) if searches else "batch-search: nothing measured")
    files.write_json(
        args.output, document(args, prober.context, searches, interrupted), indent=1)
    log(f"wrote {args.output}")
    return INTERRUPTED if interrupted else OK


def log(message):
    print(f"batch-search: {message}", file=sys.stderr, flush=True)


def raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        return run(args)
    except UsageError as e:
        log(str(e))
        return BAD_INPUT
    except KeyboardInterrupt:  # before the first probe: nothing to write
        log("interrupted")
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
