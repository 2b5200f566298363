#!/usr/bin/env python3
"""Two LibTorch builds, the same benchmarks: what moved, and which operator
moved it.

    tools/tb abtest --torch A --torch B [options] [-- torchbench flags...]

A and B (A is the base, B the candidate) are each one of:
  2.15.0           a torch release: a virtualenv of its own under --work with
                   `pip install torch==2.15.0` and the torchvision made for it
                   (this machine's pip cap on torch is lifted for that
                   virtualenv alone, never for the project's .venv), and the
                   program built against its wheel;
                   the release of the project's .venv uses the project's own
                   build folder (build/);
  DIR              a LibTorch: a folder holding TorchConfig.cmake (Torch_DIR)
                   or a LibTorch prefix;
  program:PATH     a torchbench program built already (micro-benchmarks use
                   the Python of the torch wheel it links, when it links one).
Each LibTorch gets its own build folder under --work (only the torchbench
target). A build that fails says which API is missing, in one line.

Then, per intra-op thread count (--threads 1,2):
  1. runs: --rounds rounds, each a fresh process per side over the whole
     selection, interleaved A B | B A | A B ..., each process pinned to the
     first cores (as many as threads) with OMP/MKL_NUM_THREADS, the same seed,
     --repetitions repetitions per benchmark;
  2. the gate: tools/gate.py --base A's runs --cand B's runs, comparing on
     libtorch_version (the point of the comparison, not a mismatch);
  3. attribution: every benchmark the gate flags (REGRESSION or IMPROVEMENT)
     and the --top others with the largest |change| are profiled on both
     sides (Kineto, --profile-steps steps, input shapes recorded), interleaved
     A B B A, and diffed per ATen operator: self host time per step and calls
     per step, A against B, sorted by the share of the step's change each
     operator explains (its change over the change of the median step the
     gate measured); operators only one side dispatches; per-step counts of
     dispatched operators (aten_ops_per_step) and of operators that would make
     a GPU host wait (would_sync_per_step);
  4. confirmation: for each benchmark's top operators (up to --microbench,
     when they explain at least 20 % of the change), a micro-benchmark of that
     operator alone at the call that took most of its time in the model
     (input shapes, dtypes and scalar arguments from A's trace), run in each
     build's own Python (the same libtorch_cpu), interleaved, pinned alike:
     "aten::X at S: a us -> b us". It confirms when it moves the same way by
     more than its own rounds' spread and 5 %.

Writes to -o DIR: report.md (context of both builds, the gate's table and
noise, attribution and micro-benchmarks per benchmark), abtest.json (the
same, for tools/tb report), report.html (tools/tb report's page: "B against
A" of the first runs and a "LibTorch A/B" section), the runs (runs/t<N>/{A,B}-r<k>.json: `tools/tb
report runs/t1/A-r1.json runs/t1/B-r1.json` draws the comparison view), the
profiles and the gate's own outputs.

Selection: the torchbench flags after `--` (--benchmark_filter,
--torchbench_batch_sizes, --torchbench_device); none of those on a CPU:
tools/cpu_default_set.txt at batch 1, as `tools/tb bench` runs it (other
flags after `--`, --benchmark_min_time=0.1 say, apply to it). Both builds must list the same
benchmarks (--common-only: the ones both list). --cand-args passes flags to
B's runs only (an A/A run with a test-only slowdown:
--cand-args=--torchbench_testonly_slow_op=aten::mm:0.2).

Exit status, as the gate's: 0 pass, 1 a regression (in any thread count), 2
bad input: a release pip cannot install, a build that fails, a program that
cannot list its benchmarks, selections that differ, a gate refusal.
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys

from tbench import env, errors, program, results
from tbench.files import write_json, write_text
from tbench.errors import InputError

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
RELEASE_RE = re.compile(r"^\d+\.\d+(\.\d+)?([a-z0-9.+]*)?$")
# An operator is micro-benchmarked when it explains at least this share of
# its benchmark's change.
MICROBENCH_MIN_SHARE = 0.2
CONFIRM_TOLERANCE = 0.05


def log(msg):
    """Progress, told apart from the one-line errors ("abtest: ...")."""
    print(f"[abtest] {msg}", file=sys.stderr, flush=True)


# --- the two sides ---------------------------------------------------------------

class Side:
    def __init__(self, label, spec):
        self.label = label      # "A" or "B"
        self.spec = spec        # as given
        self.version = None     # LibTorch version, once known
        self.program = None     # the torchbench executable
        self.python = None      # a Python whose torch is this LibTorch
        self.prefix = None      # CMake prefix of the LibTorch
        self.build_dir = None


def project_torch():
    """(version, python) of the project's .venv, or (None, None)."""
    py = os.path.join(ROOT, ".venv", "bin", "python")
    if not os.path.exists(py):
        return None, None
    try:
        out = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, timeout=300).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    return (out.split("+")[0] or None), py


def torch_prefix(python):
    out = subprocess.run([python, "-c", "import torch, sys; "
                          "print(torch.utils.cmake_prefix_path); print(torch.__version__)"],
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise InputError(f"{python}: cannot import torch: {errors.last_line(out.stderr, '?')}")
    prefix, version = out.stdout.split()[:2]
    return prefix, version


def pip_command(venv, pip_index, *packages):
    cmd = [os.path.join(venv, "bin", "pip"), "install", "--disable-pip-version-check", *packages]
    if pip_index:
        cmd += ["--no-index", "--find-links", pip_index]
    pip_env = dict(os.environ)
    # The machine's pip configuration may cap torch (a constraints file): an
    # A/B virtualenv needs the release it is asked for, so this pip alone
    # reads an empty constraints file. The project's .venv keeps the cap.
    pip_env["PIP_CONSTRAINT"] = os.devnull
    return cmd, pip_env


def add_torchvision(version, venv, pip_index):
    """The torchvision release made for this torch (the detection models'
    compiled operators), when pip has one; otherwise those benchmarks fail on
    this side, each with the reason, and the gate lists them MISSING."""
    py = os.path.join(venv, "bin", "python")
    if subprocess.run([py, "-c", "import importlib.util, sys; "
                       "sys.exit(importlib.util.find_spec('torchvision') is None)"]).returncode == 0:
        return
    cmd, pip_env = pip_command(venv, pip_index, f"torch=={version}", "torchvision")
    log(f"torch {version}: {' '.join(cmd[1:])}")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=pip_env)
    if proc.returncode != 0:
        log(f"torch {version}: no torchvision for it "
            f"({errors.last_line(proc.stderr, '?')}): the detection models will "
            "fail on this side")


def install_release(version, venv, pip_index, torchvision=True):
    """A virtualenv with torch==version (and its torchvision). Returns its
    python."""
    py = os.path.join(venv, "bin", "python")
    if os.path.exists(py):
        probe = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True, timeout=300)
        if probe.returncode == 0 and probe.stdout.strip().split("+")[0] == version.split("+")[0]:
            if torchvision:
                add_torchvision(version, venv, pip_index)
            return py
    log(f"torch {version}: creating {venv}")
    subprocess.run([sys.executable if sys.executable else "python3", "-m", "venv", venv],
                   check=True, capture_output=True)
    cmd, pip_env = pip_command(venv, pip_index, f"torch=={version}")
    log(f"torch {version}: {' '.join(cmd[1:])}")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=pip_env)
    if proc.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        lines = [l for l in proc.stderr.splitlines() if l.startswith("ERROR")] or \
            proc.stderr.strip().splitlines() or ["?"]
        why = lines[-1]
        if "No matching distribution" in proc.stderr or "Could not find a version" in proc.stderr:
            why = f"no such release on the package index ({lines[0]})"
        raise InputError(f"torch {version}: pip cannot install it: {why}")
    if torchvision:
        add_torchvision(version, venv, pip_index)
    return py


def first_build_error(log_text):
    """The first compiler or linker error of a build log, one line, with
    its file and line (the API a release lacks)."""
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("CMake Error"):
            # CMake's message follows on indented lines.
            message = []
            for more in lines[i + 1:]:
                if more.strip() and not more.startswith(" "):
                    break
                if more.strip():
                    message.append(more.strip())
            return (line.replace(ROOT + "/", "").rstrip(":") + ": " + " ".join(message))[:400]
        if re.search(r"\berror:|undefined reference", line):
            return line.strip().replace(ROOT + "/", "")[:400]
    tail = [l for l in log_text.strip().splitlines() if l.strip()]
    return tail[-1][:400] if tail else "no output"


def build_program(side, work, jobs):
    """Configures and builds the torchbench target against side.prefix."""
    key = hashlib.sha1(side.prefix.encode()).hexdigest()[:8]
    side.build_dir = os.path.join(work, f"build-{side.version}-{key}")
    program = os.path.join(side.build_dir, "benchmarks", "torchbench")
    os.makedirs(side.build_dir, exist_ok=True)
    log_path = os.path.join(side.build_dir, "abtest-build.log")
    steps = []
    if not os.path.exists(os.path.join(side.build_dir, "build.ninja")):
        steps.append(["cmake", "-S", ROOT, "-B", side.build_dir, "-G", "Ninja",
                      "-DCMAKE_BUILD_TYPE=Release", "-DTORCHBENCH_ENABLE_TESTING=OFF",
                      f"-DCMAKE_PREFIX_PATH={side.prefix}"])
    steps.append(["cmake", "--build", side.build_dir, "--target", "torchbench",
                  "-j", str(jobs), "--", "-k", "0"])
    for cmd in steps:
        log(f"{side.label}: {' '.join(cmd)}  (log: {log_path})")
        with open(log_path, "w") as logf:  # as it goes: tail -f shows the build
            proc = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            with open(log_path, errors="replace") as f:
                text = f.read()
            if cmd[1] == "-S":  # a failed configuration is not kept; its log is
                shutil.rmtree(side.build_dir, ignore_errors=True)
                log_path = os.path.join(work, f"build-{side.version}-{key}.configure.log")
                with open(log_path, "w") as f:
                    f.write(text)
            raise InputError(f"LibTorch {side.version} ({side.spec}): the build failed: "
                             f"{first_build_error(text)} (log: {log_path})")
    side.program = program


def python_for_program(program):
    """The Python of the virtualenv whose torch wheel the program links (its
    run path names .../site-packages/torch/lib), or None."""
    try:
        out = subprocess.run(["readelf", "-d", program], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for m in re.finditer(r"R(?:UN)?PATH.*\[(.*)\]", out):
        for path in m.group(1).split(":"):
            if path.rstrip("/").endswith("site-packages/torch/lib"):
                py = os.path.normpath(os.path.join(path, *[".."] * 5, "bin", "python"))
                if os.path.exists(py):
                    return py
    return None


def resolve(side, work, pip_index, jobs, torchvision=True):
    spec = side.spec
    if spec.startswith("program:"):
        path = os.path.abspath(spec[len("program:"):])
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise InputError(f"--torch {spec}: no such program")
        side.program = path
        side.python = python_for_program(path)
        return
    if os.path.isdir(spec):
        config = None
        for sub in ("", "share/cmake/Torch", "lib/python3/site-packages/torch/share/cmake/Torch"):
            if os.path.exists(os.path.join(spec, sub, "TorchConfig.cmake")):
                config = os.path.join(spec, sub)
        if config is None:
            raise InputError(f"--torch {spec}: no TorchConfig.cmake there "
                             "(give Torch_DIR or a LibTorch prefix)")
        side.prefix = os.path.abspath(config)
        version_file = os.path.join(config, "TorchConfigVersion.cmake")
        m = re.search(r'PACKAGE_VERSION "([^"]+)"', open(version_file).read()) \
            if os.path.exists(version_file) else None
        side.version = m.group(1) if m else "unknown"
        build_program(side, work, jobs)
        side.python = python_for_program(side.program)
        return
    if not RELEASE_RE.match(spec):
        raise InputError(f"--torch {spec}: neither a release (2.15.0), a LibTorch folder "
                         "nor program:PATH")
    pinned_version, pinned_python = project_torch()
    if pinned_version == spec.split("+")[0]:
        side.python = pinned_python
        side.prefix, side.version = torch_prefix(pinned_python)
        side.version = side.version.split("+")[0]
        side.build_dir = os.path.join(ROOT, "build")
        side.program = os.path.join(side.build_dir, "benchmarks", "torchbench")
        if not os.path.exists(os.path.join(side.build_dir, "build.ninja")):
            subprocess.run(["cmake", "--preset", "default"], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
        log(f"{side.label}: torch {spec} is the project's own: building {side.build_dir}")
        proc = subprocess.run(["cmake", "--build", side.build_dir, "--target", "torchbench",
                               "-j", str(jobs)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise InputError(f"LibTorch {spec}: the build failed: "
                             f"{first_build_error(proc.stdout)}")
        return
    side.python = install_release(spec, os.path.join(work, f"venv-{spec}"), pip_index,
                                  torchvision)
    side.prefix, version = torch_prefix(side.python)
    side.version = version.split("+")[0]
    build_program(side, work, jobs)


# --- running ---------------------------------------------------------------------

# Flags that select benchmarks: without any, the default selection applies
# (other flags after `--`, --benchmark_min_time say, are added to it).
SELECTION_FLAGS = ("--benchmark_filter", "--torchbench_batch_sizes", "--torchbench_device")


def default_selection(program):
    """The CPU default set at batch 1 on a machine without a GPU, as tools/tb
    bench picks it; nothing (each model's defaults on CUDA) otherwise."""
    probe = subprocess.run([program, "--torchbench_device=cuda", "--benchmark_list_tests"],
                           capture_output=True, text=True)
    if probe.returncode == 0:
        return []
    names = [l.strip() for l in open(os.path.join(TOOLS, "cpu_default_set.txt"))
             if l.strip() and not l.startswith("#")]
    return ["--torchbench_device=cpu", "--torchbench_batch_sizes=1", program.filter_flag(names)]


def list_benchmarks(side, flags):
    proc = subprocess.run([side.program, *flags, "--benchmark_list_tests"],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise InputError(f"{side.label} ({side.program}) cannot list the selection: "
                         f"{errors.last_line(proc.stderr, '?')}")
    return [l.strip() for l in proc.stdout.splitlines() if l.count("/") == 2]


def pinned(threads):
    """Each side's processes on the same first cores, as many as threads."""
    return env.pinned(env.first_cores(threads))


def run_side(side, flags, extra, threads, out, timeout):
    """One process of one side over the selection; returns the JSON path or
    raises InputError when it wrote none."""
    cmd = [side.program, *flags, *extra, f"--benchmark_out={out}",
           "--benchmark_out_format=json", "--torchbench_fail_on_error=false"]
    log(f"{side.label} t{threads}: {' '.join(shlex.quote(c) for c in cmd[1:])[:160]}")
    try:
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, env=env.thread_env(threads), preexec_fn=pinned(threads),
                              timeout=timeout)
        err = proc.stderr
    except subprocess.TimeoutExpired:
        err = f"timed out after {timeout} s"
    if not os.path.exists(out):
        raise InputError(f"{side.label} ({side.program}) wrote no results: "
                         f"{errors.last_line(err, '?')}")
    return out


def run_rounds(sides, flags, cand_args, threads, rounds, outdir, timeout):
    files = {"A": [], "B": []}
    for r in range(1, rounds + 1):
        order = sides if r % 2 == 1 else sides[::-1]
        for side in order:
            out = os.path.join(outdir, f"{side.label}-r{r}.json")
            extra = cand_args if side.label == "B" else []
            files[side.label].append(run_side(side, flags, extra, threads, out, timeout))
    return files


def run_gate(files, outdir, gate_args):
    gate_json = os.path.join(outdir, "gate.json")
    cmd = [sys.executable, os.path.join(TOOLS, "gate.py"), "--base", *files["A"],
           "--cand", *files["B"], "--compare-key", "libtorch_version",
           "--json", gate_json,
           "--markdown", os.path.join(outdir, "gate.md"), "-q", *gate_args]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode == 2:
        raise InputError("the gate refused the runs: " +
                         (proc.stderr.strip().splitlines() or ["?"])[0].removeprefix("gate: "))
    try:
        with open(gate_json, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"the gate's {gate_json}: not read ({errors.one_line(e)})") from None
    doc["exit"] = proc.returncode
    doc["stderr"] = [l for l in proc.stderr.splitlines() if "warning" in l]
    return doc


# --- attribution -----------------------------------------------------------------

def profile_side(side, names, flags, extra, threads, steps, trace_dir, timeout):
    keep = [f for f in flags if not f.startswith("--benchmark_filter")]
    out = os.path.join(trace_dir, "run.json")
    cmd = [side.program, *keep, *extra, program.filter_flag(names),
           f"--torchbench_trace_dir={trace_dir}", f"--torchbench_profile_steps={steps}",
           "--torchbench_profile_shapes", "--benchmark_repetitions=1",
           f"--benchmark_out={out}", "--benchmark_out_format=json",
           "--torchbench_fail_on_error=false"]
    log(f"{side.label} t{threads}: profiling {len(names)} benchmark(s)")
    try:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=env.thread_env(threads), preexec_fn=pinned(threads), timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"{side.label}: profiling timed out after {timeout} s")


safe_file_name = results.safe_name


def read_profile(trace_dirs, name):
    """The per-step op table of `name`, averaged over the profile passes
    (trace_dirs): {"ops": {op: {"self_us", "calls"}}, "counters": {...}}."""
    tables = []
    for d in trace_dirs:
        path = os.path.join(d, safe_file_name(name) + ".profile.json")
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    table = json.load(f)
            except (OSError, ValueError) as e:  # that pass only: the others still count
                log(f"profile skipped: {path}: not read ({errors.one_line(e)})")
                continue
            if isinstance(table, dict):
                tables.append(table)
    if not tables:
        return None
    ops, counters = {}, {}
    for t in tables:
        for row in t.get("top_ops_host", []):
            o = ops.setdefault(row["name"], {"self_us": 0.0, "calls": 0.0})
            o["self_us"] += row.get("self_host_us", 0.0) / len(tables)
            o["calls"] += row.get("calls", 0.0) / len(tables)
        for k, v in t.get("counters", {}).items():
            counters[k] = counters.get(k, 0.0) + v / len(tables)
    return {"ops": ops, "counters": counters}


def alone_times(trace_dirs, name):
    """The step times (seconds) the profiling processes measured before their
    profiled steps: the benchmark alone in a fresh process."""
    out = []
    for d in trace_dirs:
        try:
            with open(os.path.join(d, "run.json")) as f:
                rows = json.load(f).get("benchmarks", [])
        except (OSError, json.JSONDecodeError):
            continue
        for r in rows:
            if r.get("run_name", r.get("name")) == name and r.get("run_type") == "iteration" \
                    and not r.get("error_occurred") and isinstance(r.get("real_time"), (int, float)):
                out.append(results.real_time(r, "s"))
    return out


def op_diff(a, b, step_change_us, limit=12):
    """Per operator, A against B: self host us per step and calls per step,
    each op's change and the share of the step's change it explains, sorted
    by |change|; plus the ops only one side dispatches and the per-step
    dispatch counters that changed."""
    rows = []
    for op in sorted(set(a["ops"]) | set(b["ops"])):
        oa, ob = a["ops"].get(op), b["ops"].get(op)
        sa = oa["self_us"] if oa else 0.0
        sb = ob["self_us"] if ob else 0.0
        rows.append({
            "op": op, "a_us": sa, "b_us": sb, "delta_us": sb - sa,
            "a_calls": oa["calls"] if oa else 0.0, "b_calls": ob["calls"] if ob else 0.0,
            "share": (sb - sa) / step_change_us if step_change_us else None,
            "status": "new in B" if not oa else "gone in B" if not ob else ""})
    rows.sort(key=lambda r: -abs(r["delta_us"]))
    total_delta = sum(r["delta_us"] for r in rows)
    counters = {}
    for key in ("aten_ops_per_step", "would_sync_per_step"):
        va, vb = a["counters"].get(key), b["counters"].get(key)
        if va is not None and vb is not None and abs(va - vb) > 1e-9:
            counters[key] = {"a": va, "b": vb}
    return {"ops": rows[:limit],
            "appeared": [r["op"] for r in rows if r["status"] == "new in B"],
            "disappeared": [r["op"] for r in rows if r["status"] == "gone in B"],
            "calls_changed": [r["op"] for r in rows if abs(r["a_calls"] - r["b_calls"]) > 1e-9
                              and not r["status"]],
            "explained_share": total_delta / step_change_us if step_change_us else None,
            "counters": counters}


def op_calls_from_trace(trace_path, op):
    """The call signatures of `op` inside the profiled steps of a Chrome
    trace, by total duration: [{"dims", "types", "concrete", "us", "calls"}]."""
    try:
        with open(trace_path) as f:
            events = json.load(f).get("traceEvents", [])
    except (OSError, json.JSONDecodeError):
        return []
    steps = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events
             if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    sigs = {}
    for e in events:
        if e.get("ph") != "X" or e.get("name") != op or "Input Dims" not in e.get("args", {}):
            continue
        if steps and not any(s <= e["ts"] <= t for s, t in steps):
            continue
        args = e["args"]
        key = json.dumps([args.get("Input Dims"), args.get("Input Strides"),
                          args.get("Input type"), args.get("Concrete Inputs")])
        s = sigs.setdefault(key, {"dims": args.get("Input Dims"),
                                  "strides": args.get("Input Strides"),
                                  "types": args.get("Input type"),
                                  "concrete": args.get("Concrete Inputs"),
                                  "us": 0.0, "calls": 0})
        s["us"] += e.get("dur", 0)
        s["calls"] += 1
    return sorted(sigs.values(), key=lambda s: -s["us"])


def signature_text(sig):
    parts = []
    types, concrete = sig.get("types") or [], sig.get("concrete") or []
    for i, dims in enumerate(sig.get("dims") or []):
        t = types[i] if i < len(types) else ""
        c = concrete[i] if i < len(concrete) else ""
        if dims:
            parts.append(f"{t}{list(dims)}".replace(" ", ""))
        elif c not in ("", None):
            parts.append(str(c))
        elif t:
            parts.append(t)
    return "(" + ", ".join(parts) + ")"


def microbench(side, sig, op, threads, iters, timeout=300):
    """Median microseconds per call of `op` at `sig`, in side's Python."""
    if not side.python:
        return {"error": "no Python for this build (program:PATH)"}
    spec = json.dumps({"op": op, "sig": sig, "threads": threads, "iters": iters})
    try:
        proc = subprocess.run([side.python, os.path.join(TOOLS, "abtest_microbench.py"), spec],
                              capture_output=True, text=True, env=env.thread_env(threads),
                              preexec_fn=pinned(threads), timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if proc.returncode != 0:
        return {"error": errors.last_line(proc.stderr, "?")[:300]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def confirm(sides, sig, op, threads, rounds, iters):
    """Interleaved micro-benchmark rounds (A B | B A ...); the medians and
    whether they confirm the model's direction."""
    per = {"A": [], "B": []}
    for r in range(rounds):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            res = microbench(side, sig, op, threads, iters)
            if "error" in res:
                return {"error": f"{side.label}: {res['error']}"}
            per[side.label].append(res["us"])
    a, b = statistics.median(per["A"]), statistics.median(per["B"])
    ratios = [y / x for x, y in zip(per["A"], per["B"])]
    return {"a_us": a, "b_us": b, "ratio": b / a, "rounds": rounds,
            "ratio_low": min(ratios), "ratio_high": max(ratios)}


def judge(micro, model_direction):
    if "error" in micro:
        return "not run"
    spread = max(abs(micro["ratio_high"] - micro["ratio"]), abs(micro["ratio"] - micro["ratio_low"]))
    moved = abs(micro["ratio"] - 1) > max(spread, CONFIRM_TOLERANCE)
    if not moved:
        return "refutes (the operator alone did not move)"
    same = (micro["ratio"] > 1) == (model_direction > 0)
    return "confirms" if same else "refutes (it moved the other way)"


# --- report ----------------------------------------------------------------------

def fmt_us(v):
    return "-" if v is None else f"{v:,.1f}"


def fmt_pct(v):
    return "-" if v is None else f"{v * 100:+.0f} %"


def markdown(doc):
    out = ["# LibTorch A/B: " + " against ".join(
        f"{s['label']} {s['version'] or s['spec']}" for s in doc["sides"]), ""]
    out.append(f"Command: `{doc['command']}`  ")
    out.append(f"Date: {doc['date']}; machine: {doc['machine']['cpu']} "
               f"({doc['machine']['vector']}), {doc['machine']['cores']} cores  ")
    for s in doc["sides"]:
        ctx = s.get("context", {})
        out.append(f"- **{s['label']}**: `{s['spec']}` — LibTorch {ctx.get('libtorch_version', '?')}, "
                   f"CPU capability {ctx.get('cpu_capability', '?')}, "
                   f"{ctx.get('intra_op_threads', '?')} intra-op thread(s) in its first run, "
                   f"program `{s['program']}`")
    out += ["", f"Rounds {doc['settings']['rounds']} per side (A B | B A ...), "
            f"{doc['settings']['repetitions']} repetitions each, threads "
            f"{', '.join(map(str, doc['settings']['threads']))}; selection: "
            f"{len(doc['benchmarks'])} benchmarks"
            + (f" (B also ran `{' '.join(doc['settings']['cand_args'])}`)"
               if doc['settings']['cand_args'] else "") + ".", ""]
    for t in doc["threads"]:
        g = t["gate"]
        rows = g["benchmarks"]
        counts = {}
        for r in rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        out += [f"## {t['threads']} intra-op thread(s)", "",
                "Gate: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items()))
                + f" (floor {g.get('floor', 0):.0%}; exit {g['exit']}).", ""]
        det = [max(r["threshold"], r["mde"]) for r in rows if r.get("mde") is not None]
        if det:
            det.sort()
            out.append(f"Smallest change these runs could show, per benchmark: median "
                       f"{statistics.median(det):.1%}, best {det[0]:.1%}, worst {det[-1]:.1%}.")
            out.append("")
        out += ["| benchmark | A ms | B ms | change | 95 % CI | noise | detectable | verdict |",
                "|---|---:|---:|---:|---|---:|---:|---|"]
        for r in sorted(rows, key=lambda r: -abs(r.get("effect") or 0)):
            ci = r.get("ci") or [None, None]
            detectable = max(r["threshold"], r["mde"]) if r.get("mde") is not None else None
            noise = f"{r['noise'] * 100:.1f} %" if r.get("noise") is not None else "-"
            out.append(f"| {r['name']} | {ms(r.get('base'))} | {ms(r.get('cand'))} "
                       f"| {fmt_pct(r.get('effect'))} | "
                       f"{fmt_pct(ci[0])} .. {fmt_pct(ci[1])} | {noise} | "
                       f"{'-' if detectable is None else f'{detectable * 100:.1f} %'} | "
                       f"{r['verdict']}{': ' + r['reason'] if r.get('reason') else ''} |")
        counters = [c for c in g.get("counters", []) if c["verdict"] != "UNCHANGED"]
        if counters:
            out += ["", "Counters that changed:", ""]
            for c in counters:
                out.append(f"- {c['name']} {c.get('counter')}: {c.get('base')} -> "
                           f"{c.get('cand')} ({c['verdict']})")
        for a in t["attribution"]:
            out += ["", f"### {a['name']}: {fmt_pct(a['effect'])} ({a['why']})", ""]
            if "error" in a:
                out.append(f"Not attributed: {a['error']}")
                continue
            d = a["diff"]
            out.append(f"Step change {fmt_us(a['step_change_us'])} us; the operators' self "
                       f"times explain {fmt_pct(d['explained_share'])} of it.")
            if a.get("alone"):
                al = a["alone"]
                out.append(f"Alone in a fresh process (the profiling runs, "
                           f"{al['processes'][0]} per side): {al['a_s'] * 1e3:.3f} ms -> "
                           f"{al['b_s'] * 1e3:.3f} ms ({fmt_pct(al['ratio'] - 1)}).")
                # Alone, it must move the same way by at least half as much.
                same_way = (al["ratio"] - 1) * (1 if a.get("effect", 0) > 0 else -1)
                if a.get("effect") and same_way < abs(a["effect"]) / 2:
                    out.append("**Not reproduced alone**: the change depends on what ran before "
                               "it in the process, not on its own operators.")
            out += ["", "| operator | A us/step | B us/step | change us | share | A calls | B calls |",
                    "|---|---:|---:|---:|---:|---:|---:|"]
            for r in d["ops"]:
                out.append(f"| {r['op']}{' (' + r['status'] + ')' if r['status'] else ''} "
                           f"| {fmt_us(r['a_us'])} | {fmt_us(r['b_us'])} | {r['delta_us']:+,.1f} "
                           f"| {fmt_pct(r['share'])} | {r['a_calls']:g} | {r['b_calls']:g} |")
            for key, label in (("appeared", "only in B"), ("disappeared", "only in A"),
                               ("calls_changed", "calls per step changed")):
                if d[key]:
                    out.append(f"\n{label[0].upper() + label[1:]}: {', '.join(d[key][:12])}"
                               + (" ..." if len(d[key]) > 12 else ""))
            for key, v in d["counters"].items():
                out.append(f"\n{key}: {v['a']:g} -> {v['b']:g}")
            for m in a.get("microbench", []):
                if "error" in m:
                    out.append(f"\nMicro-benchmark {m['op']}: not run ({m['error']})")
                else:
                    out.append(f"\nMicro-benchmark: **{m['op']}{m['signature']}**, "
                               f"{t['threads']} thread(s): {m['a_us']:.1f} us -> "
                               f"{m['b_us']:.1f} us ({m['ratio']:.2f}x, rounds "
                               f"{m['ratio_low']:.2f}..{m['ratio_high']:.2f}): {m['verdict']}.")
                    if m["verdict"] == "confirms":
                        out.append(f"Reproduce (PYTHON: each build's; CPU capability as "
                                   f"above): `{m['reproduce']}`")
        out.append("")
    return "\n".join(out) + "\n"


def ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.3f}"


def machine():
    cpu, vector = env.machine()
    return {"cpu": cpu, "vector": vector, "cores": len(os.sched_getaffinity(0))}


# --- main ------------------------------------------------------------------------

def parse_args(argv):
    if "--" in argv:
        i = argv.index("--")
        argv, flags = argv[:i], argv[i + 1:]
    else:
        flags = []
    p = argparse.ArgumentParser(prog="tools/tb abtest", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--torch", action="append", default=[], metavar="SPEC",
                   help="twice: A (base), then B (candidate)")
    p.add_argument("--threads", default="1", help="intra-op thread counts (default 1)")
    p.add_argument("--rounds", type=int, default=2, help="processes per side (default 2)")
    p.add_argument("--repetitions", type=int, default=5,
                   help="repetitions per benchmark and process (default 5)")
    p.add_argument("--top", type=int, default=3,
                   help="also attribute the K largest changes the gate did not flag (3)")
    p.add_argument("--profile-steps", type=int, default=5)
    p.add_argument("--microbench", type=int, default=2,
                   help="operators confirmed per benchmark (default 2; 0: none)")
    p.add_argument("--cand-args", default="", help="flags for B's runs only")
    p.add_argument("--gate-args", default="", help="flags for tools/gate.py (e.g. '--floor 7')")
    p.add_argument("--common-only", action="store_true",
                   help="run the benchmarks both builds list when their lists differ")
    p.add_argument("--work", default=os.path.join(ROOT, "build-ab"),
                   help="virtualenvs and build folders (default build-ab/)")
    p.add_argument("--pip-find-links", metavar="DIR_OR_URL",
                   help="install releases from here only (no index)")
    p.add_argument("--no-torchvision", action="store_true",
                   help="a release's virtualenv gets torch alone (the detection models, which "
                        "need torchvision's operators, then fail on that side)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build jobs")
    p.add_argument("--timeout", type=int, default=7200, help="seconds per process")
    p.add_argument("-o", "--output", default="abtest-out", help="output folder")
    p.add_argument("--build-only", action="store_true",
                   help="install, build and list both sides, then stop")
    a = p.parse_args(argv)
    if len(a.torch) != 2:
        p.error("give --torch twice: --torch A --torch B")
    try:
        a.threads = [int(x) for x in a.threads.split(",")]
        assert all(t > 0 for t in a.threads)
    except (ValueError, AssertionError):
        p.error(f"--threads {a.threads}: expected counts like 1,2")
    if a.rounds < 1 or a.repetitions < 2:
        p.error("--rounds >= 1 and --repetitions >= 2")
    a.flags = flags
    a.cand_args = shlex.split(a.cand_args)
    a.gate_args = shlex.split(a.gate_args)
    return a


def read_context(path):
    try:
        with open(path) as f:
            return json.load(f).get("context", {})
    except (OSError, json.JSONDecodeError):
        return {}


def attribute(sides, row, args, flags, threads, outdir):
    name = row["name"]
    step_change_us = None
    if row.get("base") is not None and row.get("cand") is not None:
        step_change_us = (row["cand"] - row["base"]) * 1e6
    result = {"name": name, "effect": row.get("effect"), "verdict": row["verdict"],
              "step_change_us": step_change_us}
    dirs = {"A": [], "B": []}
    for k, order in enumerate((sides, sides[::-1])):
        for side in order:
            d = os.path.join(outdir, "profiles", safe_file_name(name), f"{side.label}{k + 1}")
            os.makedirs(d, exist_ok=True)
            profile_side(side, [name], flags, args.cand_args if side.label == "B" else [],
                         threads, args.profile_steps, d, args.timeout)
            dirs[side.label].append(d)
    ta, tb = alone_times(dirs["A"], name), alone_times(dirs["B"], name)
    if ta and tb:
        # Whether the change shows with the benchmark alone in a process: when
        # it does not, it came from what ran before it (the allocator's and
        # the thread pool's state), not from its own operators.
        result["alone"] = {"a_s": statistics.median(ta), "b_s": statistics.median(tb),
                           "ratio": statistics.median(tb) / statistics.median(ta),
                           "processes": [len(ta), len(tb)]}
    pa, pb = read_profile(dirs["A"], name), read_profile(dirs["B"], name)
    if not pa or not pb:
        result["error"] = f"no profile from {'A' if not pa else 'B'}"
        return result
    result["diff"] = op_diff(pa, pb, step_change_us)
    result["microbench"] = []
    if args.microbench <= 0 or not step_change_us:
        return result
    trace = os.path.join(dirs["A"][0], safe_file_name(name) + ".pt.trace.json")
    for r in result["diff"]["ops"]:
        if len(result["microbench"]) >= args.microbench:
            break
        if r["status"] or r["share"] is None or r["share"] < MICROBENCH_MIN_SHARE:
            continue
        sigs = op_calls_from_trace(trace, r["op"])
        if not sigs:
            result["microbench"].append({"op": r["op"], "error": "no call with shapes in A's trace"})
            continue
        micro = confirm(sides, sigs[0], r["op"], threads, rounds=4, iters=0)
        spec = json.dumps({"op": r["op"], "sig": {k: sigs[0][k] for k in
                                                  ("dims", "strides", "types", "concrete")},
                           "threads": threads}, separators=(",", ":"))
        micro.update(op=r["op"], signature=signature_text(sigs[0]),
                     calls_per_step=sigs[0]["calls"] / args.profile_steps,
                     reproduce=f"OMP_NUM_THREADS={threads} taskset -c 0-{threads - 1} "
                               f"PYTHON tools/abtest_microbench.py '{spec}'")
        micro["verdict"] = judge(micro, step_change_us)
        result["microbench"].append(micro)
    return result


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    os.makedirs(args.output, exist_ok=True)
    sides = [Side("A", args.torch[0]), Side("B", args.torch[1])]
    try:
        os.makedirs(args.work, exist_ok=True)
        for side in sides:
            resolve(side, args.work, args.pip_find_links, args.jobs, not args.no_torchvision)
        flags = list(args.flags)
        if not any(f.startswith(SELECTION_FLAGS) for f in flags):
            flags = default_selection(sides[0].program) + flags
        lists = [list_benchmarks(s, flags) for s in sides]
        if not lists[0] and not lists[1]:
            raise InputError("the selection matches no benchmark")
        if lists[0] != lists[1]:
            only_a = sorted(set(lists[0]) - set(lists[1]))
            only_b = sorted(set(lists[1]) - set(lists[0]))
            common = [n for n in lists[0] if n in set(lists[1])]
            if not args.common_only or not common:
                raise InputError(
                    f"the builds list different benchmarks: {len(only_a)} only in A "
                    f"({', '.join(only_a[:3])}{' ...' if len(only_a) > 3 else ''}), "
                    f"{len(only_b)} only in B ({', '.join(only_b[:3])}"
                    f"{' ...' if len(only_b) > 3 else ''}); --common-only runs the "
                    f"{len(common)} both list")
            log(f"--common-only: {len(common)} benchmarks both builds list")
            flags = [f for f in flags if not f.startswith("--benchmark_filter")] + \
                [program.filter_flag(common)]
            lists[0] = common
        if args.build_only:
            for side, names in zip(sides, lists):
                print(f"{side.label}: LibTorch {side.version or '?'}: {side.program} "
                      f"({len(names)} benchmarks selected)")
            return 0
        flags = [f for f in flags if not f.startswith("--benchmark_repetitions")] + \
            [f"--benchmark_repetitions={args.repetitions}"]
        doc = {"tool": "torchbench-abtest",
               "command": "tools/tb abtest " + " ".join(shlex.quote(a) for a in argv),
               "date": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": machine(),
               "settings": {"rounds": args.rounds, "repetitions": args.repetitions,
                            "threads": args.threads, "cand_args": args.cand_args,
                            "flags": flags, "top": args.top},
               "benchmarks": lists[0], "sides": [], "threads": []}
        code = 0
        for t in args.threads:
            outdir = os.path.join(args.output, "runs", f"t{t}")
            os.makedirs(outdir, exist_ok=True)
            files = run_rounds(sides, flags, args.cand_args, t, args.rounds, outdir,
                               args.timeout)
            gate = run_gate(files, outdir, args.gate_args)
            code = max(code, 1 if gate["exit"] == 1 else 0)
            rows = [r for r in gate["benchmarks"] if r["verdict"] != "MISSING"]
            flagged = [r for r in rows if r["verdict"] in ("REGRESSION", "IMPROVEMENT")]
            rest = sorted((r for r in rows if r not in flagged and r.get("effect") is not None),
                          key=lambda r: -abs(r["effect"]))[:args.top]
            attribution = []
            for r, why in [(r, "flagged by the gate") for r in flagged] + \
                    [(r, "largest change, not flagged") for r in rest]:
                a = attribute(sides, r, args, flags, t, os.path.join(args.output, f"t{t}"))
                a["why"] = why
                attribution.append(a)
            doc["threads"].append({"threads": t, "gate": gate, "files": files,
                                   "attribution": attribution})
            if not doc["sides"]:
                doc["sides"] = [{"label": s.label, "spec": s.spec,
                                 "version": s.version or read_context(
                                     files[s.label][0]).get("libtorch_version"),
                                 "program": s.program, "build_dir": s.build_dir,
                                 "context": read_context(files[s.label][0])} for s in sides]
    except InputError as e:
        print(f"abtest: {e}", file=sys.stderr)
        return 2
    doc["exit"] = code
    write_json(os.path.join(args.output, "abtest.json"), doc, indent=1)
    write_text(os.path.join(args.output, "report.md"), markdown(doc))
    # The HTML report: its "B against A" view of the first thread count's
    # first runs, and the A/B section of this file.
    first = doc["threads"][0]["files"] if doc["threads"] else None
    if first:
        html = os.path.join(args.output, "report.html")
        proc = subprocess.run([sys.executable, os.path.join(TOOLS, "report.py"), first["A"][0],
                               first["B"][0], os.path.join(args.output, "abtest.json"),
                               "--title", "LibTorch A/B", "-o", html],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            log("no report.html: " + errors.last_line(proc.stderr, "?"))
    flagged = sum(1 for t in doc["threads"] for a in t["attribution"]
                  if a["why"].startswith("flagged"))
    print(f"abtest: {'FAIL' if code else 'pass'}: {flagged} benchmark(s) flagged; "
          f"report {os.path.join(args.output, 'report.md')}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
