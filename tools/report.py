#!/usr/bin/env python3
"""One self-contained HTML page from torchbench runs (tools/tb report).

  report.py RESULTS.json [RESULTS_B.json] [SEARCH.json...] -o report.html
            [--models-json MODELS.json] [--profiles DIR] [--coverage FILE...] [--title TEXT]

Inputs, told apart by their content:
- one or two Google Benchmark JSON files of the torchbench program
  (--benchmark_out=F --benchmark_out_format=json). Per instance
  (<model>/<Train|Eval>/batch_size:<N>) the median aggregate is used when the
  run had repetitions, else the mean of its iterations; errored instances are
  listed with their message. The second file is run B, compared with A;
- batch-search files ("tool": "torchbench-batch-search"): throughput against
  batch size per model and mode;
- --models-json: `torchbench --torchbench_list_models=json`, for the models'
  domains when the runs' context lacks torchbench_model_domains;
- --profiles DIR: <DIR>/<instance name, [^A-Za-z0-9._-] -> _>.profile.json,
  for the host ops that only the training step runs;
- --coverage FILE (repeatable): coverage files of --torchbench_op_coverage (or
  runs naming one), or one tools/tb coverage -o file, for an operator coverage
  section (tools/coverage.py computes it);
- one tools/tb versus-python -o file ("tool": "torchbench-versus-python"): the
  C++ step beside TorchBench's Python step.

The page: a summary (device, commit, LibTorch, date, instances, errors,
flags), then 1. a table per domain, 2. train against eval per model with
heuristic flags, 3. achieved FLOP/s against the machine's GEMM peaks (a run
with --torchbench_flops), 4. the batch searches, 5. run B against run A (two
files), 6. operator coverage (--coverage), 7. C++ against Python (a
versus-python file), and a legend; sections without their input are left out.
Plots are inline SVG drawn by matplotlib.

Exit status: 0 written, 2 bad input or usage (unreadable or corrupt JSON, a
file that is neither kind, more than two results files, a --coverage input
tools/tb coverage refuses).
"""

import argparse
import json
import math
import os
import re
import sys

import coverage
from report_rules import number
from tbench import files, results
from tbench.errors import InputError

VERSUS_TOOL = "torchbench-versus-python"  # tools/versus_python.py's files
ABTEST_TOOL = "torchbench-abtest"  # tools/abtest.py's abtest.json

# Google Benchmark's own numeric fields; every other number is a counter.
GB_FIELDS = {"family_index", "per_family_instance_index", "repetitions", "repetition_index",
             "threads", "iterations", "real_time", "cpu_time"}
GPU_KEYS = ("gpu_busy_pct", "gpu_idle_pct", "kernels_per_step", "syncs_per_step")
DETECTION_PREFIXES = ("detectron2_", "vision_maskrcnn", "yolov3", "timm_efficientdet")
MODE_ORDER = {"Train": 0, "Eval": 1}

def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None


class Instance:
    """One benchmark instance of a results file, reduced to one value per metric."""

    def __init__(self, name, rows):
        self.name = name
        parts = name.split("/")
        self.model = parts[0]
        self.mode = next((p for p in parts[1:] if p in MODE_ORDER), "?")
        batch = next((p.split(":", 1)[1] for p in parts if p.startswith("batch_size:")), None)
        self.error = None
        self.note = ""
        self.counters = {}
        self.time_ms = None
        self.label = next((r.get("label") for r in rows if r.get("label")), "") or ""
        iters = [r for r in rows if r.get("run_type", "iteration") == "iteration"]
        ok = [r for r in iters if not r.get("error_occurred")]
        failed = [r for r in iters if r.get("error_occurred")]
        median = next((r for r in rows if r.get("run_type") == "aggregate"
                       and r.get("aggregate_name") == "median"
                       and not r.get("error_occurred")), None)
        if median is not None and (ok or not iters):
            self.stat = "median"
            self.time_ms = self._ms(median)
            self.counters = self._counters([median])
            self.reps = len(ok) or int(number(median.get("repetitions")) or 0)
        elif ok:
            self.stat = "mean" if len(ok) > 1 else "single"
            times = [t for t in (self._ms(r) for r in ok) if t is not None]
            self.time_ms = sum(times) / len(times) if times else None
            self.counters = self._counters(ok)
            self.reps = len(ok)
        else:
            self.stat = "error"
            self.reps = 0
            messages = [str(r.get("error_message") or "") for r in failed]
            self.error = next((m for m in messages if m), "error (no message)")
        if failed and self.error is None:
            self.note = f"{len(failed)} of {len(iters)} repetitions errored: " \
                        f"{failed[0].get('error_message') or 'no message'}"
        self.batch = int(batch) if batch and batch.isdigit() else None
        if self.batch is None and self.get("batch_size") is not None:
            self.batch = int(self.get("batch_size"))

    @staticmethod
    def _ms(row):
        t = number(row.get("real_time"))
        scale = results.scale(row.get("time_unit", "ns"))
        return None if t is None or scale is None else t * scale

    @staticmethod
    def _counters(rows):
        sums = {}
        for row in rows:
            for key, v in row.items():
                v = number(v)
                if key not in GB_FIELDS and v is not None:
                    sums.setdefault(key, []).append(v)
        return {k: sum(v) / len(v) for k, v in sums.items()}

    @property
    def ok(self):
        return self.error is None and self.time_ms is not None

    def get(self, *keys):
        """The first of these counters the instance has, else None."""
        for key in keys:
            if key in self.counters:
                return self.counters[key]
        return None

    def ops(self):
        return self.get("aten_ops_per_step", "aten_ops")

    def is_gpu(self):
        return any(k in self.counters for k in GPU_KEYS)

    def syncs(self):
        """(syncs per step, which counter): real syncs on a GPU, else the CPU proxy."""
        if self.get("syncs_per_step") is not None:
            return self.get("syncs_per_step"), "syncs_per_step"
        return self.get("would_sync_per_step"), "would_sync_per_step"

    def samples_per_s(self):
        v = self.get("items_per_second")
        if v is None and self.time_ms and self.batch:
            v = self.batch / (self.time_ms / 1e3)
        return v

    def flop_rate(self):
        """Achieved FLOP/s (--torchbench_flops): the program's flop_rate, else
        flops_per_step over the step time; None without flops_per_step."""
        flops = self.get("flops_per_step")
        if flops is None:
            return None
        v = self.get("flop_rate")
        if v is None and self.time_ms:
            v = flops / (self.time_ms / 1e3)
        return v

    def sort_key(self):
        return (self.model.lower(), MODE_ORDER.get(self.mode, 2), self.batch or 0, self.name)


class Run:
    """A Google Benchmark results file."""

    def __init__(self, path, doc):
        self.path = path
        self.context = doc.get("context") if isinstance(doc.get("context"), dict) else {}
        groups = {}
        for row in doc["benchmarks"]:
            if not isinstance(row, dict) or not isinstance(row.get("name"), str):
                continue
            groups.setdefault(row.get("run_name") or row["name"], []).append(row)
        self.instances = [Instance(name, rows) for name, rows in groups.items()]
        self.by_name = {i.name: i for i in self.instances}
        self.domains = parse_domains(self.context.get("torchbench_model_domains"))
        self.peaks = machine_peaks(self.context)

    @property
    def with_flops(self):
        """The instances that ran and counted their FLOPs (--torchbench_flops)."""
        return [i for i in self.instances if i.ok and i.get("flops_per_step") is not None
                and i.flop_rate() is not None]

    def ctx(self, key, default="—"):
        v = self.context.get(key)
        return default if v in (None, "") else str(v)

    @property
    def errored(self):
        return [i for i in self.instances if not i.ok]


class Search:
    """One model and mode of a batch-search file."""

    def __init__(self, path, context, doc):
        self.path = path
        self.context = context
        self.model = str(doc.get("model", "?"))
        self.mode = str(doc.get("mode", "?"))
        self.probes = [p for p in doc.get("probes") or [] if isinstance(p, dict)
                       and number(p.get("batch_size")) is not None]
        self.probes.sort(key=lambda p: p["batch_size"])
        self.summary = doc.get("summary") if isinstance(doc.get("summary"), dict) else {}


class SearchFile:
    def __init__(self, path, doc):
        self.path = path
        self.context = doc.get("context") if isinstance(doc.get("context"), dict) else {}
        self.settings = doc.get("settings") if isinstance(doc.get("settings"), dict) else {}
        searches = doc.get("searches")
        if not isinstance(searches, list):
            raise InputError(f"{path}: a batch-search file without a 'searches' list")
        self.searches = [Search(path, self.context, s) for s in searches if isinstance(s, dict)]
        suggested = doc.get("suggested_batch_sizes")
        self.suggested = suggested if isinstance(suggested, dict) else {}


PEAK_KEY = re.compile(r"^peak_gemm_([a-z0-9]+)_flops_per_second$")
DTYPE_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}


def context_number(context, key):
    """A positive finite number of a context value (the program writes strings), else None."""
    try:
        v = float(context.get(key))
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v > 0 else None


def machine_peaks(context):
    """The machine's measured limits in a run's context (--torchbench_flops):
    {"gemm": [(dtype, short name, FLOP/s)], fp32, bf16, fp16 first, others by
    name; "copy": bytes read + written per second; "threads", "source"}."""
    gemm = []
    for key in context:
        m = PEAK_KEY.match(key)
        v = context_number(context, key) if m else None
        if v is not None:
            gemm.append((m.group(1), DTYPE_SHORT.get(m.group(1), m.group(1)), v))
    order = list(DTYPE_SHORT)
    gemm.sort(key=lambda p: (order.index(p[0]) if p[0] in order else len(order), p[0]))
    source = context.get("machine_peaks_source")
    return {"gemm": gemm, "copy": context_number(context, "peak_copy_bytes_per_second"),
            "threads": context_number(context, "peak_threads"),
            "source": str(source) if source not in (None, "") else None}


def parse_domains(text):
    out = {}
    for item in str(text or "").split(","):
        model, sep, domain = item.strip().rpartition(":")
        if sep and model:
            out[model] = domain.strip() or "unknown"
    return out


def load_inputs(paths):
    runs, searches, versus, abtests = [], [], [], []
    for path in paths:
        doc = read_json(path)
        if isinstance(doc, dict) and doc.get("tool") == ABTEST_TOOL:
            if not isinstance(doc.get("threads"), list) or not isinstance(doc.get("sides"), list):
                raise InputError(f"{path}: an abtest file without 'threads' and 'sides' lists")
            abtests.append(doc)
        elif isinstance(doc, dict) and doc.get("tool") == "torchbench-batch-search":
            searches.append(SearchFile(path, doc))
        elif isinstance(doc, dict) and doc.get("tool") == VERSUS_TOOL:
            if not isinstance(doc.get("results"), list) or not isinstance(
                    doc.get("summary"), list):
                raise InputError(f"{path}: a versus-python file without 'results' and "
                                 "'summary' lists")
            versus.append(doc)
        elif isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list):
            runs.append(Run(path, doc))
        else:
            raise InputError(f"{path}: neither Google Benchmark JSON (no 'benchmarks' list) "
                             "nor a torchbench-batch-search or versus-python file")
    if len(runs) > 2:
        raise InputError(f"{len(runs)} results files: give one, or two to compare "
                         f"({', '.join(r.path for r in runs)})")
    if len(versus) > 1:
        raise InputError(f"{len(versus)} versus-python files: give one")
    if len(abtests) > 1:
        raise InputError(f"{len(abtests)} abtest files: give one")
    if not runs and not searches and not versus and not abtests:
        raise InputError("no input: give a results file and/or batch-search files")
    return runs, searches, versus[0] if versus else None, abtests[0] if abtests else None


def load_models_json(path):
    doc = read_json(path)
    if not isinstance(doc, list):
        raise InputError(f"{path}: expected the list `torchbench --torchbench_list_models=json` "
                         "writes")
    return {str(m["name"]): str(m.get("domain") or "unknown") for m in doc
            if isinstance(m, dict) and "name" in m}


safe_name = results.safe_name


def load_profile(directory, name, warnings):
    path = os.path.join(directory, safe_name(name) + ".profile.json")
    if not os.path.exists(path):
        return None
    try:
        doc = read_json(path)
    except InputError as e:
        warnings.append(f"profile skipped: {e}")
        return None
    return doc if isinstance(doc, dict) else None


def is_detection(model, domain):
    return "detection" in domain.lower() or model.startswith(DETECTION_PREFIXES)


class Pair:
    """A model's Train and Eval instances of one run."""

    def __init__(self, train, evl, domain):
        self.model, self.train, self.eval, self.domain = train.model, train, evl, domain
        self.same_batch = train.batch == evl.batch
        per_t = train.time_ms / (train.batch or 1)
        per_e = evl.time_ms / (evl.batch or 1)
        self.time_ratio = per_t / per_e if per_e > 0 else None
        self.ops_ratio = ratio(train.ops(), evl.ops())
        self.kernel_ratio = ratio(train.get("kernels_per_step"), evl.get("kernels_per_step"))
        self.train_only_ops = []
        self.phases = {}


def ratio(a, b):
    return a / b if a is not None and b else None


def make_pairs(run, domain_of):
    by_model = {}
    for inst in run.instances:
        if inst.ok:
            by_model.setdefault(inst.model, {}).setdefault(inst.mode, []).append(inst)
    pairs = []
    for model, modes in sorted(by_model.items(), key=lambda kv: kv[0].lower()):
        trains, evals = modes.get("Train"), modes.get("Eval")
        if not trains or not evals:
            continue
        common = {i.batch for i in trains} & {i.batch for i in evals}
        if common:
            b = max(common, key=lambda x: x or 0)
            t = next(i for i in trains if i.batch == b)
            e = next(i for i in evals if i.batch == b)
        else:
            t, e = trains[0], evals[0]
        pairs.append(Pair(t, e, domain_of(model)))
    return pairs


def add_profiles(pairs, directory, warnings):
    for pair in pairs:
        train = load_profile(directory, pair.train.name, warnings)
        evl = load_profile(directory, pair.eval.name, warnings)
        if train is None:
            continue
        phases = train.get("phases")
        if isinstance(phases, dict):
            pair.phases = {k: number(v.get("host_ms")) for k, v in phases.items()
                           if isinstance(v, dict) and number(v.get("host_ms")) is not None}
        if evl is None:
            continue
        eval_ops = {str(o.get("name")) for o in evl.get("top_ops_host") or []
                    if isinstance(o, dict)}
        only = [o for o in train.get("top_ops_host") or [] if isinstance(o, dict)
                and o.get("name") is not None and str(o["name"]) not in eval_ops]
        only.sort(key=lambda o: -(number(o.get("self_host_us")) or 0))
        pair.train_only_ops = [(str(o["name"]), number(o.get("calls")),
                                number(o.get("self_host_us"))) for o in only[:3]]


def instance_flags(inst, domain):
    """[(rule id, text)] for one instance's own counters."""
    flags = []
    idle = inst.get("gpu_idle_pct")
    if idle is not None and idle > 30:
        parts = [(inst.get("gpu_idle_host_wait_pct"), "waiting on the host"),
                 (inst.get("gpu_idle_kernel_wait_pct"), "waiting on kernels"),
                 (inst.get("gpu_idle_other_pct"), "other")]
        parts = [p for p in parts if p[0] is not None]
        why = ""
        if parts:
            top = max(parts, key=lambda p: p[0])
            why = f"; mostly {top[1]} ({top[0]:.0f} %)"
        flags.append(("idle", f"GPU idle {idle:.0f} % of the step (> 30 %){why}"))
    syncs, source = inst.syncs()
    if inst.mode == "Eval" and syncs and syncs > 0 and not is_detection(inst.model, domain):
        what = "syncs" if source == "syncs_per_step" else "ops that would sync on a GPU"
        flags.append(("eval_sync", f"{syncs:g} {what} per step in Eval (not a detection model)"))
    memcpy = inst.get("gpu_memcpy_pct")
    if memcpy is not None and memcpy > 5:
        flags.append(("memcpy", f"memcpy {memcpy:.1f} % of the step (> 5 %)"))
    kernels, ops = inst.get("kernels_per_step"), inst.ops()
    if kernels is not None and ops and kernels > 3 * ops:
        flags.append(("kernels", f"{kernels:g} kernels per step for {ops:g} aten ops "
                                 f"({kernels / ops:.1f}× > 3×)"))
    median_us = inst.get("kernel_median_us")
    if median_us is not None and idle is not None and median_us < 10 and idle > 20:
        flags.append(("launch", f"median kernel {median_us:.1f} µs (< 10 µs) with GPU idle "
                                f"{idle:.0f} % (> 20 %)"))
    return flags


def all_flags(run, pairs, domain_of):
    """[(model, mode, rule id, text)] for the run: ratios per pair, the rest per instance."""
    out = []
    for p in pairs:
        r = p.time_ratio
        basis = "" if p.same_batch else " per sample"
        if r is not None and r > 4:
            out.append((p.model, "Train/Eval", "ratio_high",
                        f"train/eval time{basis} {r:.1f}× (> 4×; typical ~3×)"))
        elif r is not None and r < 2:
            out.append((p.model, "Train/Eval", "ratio_low",
                        f"train/eval time{basis} {r:.1f}× (< 2×; typical ~3×)"))
    for inst in sorted(run.instances, key=Instance.sort_key):
        if inst.ok:
            for rule, text in instance_flags(inst, domain_of(inst.model)):
                out.append((inst.model, inst.mode, rule, text))
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="tools/tb report", description="Write one self-contained HTML page from "
        "torchbench results (one file, or two to compare) and batch-search files.")
    p.add_argument("inputs", nargs="+", metavar="JSON",
                   help="results files (Google Benchmark JSON; a second one is compared with "
                        "the first) and torchbench-batch-search files, in any order")
    p.add_argument("-o", "--output", required=True, metavar="HTML", help="the page to write")
    p.add_argument("--models-json", metavar="FILE",
                   help="torchbench --torchbench_list_models=json output, for the models' "
                        "domains when the run's context lacks torchbench_model_domains")
    p.add_argument("--profiles", metavar="DIR",
                   help="directory of <instance>.profile.json files (--torchbench_profile)")
    p.add_argument("--coverage", action="append", metavar="FILE",
                   help="an operator coverage section from coverage files "
                        "(--torchbench_op_coverage=FILE, or a run JSON naming one; repeatable) "
                        "or one tools/tb coverage -o file")
    p.add_argument("--title", default="torchbench-cpp report", help="the page's title")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        runs, search_files, versus, abtest = load_inputs(args.inputs)
        listed = load_models_json(args.models_json) if args.models_json else {}
        if args.profiles and not os.path.isdir(args.profiles):
            raise InputError(f"--profiles {args.profiles}: not a directory")
    except InputError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    try:
        cov = coverage.load_doc(args.coverage, note=lambda m: print(
            f"report: note: --coverage: {m}", file=sys.stderr)) if args.coverage else None
    except InputError as e:
        print(f"report: --coverage: {e}", file=sys.stderr)
        return 2
    try:
        import report_page  # matplotlib is imported here, after the inputs are checked
    except ImportError as e:
        print(f"report: {e.name or e} is not installed for {sys.executable}: run tools/tb setup "
              "(it installs tools/requirements.txt)", file=sys.stderr)
        return 2

    domains = dict(listed)
    for run in reversed(runs):  # the run's own context wins over --models-json
        domains.update(run.domains)

    def domain_of(model):
        return domains.get(model, "unknown")

    warnings = []
    analyses = []
    for run in runs:
        pairs = make_pairs(run, domain_of)
        if args.profiles:
            add_profiles(pairs, args.profiles, warnings)
        analyses.append((run, pairs, all_flags(run, pairs, domain_of)))
    for w in warnings:
        print(f"report: warning: {w}", file=sys.stderr)
    doc = report_page.render(args.title, analyses, search_files, domain_of, warnings,
                             profiles=bool(args.profiles), coverage=cov, versus=versus,
                             abtest=abtest)
    try:
        files.write_text(args.output, doc)
    except OSError as e:
        print(f"report: {args.output}: cannot write: {e.strerror or e}", file=sys.stderr)
        return 2
    n = sum(len(r.instances) for r in runs)
    print(f"report: wrote {args.output} ({n} instances, "
          f"{sum(len(s.searches) for s in search_files)} batch searches)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
