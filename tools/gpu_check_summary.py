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
their ratio, peak memory against torch.cuda.max_memory_allocated (and the
reserved peaks, and NVML's device memory in use, of both sides), kernels per
step against torch.profiler's, GPU busy/idle, syncs per step and the label;
the TF32 and cuDNN flags each side read back (C++: the label; Python:
python_flags), since a ratio between two sides that ran under different
flags compares the flags; the run's context, each side's NVML and library
path; and a verdict per expectation (C++ time <= Python's, memory within
5 %, kernels within 5 %), and per instance whose flags differ or whose label
lacks them; every failure (an instance's error, Python's, its kernel count's,
a step's note) as its first line; and, for the compiled instances, the
program's step on the AOTInductor package tools/compile_models.py made
(--compiled DIR: its index.json says what was compiled, or why not) beside
the same instance's eager step, their ratio, and the package's largest
errors against Python eager and the port.

A rehearsal (gpu_check.sh on a machine without a GPU: the context's
`rehearsal=` line, every run step failed at once with its note, no result
files) gets a summary of its own: the build line and each planned instance
as not run. Exit status: 0, or 1 for a rehearsal whose context has no build
line (the build is what it rehearses). Standard library only.
"""
import argparse
import json
import os
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
    ("C++ res", "peak_mem_reserved: the caching allocator's reserved-bytes peak over the "
                "timed steps"),
    ("Py res", "python_peak_mem_reserved: torch.cuda.max_memory_reserved() over the timed steps"),
    ("C++ dev", "device_memory_used: NVML's memory used on the device right after the timed "
                "steps (CUDA context + the allocator's reserve + anything else; TorchBench's "
                "gpu_peak_mem); - without NVML"),
    ("Py dev", "python_device_memory_used: the same NVML figure in the Python process "
               "(torch.cuda.device_memory_used, else pynvml; - without either)"),
    ("C++ kern", "kernels_per_step of --torchbench_profile"),
    ("Py kern", "CUDA kernel events per step under torch.profiler (versus_python.py eager --kernels)"),
    ("kern%", "C++ kern / Py kern - 1 (expected within 5 %)"),
    ("busy%", "gpu_busy_pct: device events' union over the step's GPU window"),
    ("peak%", "peak_share of --torchbench_flops: the step's FLOPs at the GPU's measured cuBLAS GEMM peak of each dtype, over the step"),
    ("idle%", "gpu_idle_pct: the rest of the window"),
    ("syncs", "syncs_per_step: blocking CUDA runtime calls inside the step"),
    ("label", "the result's label (precision, optimizer path, grad scaler, the TF32 and cuDNN "
              "flags read back) or its error's first line"),
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
# The flags both sides read back after setting them (the Python record's
# key of each is for records older than python_flags).
FLAGS = results.CUDA_FLAGS
FLAG_TEXT = re.compile(
    r"\b(tf32_matmul|tf32_cudnn|cudnn_benchmark|cudnn_deterministic):(true|false)\b")
FIRST_LINE = 200  # characters of a failure's first line


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
        keys = ("peak_mem", "peak_mem_reserved", "device_memory_used",
                "kernels_per_step", "gpu_busy_pct", "gpu_idle_pct",
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


def compiled_lines(args, cpp, notes, failures):
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
                lines.append(f"{name:32s} error: {first_line(figures['error'])}")
                failures.append(f"C++ {name} [aoti]: {first_line(figures['error'])}")
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


def first_line(text, limit=FIRST_LINE):
    """A failure's message as one line: its first non-blank line, at most
    `limit` characters (a traceback or a build log stays in raw.tar.gz)."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    line = lines[0] if lines else "(no message)"
    return line if len(line) <= limit else line[:limit - 3] + "..."


def cpp_flags(label):
    """{flag: "true"|"false"}: the TF32 and cuDNN flags the program read
    back into a CUDA label; empty for a label without all four (a program
    older than the read-back said only the model's cuDNN settings)."""
    found = dict(FLAG_TEXT.findall(label or ""))
    return found if all(name in found for name, _ in FLAGS) else {}


def python_flags(record):
    """The Python side's flags, read back from torch.backends: its
    python_flags, else its four keys (a record older than python_flags);
    empty without either."""
    if not record:
        return {}
    if record.get("python_flags"):
        return dict(FLAG_TEXT.findall(record["python_flags"]))
    if all(key in record for _, key in FLAGS):
        return {name: str(bool(record[key])).lower() for name, key in FLAGS}
    return {}


def flags_text(flags, only=None):
    return " ".join(f"{name}:{flags[name]}" for name, _ in FLAGS
                    if name in flags and (only is None or name in only))


def row_flags(name, requested, figures, record):
    """(line, verdict or None, "differ" | "unknown" | None) of one row's
    flags in force: both sides', the ones they differ in, or a C++ label
    without them. figures: the C++ row's (None: no C++ result); record:
    the Python one (None: none)."""
    cpp_side = cpp_flags(figures.get("label")) if figures is not None else None
    py_side = python_flags(record)
    verdict, kind = None, None
    if cpp_side is None:
        cpp_text = "no result"
    elif not cpp_side:
        cpp_text = "not in the label (a program older than the read-back flags)"
        kind = "unknown"
        verdict = (f"  {name} [{requested}]: flags unknown: the C++ label lacks the read-back "
                   "flags (tf32_matmul, tf32_cudnn: a program older than them)")
    else:
        cpp_text = flags_text(cpp_side)
    py_text = flags_text(py_side) if py_side else "no result"
    if cpp_side and py_side:
        differ = [n for n, _ in FLAGS if cpp_side.get(n) != py_side.get(n)]
        if differ:
            kind = "differ"
            py_text += f" (differ: {', '.join(differ)})"
            verdict = (f"  {name} [{requested}]: flags differ: C++ "
                       f"{flags_text(cpp_side, differ)} vs Python "
                       f"{flags_text(py_side, differ)}")
        else:
            py_text = "the same"
    return f"  {name} [{requested}]: C++ {cpp_text}; Python {py_text}", verdict, kind


def shown(path):
    return repr(path) if path else "(empty)"


def sides_lines(cpp_docs, py_docs):
    """Each result file's NVML and library path where it recorded them,
    and whether the two sides ran with the same library path."""
    lines, paths = [], {"C++": [], "Python": []}
    for side, docs, nvml_key in (("C++", cpp_docs, "nvml"),
                                 ("Python", py_docs, "python_device_memory_source")):
        for path, doc in docs:
            context = doc.get("context", {})
            parts = []
            if nvml_key in context:
                nvml = context[nvml_key]  # Python's: where it read NVML, or why not
                if side == "Python" and not nvml.startswith("unavailable"):
                    nvml = f"available ({nvml})"
                parts.append(f"nvml: {nvml}")
            if "ld_library_path" in context:
                parts.append(f"ld_library_path: {shown(context['ld_library_path'])}")
                if context["ld_library_path"] not in paths[side]:
                    paths[side].append(context["ld_library_path"])
            if parts:
                lines.append(f"  {side} ({os.path.basename(path)}): {'; '.join(parts)}")
    cpp, py = paths["C++"], paths["Python"]
    if cpp and py:
        if cpp == py and len(cpp) == 1:
            lines.append(f"  library paths: equal on both sides ({shown(cpp[0])})")
        else:
            lines.append(f"  library paths differ: C++ {', '.join(map(shown, cpp))} vs "
                         f"Python {', '.join(map(shown, py))}")
    elif cpp or py:
        lines.append(f"  library paths: not compared (only the {'C++' if cpp else 'Python'} "
                     "side recorded ld_library_path)")
    return lines


def step_name(paths, requested, model):
    """The gpu_check.sh step that runs an instance, by its result files'
    names (raw/cpp_NAME.json is step cpp_NAME): the one named after the
    model (cpp_moco; cpp_maskrcnn for vision_maskrcnn, cpp_unet_amp for
    pytorch_unet), else the one named after its precision (cpp_fp32)."""
    stems = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    words = set(model.lower().split("_"))
    for stem in stems:
        if words & set(stem.lower().split("_")[1:]):
            return stem
    return next((stem for stem in stems if stem.partition("_")[2] == requested), None)


def step_note(step_notes, steps):
    """The first note (notes.txt) of the first of `steps` that has one."""
    for step in filter(None, steps):
        for note in step_notes:
            if note.startswith(f"{step}:"):
                return note
    return None


def instance_note(args, step_notes, requested, model):
    return step_note(step_notes, [step_name(args.cpp, requested, model),
                                  step_name(args.py, requested, model)])


def compiled_steps(args):
    """The compiled run's steps: tools/compile_models.py's (compile_NAME,
    NAME its output folder) and the program's on the packages."""
    steps = []
    if args.compiled:
        steps.append("compile_" + os.path.basename(os.path.normpath(args.compiled)))
    if args.cpp_compiled:
        steps.append(os.path.splitext(os.path.basename(args.cpp_compiled))[0])
    return steps


# context.txt's lines for gpu_check.sh itself (where the build finds torch,
# cmake and ninja), not about the run.
PLUMBING = ("torch_cmake_prefix", "site_packages", "python_bin")


def read_context(path, notes):
    """[(key, value)] of context.txt's key=value lines, the script's
    plumbing left out."""
    pairs = []
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("=")
                if key and key not in PLUMBING:
                    pairs.append((key, value))
    except OSError as e:
        notes.append(f"context not read: {e}")
    return pairs


def read_step_notes(path):
    try:
        with open(path) as f:
            return [line.rstrip("\n") for line in f if line.strip()]
    except OSError:
        return []


def planned(args):
    plan = []
    for entry in args.plan:
        requested, _, instance = entry.partition(":")
        model, _, mode = instance.partition("/")
        plan.append((requested, model, mode))
    return plan


TITLE = "torchbench-cpp GPU check (tools/gpu_check.sh)"


def rehearsal_summary(args, context, step_notes, notes):
    """(lines, exit status) of a rehearsal: what was built, and each
    planned instance as not run, with its step's note where it has one.
    Status 0 when the context has the build line, else 1."""
    values = dict(context)
    lines = [TITLE, "REHEARSAL (no GPU): build and configure only",
             f"  rehearsal: {values['rehearsal']}"]
    built = "build" in values
    lines.append(f"  build: {values['build']}" if built else
                 "  build: no build line in the context (the build did not finish)")
    lines.append("context:")
    lines.extend(f"  {key}: {value}" for key, value in context)
    lines += ["", "planned instances (nothing runs without a GPU):"]
    for requested, model, mode in planned(args):
        note = instance_note(args, step_notes, requested, model)
        lines.append(f"  {model + '/' + mode:32s} {requested:>8s} "
                     f"{first_line(note) if note else 'not run: needs a GPU'}")
    for instance in args.compiled_plan:
        note = step_note(step_notes, compiled_steps(args))
        lines.append(f"  {instance + ' (AOTI)':32s} {'fp32':>8s} "
                     f"{first_line(note) if note else 'not run: needs a GPU'}")
    if step_notes or notes:
        lines += ["", "notes (each as its first line):"]
        lines.extend(f"  {first_line(n)}" for n in step_notes + notes)
    lines += ["", f"overall: rehearsal {'built' if built else 'NOT built'}; nothing run "
              "(no GPU)"]
    return lines, 0 if built else 1


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
        print("flags in force (one line per instance): tf32_matmul, tf32_cudnn, "
              "cudnn_benchmark, cudnn_deterministic as each side read them back (C++: the "
              "label; Python: python_flags); a verdict where they differ or the label lacks "
              "them")
        return 0
    notes = []
    context = read_context(args.context, notes) if args.context else []
    step_notes = read_step_notes(args.notes) if args.notes else []
    if "rehearsal" in dict(context):
        lines, status = rehearsal_summary(args, context, step_notes, notes)
    else:
        lines, status = check_summary(args, context, step_notes, notes), 0
    text = "\n".join(lines) + "\n"
    if args.output:
        files.write_text(args.output, text)
    sys.stdout.write(text)
    return status


def check_summary(args, context, step_notes, notes):
    """The summary's lines of a run on a GPU."""
    lines = [TITLE, "context:"]
    lines.extend(f"  {key}: {value}" for key, value in context)

    # (requested precision, model, mode) -> [(name, figures)]
    cpp, cpp_docs, failures = {}, [], []
    for path in args.cpp:
        doc = load_json(path, notes)
        if doc is None:
            continue
        cpp_docs.append((path, doc))
        requested = doc.get("context", {}).get("precision", "?")
        for name, figures in sorted(cpp_instances(doc).items()):
            if "error" in figures:
                failures.append(f"C++ {name} [{requested}]: {first_line(figures['error'])}")
            match = NAME.fullmatch(name)
            if match:
                cpp.setdefault((requested, match.group(1), match.group(2)), []).append(
                    (name, figures))
    py, py_docs = {}, []
    for path in args.py:
        doc = load_json(path, notes)
        if doc is None:
            continue
        py_docs.append((path, doc))
        for record in doc.get("results", []):
            key = (record.get("precision"), record.get("benchmark"))
            py[key] = record
            for field, side in (("python_error", "Python"),
                                ("python_kernels_error", "Python kernels")):
                if field in record:
                    failures.append(f"{side} {key[1]} [{key[0]}]: "
                                    f"{first_line(record[field])}")
    lines.extend(sides_lines(cpp_docs, py_docs))

    plan = planned(args)
    for key in cpp:  # anything run beyond the plan is shown too
        if key not in plan:
            plan.append(key)

    header = (f"{'instance':32s} {'req':>8s} {'prec':>8s} {'C++ ms':>8s} {'Py ms':>8s} "
              f"{'C++/Py':>6s} {'C++ MiB':>8s} {'Py MiB':>8s} {'mem%':>6s} "
              f"{'C++ res':>8s} {'Py res':>8s} {'C++ dev':>8s} {'Py dev':>8s} "
              f"{'C++ kern':>8s} {'Py kern':>8s} {'kern%':>6s} {'busy%':>5s} {'peak%':>5s} "
              f"{'idle%':>5s} {'syncs':>5s}  label")
    lines.append("")
    lines.append("results (C++: Google Benchmark's _median of one-step repetitions; "
                 "Python: median of as many CUDA-event-timed steps):")
    lines.append(header)
    verdicts, flag_lines, tally = [], [], {"differ": 0, "unknown": 0}
    counts = {"PASS": 0, "FAIL": 0, "n/a": 0}

    def verdict(name, what, value, ok, text):
        if value is None:
            counts["n/a"] += 1
            return f"{what} n/a ({text})"
        state = "PASS" if ok else "FAIL"
        counts[state] += 1
        return f"{what} {state} ({text})"

    mib = 2 ** -20

    def mem(value):
        return f"{fmt(scaled(value, mib), '{:.0f}'):>8s}"

    for requested, model, mode in plan:
        rows = cpp.get((requested, model, mode))
        if not rows:  # no C++ result: the Python one alone, if any
            rows = [(name, {"label": "no C++ result (see the notes below)",
                            "no_cpp": True})
                    for (precision, name) in py
                    if precision == requested and name.startswith(f"{model}/{mode}/")]
        if not rows:
            note = instance_note(args, step_notes, requested, model)
            why = first_line(note) if note else "see the notes below"
            lines.append(f"{model + '/' + mode:32s} {requested:>8s} missing: no result "
                         f"({why})")
            continue
        for name, figures in rows:
            record = py.get((requested, name))
            if "error" in figures:
                lines.append(f"{name:32s} {requested:>8s} error: "
                             f"{first_line(figures['error'])}")
                continue
            flag_line, flag_verdict, kind = row_flags(
                name, requested, None if figures.get("no_cpp") else figures, record)
            flag_lines.append(flag_line)
            if kind:
                tally[kind] += 1
            c_ms, c_mem = figures.get("ms"), figures.get("peak_mem")
            c_kern = figures.get("kernels_per_step")
            record_get = (record or {}).get
            p_ms, p_mem = record_get("python_median_ms"), record_get("python_peak_mem")
            p_kern = record_get("python_kernels_per_step")
            time_ratio = ratio(c_ms, p_ms)
            mem_ratio, kern_ratio = ratio(c_mem, p_mem), ratio(c_kern, p_kern)
            label = figures.get("label", "")
            if record and "python_error" in record:
                label += f"  [python: {first_line(record['python_error'])}]"
            lines.append(
                f"{name:32s} {requested:>8s} {resolved_precision(label, requested):>8s} "
                f"{fmt(c_ms):>8s} {fmt(p_ms):>8s} {fmt(time_ratio, '{:.3f}'):>6s} "
                f"{mem(c_mem)} {mem(p_mem)} {fmt(pct(mem_ratio), '{:+.1f}'):>6s} "
                f"{mem(figures.get('peak_mem_reserved'))} "
                f"{mem(record_get('python_peak_mem_reserved'))} "
                f"{mem(figures.get('device_memory_used'))} "
                f"{mem(record_get('python_device_memory_used'))} "
                f"{fmt(c_kern, '{:.1f}'):>8s} {fmt(p_kern, '{:.1f}'):>8s} "
                f"{fmt(pct(kern_ratio), '{:+.1f}'):>6s} "
                f"{fmt(figures.get('gpu_busy_pct'), '{:.1f}'):>5s} "
                f"{fmt(scaled(figures.get('peak_share'), 100), '{:.1f}'):>5s} "
                f"{fmt(figures.get('gpu_idle_pct'), '{:.1f}'):>5s} "
                f"{fmt(figures.get('syncs_per_step'), '{:.1f}'):>5s}  {label}")
            if record is None:  # no Python reference: no verdicts but the label's
                verdicts += [flag_verdict] if flag_verdict else []
                continue
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
            verdicts += [flag_verdict] if flag_verdict else []
    if flag_lines:
        lines += ["", "flags in force (C++: read back from PyTorch into the label; Python: "
                  "read back from torch.backends, python_flags):"] + flag_lines
    if args.compiled or args.cpp_compiled or args.compiled_plan:
        lines.extend(compiled_lines(args, cpp, notes, failures))
    lines.append("")
    lines.append("verdicts (expected: C++ time <= Python's; memory within 5 %; "
                 "kernels within 5 %; the same flags on both sides):")
    lines.extend(verdicts or ["  none: no instance has both a C++ and a Python result"])
    # Every failure once, one line each: the instances' errors, then the
    # steps' notes (a timeout, an exit status), then this summary's own.
    failures.extend(f"step {first_line(note)}" for note in step_notes)
    failures.extend(first_line(note) for note in notes)
    if failures:
        lines.append("")
        lines.append("notes (every failure and step note, each as its first line; the logs "
                     "are in raw.tar.gz):")
        lines.extend(f"  {failure}" for failure in failures)
    flagged = "".join(f"; flags {what} on {n}" for what, n in tally.items() if n)
    lines.append("")
    lines.append(f"overall: {counts['PASS']} PASS, {counts['FAIL']} FAIL, "
                 f"{counts['n/a']} n/a{flagged}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
