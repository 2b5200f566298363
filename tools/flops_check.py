#!/usr/bin/env python3
"""The program's FLOP count against PyTorch's FlopCounterMode on TorchBench's step.

    tools/tb flops-check [MODEL...] [--mode train|eval|both] [--batch-size N|default]
        [--reference-root CHECKOUT] [--threads N] [--warmup 1] [--tolerance 0.01]
        [--timeout S] [--jobs N] [--binary PROGRAM] [-o OUT.json] [--markdown OUT.md]

For each selected instance (<model>/<Train|Eval>/batch_size:<N>, every model
by default), two processes:
  - a Python worker (this file, --worker) builds the reference step exactly as
    tools/versus_python.py's worker does (build_python_step: the
    pip-referenced models through build_pip_step, the others through
    TorchBench's own Model class from a pytorch/benchmark checkout at 43ca0857,
    --reference-root or TORCHBENCH_REFERENCE_ROOT), with the same threads and
    seed, runs --warmup steps (1), then one step under two nested
    torch.utils.flop_counter.FlopCounterMode counters, so both see the same
    operators: "raw" (FlopCounterMode's own formulas) and "corrected" (its
    formulas with the program's deliberate differences,
    corrected_mapping() below: convolution_backward's grad_weight term
    divided by groups, the CPU SDPA kernels counted with the sdpa
    formulas, and oneDNN's LSTM layer, which FlopCounterMode counts 0). Each keeps its per-operator totals (get_flop_counts()
    ['Global']); their module trackers are off (counter() says why).
  - the program (build/benchmarks/torchbench, or --binary) on that instance
    with --torchbench_flops, one step (as versus-python's run_cpp bounds it:
    one repetition at --benchmark_min_time=1e-9, which Google Benchmark 1.7.1
    reads as seconds), its counters flops_per_step, flops_forward,
    flops_backward and flops_optimizer. The detection models whose work
    depends on their weights (versus_python.SHARED_WEIGHTS, Eval) load the
    Python reference's weights, as in versus-python.

Per instance: the C++ count, Python raw and corrected, (C++ - corrected) /
corrected, and a verdict:
  equal       C++ within --tolerance (1 %) of corrected and of raw;
  explained   within it of corrected but not of raw: the corrections
              (grouped convolutions, CPU attention, CPU LSTM) are the whole
              difference;
  DIFFERS     C++ off corrected by more (the rows list Python's per-operator
              counts, so the difference can be explained);
  not run     the reference cannot run here (a missing package, data, a
              timeout: the reason is given);
  error       the program failed or reported no FLOP count.

--markdown writes the table (the command and the date in its head; a path
outside the checkout is named by its placeholder), -o the JSON (exact
integers, per-operator counts of both Python counters).

Exit status: 0 every instance that ran on both sides is equal or explained;
1 some DIFFERS, or the program failed on some instance; 2 bad input (an
unknown model, no reference root, a program that cannot list its models).
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from tbench import env, errors, files, program
from tbench.errors import InputError

import versus_python as vp

TOOL = "torchbench-flops-check"
RESULT_PREFIX = "FLOPS_CHECK_RESULT "
CPP_COUNTERS = ("flops_per_step", "flops_forward", "flops_backward", "flops_optimizer")
VERDICTS = ("equal", "explained", "DIFFERS", "not run", "error")


# --- the corrected formulas (the program's deliberate differences) ----------------

def conv_backward_flop_corrected(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding,
                                 _dilation, transposed, _output_padding, groups, output_mask,
                                 out_shape=None, **kwargs):
    """FlopCounterMode's convolution_backward formula (conv_backward_flop)
    with its grad_weight term divided by `groups`. FlopCounterMode computes
    grad_weight as a convolution of the input with grad_output whose channels
    are all crossed: 2 N C_in C_out prod(kernel) prod(out spatial), which is
    `groups` times the work of a grouped convolution (whose weight is
    [C_out, C_in / groups, ...]); its grad_input term is right. A depthwise
    3x3, 32 channels, groups 32, on 2x32x56x56: forward 3.61 MFLOP, grad_input
    3.61, FlopCounterMode's grad_weight 115.6 and this one 3.61."""
    from torch.utils.flop_counter import conv_flop_count

    def t(shape):
        return [shape[1], shape[0]] + list(shape[2:])

    flop = 0
    if output_mask[0]:
        flop += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        if transposed:
            weight = conv_flop_count(t(grad_out_shape), t(x_shape), t(out_shape[1]), False)
        else:
            weight = conv_flop_count(t(x_shape), t(grad_out_shape), t(out_shape[1]), False)
        flop += weight // int(groups)
    return flop


def sdpa_cpu_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
    """_scaled_dot_product_flash_attention_for_cpu as FlopCounterMode counts
    the other SDPA kernels (sdpa_flop): Q K^T and (scores) V, 2 flops a
    multiply-add; FlopCounterMode has no formula for the CPU kernel and counts
    0 for attention on the CPU."""
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_cpu_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                           out_shape=None, **kwargs):
    """_scaled_dot_product_flash_attention_for_cpu_backward as
    sdpa_backward_flop: the scores recomputed and four products."""
    from torch.utils.flop_counter import sdpa_backward_flop_count

    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def rnn_layer_flop_count(input_shape, weight_ih_shape, weight_hh_shape):
    """One direction of one recurrent layer: every time step of every
    sequence takes its input and the previous hidden state through all
    gates' weights, 2 (numel(weight_ih) + numel(weight_hh)) FLOP a step."""
    from math import prod

    steps = prod(input_shape) // input_shape[-1]
    return 2 * steps * (prod(weight_ih_shape) + prod(weight_hh_shape))


def rnn_layer_flop(input_shape, weight_ih_shape, weight_hh_shape, *args, out_shape=None,
                   **kwargs):
    """mkldnn_rnn_layer (what aten::lstm runs on a CPU): FlopCounterMode has
    no formula for it and counts 0."""
    return rnn_layer_flop_count(input_shape, weight_ih_shape, weight_hh_shape)


def rnn_layer_backward_flop(input_shape, weight_ih_shape, weight_hh_shape, *args,
                            out_shape=None, **kwargs):
    """mkldnn_rnn_layer_backward: the gradients of the input and hidden
    state and of both weights, twice the forward's products."""
    return 2 * rnn_layer_flop_count(input_shape, weight_ih_shape, weight_hh_shape)


def corrected_mapping():
    """FlopCounterMode's custom_mapping for the corrected counter."""
    import torch

    aten = torch.ops.aten
    return {aten.convolution_backward: conv_backward_flop_corrected,
            aten._scaled_dot_product_flash_attention_for_cpu: sdpa_cpu_flop,
            aten._scaled_dot_product_flash_attention_for_cpu_backward: sdpa_cpu_backward_flop,
            aten.mkldnn_rnn_layer: rnn_layer_flop,
            aten.mkldnn_rnn_layer_backward: rnn_layer_backward_flop}


def op_name(packet):
    """An operator packet as the dispatcher names it (aten::mm)."""
    return getattr(packet, "_qualified_op_name", None) or str(packet)


def per_op(counter):
    """{operator: FLOP} of a FlopCounterMode's whole run, zeros left out."""
    counts = counter.get_flop_counts().get("Global", {})
    return {op_name(k): int(v) for k, v in sorted(counts.items(), key=lambda kv: op_name(kv[0]))
            if v}


class _GlobalScope:
    """A FlopCounterMode's module tracker that tracks nothing: every count
    goes to 'Global' alone, which is all this check reads."""
    parents = frozenset({"Global"})

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return None


def counter(custom_mapping=None):
    """FlopCounterMode(display=False), its module tracker replaced by
    _GlobalScope: the totals are the same, and the tracker's per-module
    backward hooks break steps that differentiate inside themselves
    (lennard_jones' vmap(jacrev(model)): "A leaf node was passed to
    _will_engine_execute_node ...")."""
    from torch.utils.flop_counter import FlopCounterMode

    mode = FlopCounterMode(display=False, custom_mapping=custom_mapping)
    if not hasattr(mode, "mod_tracker"):
        raise AssertionError("FlopCounterMode has no mod_tracker: update flops_check.counter")
    mode.mod_tracker = _GlobalScope()
    return mode


def count_flops(step):
    """(raw, corrected): {operator: FLOP} of one call of `step` under two
    nested FlopCounterModes, FlopCounterMode's own formulas and the
    corrected ones, so both count the very same operators."""
    with counter() as raw, counter(corrected_mapping()) as corrected:
        step()
    return per_op(raw), per_op(corrected)


# --- the Python side (a worker process per instance) ------------------------------------

def worker(spec):
    """Build the reference step as versus-python's worker does, warm up,
    count one step; one JSON line on stdout."""
    import torch

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    out = {}
    try:
        step = vp.build_python_step(spec["model"], spec["mode"], spec["batch_size"], "cpu",
                                    spec.get("reference_root"), spec.get("export_weights"))
        for _ in range(spec["warmup"]):
            step()
        try:
            raw, corrected = count_flops(step)
        except Exception as e:  # the step runs, but not under the counter
            raise RuntimeError(f"under FlopCounterMode: {errors.one_line(e)}") from e
        out.update(raw=sum(raw.values()), corrected=sum(corrected.values()), raw_ops=raw,
                   corrected_ops=corrected, torch_version=torch.__version__)
    except (Exception, SystemExit) as e:  # the reference failed: that instance's reason
        out["error"] = errors.reason(e)
    print(RESULT_PREFIX + json.dumps(out), flush=True)
    return 0


def run_python(spec, timeout):
    """The Python side in a fresh worker process (tools/golden on its path,
    as versus-python's)."""
    environment = env.thread_env(spec["threads"])
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(vp.GOLDEN)] + [p for p in [environment.get("PYTHONPATH")] if p])
    try:
        proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                              capture_output=True, text=True, env=environment, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for text in reversed(proc.stdout.splitlines()):
        if text.startswith(RESULT_PREFIX):
            return json.loads(text[len(RESULT_PREFIX):])
    return {"error": f"the worker died ({vp.why_ended(proc)[:280]})"}


# --- the C++ side -------------------------------------------------------------------------

def run_cpp(binary, name, threads, warmup, seed, timeout, weights=None):
    """The program on one instance with --torchbench_flops, one step;
    {counter: value, libtorch_version} or {"error": ...}."""
    batch = name.split("/")[2].split(":")[1]
    with tempfile.TemporaryDirectory(prefix="flops_check_") as tmp:
        out = os.path.join(tmp, "cpp.json")
        args = [binary, "--torchbench_device=cpu", f"--torchbench_batch_sizes={batch}",
                program.filter_flag([name]), f"--torchbench_warmup_steps={warmup}",
                # Counts only: a stand-in yardstick spares measuring the peaks.
                f"--torchbench_seed={seed}", "--torchbench_peaks=float32=1,copy=1,threads=1",
                *program.one_step_flags(1, out)]
        if weights:
            args.append(f"--torchbench_weights={weights}")
        try:
            proc = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, env=env.thread_env(threads), timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout} s"}
        doc = None
        if os.path.exists(out):
            try:
                with open(out) as f:
                    doc = json.load(f)
            except (OSError, json.JSONDecodeError):
                doc = None
    if doc is None:
        return {"error": vp.why_ended(proc)[:300]}
    result = {}
    version = doc.get("context", {}).get("libtorch_version")
    if version:
        result["libtorch_version"] = version
    for run in doc.get("benchmarks", []):
        if run.get("error_occurred"):
            return {"error": str(run.get("error_message", "error"))[:300]}
        if run.get("run_type", "iteration") == "iteration" and "flops_per_step" in run:
            # Every flops counter the row has (phases, and any the program adds).
            result.update({k: v for k, v in run.items() if k.startswith("flops")})
            return result
    return {"error": "the program reported no flops_per_step counter (a build without "
                     f"--torchbench_flops? exit {proc.returncode})"}


# --- verdicts ----------------------------------------------------------------------------

def relative(a, b):
    """(a - b) / b; 0 when both are 0, None when only b is."""
    if b == 0:
        return 0.0 if a == 0 else None
    return (a - b) / b


def close(a, b, tolerance):
    r = relative(a, b)
    return r is not None and abs(r) <= tolerance


def judge(record, tolerance):
    """Fills the record's relative differences and verdict."""
    cpp, py = record["cpp"], record["python"]
    if "error" in cpp:
        record["verdict"], record["reason"] = "error", f"C++: {cpp['error']}"
        return record
    if "error" in py:
        record["verdict"], record["reason"] = "not run", py["error"]
        return record
    total = cpp["flops_per_step"]
    record["vs_corrected"] = relative(total, py["corrected"])
    record["vs_raw"] = relative(total, py["raw"])
    if not close(total, py["corrected"], tolerance):
        record["verdict"] = "DIFFERS"
    elif close(total, py["raw"], tolerance):
        record["verdict"] = "equal"
    else:
        record["verdict"] = "explained"
    return record


def check(binary, name, spec, args, root):
    """One instance: the Python worker, then the program; its record."""
    model, mode, batch = name.split("/")
    record = {"benchmark": name, "model": model, "domain": spec.get("domain", "unknown"),
              "mode": mode, "batch_size": int(batch.split(":")[1]),
              "reference": vp.reference_kind(model), "cpp": {}, "python": {}}
    shared = model in vp.SHARED_WEIGHTS and mode == "Eval"
    if shared:
        record["weights"] = "shared"
    with tempfile.TemporaryDirectory(prefix="flops_check_") as tmp:
        weights = os.path.join(tmp, "weights.safetensors") if shared else None
        if model in vp.CPU_OUT_OF_REACH:
            record["python"] = {"error": vp.CPU_OUT_OF_REACH[model]}
        else:
            py_spec = {"model": model, "mode": mode, "batch_size": record["batch_size"],
                       "threads": args.threads, "seed": args.seed, "warmup": args.warmup,
                       "reference_root": root}
            if weights:
                py_spec["export_weights"] = weights
            record["python"] = run_python(py_spec, args.timeout)
        if weights and not os.path.exists(weights):
            weights = None  # the reference failed before writing them: the program's own
            record.pop("weights")
        record["cpp"] = run_cpp(binary, name, args.threads, args.warmup, args.seed,
                                args.timeout, weights)
    return judge(record, args.tolerance)


# --- output ----------------------------------------------------------------------------

def si(value):
    """A FLOP count with an SI prefix and 4 significant digits."""
    if not isinstance(value, (int, float)):
        return "-"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {prefix}"
    return f"{value:.4g}"


def flop(value):
    """A FLOP count in words: 3.628 GFLOP."""
    text = si(value)
    return f"{text}FLOP" if text[-1:].isalpha() else f"{text} FLOP"


def pct(value):
    return f"{value:+.2%}" if isinstance(value, (int, float)) else "-"


def phases(cpp):
    """The C++ count's forward / backward / optimizer split, as text."""
    parts = [f"{key.split('_', 1)[1]} {flop(cpp[key])}" for key in CPP_COUNTERS[1:]
             if key in cpp]
    return ", ".join(parts)


def op_text(ops, limit=8):
    """Python's per-operator counts, the largest first."""
    top = sorted(ops.items(), key=lambda kv: -kv[1])[:limit]
    rest = len(ops) - len(top)
    return ", ".join(f"{op} {flop(v)}" for op, v in top) + (f", {rest} more" if rest > 0
                                                               else "")


def verdict_text(r):
    if r["verdict"] in ("not run", "error"):
        return f"{r['verdict']}: {r['reason']}"
    return r["verdict"]


def line(r):
    return (f"{r['benchmark']:52s} {si(r['cpp'].get('flops_per_step')):>10s} "
            f"{si(r['python'].get('raw')):>10s} {si(r['python'].get('corrected')):>10s} "
            f"{pct(r.get('vs_corrected')):>9s}  {verdict_text(r)}")


HEADER = (f"{'benchmark':52s} {'C++ FLOP':>10s} {'Py raw':>10s} {'Py corr.':>10s} "
          f"{'C++/corr':>9s}  verdict")


def summary(records):
    """Per mode: how many instances got each verdict."""
    out = []
    for mode in sorted({r["mode"] for r in records}, reverse=True):  # Train, Eval
        rows = [r for r in records if r["mode"] == mode]
        out.append({"mode": mode, "instances": len(rows),
                    "verdicts": {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}})
    return out


def markdown(doc):
    """The published table: head (command, date, machine), summary, the
    instances that differ with Python's per-operator counts, every row."""
    ctx = doc["context"]
    batch = "default batch" if ctx["batch_size"] == "default" else f"batch {ctx['batch_size']}"
    out = [f"# C++ FLOP count against FlopCounterMode ({ctx['device']}, {batch}, "
           f"{ctx['threads']} thread(s))", "",
           f"Generated {ctx['date']} by `{ctx['command']}`", "",
           *([f"**Stopped early: {ctx['finished']} of the {ctx['planned']} planned "
              "instances finished** (Eval first); the rest are not in this table.", ""]
             if ctx.get("finished", 0) < ctx.get("planned", 0) else []),
           f"Machine: {ctx['cpu']}; {ctx['cores']} cores. LibTorch "
           f"{ctx.get('libtorch_version') or '?'} against torch {ctx['torch_version']}; "
           f"{ctx['warmup']} warm-up step(s), then one counted step on each side. C++: the "
           "program's `--torchbench_flops` (`flops_per_step`). Python: TorchBench's step "
           "(as `tools/tb versus-python` builds it) under `torch.utils.flop_counter."
           "FlopCounterMode`, *raw* with its own formulas, *corrected* with the program's "
           "deliberate differences (convolution_backward's grad_weight term divided by groups; "
           "the CPU SDPA kernels counted with the sdpa formulas and oneDNN's LSTM layer, "
           f"both of which FlopCounterMode counts as 0). **equal**: C++ within {ctx['tolerance']:.0%} of corrected and raw; "
           f"**explained**: within {ctx['tolerance']:.0%} of corrected only; **DIFFERS**: off "
           "corrected by more.", "",
           "## Summary", "",
           "| mode | instances | equal | explained | DIFFERS | not run | error |",
           "|---|---|---|---|---|---|---|"]
    for g in doc["summary"]:
        v = g["verdicts"]
        out.append(f"| {g['mode']} | {g['instances']} | {v['equal']} | {v['explained']} | "
                   f"{v['DIFFERS']} | {v['not run']} | {v['error']} |")
    differs = [r for r in doc["results"] if r["verdict"] == "DIFFERS"]
    if differs:
        out += ["", "## Where they differ", "",
                "Each with the C++ phases and Python's corrected count per operator:", ""]
        for r in differs:
            split = phases(r["cpp"])
            out.append(f"- {r['benchmark']}: C++ {flop(r['cpp']['flops_per_step'])}"
                       f"{f' ({split})' if split else ''}, Python corrected "
                       f"{flop(r['python']['corrected'])} ({pct(r.get('vs_corrected'))}); "
                       f"{op_text(r['python']['corrected_ops']) or 'no counted operator'}")
    out += ["", "## Every instance", "",
            "| benchmark | reference | C++ FLOP | Python raw | Python corrected | "
            "C++ vs corrected | verdict |", "|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        c, p = r["cpp"], r["python"]
        verdict = verdict_text(r).replace("|", "/")
        if r["verdict"] == "DIFFERS":
            verdict = f"**{verdict}**"
        out.append(f"| {r['benchmark']} | {r['reference']}"
                   f"{', *shared weights*' if r.get('weights') == 'shared' else ''} | "
                   f"{si(c.get('flops_per_step'))} | {si(p.get('raw'))} | "
                   f"{si(p.get('corrected'))} | {pct(r.get('vs_corrected'))} | {verdict} |")
    return "\n".join(out) + "\n"


# --- the command line ---------------------------------------------------------------------

def published_command(argv, cwd=None):
    """The command as the table's head records it (versus-python's rule:
    a path inside the checkout relative to its root, any other its
    placeholder)."""
    text = vp.published_command(argv, cwd)
    return "tools/tb flops-check" + text[len("tools/tb versus-python"):]


def parse_args(argv):
    p = errors.ArgumentParser(prog="tools/tb flops-check", tool="flops-check",
                              description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", metavar="MODEL", help="default: every model")
    p.add_argument("--mode", choices=sorted(vp.MODES), default="both")
    p.add_argument("--batch-size", default="1", help="N, or default (each model's own)")
    p.add_argument("--reference-root", default=os.environ.get("TORCHBENCH_REFERENCE_ROOT"),
                   metavar="CHECKOUT", help="a pytorch/benchmark checkout at 43ca0857 "
                   "(default: TORCHBENCH_REFERENCE_ROOT)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads on both sides")
    p.add_argument("--warmup", type=int, default=1, help="steps before the counted one")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--tolerance", type=float, default=0.01,
                   help="relative difference that still counts as the same (0.01: 1 %%)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per process")
    p.add_argument("--jobs", type=int, default=1,
                   help="instances checked side by side (each with --threads threads)")
    p.add_argument("--binary", default=program.DEFAULT, metavar="PROGRAM")
    p.add_argument("-o", "--output", metavar="OUT.json")
    p.add_argument("--markdown", metavar="OUT.md")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return args
    p.check_batch_size(args.batch_size)
    for flag, value in (("--threads", args.threads), ("--timeout", args.timeout),
                        ("--jobs", args.jobs)):
        if value < 1:
            p.error(f"{flag} must be positive, not {value}")
    if args.warmup < 0:
        p.error(f"--warmup must not be negative, not {args.warmup}")
    if not 0 <= args.tolerance < 1:
        p.error(f"--tolerance must be in [0, 1), not {args.tolerance}")
    return args


def select(args):
    """(specs, instance names, reference root); InputError on bad input."""
    specs, models, root = vp.select_models(args.binary, args.models, args.reference_root)
    names = vp.instance_names(args.binary, models, vp.MODES[args.mode], args.batch_size, "cpu")
    if not names:
        raise InputError("the selection has no instance (a model without that mode?)")
    return specs, names, root


def write_outputs(args, argv, records, planned, cpu, cpu_flags, torch_version):
    """-o and --markdown, each written whole (a temporary file renamed)."""
    doc = {"tool": TOOL, "context": {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "command": published_command(argv), "device": "cpu", "batch_size": args.batch_size,
        "threads": args.threads, "warmup": args.warmup, "seed": args.seed,
        "tolerance": args.tolerance, "cpu": cpu, "cpu_flags": cpu_flags,
        "cores": os.cpu_count(), "torch_version": torch_version,
        "libtorch_version": next((r["cpp"]["libtorch_version"] for r in records
                                  if r["cpp"].get("libtorch_version")), None),
        "planned": planned, "finished": len(records)},
        "results": records, "summary": summary(records)}
    for path, text in ((args.output, lambda: json.dumps(doc, indent=1) + "\n"),
                       (args.markdown, lambda: markdown(doc))):
        if path:
            files.write_text(path, text())


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    try:
        specs, names, root = select(args)
    except InputError as e:
        print(f"flops-check: {e}", file=sys.stderr)
        return 2

    import torch

    cpu, cpu_flags = env.machine()
    print(f"flops-check: {len(names)} instances, {args.threads} thread(s), {args.warmup} "
          f"warm-up step(s); {cpu}; torch {torch.__version__}", file=sys.stderr)
    print(HEADER, flush=True)
    # Eval first (the cheaper half), as versus-python orders without costs.
    order = sorted(names, key=lambda n: (n.split("/")[1] != "Eval", n))
    # Counting is not timing: --jobs instances side by side, each its own
    # processes, reported in order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(check, args.binary, name, specs[name.split("/")[0]], args, root)
                   for name in order]
        records = []
        for future in futures:
            records.append(future.result())
            print(line(records[-1]), flush=True)
            # Rewritten after every instance: a run stopped early leaves the
            # table of what it finished, saying how far it got.
            write_outputs(args, argv, records, len(order), cpu, cpu_flags, torch.__version__)
    counts = {v: sum(r["verdict"] == v for r in records) for v in VERDICTS}
    print("flops-check: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n),
          file=sys.stderr)
    for r in records:
        if r["verdict"] == "DIFFERS":
            print(f"flops-check: DIFFERS: {r['benchmark']}: C++ "
                  f"{r['cpp']['flops_per_step']:.0f} against Python corrected "
                  f"{r['python']['corrected']} "
                  f"({pct(r.get('vs_corrected'))}); Python per operator: "
                  f"{op_text(r['python']['corrected_ops'])}", file=sys.stderr)
        elif r["verdict"] == "error":
            print(f"flops-check: {r['benchmark']}: the program failed: {r['reason']}",
                  file=sys.stderr)
    return 1 if counts["DIFFERS"] or counts["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
