#!/usr/bin/env python3
"""The summary of tools/gpu_check.sh: C++ beside Python eager on one GPU.

    gpu_check_summary.py --context raw/context.txt --notes raw/notes.txt \\
        --cpp raw/cpp_fp32.json ... --py raw/py_fp32.json ... \\
        --plan fp32:resnet50/Train ... [--compiled raw/compiled \\
        --cpp-compiled raw/cpp_compiled.json --compiled-plan resnet50/Eval] \\
        -o summary.txt
    gpu_check_summary.py --columns      # what each column means

Reads the torchbench program's Google Benchmark JSON (run with
--torchbench_profile and --benchmark_repetitions) and tools/versus_python.py eager
--device cuda --json files; pairs them by instance and requested precision;
writes one text summary: per instance the C++ median step, the Python one,
their ratio, peak memory against torch.cuda.max_memory_allocated, kernels per
step against torch.profiler's, GPU busy/idle, syncs per step and the label;
the run's context; and a verdict per expectation (C++ time <= Python's,
memory within 5 %, kernels within 5 %); and, for the compiled instances,
the program's step on the AOTInductor package tools/compile_models.py made
(--compiled DIR: its index.json says what was compiled, or why not) beside
the same instance's eager step, their ratio, and the package's largest
errors against Python eager and the port. Standard library only.
"""
import argparse
import json
import re
import statistics
import sys

from tbench import files, results

TOLERANCE = 0.05  # memory and kernels: within 5 %

COLUMNS = [
    ("instance", "the program's benchmark name (model/mode/batch_size:N)"),
    ("req", "the precision asked for (--torchbench_precision)"),
    ("prec", "the precision that ran (the label's precision:, resolved from default)"),
    ("C++ ms", "median step of the program (Google Benchmark's _median over the repetitions, one step each; device events)"),
    ("Py ms", "median step of versus_python.py eager --device cuda (CUDA events, same warm-up and steps)"),
    ("C++/Py", "C++ ms / Py ms (expected <= 1)"),
    ("C++ MiB", "peak_mem: the caching allocator's allocated-bytes peak over the timed steps"),
    ("Py MiB", "torch.cuda.max_memory_allocated() over the timed steps (peak reset after warm-up)"),
    ("mem%", "C++ MiB / Py MiB - 1 (expected within 5 %)"),
    ("C++ kern", "kernels_per_step of --torchbench_profile"),
    ("Py kern", "CUDA kernel events per step under torch.profiler (versus_python.py eager --kernels)"),
    ("kern%", "C++ kern / Py kern - 1 (expected within 5 %)"),
    ("busy%", "gpu_busy_pct: device events' union over the step's GPU window"),
    ("peak%", "peak_share of --torchbench_flops: the step's FLOPs at the GPU's measured cuBLAS GEMM peak of each dtype, over the step"),
    ("idle%", "gpu_idle_pct: the rest of the window"),
    ("syncs", "syncs_per_step: blocking CUDA runtime calls inside the step"),
    ("label", "the result's label (precision, optimizer path, grad scaler, cuDNN flags) or its error"),
]
COMPILED_COLUMNS = [
    ("eager ms", "the same instance's C++ ms in the eager run of the same precision (above)"),
    ("AOTI ms", "median step of the program on the package (--torchbench_backend=aoti)"),
    ("AOTI/eager", "AOTI ms / eager ms"),
    ("eager MiB", "the eager run's peak_mem"),
    ("AOTI MiB", "peak_mem of the package's steps"),
    ("err Py", "compiled_error_vs_python: largest relative error of the package's first outputs "
               "against Python eager's on the GPU (the program fails the instance above 1e-4)"),
    ("err port", "compiled_error_vs_port: the same against the port's eager Forward on the "
                 "package's weights and inputs"),
    ("compile s", "export + AOTInductor compile seconds of tools/compile_models.py"),
]
NAME = re.compile(r"([^/]+)/(Train|Eval)/batch_size:(\d+)")


def load_json(path, notes):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None  # its step failed: the step's note says how
    except (OSError, json.JSONDecodeError) as e:
        notes.append(f"{path}: not read ({e.__class__.__name__}: {e})")
        return None


def cpp_instances(doc):
    """{name: figures} of one torchbench JSON: the _median aggregate's time
    and counters (else the median of the repetitions), the label, errors."""
    reps, medians, errors, labels = {}, {}, {}, {}
    for run in doc.get("benchmarks", []):
        name = run.get("run_name", run.get("name", ""))
        if run.get("error_occurred"):
            errors[name] = run.get("error_message", "error")
        elif run.get("run_type") == "aggregate":
            if run.get("aggregate_name") == "median":
                medians[name] = run
        else:
            reps.setdefault(name, []).append(run)
            labels[name] = run.get("label", "")
    out = {}
    for name in set(reps) | set(medians) | set(errors):
        if name in errors:
            out[name] = {"error": errors[name]}
            continue
        runs = reps.get(name, [])
        figures = {"label": labels.get(name, medians.get(name, {}).get("label", "")),
                   "repetitions": len(runs)}
        source = medians.get(name)
        keys = ("peak_mem", "kernels_per_step", "gpu_busy_pct", "gpu_idle_pct",
                "syncs_per_step", "peak_share", "compiled_error_vs_python",
                "compiled_error_vs_port")
        if source is not None:
            figures["ms"] = results.real_time(source)
            for key in keys:
                if key in source:
                    figures[key] = source[key]
        elif runs:
            figures["ms"] = statistics.median(
                results.real_time(r) for r in runs)
        for key in keys:
            values = [r[key] for r in runs if key in r]
            if key not in figures and values:
                figures[key] = statistics.median(values)
        out[name] = figures
    return out


def resolved_precision(label, requested):
    match = re.search(r"precision:(\S+)", label or "")
    return match.group(1) if match else requested


def fmt(value, spec="{:.2f}"):
    return "-" if value is None else spec.format(value)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def missing(cpp_value, python_value):
    sides = [side for side, value in (("C++", cpp_value), ("Python", python_value))
             if value is None]
    return f"no {' and no '.join(sides)} figure" if sides else "a zero figure"


def pct(r):
    """A ratio as a signed difference in per cent."""
    return None if r is None else (r - 1) * 100


def scaled(value, factor):
    return None if value is None else value * factor


def compiled_entries(directory, notes):
    """{(model, "Eval"): the AOTI entry} of tools/compile_models.py's
    index.json in `directory` (none when the tool wrote none)."""
    doc = load_json(f"{directory}/index.json", notes)
    out = {}
    for entry in (doc or {}).get("entries", []):
        if entry.get("backend") == "aoti":
            out[(entry.get("model"), "Eval")] = entry
    return out


def compiled_lines(args, cpp, notes):
    """The compiled section: per planned instance the program's step on the
    package beside the eager run's, or why there is none."""
    doc = load_json(args.cpp_compiled, notes) if args.cpp_compiled else None
    # The eager rows of the precision the packages ran at (fp32: the
    # program's default, the only one a package has).
    precision = (doc or {}).get("context", {}).get("precision", "fp32")
    compiled = {}
    for name, figures in (cpp_instances(doc) if doc else {}).items():
        match = NAME.fullmatch(name)
        if match:
            compiled.setdefault((match.group(1), match.group(2)), []).append((name, figures))
    made = compiled_entries(args.compiled, notes) if args.compiled else {}
    plan = [tuple(p.partition("/")[::2]) for p in args.compiled_plan]
    plan += [key for key in compiled if key not in plan]
    lines = ["", f"compiled (tools/compile_models.py --device cuda --backend aoti, then the "
             f"program's --torchbench_backend=aoti; eager: the {precision} run above):",
             f"{'instance':32s} {'eager ms':>8s} {'AOTI ms':>8s} {'AOTI/eager':>10s} "
             f"{'eager MiB':>9s} {'AOTI MiB':>8s} {'err Py':>8s} {'err port':>8s} "
             f"{'compile s':>9s}  label"]
    mib = 2 ** -20
    for model, mode in plan:
        entry = made.get((model, mode))
        seconds = None
        if entry and entry.get("status") == "ok":
            seconds = sum(entry.get(k, 0) for k in ("export_seconds", "compile_seconds"))
        rows = compiled.get((model, mode))
        if not rows:
            if entry is None:
                why = "no package and no C++ result (see the notes below)"
            elif entry.get("status") != "ok":
                why = (f"no package: aoti failed at {entry.get('phase')}: "
                       f"{entry.get('reason', '')}")
            else:
                why = (f"package made ({seconds:.1f} s), no C++ result (see the notes "
                       "below)")
            lines.append(f"{model + '/' + mode:32s} {why}")
            continue
        for name, figures in rows:
            if "error" in figures:
                lines.append(f"{name:32s} error: {figures['error']}")
                continue
            eager = dict(cpp.get((precision, model, mode), [])).get(name, {})
            c_ms, e_ms = figures.get("ms"), eager.get("ms")
            lines.append(
                f"{name:32s} {fmt(e_ms):>8s} {fmt(c_ms):>8s} "
                f"{fmt(ratio(c_ms, e_ms), '{:.3f}'):>10s} "
                f"{fmt(scaled(eager.get('peak_mem'), mib), '{:.0f}'):>9s} "
                f"{fmt(scaled(figures.get('peak_mem'), mib), '{:.0f}'):>8s} "
                f"{fmt(figures.get('compiled_error_vs_python'), '{:.1e}'):>8s} "
                f"{fmt(figures.get('compiled_error_vs_port'), '{:.1e}'):>8s} "
                f"{fmt(seconds, '{:.1f}'):>9s}  {figures.get('label', '')}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", action="store_true",
                        help="print what each column means and exit")
    parser.add_argument("--context", help="key=value lines: the run's context")
    parser.add_argument("--notes", help="lines: what each step did (failures, timeouts)")
    parser.add_argument("--cpp", nargs="*", default=[], help="torchbench JSON files")
    parser.add_argument("--py", nargs="*", default=[], help="versus_python.py eager --json files")
    parser.add_argument("--plan", nargs="*", default=[],
                        help="PRECISION:MODEL/MODE, each planned instance")
    parser.add_argument("--compiled", metavar="DIR",
                        help="tools/compile_models.py -o DIR of the compiled instances")
    parser.add_argument("--cpp-compiled", metavar="JSON",
                        help="the program's JSON on DIR's packages (--torchbench_backend=aoti)")
    parser.add_argument("--compiled-plan", nargs="*", default=[], metavar="MODEL/MODE",
                        help="each planned compiled instance")
    parser.add_argument("-o", "--output", help="write the summary here too")
    args = parser.parse_args()
    if args.columns:
        for column, meaning in COLUMNS:
            print(f"  {column:9s} {meaning}")
        print("compiled rows (one per compiled instance, beside its eager row):")
        for column, meaning in COMPILED_COLUMNS:
            print(f"  {column:10s} {meaning}")
        return 0
    lines, notes = [], []

    lines.append("torchbench-cpp GPU check (tools/gpu_check.sh)")
    lines.append("context:")
    if args.context:
        try:
            with open(args.context) as f:
                for line in f:
                    key, _, value = line.rstrip("\n").partition("=")
                    if key:
                        lines.append(f"  {key}: {value}")
        except OSError as e:
            notes.append(f"context not read: {e}")
    step_notes = []
    if args.notes:
        try:
            with open(args.notes) as f:
                step_notes = [line.rstrip("\n") for line in f if line.strip()]
        except OSError:
            pass

    # (requested precision, model, mode) -> [(name, figures)]
    cpp = {}
    for path in args.cpp:
        doc = load_json(path, notes)
        if doc is None:
            continue
        requested = doc.get("context", {}).get("precision", "?")
        for name, figures in sorted(cpp_instances(doc).items()):
            match = NAME.fullmatch(name)
            if match:
                cpp.setdefault((requested, match.group(1), match.group(2)), []).append(
                    (name, figures))
    py = {}
    for path in args.py:
        doc = load_json(path, notes)
        if doc is None:
            continue
        for record in doc.get("results", []):
            py[(record.get("precision"), record.get("benchmark"))] = record

    plan = []
    for entry in args.plan:
        requested, _, instance = entry.partition(":")
        model, _, mode = instance.partition("/")
        plan.append((requested, model, mode))
    for key in cpp:  # anything run beyond the plan is shown too
        if key not in plan:
            plan.append(key)

    header = (f"{'instance':32s} {'req':>8s} {'prec':>8s} {'C++ ms':>8s} {'Py ms':>8s} "
              f"{'C++/Py':>6s} {'C++ MiB':>8s} {'Py MiB':>8s} {'mem%':>6s} "
              f"{'C++ kern':>8s} {'Py kern':>8s} {'kern%':>6s} {'busy%':>5s} {'peak%':>5s} "
              f"{'idle%':>5s} {'syncs':>5s}  label")
    lines.append("")
    lines.append("results (C++: Google Benchmark's _median of one-step repetitions; "
                 "Python: median of as many CUDA-event-timed steps):")
    lines.append(header)
    verdicts = []
    counts = {"PASS": 0, "FAIL": 0, "n/a": 0}

    def verdict(name, what, value, ok, text):
        if value is None:
            counts["n/a"] += 1
            return f"{what} n/a ({text})"
        state = "PASS" if ok else "FAIL"
        counts[state] += 1
        return f"{what} {state} ({text})"

    for requested, model, mode in plan:
        rows = cpp.get((requested, model, mode))
        if not rows:  # no C++ result: the Python one alone, if any
            rows = [(name, {"label": "no C++ result (see the notes below)"})
                    for (precision, name) in py
                    if precision == requested and name.startswith(f"{model}/{mode}/")]
        if not rows:
            lines.append(f"{model + '/' + mode:32s} {requested:>8s} missing: no result "
                         "(see the notes below)")
            continue
        for name, figures in rows:
            record = py.get((requested, name))
            if "error" in figures:
                lines.append(f"{name:32s} {requested:>8s} error: {figures['error']}")
                continue
            c_ms, c_mem = figures.get("ms"), figures.get("peak_mem")
            c_kern = figures.get("kernels_per_step")
            p_ms = record.get("python_median_ms") if record else None
            p_mem = record.get("python_peak_mem") if record else None
            p_kern = record.get("python_kernels_per_step") if record else None
            time_ratio = ratio(c_ms, p_ms)
            mem_ratio, kern_ratio = ratio(c_mem, p_mem), ratio(c_kern, p_kern)
            mib = 2 ** -20
            label = figures.get("label", "")
            if record and "python_error" in record:
                label += f"  [python: {record['python_error']}]"
            lines.append(
                f"{name:32s} {requested:>8s} {resolved_precision(label, requested):>8s} "
                f"{fmt(c_ms):>8s} {fmt(p_ms):>8s} {fmt(time_ratio, '{:.3f}'):>6s} "
                f"{fmt(scaled(c_mem, mib), '{:.0f}'):>8s} "
                f"{fmt(scaled(p_mem, mib), '{:.0f}'):>8s} "
                f"{fmt(pct(mem_ratio), '{:+.1f}'):>6s} "
                f"{fmt(c_kern, '{:.1f}'):>8s} {fmt(p_kern, '{:.1f}'):>8s} "
                f"{fmt(pct(kern_ratio), '{:+.1f}'):>6s} "
                f"{fmt(figures.get('gpu_busy_pct'), '{:.1f}'):>5s} "
                f"{fmt(scaled(figures.get('peak_share'), 100), '{:.1f}'):>5s} "
                f"{fmt(figures.get('gpu_idle_pct'), '{:.1f}'):>5s} "
                f"{fmt(figures.get('syncs_per_step'), '{:.1f}'):>5s}  {label}")
            if record is None:
                continue  # no Python reference: no verdicts
            if "python_precision" in record and record["python_precision"] != \
                    resolved_precision(label, requested):
                notes.append(f"{name} [{requested}]: C++ ran "
                             f"{resolved_precision(label, requested)}, Python "
                             f"{record['python_precision']}")
            parts = [
                verdict(name, "time", time_ratio, time_ratio is not None and time_ratio <= 1,
                        f"C++/Python {time_ratio:.3f}" if time_ratio is not None
                        else missing(c_ms, p_ms)),
                verdict(name, "memory", mem_ratio,
                        mem_ratio is not None and abs(mem_ratio - 1) <= TOLERANCE,
                        f"{pct(mem_ratio):+.1f} %" if mem_ratio is not None
                        else missing(c_mem, p_mem)),
                verdict(name, "kernels", kern_ratio,
                        kern_ratio is not None and abs(kern_ratio - 1) <= TOLERANCE,
                        f"{pct(kern_ratio):+.1f} %" if kern_ratio is not None
                        else missing(c_kern, p_kern)),
            ]
            verdicts.append(f"  {name} [{requested}]: " + "; ".join(parts))
    if args.compiled or args.cpp_compiled or args.compiled_plan:
        lines.extend(compiled_lines(args, cpp, notes))
    lines.append("")
    lines.append("verdicts (expected: C++ time <= Python's; memory within 5 %; "
                 "kernels within 5 %):")
    lines.extend(verdicts or ["  none: no instance has both a C++ and a Python result"])
    if step_notes or notes:
        lines.append("")
        lines.append("notes:")
        lines.extend(f"  {n}" for n in step_notes + notes)
    lines.append("")
    lines.append(f"overall: {counts['PASS']} PASS, {counts['FAIL']} FAIL, "
                 f"{counts['n/a']} n/a")
    text = "\n".join(lines) + "\n"
    if args.output:
        files.write_text(args.output, text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
