#!/usr/bin/env python3
"""The compiled packages' table: C++ eager, AOTInductor and TorchScript step
times beside the Python times tools/tb compile measured.

    tools/tb compiled-table DIR [MODEL...] [--threads N] [--rounds 3]
        [--repetitions 1] [--min-time 1] [--instance-timeout 1800]
        [--binary PROGRAM] [--runs RUNS] [-o OUT.json] [--markdown OUT.md]
    tools/tb compiled-table [DIR] --render OUT.json [-o OUT.json] [--markdown OUT.md]

DIR is what `tools/tb compile -o DIR` made: DIR/index.json and, per model and
batch, DIR/<model>/batch_size_<N>/manifest.json beside its packages. Every
instance the index lists (or only those of MODEL...) is measured at the
packages' intra-op threads (the index's; --threads, when given, must be the
same: a package compiled at T threads refuses another count), in --rounds
rounds. Each round runs the program's three backends one after another, the
order rotated per round (eager, aoti, torchscript; aoti, torchscript, eager;
...) so that a drift of the machine favours none; each backend is ONE program
call over the selected instances, each instance in its own process
(--torchbench_isolate=process: a crash costs that instance), --repetitions
repetitions of at least --min-time seconds each (the program's warm-up
before). Every call's Google Benchmark JSON and output stay in RUNS (default:
beside -o, OUT.runs/; else a temporary folder). An instance's C++ figure is
the median over rounds of each round's median repetition; every repetition's
time is in the JSON. A backend whose package failed to compile (its
manifest's status) or was compiled at another thread count is not run: its
row says why.

Python eager, Python AOTI (the package called from Python) and Python
torch.compile (inductor, freezing) come from the manifests (python_eager_ms,
backends.aoti.python_ms, python_compile.ms): `tools/tb compile --time-python`
measured them in its worker, back to back with compiling, not interleaved with
these rounds (the table's head says so).

Per instance: domain (the program's --torchbench_list_models), batch, each
time and its speed-up over C++ eager (C++ eager ms / that ms; above 1: faster
than the port), AOTI vs Python eager (the same forward on both), the compile
seconds (AOTI: export + compile; TorchScript: trace + freeze), each backend's
status (ok, or the failing phase and the reason's first words), and the
fidelity counters (compiled_error_vs_python, compiled_error_vs_port). A
package whose compiled forward is TorchBench's get_module() forward (the
manifest's compiled_forward) is marked: its C++ eager column runs the port's
Eval step, TorchBench's eval(), which may do more than that forward, so its
speed-ups over C++ eager carry a footnote; AOTI vs Python eager is the same
work. Then the geometric mean of each speed-up per domain and overall (over
the instances where both sides ran), the counts of ok and failed per backend,
the failures grouped by backend, phase and cause (the reason's first words),
and the slow-downs (a speed-up below 0.95) with a cause column read from
DIR/causes.json ({"<model>" or "<instance>": "text"}, optional, written by
hand). The JSON (-o) and the Markdown (--markdown, the command and the date in
its head) are rewritten after every round.

--render OUT.json measures nothing and calls no program: it rewrites the JSON
(-o, default OUT.json itself) and the Markdown (--markdown) from an earlier
run's JSON. The C++ times stay as measured (every repetition is in it); the
Python figures, the backends' statuses and causes.json are read again from
DIR as it is now (DIR: the one the JSON records, else the one given), so
Python times `tools/tb compile --time-only` filled in after the measurement
appear. The head keeps the measuring command and date and adds the render's.

Exit status: 0 measured or rendered (failures are results); 2 bad input (no
or an unreadable index, a model it lacks, --threads other than the packages',
a program missing or that cannot list its models, a malformed causes.json;
with --render: an unreadable table, a MODEL or a measuring option, no DIR).
"""

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from tbench import env, errors, files, program, results
from tbench.errors import InputError

import versus_python as vp

TOOL = "compiled-table"
BACKENDS = ("eager", "aoti", "torchscript")
COMPILED = ("aoti", "torchscript")
NAMES = {"eager": "C++ eager", "aoti": "C++ AOTI", "torchscript": "C++ TorchScript",
         "python_eager": "Py eager", "python_aoti": "Py AOTI",
         "python_compile": "Py torch.compile", "aoti_vs_python_eager": "AOTI vs Py eager"}
# The speed-ups: (key, numerator, denominator), each numerator ms / denominator ms.
SPEEDUPS = (("aoti", "eager", "aoti"), ("torchscript", "eager", "torchscript"),
            ("python_eager", "eager", "python_eager"), ("python_aoti", "eager", "python_aoti"),
            ("python_compile", "eager", "python_compile"),
            ("aoti_vs_python_eager", "python_eager", "aoti"))
# The speed-ups whose baseline is the C++ eager step (the get_module footnote).
OVER_CPP_EAGER = {key for key, base, _ in SPEEDUPS if base == "eager"}
# The comparisons whose slow-downs are listed (a compiled C++ backend against
# the port, and AOTI against the same forward in Python eager).
SLOWDOWN_KEYS = ("aoti", "torchscript", "aoti_vs_python_eager")
SLOW = 0.95
MARK = "†"
CAUSE_WORDS = 6


# --- the packages ------------------------------------------------------------------

def read_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise InputError(f"no {what} at {path}") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: unreadable {what} ({errors.one_line(e)})") from None


def read_index(directory):
    doc = read_json(os.path.join(directory, "index.json"),
                    "index.json (tools/tb compile -o DIR writes it)")
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise InputError(f"{os.path.join(directory, 'index.json')}: not an index tools/tb "
                         "compile wrote (no entries)")
    return doc


def read_causes(directory):
    """DIR/causes.json ({model or instance: text}; {} without one)."""
    path = os.path.join(directory, "causes.json")
    if not os.path.exists(path):
        return {}
    doc = read_json(path, "causes.json")
    if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
        raise InputError(f"{path}: expected {{\"<model>\": \"text\"}}")
    return doc


def median(values):
    values = [v for v in values or [] if isinstance(v, (int, float))]
    return statistics.median(values) if values else None


def compile_seconds(entry):
    """An entry's seconds spent making its package: every *_seconds but the
    load and run (AOTI: export + compile; TorchScript: trace + freeze)."""
    values = [v for k, v in entry.items() if k.endswith("_seconds")
              and isinstance(v, (int, float))]
    return round(sum(values), 3) if values else None


def compiled_state(entry):
    """{status, phase?, reason?, seconds, python_ms, max_rel_error} of a
    manifest's (or the index's) backend entry."""
    if not isinstance(entry, dict):
        return {"status": "missing", "reason": "not compiled"}
    out = {"status": "ok" if entry.get("status") == "ok" else "failed"}
    for key in ("phase", "reason", "export", "method", "max_abs_error", "max_rel_error"):
        if key in entry:
            out[key] = entry[key]
    out["seconds"] = compile_seconds(entry)
    if isinstance(entry.get("python_ms"), list):
        out["python_ms"] = entry["python_ms"]
    return out


def index_groups(index):
    """{(model, batch): [the index's entries]}."""
    grouped = {}
    for e in index["entries"]:
        if isinstance(e, dict) and e.get("model") and isinstance(e.get("batch_size"), int):
            grouped.setdefault((e["model"], e["batch_size"]), []).append(e)
    return grouped


def package_fields(directory, index, path, entries):
    """What DIR/`path`/manifest.json says now, as a record's fields (the
    index's `entries` of its model and batch stand in for a manifest without
    backends): reference, compiled_forward, threads, compiled, python and,
    when it cannot be read, manifest_problem."""
    try:
        manifest = read_json(os.path.join(directory, path, "manifest.json"), "manifest")
        if not isinstance(manifest, dict):
            raise InputError("not an object")
        problem = None
    except InputError as e:
        manifest, problem = {}, str(e)
    backends = manifest.get("backends") or {e.get("backend"): e for e in entries}
    reference = manifest.get("reference")
    forward = manifest.get("compiled_forward") or (
        "reference_forward" if str(reference).startswith("pip:") else "get_module")
    compile_entry = manifest.get("python_compile")
    out = {
        "reference": reference, "compiled_forward": forward,
        "threads": manifest.get("threads", index.get("threads")),
        "compiled": {b: compiled_state(backends.get(b)) for b in COMPILED},
        "python": {
            "eager_ms": manifest.get("python_eager_ms"),
            "aoti_ms": (backends.get("aoti") or {}).get("python_ms"),
            "torchscript_ms": (backends.get("torchscript") or {}).get("python_ms"),
            "compile_ms": (compile_entry or {}).get("ms"),
            "compile": compiled_state(compile_entry) if compile_entry else None}}
    if problem:
        out["manifest_problem"] = problem
    return out


def instances_of(directory, index, models):
    """One record per (model, batch) of the index (only `models` when
    given), with what its manifest says; InputError for a model the index
    lacks."""
    grouped = index_groups(index)
    known = {m for m, _ in grouped}
    unknown = [m for m in models if m not in known]
    if unknown:
        raise InputError(f"{', '.join(unknown)}: not in {directory}/index.json "
                         f"({len(known)} model(s) there)")
    out = []
    for (model, batch), entries in sorted(grouped.items()):
        if models and model not in models:
            continue
        path = entries[0].get("path") or f"{model}/batch_size_{batch}"
        out.append({"model": model, "batch_size": batch,
                    "name": f"{model}/Eval/batch_size:{batch}", "path": path,
                    **package_fields(directory, index, path, entries),
                    "runs": {b: {"rounds": []} for b in BACKENDS}})
    return out


def not_run_reason(record, backend, threads):
    """Why a compiled backend of `record` is not run (None: run it)."""
    if backend == "eager":
        return None
    state = record["compiled"][backend]
    if state["status"] == "missing":
        return "not compiled"
    if state["status"] != "ok":
        return f"compile failed at {state.get('phase', '?')}"
    if record["threads"] is not None and record["threads"] != threads:
        return (f"compiled at {record['threads']} thread(s), this table runs {threads} "
                "(the program refuses it)")
    return None


# --- the program -----------------------------------------------------------------------

def order_of(round_index):
    """The backends' order in round `round_index` (0-based): rotated by one
    each round."""
    k = round_index % len(BACKENDS)
    return list(BACKENDS[k:] + BACKENDS[:k])


def program_command(args, backend, names, batches, out):
    cmd = [args.binary, "--torchbench_device=cpu",
           "--torchbench_batch_sizes=" + ",".join(str(b) for b in sorted(batches)),
           program.filter_flag(names), f"--torchbench_backend={backend}"]
    if backend != "eager":
        cmd.append(f"--torchbench_compiled={os.path.abspath(args.directory)}")
    cmd += ["--torchbench_isolate=process",
            f"--torchbench_instance_timeout={args.instance_timeout}",
            f"--benchmark_repetitions={args.repetitions}",
            f"--benchmark_min_time={args.min_time:g}",
            "--benchmark_report_aggregates_only=false", *program.json_out(out)]
    return cmd


def read_run(path, names):
    """{name: {"ms": [...], "errors": [...], "counters": {...}}} of one
    call's JSON (rows of other names are ignored); raises OSError or
    ValueError when it cannot be read."""
    doc = results.load(path)
    out = {}
    for row in doc.get("benchmarks", []):
        name = results.instance_name(row)
        if name not in names or row.get("run_type", "iteration") != "iteration":
            continue
        got = out.setdefault(name, {"ms": [], "errors": [], "counters": {}})
        if row.get("error_occurred"):
            message = str(row.get("error_message") or "error").splitlines()[0]
            if message not in got["errors"]:
                got["errors"].append(message)
            continue
        got["ms"].append(results.real_time(row, "ms"))
        for key in ("compiled_error_vs_python", "compiled_error_vs_port"):
            if key in row:
                got["counters"][key] = row[key]
    return out, doc.get("context", {})


def run_call(args, backend, records, round_index, runs_dir):
    """One program call of `backend` over `records`; fills each record's
    runs[backend]["rounds"]; returns the call's summary."""
    names = [r["name"] for r in records]
    stem = os.path.join(runs_dir, f"round{round_index + 1}_{backend}")
    out, log = stem + ".json", stem + ".log"
    if os.path.exists(out):
        os.unlink(out)
    cmd = program_command(args, backend, names, {r["batch_size"] for r in records}, out)
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True,
                              env=env.thread_env(args.threads))
    seconds = round(time.perf_counter() - start, 1)
    call = {"round": round_index + 1, "backend": backend, "instances": len(names),
            "returncode": proc.returncode, "seconds": seconds, "json": out, "log": log}
    try:
        by_name, context = read_run(out, set(names))
        call["context"] = {k: context.get(k) for k in ("libtorch_version", "intra_op_threads",
                                                         "torchbench_git_commit", "date")}
    except (OSError, ValueError, KeyError) as e:
        with open(log, errors="replace") as f:
            why = errors.last_line(f.read(), f"no JSON ({errors.one_line(e)})")
        call["error"] = f"the program failed (exit {proc.returncode}): {why}"[:300]
        by_name = {}
    for r in records:
        got = by_name.get(r["name"])
        entry = {"round": round_index + 1, "ms": [], "error": None}
        if got is None:
            entry["error"] = call.get("error") or "no result (the program did not run it)"
        else:
            entry["ms"] = [round(v, 6) for v in got["ms"]]
            if got["errors"]:
                entry["error"] = got["errors"][0]
            if got["counters"]:
                r["runs"][backend]["counters"] = got["counters"]
        r["runs"][backend]["rounds"].append(entry)
    return call


# --- the figures ---------------------------------------------------------------------

def cpp_figure(run):
    """{ms, rounds_ms, status, error?} of one backend's rounds."""
    per_round = [statistics.median(e["ms"]) for e in run["rounds"] if e["ms"]]
    failed = [e for e in run["rounds"] if not e["ms"]]
    out = {"rounds_ms": [round(v, 6) for v in per_round],
           "ms": round(statistics.median(per_round), 6) if per_round else None}
    if per_round:
        out["status"] = "ok"
        if failed:
            out["note"] = (f"no time in {len(failed)} of {len(run['rounds'])} round(s): "
                           f"{failed[0]['error']}")
    elif run["rounds"]:
        out["status"] = "run failed"
        out["error"] = failed[0]["error"]
    else:
        out["status"] = "not run"
    return out


def figures(record):
    """The record's computed figures: times, speed-ups, statuses."""
    times, status = {}, {}
    for backend in BACKENDS:
        run = record["runs"][backend]
        if "not_run" in run:
            times[backend] = None
            status[backend] = {"status": "not run", "reason": run["not_run"]}
            if backend in COMPILED and record["compiled"][backend]["status"] == "failed":
                state = record["compiled"][backend]
                status[backend] = {"status": "compile failed", "phase": state.get("phase"),
                                   "reason": state.get("reason", "")}
            continue
        figure = cpp_figure(run)
        times[backend] = figure["ms"]
        status[backend] = {k: v for k, v in figure.items() if k not in ("ms", "rounds_ms")}
        record["runs"][backend].update(ms=figure["ms"], rounds_ms=figure["rounds_ms"])
    py = record["python"]
    times["python_eager"] = median(py["eager_ms"])
    times["python_aoti"] = median(py["aoti_ms"])
    times["python_torchscript"] = median(py["torchscript_ms"])
    compile_state = py.get("compile")
    times["python_compile"] = (median(py["compile_ms"])
                               if compile_state and compile_state["status"] == "ok" else None)
    if compile_state:
        status["python_compile"] = (
            {"status": "ok"} if compile_state["status"] == "ok" else
            {"status": "compile failed", "phase": compile_state.get("phase"),
             "reason": compile_state.get("reason", "")})
    speedups = {}
    for key, base, other in SPEEDUPS:
        a, b = times.get(base), times.get(other)
        speedups[key] = round(a / b, 4) if a and b else None
    record.update(times_ms={k: (round(v, 6) if v is not None else None)
                            for k, v in times.items()},
                  speedups=speedups, status=status,
                  fidelity={b: record["runs"][b].get("counters", {}) for b in COMPILED})
    return record


def short(text, limit=90):
    """`text` cut at a word before `limit` characters, with an ellipsis."""
    text = str(text)
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def cause_words(reason, count=CAUSE_WORDS):
    return " ".join(str(reason or "?").split()[:count])


def split_error(message):
    """A program error's (phase, cause): "compiled fidelity check failed:
    compiled outputs ..." -> ("compiled fidelity check failed", "compiled
    outputs ...")."""
    head, sep, rest = str(message).partition(": ")
    if sep and len(head) <= 40:
        return head, rest
    return "run", str(message)


def failures(records):
    """[{backend, phase, cause, instances}] grouped, the largest first."""
    groups = {}
    for r in records:
        for backend, s in r["status"].items():
            if s["status"] == "compile failed":
                key = (backend, f"compile: {s.get('phase') or '?'}", cause_words(s["reason"]))
            elif s["status"] == "run failed":
                phase, cause = split_error(s.get("error"))
                key = (backend, f"C++ {phase}", cause_words(cause))
            else:
                continue
            groups.setdefault(key, []).append(r["name"])
    out = [{"backend": b, "phase": p, "cause": c, "instances": names}
           for (b, p, c), names in groups.items()]
    return sorted(out, key=lambda g: (-len(g["instances"]), g["backend"], g["phase"]))


def counts(records):
    """Per backend: ok, compile failed, run failed, not run."""
    out = {}
    for backend in (*BACKENDS, "python_compile"):
        c = {"ok": 0, "compile failed": 0, "run failed": 0, "not run": 0}
        for r in records:
            s = r["status"].get(backend)
            if s is not None:
                c[s["status"]] = c.get(s["status"], 0) + 1
        out[backend] = c
    return out


def geomeans(records):
    """{domain or "all": {speed-up key: {geomean, instances, marked}}}: over
    the instances where both sides ran and did the same work; `marked`: the
    get_module ones left out of a speed-up over the C++ eager step (its
    baseline is TorchBench's eval(), which may do far more than the
    compiled forward: drq's and the pyhpc models' are tens to hundreds of
    times the work)."""
    out = {}
    domains = sorted({r["domain"] for r in records})
    for domain in [*domains, "all"]:
        chosen = [r for r in records if domain in ("all", r["domain"])]
        row = {}
        for key, _, _ in SPEEDUPS:
            values = [r for r in chosen if r["speedups"].get(key)]
            same = [r for r in values if not marked(r, key)]
            row[key] = {"geomean": (round(results.geomean([r["speedups"][key] for r in same]), 4)
                                    if same else None),
                        "instances": len(same),
                        "marked": len(values) - len(same)}
        out[domain] = {"instances": len(chosen), "speedups": row}
    return out


def marked(record, key):
    return record["compiled_forward"] == "get_module" and key in OVER_CPP_EAGER


def slowdowns(records, causes):
    out = []
    for r in records:
        for key in SLOWDOWN_KEYS:
            v = r["speedups"].get(key)
            if v is not None and v < SLOW:
                base, other = next((b, o) for k, b, o in SPEEDUPS if k == key)
                out.append({"instance": r["name"], "model": r["model"], "comparison": key,
                            "speedup": v, "baseline_ms": r["times_ms"][base],
                            "ms": r["times_ms"][other], "marked": marked(r, key),
                            "cause": causes.get(r["name"], causes.get(r["model"]))})
    return sorted(out, key=lambda s: s["speedup"])


def summary(records, causes):
    return {"counts": counts(records), "geomeans": geomeans(records),
            "failures": failures(records), "slowdowns": slowdowns(records, causes)}


# --- the Markdown -----------------------------------------------------------------------

def ms_text(v):
    if v is None:
        return "—"
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 \
        else f"{v:.3f}"


def x_text(v, mark=False):
    return "—" if v is None else f"{v:.2f}×" + (MARK if mark else "")


def cell(text):
    return str(text).replace("|", "/").replace("\n", " ")


def time_cell(r, backend, key):
    ms = r["times_ms"].get(backend)
    if ms is None:
        return "—"
    return f"{ms_text(ms)} ({x_text(r['speedups'].get(key), marked(r, key))})"


def status_text(r):
    parts = []
    for backend, label in (("eager", "eager"), ("aoti", "AOTI"), ("torchscript", "TS"),
                           ("python_compile", "torch.compile")):
        s = r["status"].get(backend)
        if s is None or (s["status"] == "ok" and "note" not in s):
            continue
        if s["status"] == "ok":
            parts.append(f"{label}: {short(cell(s['note']))}")
        elif s["status"] == "compile failed":
            parts.append(f"{label} failed at {s.get('phase')}: "
                         f"{short(cell(s['reason']), 70)}")
        elif s["status"] == "run failed":
            parts.append(f"{label} run failed: {short(cell(s.get('error')))}")
        else:
            parts.append(f"{label} not run ({cell(s.get('reason'))})")
    return "; ".join(parts) or "ok"


def error_text(v):
    return "—" if v is None else f"{v:.1e}"


def fidelity_text(r):
    parts = []
    for backend, label in (("aoti", "AOTI"), ("torchscript", "TS")):
        c = r["fidelity"].get(backend) or {}
        if c:
            parts.append(f"{label} {error_text(c.get('compiled_error_vs_python'))} / "
                         f"{error_text(c.get('compiled_error_vs_port'))}")
    return "; ".join(parts) or "—"


def seconds_text(r):
    values = [r["compiled"]["aoti"].get("seconds"), r["compiled"]["torchscript"].get("seconds"),
              (r["python"].get("compile") or {}).get("seconds")]
    return " / ".join("—" if v is None else f"{v:.1f}" for v in values)


def row_text(r):
    name = r["model"] + (f" {MARK}" if r["compiled_forward"] == "get_module" else "")
    return (f"| {name} | {r['domain']} | {r['batch_size']} | {ms_text(r['times_ms']['eager'])} | "
            f"{time_cell(r, 'aoti', 'aoti')} | {time_cell(r, 'torchscript', 'torchscript')} | "
            f"{time_cell(r, 'python_eager', 'python_eager')} | "
            f"{time_cell(r, 'python_aoti', 'python_aoti')} | "
            f"{time_cell(r, 'python_compile', 'python_compile')} | "
            f"{x_text(r['speedups']['aoti_vs_python_eager'])} | {seconds_text(r)} | "
            f"{status_text(r)} | {fidelity_text(r)} |")


def geomean_cell(g):
    left_out = f"{g['marked']}{MARK} left out" if g["marked"] else ""
    if g["geomean"] is None:
        return f"— ({left_out})" if left_out else "—"
    return f"{g['geomean']:.2f}× ({g['instances']}" + (f"; {left_out}" if left_out else "") + ")"


def markdown(doc):
    ctx, s = doc["context"], doc["summary"]
    rounds = (f"{ctx['rounds_done']} of {ctx['rounds']} rounds done"
              if ctx["rounds_done"] < ctx["rounds"] else f"{ctx['rounds']} rounds")
    orders = "; ".join(", ".join(NAMES[b].removeprefix("C++ ") for b in order_of(i))
                       for i in range(min(ctx["rounds"], len(BACKENDS))))
    rendered = ctx.get("rendered")
    retimed = ctx.get("python_times_made_with")
    out = [f"# C++ eager, AOTInductor and TorchScript beside Python (CPU, "
           f"{ctx['threads']} thread(s))", "",
           f"Generated {ctx['date']} by `{ctx['command']}`", "",
           *([f"Re-rendered {rendered['date']} by `{rendered['command']}` from that run's "
              "JSON, nothing measured again: the C++ times are those measured then; the "
              "Python figures, the packages' statuses and DIR/causes.json are read from DIR "
              "as they are now.", ""] if rendered else []),
           f"Machine: {ctx['cpu']}; {ctx['cores']} cores; {ctx.get('cpu_flags') or '?'}. "
           f"LibTorch {ctx.get('libtorch_version') or '?'} (the program); the packages made by "
           f"torch {ctx.get('torch_version') or '?'} with `{ctx.get('made_with') or '?'}` "
           f"({ctx.get('made_on') or '?'}); {ctx['threads']} intra-op thread(s) everywhere.", "",
           f"C++: {rounds}; each round runs the three backends one after another, the order "
           f"rotated per round ({orders}), each backend one program call over every "
           "instance, each instance in its own process (--torchbench_isolate=process), "
           f"{ctx['repetitions']} repetition(s) of at least {ctx['min_time']:g} s after the "
           "program's warm-up; a figure is the median over rounds of each round's median "
           "repetition. Python (eager, the AOTI package from Python, torch.compile with "
           "inductor and freezing): from the manifests"
           + (" as they are now" if rendered else "") + ", measured by `tools/tb compile "
           "--time-python` in its worker back to back with compiling"
           + (f" or, for the packages re-timed since, by `{retimed}` "
              f"({ctx.get('python_times_date') or '?'}) on the packages already compiled"
              if retimed else "") +
           " (the median of its one-step samples), not interleaved with these rounds. "
           "×: speed-up over C++ eager (C++ eager ms / that ms; above 1: faster than the port). "
           "AOTI vs Py eager: Python eager ms / C++ AOTI ms (the same forward). "
           "Compile s: AOTI export + compile / TorchScript trace + freeze / torch.compile's "
           "first call. Fidelity: the program's compiled_error_vs_python / "
           "compiled_error_vs_port (largest relative error of the first outputs).", "",
           f"{MARK} The package compiles TorchBench's get_module() forward; the C++ eager "
           "column runs the port's Eval step, TorchBench's eval(), which may do more (pre- "
           "or post-processing around the forward): its × over C++ eager may overstate the "
           "compiled speed-up. AOTI vs Py eager compares the same work.", "",
           "## Speed-ups (geometric means)", "",
           "Over the instances where both sides ran the same work (their count); the "
           f"get_module packages ({MARK}) are left out of the speed-ups over C++ eager, whose "
           "step is TorchBench's eval() and may do far more than the compiled forward.", "",
           "| domain | instances | " + " | ".join(NAMES[k] for k, _, _ in SPEEDUPS) + " |",
           "|---|---|" + "---|" * len(SPEEDUPS)]
    for domain, g in s["geomeans"].items():
        name = "**all**" if domain == "all" else domain
        out.append(f"| {name} | {g['instances']} | " +
                   " | ".join(geomean_cell(g["speedups"][k]) for k, _, _ in SPEEDUPS) + " |")
    out += ["", "## Backends", "", "| backend | ok | compile failed | run failed | not run |",
            "|---|---|---|---|---|"]
    for backend, c in s["counts"].items():
        if sum(c.values()):
            out.append(f"| {NAMES.get(backend, backend)} | {c['ok']} | {c['compile failed']} | "
                       f"{c['run failed']} | {c['not run']} |")
    if s["failures"]:
        out += ["", "## Failures by phase and cause", "",
                "| backend | phase | cause (first words) | count | instances |",
                "|---|---|---|---|---|"]
        for g in s["failures"]:
            out.append(f"| {NAMES.get(g['backend'], g['backend'])} | {cell(g['phase'])} | "
                       f"{cell(g['cause'])} | {len(g['instances'])} | "
                       f"{', '.join(g['instances'])} |")
    out += ["", f"## Slow-downs (speed-up below {SLOW})", ""]
    if s["slowdowns"]:
        out += ["The cause: DIR/causes.json, written by hand after looking.", "",
                "| instance | comparison | speed-up | ms (baseline, compiled) | cause |",
                "|---|---|---|---|---|"]
        for d in s["slowdowns"]:
            out.append(f"| {d['instance']} | {NAMES[d['comparison']]} | "
                       f"{x_text(d['speedup'], d['marked'])} | {ms_text(d['baseline_ms'])}, "
                       f"{ms_text(d['ms'])} | {cell(d['cause'] or '—')} |")
    else:
        out.append("None.")
    out += ["", "## Every instance", "",
            "| model | domain | batch | C++ eager ms | C++ AOTI ms (×) | "
            "C++ TorchScript ms (×) | "
            "Py eager ms (×) | Py AOTI ms (×) | Py torch.compile ms (×) | AOTI vs Py eager | "
            "compile s AOTI / TS / torch.compile | status | fidelity vs Py / port |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    out += [row_text(r) for r in doc["results"]]
    return "\n".join(out) + "\n"


# --- the command line ---------------------------------------------------------------------

VALUE_OPTIONS = {"--threads", "--rounds", "--repetitions", "--min-time", "--instance-timeout",
                 "--binary", "--runs", "-o", "--output", "--markdown", "--render"}
# The paths versus-python's published_command does not know: {option: placeholder}.
OWN_PATHS = {"--runs": "RUNS", "--render": "OUT.json"}


def published_path(value, placeholder, cwd=None):
    """A path as versus-python publishes one (relative to the checkout's root
    inside it, else `placeholder`): its rule, through its --binary."""
    text = vp.published_command(["--binary", value], cwd)
    published = shlex.split(text)[-1]
    return placeholder if published == vp.PATH_OPTIONS["--binary"] else published


def own_paths(argv):
    """[(position, placeholder, prefix)] of the paths in `argv` that
    published_command publishes itself: DIR (the first positional), --runs's
    and --render's values (prefix: "--runs=" where the value shares its
    word)."""
    out, pending, positional, seen_dir = [], None, False, False
    for i, a in enumerate(argv):
        if pending:
            if pending in OWN_PATHS:
                out.append((i, OWN_PATHS[pending], ""))
            pending = None
        elif a == "--":
            positional = True
        elif positional or not a.startswith("-"):
            if not seen_dir:  # the first positional: DIR
                out.append((i, "DIR", ""))
                seen_dir = True
        elif a.partition("=")[0] in OWN_PATHS and "=" in a:
            out.append((i, OWN_PATHS[a.partition("=")[0]], a.partition("=")[0] + "="))
        elif a in VALUE_OPTIONS:
            pending = a
    return out


def published_command(argv, cwd=None):
    """The command as the table's head records it (versus-python's rule: a
    path inside the checkout relative to its root, any other its
    placeholder: DIR, RUNS, PROGRAM, OUT.json, OUT.md)."""
    argv = list(argv)
    for i, placeholder, prefix in own_paths(argv):
        argv[i] = prefix + published_path(argv[i][len(prefix):], placeholder, cwd)
    text = vp.published_command(argv, cwd)
    return "tools/tb compiled-table" + text[len("tools/tb versus-python"):]


# The options of a measurement, which --render refuses: (dest, flag).
MEASURING = (("threads", "--threads"), ("rounds", "--rounds"), ("repetitions", "--repetitions"),
             ("min_time", "--min-time"), ("instance_timeout", "--instance-timeout"),
             ("binary", "--binary"), ("runs", "--runs"))


def parse_args(argv):
    p = errors.ArgumentParser(prog="tools/tb compiled-table", tool=TOOL, description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("directory", nargs="?", metavar="DIR",
                   help="the packages: tools/tb compile -o DIR (with --render, default: the "
                   "DIR its JSON records)")
    p.add_argument("models", nargs="*", metavar="MODEL", help="default: every model in the index")
    p.add_argument("--threads", type=int, help="intra-op threads (default and only choice: "
                   "the index's)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repetitions", type=int, default=1,
                   help="repetitions per instance per call (--benchmark_repetitions)")
    p.add_argument("--min-time", type=float, default=1.0,
                   help="seconds per repetition at least (--benchmark_min_time)")
    p.add_argument("--instance-timeout", type=int, default=1800,
                   help="seconds an isolated instance may run (--torchbench_instance_timeout)")
    p.add_argument("--binary", default=program.DEFAULT, metavar="PROGRAM")
    p.add_argument("--runs", metavar="RUNS", help="where each call's JSON and output go "
                   "(default: OUT.runs/ beside -o, else a temporary folder)")
    p.add_argument("-o", "--output", metavar="OUT.json")
    p.add_argument("--markdown", metavar="OUT.md")
    p.add_argument("--render", metavar="OUT.json", help="measure nothing: rewrite -o (default: "
                   "this file) and --markdown from this earlier run's JSON, its C++ times as "
                   "measured, the Python figures and the statuses from DIR's manifests as they "
                   "are now")
    args = p.parse_intermixed_args(argv)  # DIR, options and models in any order
    if args.render is not None:
        if args.models:
            p.error(f"--render re-renders the instances {args.render} holds: no MODEL "
                    f"({' '.join(args.models)})")
        given = [flag for dest, flag in MEASURING if getattr(args, dest) != p.get_default(dest)]
        if given:
            p.error(f"--render measures nothing: {', '.join(given)} do(es) not apply")
        return args
    if args.directory is None:
        p.error("DIR is required (the packages: tools/tb compile -o DIR), or --render OUT.json")
    for flag, value in (("--rounds", args.rounds), ("--repetitions", args.repetitions),
                        ("--instance-timeout", args.instance_timeout)):
        if value < 1:
            p.error(f"{flag} must be positive, not {value}")
    if args.threads is not None and args.threads < 1:
        p.error(f"--threads must be positive, not {args.threads}")
    if not args.min_time > 0:
        p.error(f"--min-time must be positive, not {args.min_time}")
    return args


def prepare(args):
    """(index, records, causes, specs); InputError on bad input."""
    index = read_index(args.directory)
    threads = index.get("threads")
    if args.threads is not None and threads is not None and args.threads != threads:
        raise InputError(f"{args.directory}/index.json: the packages were compiled at "
                         f"{threads} thread(s); --threads {args.threads} cannot run them "
                         f"(run at {threads}, or tools/tb compile --threads {args.threads})")
    args.threads = args.threads or threads or 1
    records = instances_of(args.directory, index, args.models)
    if not records:
        raise InputError(f"{args.directory}/index.json lists no package")
    causes = read_causes(args.directory)
    if not os.access(args.binary, os.X_OK):
        raise InputError(f"no program at {args.binary}: build it (tools/tb build) or pass "
                         "--binary")
    specs = vp.list_specs(args.binary)
    for r in records:
        r["domain"] = (specs.get(r["model"]) or {}).get("domain", "?")
    return index, records, causes


def document(args, argv, index, records, causes, calls, rounds_done):
    cpu, flags = env.machine()
    libtorch = next((c["context"].get("libtorch_version") for c in calls
                     if c.get("context", {}).get("libtorch_version")), None)
    for r in records:
        figures(r)
    return {"tool": TOOL, "context": {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "command": published_command(argv), "device": "cpu", "threads": args.threads,
        "rounds": args.rounds, "rounds_done": rounds_done,
        "orders": [order_of(i) for i in range(rounds_done)], "repetitions": args.repetitions,
        "min_time": args.min_time, "cpu": cpu, "cpu_flags": flags, "cores": os.cpu_count(),
        "libtorch_version": libtorch, "torch_version": index.get("torch_version"),
        "made_with": index.get("made_with"), "made_on": index.get("date"),
        "index_threads": index.get("threads"), "directory": os.path.abspath(args.directory),
        **python_times(index)},
        "calls": calls, "results": records, "summary": summary(records, causes)}


def python_times(index):
    """The index's record of a `tools/tb compile --time-only` run: the
    context's python_times_made_with and python_times_date (or nothing)."""
    return {f"python_times_{k}": index[f"python_times_{k}"] for k in ("made_with", "date")
            if index.get(f"python_times_{k}")}


def recorded_directory(context):
    """The DIR an earlier run measured: its context's directory, else the
    first positional of its recorded command (relative to the checkout's
    root); None where that is the placeholder DIR."""
    if context.get("directory"):
        return context["directory"]
    try:
        argv = shlex.split(str(context.get("command") or ""))[2:]
    except ValueError:
        return None
    found = next((argv[i] for i, placeholder, _ in own_paths(argv) if placeholder == "DIR"),
                 None)
    return None if found in (None, "DIR") else os.path.join(vp.ROOT, found)


def read_table(path):
    doc = read_json(path, "table (tools/tb compiled-table -o OUT.json writes one)")
    if not (isinstance(doc, dict) and doc.get("tool") == TOOL
            and isinstance(doc.get("context"), dict) and isinstance(doc.get("results"), list)
            and all(isinstance(r, dict) and isinstance(r.get("runs"), dict)
                    and isinstance(r.get("model"), str) and isinstance(r.get("batch_size"), int)
                    for r in doc["results"])):
        raise InputError(f"{path}: not a table tools/tb compiled-table wrote")
    return doc


def render(args, argv):
    """--render: the earlier run's document with its C++ runs as measured and
    each instance's package fields (Python times, statuses) re-read from DIR's
    manifests as they are now, the figures and the summary computed again, the
    render recorded beside the measuring command; InputError on bad input."""
    doc = read_table(args.render)
    context = doc["context"]
    directory = args.directory or recorded_directory(context)
    if not directory:
        raise InputError(f"{args.render} does not say which DIR it measured: pass it "
                         f"(tools/tb compiled-table DIR --render {args.render})")
    index = read_index(directory)
    causes = read_causes(directory)
    grouped = index_groups(index)
    for r in doc["results"]:
        path = r.get("path") or f"{r['model']}/batch_size_{r['batch_size']}"
        r.pop("manifest_problem", None)
        r.update(package_fields(directory, index, path,
                                grouped.get((r["model"], r["batch_size"]), [])))
        r.setdefault("domain", "?")
        figures(r)
    for key in ("python_times_made_with", "python_times_date"):
        context.pop(key, None)
    context.update(python_times(index))
    context["rendered"] = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                           "command": published_command(argv),
                           "directory": os.path.abspath(directory)}
    doc["summary"] = summary(doc["results"], causes)
    return doc


def report(doc):
    """The geometric means and the slow-downs, on stderr."""
    overall = doc["summary"]["geomeans"]["all"]["speedups"]
    print(f"{TOOL}: geomean speed-up over C++ eager: " + ", ".join(
        f"{NAMES[k]} {geomean_cell(overall[k])}" for k, _, _ in SPEEDUPS), file=sys.stderr)
    for d in doc["summary"]["slowdowns"]:
        print(f"{TOOL}: slower: {d['instance']} {NAMES[d['comparison']]} "
              f"{d['speedup']:.2f}×", file=sys.stderr)


def write_outputs(args, doc):
    if args.output:
        files.write_json(args.output, doc, indent=1)
    if args.markdown:
        files.write_text(args.markdown, markdown(doc))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.render is not None:
        try:
            doc = render(args, argv)
        except InputError as e:
            print(f"{TOOL}: {e}", file=sys.stderr)
            return 2
        args.output = args.output or args.render
        write_outputs(args, doc)
        print(f"{TOOL}: {args.render} re-rendered ({len(doc['results'])} instance(s), "
              f"{doc['context'].get('rounds_done', '?')} round(s) as measured), the Python "
              f"figures from {doc['context']['rendered']['directory']}'s manifests",
              file=sys.stderr)
        report(doc)
        return 0
    try:
        index, records, causes = prepare(args)
    except InputError as e:
        print(f"{TOOL}: {e}", file=sys.stderr)
        return 2
    for r in records:
        for backend in COMPILED:
            why = not_run_reason(r, backend, args.threads)
            if why:
                r["runs"][backend]["not_run"] = why
    temporary = None
    runs_dir = args.runs
    if not runs_dir:
        if args.output:
            stem = args.output[:-5] if args.output.endswith(".json") else args.output
            runs_dir = stem + ".runs"
        else:
            temporary = tempfile.TemporaryDirectory(prefix="compiled-table-")
            runs_dir = temporary.name
    os.makedirs(runs_dir, exist_ok=True)
    cpu, _ = env.machine()
    print(f"{TOOL}: {len(records)} instance(s), {args.rounds} round(s) of "
          f"{', '.join(BACKENDS)}, {args.threads} thread(s); {cpu}; runs in {runs_dir}",
          file=sys.stderr)
    calls, doc = [], None
    try:
        for i in range(args.rounds):
            for backend in order_of(i):
                chosen = [r for r in records if "not_run" not in r["runs"][backend]]
                if not chosen:
                    continue
                call = run_call(args, backend, chosen, i, runs_dir)
                calls.append(call)
                failed = sum(1 for r in chosen if not r["runs"][backend]["rounds"][-1]["ms"])
                print(f"{TOOL}: round {i + 1}/{args.rounds} {backend}: {len(chosen)} "
                      f"instance(s), {failed} without a time, {call['seconds']:.1f} s"
                      + (f"; {call['error']}" if "error" in call else ""), file=sys.stderr)
            # Rewritten after every round: a run stopped early keeps its rounds.
            doc = document(args, argv, index, records, causes, calls, i + 1)
            write_outputs(args, doc)
    finally:
        if temporary:
            temporary.cleanup()
    report(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
