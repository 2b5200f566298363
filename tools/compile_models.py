#!/usr/bin/env python3
"""Each model's Eval forward compiled ahead of time, for the program to run from C++.

    tools/tb compile [MODEL...] [--backend aoti|torchscript|both] [--batch-size N|default]
        [--device cpu|cuda] [--threads N] [--reference-root CHECKOUT] [--timeout S]
        [--jobs N] [--binary PROGRAM] [--time-python | --time-only] [--warmup 3]
        [--steps 10] [-o DIR]

For each selected model (every model the program lists with an Eval mode by
default; --batch-size N, 1 by default, is raised to the model's smallest
Eval batch, a fixed-batch model keeps its own, `default` is each model's Eval
default), one worker process (this file, --worker; a crash, an out-of-memory
kill or a hang past --timeout, 3600 s, costs that model only) with
--threads intra-op threads (1) and seed 1337:
  1. builds the eager module and its example inputs on --device (cpu; cuda:
     the first GPU, with cuDNN's benchmark and deterministic flags as
     TorchBench's metadata sets them for the model's Eval, as the program
     sets them): the pip-referenced models (versus_python.REFERENCES) as
     TorchBench's model factories build them
     (versus_python.build_pip_model: the module and input of versus-python's
     step; transformers called as model(input_ids=ids)), the others as
     TorchBench's own Model (a pytorch/benchmark checkout at 43ca0857,
     --reference-root or TORCHBENCH_REFERENCE_ROOT, built by
     tools/golden/reference_env.py's construct) and its get_module(): the
     (module, example_inputs) PyTorch's own dynamo benchmark harness compiles
     too. The module in eval mode is wrapped so that it takes the flat list
     of input tensors (torch.utils._pytree's leaves of (args, kwargs); the
     other leaves are constants of the wrapper) and returns the flat tuple of
     its output tensors (None and other leaves dropped): both backends compile
     the wrapper, so C++ feeds a vector of tensors and gets one back. The
     eager wrapper runs once: the reference outputs. Under no_grad, as
     TorchBench runs eval(), unless TorchBench's Model says eval_in_nograd()
     False (maml: its eval fine-tunes an inner model with autograd); then
     with autograd on, and so do the export, the trace and the timings (the
     manifest's "grad"). A package holds whatever the export or trace made
     of the gradient steps; the program runs it as any other.
  2. aoti: torch.export.export of the wrapper (on --device: a CUDA trace makes
     a CUDA package), non-strict first, then strict
     (with dynamo's capture_scalar_outputs and capture_dynamic_output_shape_ops
     for data-dependent operators), then torch.export.draft_export, which
     decides each data-dependent guard on these inputs' values (a runtime
     assert in the package checks it: the package holds this input's path,
     as a trace does); torch._inductor.aoti_compile_and_package
     with freezing (what PyTorch's own CPU inference benchmarks use; where
     freezing's weight prepacking fails, again without it, and why) into
     aoti.pt2; loaded back with aoti_load_package (AOTI_RUNTIME_CHECK_INPUTS=1)
     and run against eager.
  3. torchscript: torch.jit.trace of the wrapper (check_trace=False,
     strict=False), torch.jit.freeze (the unfrozen trace is kept, and said,
     when freezing fails), torch.jit.save into torchscript.pt; loaded back
     with torch.jit.load and run against eager. A trace records one path:
     the tracer's warnings (a tensor's value or size read in Python, frozen
     into the trace) are counted, the first one kept.
  4. beside them: inputs.safetensors and outputs.safetensors (the flat inputs
     and eager's outputs, keys "0", "1", ..., CPU tensors on any device: the
     program moves them to its own; eager runs twice, and where its two
     outputs differ, a forward that draws random numbers, the manifest says
     eager_repeatable false), weights.safetensors (every
     parameter and buffer of the original module by its own names, as
     versus-python exports them for --torchbench_weights; for the
     pip-referenced models only, whose ports the program checks on them,
     and none above 4 GiB),
     and manifest.json (tools/README.md, "Compiled models": what was compiled,
     on which device (and GPU), with which torch, threads and CPU flags (a
     CUDA package's host code is compiled for this CPU too), whether with
     autograd, the inputs' and outputs' shapes, each backend's status, phase
     and reason, its seconds and its largest errors against eager), and
     worker.log, the worker's own output.
  5. --time-python: the eager wrapper, the AOTI package and the TorchScript
     module run from Python, and torch.compile of the wrapper (inductor with
     freezing), each --warmup (3) then --steps (10) one-step samples in ms
     (on cuda each until the GPU has finished it: torch.cuda.synchronize).

--time-only (implies --time-python) compiles nothing: for each selected model
whose DIR/<model>/batch_size_<N>/manifest.json was made with this torch,
--threads, --device and a CPU with its flags (any other model: one line
saying why, skipped), a worker as above (its output in time.log) builds the
eager module and inputs as step 1 does (same seed and order; the manifest's
python_inputs_match says whether they equal inputs.safetensors) and times, on
the stored inputs, the eager wrapper, each package --backend selects whose
status is ok (loaded from its file) and torch.compile of the wrapper, as step
5. Only the manifest's Python fields change (python_eager_ms,
python_inputs_match, the backends' python_ms or python_reason,
python_compile); the packages, their compile seconds and index.json's entries
stay (marked python_times; the command is its python_times_made_with).

A backend's failure is a result (status failed, its phase: build, export,
compile, load or run for aoti; build, trace, save, load or run for
torchscript; and the first line of the error), not an error of the tool.
Packages go to DIR/<model>/batch_size_<N>/ (-o DIR, compiled/ by default);
DIR/index.json lists every package's status and is rewritten after each model,
so a run stopped early (Ctrl-C or a timeout's SIGTERM stops the workers too,
exit status 130) keeps what finished; models not rerun keep their entries,
and a model rerun with one backend keeps the other's package when it was
made with the same torch, threads, CPU and device (and GPU). One line per
model as it finishes, then a summary: the packages made per backend and the
failures grouped by phase and reason.
Seconds are wall time; inductor's caches (TORCHINDUCTOR_CACHE_DIR) make a
second compile of the same graph faster.

The program (build/benchmarks/torchbench, or --binary) runs a package with
--torchbench_backend=aoti|torchscript --torchbench_compiled=DIR (and
--torchbench_device=cuda for a CUDA package); it refuses one compiled for
another device, torch or CPU, or (on the CPU) another thread count.

Exit status: 0 every selected model was attempted (failures are results); 2
bad input (an unknown model or one without Eval, no reference root for a model
that runs TorchBench's code, a program that cannot list its models, an
unreadable DIR/index.json, --device cuda where torch sees no usable GPU).
"""

import argparse
import concurrent.futures
import contextlib
import datetime
import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings

from tbench import env, errors, files, program
from tbench.errors import InputError

import versus_python as vp

TOOL = "torchbench-compile"
BACKENDS = {"aoti": ("aoti",), "torchscript": ("torchscript",), "both": ("aoti", "torchscript")}
PACKAGE_FILES = {"aoti": "aoti.pt2", "torchscript": "torchscript.pt"}
INPUTS_FILE, OUTPUTS_FILE, WEIGHTS_FILE = ("inputs.safetensors", "outputs.safetensors",
                                           "weights.safetensors")
MANIFEST, INDEX, LOG, TIME_LOG = "manifest.json", "index.json", "worker.log", "time.log"
# The CPU flags a package's kernels may use: the program refuses to run one
# where any flag of its manifest is missing.
CPU_FLAGS = ("avx2", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "fma", "f16c")
# aoti_compile_and_package's inductor configs (every one is in the manifest):
# freezing, as PyTorch's CPU inference benchmarks compile.
INDUCTOR_CONFIGS = {"freezing": True}
# Dynamo's configs for the strict export, tried when non-strict fails: a
# data-dependent operator (nonzero, item) becomes an unbacked symbol instead
# of a graph break.
STRICT_DYNAMO_CONFIGS = {"capture_scalar_outputs": True, "capture_dynamic_output_shape_ops": True}
WEIGHTS_LIMIT = 4 * 2**30
# The manifest's keys in this order (a reader's order; any others follow).
MANIFEST_KEYS = ("format", "model", "mode", "batch_size", "device", "gpu", "torch_version",
                 "threads", "cpu_flags", "cpu_capability", "reference", "compiled_forward",
                 "grad", "cudnn", "inputs",
                 "outputs", "eager_repeatable", "inputs_file", "outputs_file", "weights_file",
                 "weights_bytes",
                 "python_eager_ms", "backends", "python_compile")
# The reason of a phase under way: a worker that dies there leaves it, and the
# driver puts why the worker ended in its place.
UNDER_WAY = "under way when the worker ended"
SEED = 1337


# --- the eager module, flat -------------------------------------------------------

def build_module(spec):
    """(module in eval mode, args, kwargs, grad) of the model `spec` names,
    on spec's device; grad: whether TorchBench runs its eval with autograd
    on (reference_env.eval_needs_grad; never for the pip references, whose
    eval is a forward under no_grad)."""
    name, batch_size, device = spec["model"], spec["batch_size"], spec.get("device", "cpu")
    grad = False
    if spec.get("stand_in"):
        stand_in = load_stand_in(spec["stand_in"])
        module, example = stand_in.build(name, batch_size, device)
        grad = not stand_in.eval_in_nograd(name)
    elif name in vp.REFERENCES:
        module, x = vp.build_pip_model(name, "Eval", batch_size, device)
        # TorchBench's HuggingFaceModel calls model(input_ids=...).
        example = {"input_ids": x} if vp.REFERENCES[name][0] == "transformers" else (x,)
    else:
        import reference_env  # tools/golden/reference_env.py: GOLDEN is on the worker's path

        tb_model = reference_env.construct(spec["reference_root"], name, "eval", batch_size,
                                           device)
        grad = reference_env.eval_needs_grad(tb_model)
        module, example = tb_model.get_module()
    if not hasattr(module, "eval"):
        raise TypeError(f"get_module() returned a {type(module).__name__}, not a module")
    module.eval()
    if isinstance(example, dict):
        args, kwargs = (), dict(example)
    elif isinstance(example, (tuple, list)):
        args, kwargs = tuple(example), {}
    else:
        args, kwargs = (example,), {}
    return module, args, kwargs, grad


def eager_module(spec, device):
    """build_module(spec) as compiling and timing both build it: under
    no_grad, and on CUDA with cuDNN's algorithm choice as TorchBench's
    metadata sets it for the model's Eval (and as the program sets it around
    the package)."""
    import torch

    if device == "cuda" and not spec.get("stand_in"):
        vp.apply_cudnn_flags(spec["model"], "Eval")
    with torch.no_grad():
        return build_module(spec)


def load_stand_in(path):
    """The test-only stand-in (--stand-in FILE): a Python file whose
    build(name, batch_size, device) returns (module, example_inputs) as
    get_module, and whose eval_in_nograd(name) answers as TorchBench's
    Model."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("compile_stand_in", path)
    stand_in = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stand_in)
    return stand_in


def flat_module(module, args, kwargs):
    """(wrapper, input tensors): wrapper(*tensors) calls module(*args,
    **kwargs) with those tensors in their places, the other leaves of
    (args, kwargs) as constants, and returns the tensors among its output's
    leaves as a tuple."""
    import torch
    import torch.utils._pytree as pytree

    leaves, tree = pytree.tree_flatten((tuple(args), dict(kwargs)))
    places = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self, *tensors):
            filled = list(leaves)
            for i, t in zip(places, tensors):
                filled[i] = t
            a, k = pytree.tree_unflatten(filled, tree)
            return tuple(x for x in pytree.tree_leaves(self.module(*a, **k))
                         if isinstance(x, torch.Tensor))

    return Flat().eval(), [leaves[i] for i in places]


def clones(tensors):
    """Detached copies in the canonical contiguous layout (a step may write
    into its inputs): contiguous() keeps a size-1 dimension's odd stride,
    which an export records and the program's inputs, read back from
    safetensors, do not have (AOTInductor's check: "unmatched stride value
    at 0")."""
    import torch

    return [t.detach().clone(memory_format=torch.contiguous_format) for t in tensors]


def describe(tensors):
    return [{"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
            for t in tensors]


def save_tensors(tensors, path):
    """The tensors as safetensors, keys "0", "1", ..., on the CPU (the
    program moves them to its device), written atomically."""
    from safetensors.torch import save_file

    with files.replacing(path) as tmp:
        save_file({str(i): t for i, t in enumerate(clones(t.cpu() for t in tensors))}, tmp)


def number(x):
    """A float for JSON: finite as it is (6 significant digits), else "inf"
    or "nan"."""
    return float(f"{x:.6g}") if math.isfinite(x) else str(x)


def largest_errors(got, want):
    """(largest |got - want|, that over the largest |want|) over every output
    (the program's LargestRelativeError; where both are NaN, 0), on the CPU
    as the program compares them. Raises when the counts, shapes or dtypes
    differ."""
    import torch

    got = list(got) if isinstance(got, (tuple, list)) else [got]
    if len(got) != len(want):
        raise RuntimeError(f"{len(got)} outputs, eager has {len(want)}")
    largest_abs = largest_rel = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            raise RuntimeError(f"output {i} is {g.dtype} {list(g.shape)}, eager's "
                               f"{w.dtype} {list(w.shape)}")
        if w.numel() == 0:
            continue
        g, w = g.detach().cpu(), w.detach().cpu()
        if w.is_complex():
            diff, scale = (g - w).abs().double(), w.abs().double()
        else:
            diff, scale = (g.double() - w.double()).abs(), w.double().abs()
        diff = torch.where(g.isnan() & w.isnan(), 0.0, diff.nan_to_num(math.inf))
        d, s = diff.max().item(), scale.nan_to_num(0.0).max().item()
        largest_abs = max(largest_abs, d)
        largest_rel = max(largest_rel, d / s if s > 0 else (0.0 if d == 0 else math.inf))
    return number(largest_abs), number(largest_rel)


def synchronize(device):
    """Waits for the device's queued work: CUDA kernels run after the call
    that launched them returns, so a clock read without this times the
    launches only."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def step_times(call, warmup, steps, device="cpu"):
    """--warmup calls, then --steps timed one by one (ms), each until its
    work on `device` has finished."""
    for _ in range(warmup):
        call()
    synchronize(device)
    out = []
    for _ in range(steps):
        start = time.perf_counter()
        call()
        synchronize(device)
        out.append(round((time.perf_counter() - start) * 1e3, 4))
    return out


# --- the backends -------------------------------------------------------------------

class Failed(Exception):
    """A backend's phase failed: its entry's phase and reason."""

    def __init__(self, phase, reason, **extra):
        super().__init__(reason)
        self.phase, self.reason, self.extra = phase, reason, extra


@contextlib.contextmanager
def phase(name, note):
    """A phase of a backend: the manifest says it is under way (note), and
    an exception in it becomes Failed(name, its first line)."""
    note(name)
    try:
        yield
    except Failed:
        raise
    except (Exception, SystemExit) as e:
        traceback.print_exc()  # the whole story in worker.log
        raise Failed(name, errors.reason(e)) from e


def seconds_since(start):
    return round(time.perf_counter() - start, 3)


def compile_aoti(wrapper, inputs, outputs, directory, entry, note, timing):
    """aoti: export (non-strict, then strict, then draft), compile and
    package (with freezing, else without), load,
    run against eager; fills `entry`."""
    import torch

    path = directory / PACKAGE_FILES["aoti"]
    with phase("export", note):
        start = time.perf_counter()
        try:
            exported = torch.export.export(wrapper, tuple(clones(inputs)), strict=False)
            entry["export"] = "non-strict"
        except Exception as e:  # non-strict failed: strict, as PyTorch's harness falls back
            traceback.print_exc()
            non_strict = errors.reason(e)
            start = time.perf_counter()
            try:
                with torch._dynamo.config.patch(**STRICT_DYNAMO_CONFIGS):
                    exported = torch.export.export(wrapper, tuple(clones(inputs)), strict=True)
                entry.update(export="strict", dynamo_configs=dict(STRICT_DYNAMO_CONFIGS),
                             non_strict_reason=non_strict)
            except Exception as strict:
                traceback.print_exc()
                strict_reason = errors.reason(strict)
                # Last, draft_export: each data-dependent guard (a count of
                # boxes above a threshold, a branch on a value) is decided by
                # these inputs' real values and checked by a runtime assert
                # in the package, which then holds this input's path only, as
                # a trace does; the program feeds it these inputs only.
                start = time.perf_counter()
                try:
                    exported = torch.export.draft_export(wrapper, tuple(clones(inputs)))
                except Exception as draft:
                    traceback.print_exc()
                    raise Failed("export", f"non-strict: {non_strict}"[:300],
                                 strict_reason=strict_reason,
                                 draft_reason=errors.reason(draft)) from draft
                entry.update(export="draft", non_strict_reason=non_strict,
                             strict_reason=strict_reason)
        entry["export_seconds"] = seconds_since(start)
    with phase("compile", note):
        configs = dict(INDUCTOR_CONFIGS)
        entry["inductor_configs"] = configs
        start = time.perf_counter()  # both attempts count
        try:
            torch._inductor.aoti_compile_and_package(exported, package_path=str(path),
                                                     inductor_configs=dict(configs))
        except Exception as e:
            if not configs.get("freezing"):
                raise
            # Freezing's weight prepacking fails on some graphs (after a
            # draft export: copy_mkldnn_ between mkldnn and dense layouts):
            # the package without it, and why.
            traceback.print_exc()
            entry["freezing_reason"] = errors.reason(e)
            configs["freezing"] = False
            torch._inductor.aoti_compile_and_package(exported, package_path=str(path),
                                                     inductor_configs=dict(configs))
        entry["compile_seconds"] = seconds_since(start)
    with phase("load", note):
        runner = load_package("aoti", path)
    with phase("run", note):
        entry["max_abs_error"], entry["max_rel_error"] = largest_errors(
            runner(*clones(inputs)), outputs)
        if timing:
            entry["python_ms"] = step_times(lambda: runner(*inputs), *timing)


def compile_torchscript(wrapper, inputs, outputs, directory, entry, note, timing):
    """torchscript: trace, freeze (or say why not), save, load, run
    against eager; fills `entry`."""
    import torch

    path = directory / PACKAGE_FILES["torchscript"]
    with phase("trace", note), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", torch.jit.TracerWarning)
        start = time.perf_counter()
        traced = torch.jit.trace(wrapper, tuple(clones(inputs)), check_trace=False,
                                 strict=False)
        entry["trace_seconds"] = seconds_since(start)
    # A value the trace turned into a constant (a tensor's value or size read
    # in Python): the trace may hold only these inputs' path.
    tracer = [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
    if tracer:
        entry["trace_warnings"] = len(tracer)
        entry["trace_warning"] = str(tracer[0].message).splitlines()[0][:300]
    with phase("trace", note):
        start = time.perf_counter()
        try:
            traced = torch.jit.freeze(traced.eval())
            entry["method"] = "trace+freeze"
            entry["freeze_seconds"] = seconds_since(start)
        except Exception as e:  # the unfrozen trace still runs
            traceback.print_exc()
            entry.update(method="trace", freeze_reason=errors.reason(e))
    with phase("save", note):
        with files.replacing(path) as tmp:
            torch.jit.save(traced, tmp)
    with phase("load", note):
        loaded = load_package("torchscript", path)
    with phase("run", note):
        entry["max_abs_error"], entry["max_rel_error"] = largest_errors(
            loaded(*clones(inputs)), outputs)
        if timing:
            entry["python_ms"] = step_times(lambda: loaded(*inputs), *timing)


COMPILERS = {"aoti": compile_aoti, "torchscript": compile_torchscript}


def load_package(backend, path):
    """A package loaded back in this process as the backend's Python API
    loads it: aoti_load_package, torch.jit.load."""
    import torch

    if backend == "aoti":
        return torch._inductor.aoti_load_package(str(path))
    return torch.jit.load(str(path))


def time_torch_compile(wrapper, inputs, outputs, entry, note, timing):
    """torch.compile of the wrapper (inductor, freezing): its first call's
    seconds, its errors against eager, its steps."""
    import torch

    with torch._inductor.config.patch(freezing=True):
        with phase("compile", note):
            compiled = torch.compile(wrapper)
            start = time.perf_counter()
            got = compiled(*clones(inputs))
            synchronize(timing[2])
            entry["compile_seconds"] = seconds_since(start)
        with phase("run", note):
            entry["max_abs_error"], entry["max_rel_error"] = largest_errors(got, outputs)
            entry["ms"] = step_times(lambda: compiled(*inputs), *timing)


# --- the worker (a process per model) -------------------------------------------------

def failed(phase_name, reason, **extra):
    return {"status": "failed", "phase": phase_name, "reason": reason[:300], **extra}


def new_manifest(spec, reference):
    import torch

    return {"format": 1, "model": spec["model"], "mode": "Eval",
            "batch_size": spec["batch_size"], "device": spec.get("device", "cpu"),
            "torch_version": torch.__version__, "threads": torch.get_num_threads(),
            "cpu_flags": cpu_flags(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "reference": reference,
            "compiled_forward": "reference_forward" if spec["model"] in vp.REFERENCES
            and not spec.get("stand_in") else "get_module",
            # Known once the model is built.
            "grad": None,
            "inputs": [], "outputs": [], "inputs_file": None, "outputs_file": None,
            "weights_file": None, "backends": {}}


def gpu():
    """The GPU a CUDA package is compiled for: its kernels are built for
    this capability (another GPU may lack it)."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"name": props.name, "capability": f"{props.major}.{props.minor}",
            "cuda_version": torch.version.cuda}


def cpu_flags():
    """CPU_FLAGS that this machine's /proc/cpuinfo lists, sorted."""
    return sorted(env.machine(CPU_FLAGS)[1].split())


def write_manifest(directory, manifest):
    ordered = {k: manifest[k] for k in MANIFEST_KEYS if k in manifest}
    files.write_json(directory / MANIFEST, {**ordered, **manifest})


def read_manifest(directory):
    try:
        with open(directory / MANIFEST) as f:
            doc = json.load(f)
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError):
        return None


def keep_previous(directory, manifest, rerun, timed, previous):
    """Into `manifest`, what this run does not redo from the directory's
    previous manifest when it was made with the same torch, threads, CPU,
    device (and GPU) and batch: the entries of the backends not rerun (their
    packages stay; the others are removed) and, unless timed, its Python
    times."""
    old = previous or {}
    same = all(old.get(k, "cpu" if k == "device" else None) == manifest.get(k)
               for k in ("format", "model", "batch_size", "device", "gpu", "torch_version",
                         "threads", "cpu_flags", "cpu_capability"))
    for backend, name in PACKAGE_FILES.items():
        entry = (old.get("backends") or {}).get(backend)
        if same and backend not in rerun and isinstance(entry, dict):
            manifest["backends"][backend] = entry
        else:
            with contextlib.suppress(FileNotFoundError):
                (directory / name).unlink()
    for key in ("python_eager_ms", "python_compile"):
        if same and not timed and key in old:
            manifest[key] = old[key]


def autograd(grad):
    """The grad mode a model's eager run, export, trace and timings run in:
    TorchBench's for its eval (no_grad unless the model needs autograd
    there, as maml does)."""
    import torch

    return torch.enable_grad() if grad else torch.no_grad()


def worker(spec):
    """Build, flatten, run eager, compile with each backend, time; the
    manifest is rewritten at every phase (a phase under way is a failure
    whose reason the driver fills when the worker dies there)."""
    import torch

    os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = "1"
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    directory = pathlib.Path(spec["directory"])
    device = spec.get("device", "cpu")
    reference = "stand-in" if spec.get("stand_in") else vp.reference_kind(spec["model"])
    manifest = new_manifest(spec, reference)
    if device == "cuda":
        manifest["gpu"] = gpu()
    timing = (spec["warmup"], spec["steps"], device) if spec.get("time_python") else None
    keep_previous(directory, manifest, spec["backends"], timing, spec.get("previous"))
    for backend in spec["backends"]:
        manifest["backends"][backend] = failed("build", UNDER_WAY)
    if timing:
        manifest["python_compile"] = failed("build", UNDER_WAY)

    def save():
        write_manifest(directory, manifest)

    for name in (INPUTS_FILE, OUTPUTS_FILE, WEIGHTS_FILE):  # this run's, or none
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
    save()
    try:
        module, args, kwargs, grad = eager_module(spec, device)
        manifest["grad"] = grad
        if device == "cuda":
            manifest["cudnn"] = {"benchmark": torch.backends.cudnn.benchmark,
                                 "deterministic": torch.backends.cudnn.deterministic}
        with autograd(grad):
            wrapper, inputs = flat_module(module, args, kwargs)
            inputs = clones(inputs)  # the stored inputs, before any step writes into them
            outputs = [t.detach() for t in wrapper(*clones(inputs))]
            if not outputs:
                # drq's actor returns a torch.distributions object, doctr's
                # predictors Python values: nothing to time or check.
                raise RuntimeError("its forward returns no tensor (none among its "
                                   "outputs once flattened)")
            # Once more on the same inputs: a forward that draws random
            # numbers (hf_Reformer's LSH rotations) differs from itself, and
            # its packages' outputs cannot be held to a bound (the program
            # then reports its error without failing the instance).
            again = [t.detach() for t in wrapper(*clones(inputs))]
            manifest["eager_repeatable"] = largest_errors(again, outputs)[1] <= 1e-6
            del again
            manifest.update(inputs=describe(inputs), outputs=describe(outputs))
            save_tensors(inputs, directory / INPUTS_FILE)
            save_tensors(outputs, directory / OUTPUTS_FILE)
            manifest.update(inputs_file=INPUTS_FILE, outputs_file=OUTPUTS_FILE)
            weights = vp.module_tensors(module)
            manifest["weights_bytes"] = sum(t.numel() * t.element_size() for t in weights.values())
            # Only the pip references' weights: the program loads them into
            # the port for its second fidelity check, which needs the port to
            # take the reference's own inputs (checks.h's FidelityCheck); a
            # TorchBench model's get_module() forward is not its port's
            # Eval step, and its weights would only fill the disk (dlrm's
            # are 2.4 GB). The tests' stand-in stands for a pip reference.
            if (manifest["weights_bytes"] <= WEIGHTS_LIMIT
                    and manifest["reference"].split(":")[0] in ("pip", "stand-in")):
                with files.replacing(directory / WEIGHTS_FILE) as tmp:
                    vp.save_weights(weights, tmp)
                manifest["weights_file"] = WEIGHTS_FILE
            del weights
    except (Exception, SystemExit) as e:
        traceback.print_exc()
        reason = errors.reason(e)
        for backend, name in PACKAGE_FILES.items():  # a kept package has no inputs now
            manifest["backends"].pop(backend, None)
            with contextlib.suppress(FileNotFoundError):
                (directory / name).unlink()
        manifest.pop("python_eager_ms", None)
        manifest.pop("python_compile", None)
        for backend in spec["backends"]:
            manifest["backends"][backend] = failed("build", reason)
        if timing:
            manifest["python_compile"] = failed("build", reason)
        save()
        return 0
    save()
    if timing:
        with autograd(grad):
            manifest["python_eager_ms"] = step_times(lambda: wrapper(*inputs), *timing)
    for backend in spec["backends"]:
        entry = {"status": "ok", "file": PACKAGE_FILES[backend]}

        def note(name, backend=backend):
            manifest["backends"][backend] = failed(name, UNDER_WAY)
            save()

        try:
            with autograd(grad):
                COMPILERS[backend](wrapper, inputs, outputs, directory, entry, note, timing)
            manifest["backends"][backend] = entry
        except Failed as f:
            with contextlib.suppress(FileNotFoundError):
                (directory / PACKAGE_FILES[backend]).unlink()
            entry.pop("file")
            entry.pop("status")
            manifest["backends"][backend] = failed(f.phase, f.reason, **entry, **f.extra)
        save()
    if timing:
        python_compile(manifest, wrapper, inputs, outputs, grad, timing, save)
    return 0


def python_compile(manifest, wrapper, inputs, outputs, grad, timing, save):
    """The manifest's python_compile: torch.compile of the wrapper timed
    (time_torch_compile), or its failure's phase and reason."""
    entry = {"status": "ok"}

    def note_compile(name):
        manifest["python_compile"] = failed(name, UNDER_WAY)
        save()

    try:
        with autograd(grad):
            time_torch_compile(wrapper, inputs, outputs, entry, note_compile, timing)
        manifest["python_compile"] = entry
    except Failed as f:
        entry.pop("status")
        manifest["python_compile"] = failed(f.phase, f.reason, **entry, **f.extra)
    save()


def same_tensors(got, want):
    """Whether two lists of tensors are equal: count, dtype, shape and every
    value (NaN equal to NaN), compared on the CPU."""
    import torch

    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        try:
            torch.testing.assert_close(g.detach().cpu(), w.detach().cpu(), rtol=0, atol=0,
                                       equal_nan=True)
        except AssertionError:
            return False
    return True


def load_tensors(path):
    """The tensors of a safetensors file save_tensors wrote, in key order."""
    from safetensors.torch import load_file

    stored = load_file(str(path))
    return [stored[str(i)] for i in range(len(stored))]


def time_worker(spec):
    """--time-only: the Python side of the packages already in the
    directory, not compiled again. The eager module and inputs are built as
    worker() builds them (same seed, same order: the stored inputs are
    reproduced, and python_inputs_match says whether they were); eager, each
    selected package whose status is ok (loaded from its file) and
    torch.compile of the wrapper are timed on the stored inputs. Only the
    Python fields of the manifest change: python_eager_ms,
    python_inputs_match, backends.<b>.python_ms (or python_reason, why it
    could not be timed) and python_compile."""
    import torch

    os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = "1"
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    directory = pathlib.Path(spec["directory"])
    device = spec.get("device", "cpu")
    timing = (spec["warmup"], spec["steps"], device)
    manifest = read_manifest(directory)
    timed = [b for b in spec["backends"]
             if (manifest["backends"].get(b) or {}).get("status") == "ok"]
    # This run's times or none: a worker that dies leaves no stale ones.
    manifest.pop("python_eager_ms", None)
    manifest.pop("python_inputs_match", None)
    for backend in timed:
        manifest["backends"][backend].pop("python_ms", None)
        manifest["backends"][backend].pop("python_reason", None)
    manifest["python_compile"] = failed("build", UNDER_WAY)

    def save():
        write_manifest(directory, manifest)

    save()
    try:
        module, args, kwargs, grad = eager_module(spec, device)
        with autograd(grad):
            wrapper, built = flat_module(module, args, kwargs)
            built = clones(built)
        inputs = load_tensors(directory / manifest["inputs_file"])
        outputs = load_tensors(directory / manifest["outputs_file"])
    except (Exception, SystemExit) as e:
        traceback.print_exc()
        manifest["python_compile"] = failed("build", errors.reason(e))
        save()
        return 0
    manifest["python_inputs_match"] = same_tensors(built, inputs)
    del built
    inputs = [t.to(device) for t in inputs]
    with autograd(grad):
        manifest["python_eager_ms"] = step_times(lambda: wrapper(*inputs), *timing)
    save()
    for backend in timed:
        entry = manifest["backends"][backend]
        try:
            with autograd(grad):
                package = load_package(backend, directory / PACKAGE_FILES[backend])
                entry["python_ms"] = step_times(lambda: package(*inputs), *timing)
        except Exception as e:
            traceback.print_exc()
            entry["python_reason"] = errors.reason(e)[:300]
        package = None
        save()
    python_compile(manifest, wrapper, inputs, outputs, grad, timing, save)
    return 0


# --- the driver ----------------------------------------------------------------------------

# The workers running ({pid: process}), each its own process group, and
# whether the run is stopping (Ctrl-C or SIGTERM): no new worker starts.
_running = {}
_stopping = threading.Event()


def run_worker(spec, directory, timeout, log_name=LOG):
    """The worker in its own process group (its compiler children die with
    it), its output in worker.log (or log_name); None when it ended well,
    else why not."""
    if _stopping.is_set():
        return "interrupted"
    environment = env.thread_env(spec["threads"])
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(vp.GOLDEN)] + [p for p in [environment.get("PYTHONPATH")] if p])
    environment["AOTI_RUNTIME_CHECK_INPUTS"] = "1"
    log = directory / log_name
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)],
                                stdout=out, stderr=subprocess.STDOUT, env=environment,
                                start_new_session=True)
        _running[proc.pid] = proc
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.wait()
            return f"timed out after {timeout} s"
        finally:
            _running.pop(proc.pid, None)
    kill_group(proc.pid)  # a compiler child left behind
    if _stopping.is_set():
        return "interrupted"
    if proc.returncode == 0:
        return None
    with open(log, "rb") as f:
        f.seek(max(0, os.path.getsize(log) - 65536))
        tail = f.read().decode(errors="replace")
    ended = subprocess.CompletedProcess(proc.args, proc.returncode, None, tail)
    return f"the worker died ({vp.why_ended(ended)[:260]})"


def kill_group(pid):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def finish_manifest(spec, directory, died):
    """The worker's manifest with every phase it left under way failed for
    `died`; a manifest of the driver's own (every backend failed at build)
    when it wrote none."""
    manifest = read_manifest(directory)
    why = died or "the worker ended without finishing it"
    if manifest is None or manifest.get("model") != spec["model"]:
        manifest = new_manifest(spec, "stand-in" if spec.get("stand_in")
                                else vp.reference_kind(spec["model"]))
        manifest["threads"] = spec["threads"]
        manifest["backends"] = {b: failed("build", why) for b in spec["backends"]}
        if spec.get("time_python"):
            manifest["python_compile"] = failed("build", why)
    else:
        entries = [*manifest.get("backends", {}).values(), manifest.get("python_compile") or {}]
        for entry in entries:
            if entry.get("reason") == UNDER_WAY:
                entry["reason"] = why
    for backend, name in PACKAGE_FILES.items():  # what a killed compiler left half-written
        if manifest["backends"].get(backend, {}).get("status") != "ok":
            with contextlib.suppress(FileNotFoundError):
                (directory / name).unlink()
    write_manifest(directory, manifest)
    return manifest


def compile_model(model, batch_size, args, root, out_dir):
    """One model's worker; (its manifest, seconds)."""
    directory = out_dir / model / f"batch_size_{batch_size}"
    directory.mkdir(parents=True, exist_ok=True)
    spec = {"model": model, "batch_size": batch_size, "device": args.device,
            "threads": args.threads, "seed": SEED,
            "reference_root": root, "backends": list(BACKENDS[args.backend]),
            "directory": str(directory), "time_python": args.time_python,
            "warmup": args.warmup, "steps": args.steps, "stand_in": args.stand_in,
            # The worker keeps the entries of the backends it does not rerun; a
            # manifest in the directory is always this run's.
            "previous": read_manifest(directory)}
    with contextlib.suppress(FileNotFoundError):
        (directory / MANIFEST).unlink()
    start = time.perf_counter()
    died = run_worker(spec, directory, args.timeout)
    return finish_manifest(spec, directory, died), time.perf_counter() - start


def timing_skip(manifest, args, torch_version):
    """Why --time-only cannot time this directory's packages (None: it can):
    none there, or made with another torch, thread count, device or CPU."""
    if manifest is None:
        return f"no {MANIFEST}"
    for key, here in (("torch_version", torch_version), ("threads", args.threads),
                      ("device", args.device)):
        there = manifest.get(key, "cpu" if key == "device" else None)
        if there != here:
            return f"made with {key} {there}, this run's is {here}"
    missing = sorted(set(manifest.get("cpu_flags") or []) - set(cpu_flags()))
    if missing:
        return f"made on a CPU with {', '.join(missing)}, which this one lacks"
    if not manifest.get("inputs_file") or not manifest.get("outputs_file"):
        return "no stored inputs (its build failed)"
    return None


def time_model(model, batch_size, args, root, out_dir):
    """--time-only: one model's timing worker on its existing packages;
    (its manifest, seconds). Its log is time.log (worker.log stays the
    compile's)."""
    directory = out_dir / model / f"batch_size_{batch_size}"
    spec = {"model": model, "batch_size": batch_size, "device": args.device,
            "threads": args.threads, "seed": SEED, "reference_root": root,
            "backends": list(BACKENDS[args.backend]), "directory": str(directory),
            "time_only": True, "warmup": args.warmup, "steps": args.steps,
            "stand_in": args.stand_in}
    start = time.perf_counter()
    died = run_worker(spec, directory, args.timeout, TIME_LOG)
    manifest = read_manifest(directory)
    entry = manifest.get("python_compile") or {}
    if entry.get("reason") == UNDER_WAY:
        entry["reason"] = died or "the worker ended without finishing it"
        write_manifest(directory, manifest)
    return manifest, time.perf_counter() - start


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if len(values) % 2 else (
        values[len(values) // 2 - 1] + values[len(values) // 2]) / 2


def timing_line(manifest, rerun, elapsed):
    """--time-only's line of one model: the median step of each Python
    timing, whether the inputs were reproduced, torch.compile's result."""
    parts = []
    if "python_eager_ms" in manifest:
        parts.append(f"eager {median(manifest['python_eager_ms']):.3g} ms")
    for b in rerun:
        entry = manifest.get("backends", {}).get(b) or {}
        if "python_ms" in entry:
            parts.append(f"{b} {median(entry['python_ms']):.3g} ms")
        elif "python_reason" in entry:
            parts.append(f"{b} not timed: {entry['python_reason'][:120]}")
        else:
            parts.append(f"{b} not timed (no package: {entry.get('status', 'none')})")
    entry = manifest.get("python_compile") or {}
    if entry.get("status") == "ok":
        parts.append(f"torch.compile {median(entry['ms']):.3g} ms (compile "
                     f"{seconds(entry['compile_seconds'])}; rel. error "
                     f"{entry.get('max_rel_error')})")
    else:
        parts.append(backend_text("torch.compile", entry))
    if "python_inputs_match" in manifest:
        parts.append("inputs reproduced" if manifest["python_inputs_match"]
                     else "inputs NOT reproduced (timed on the stored ones)")
    return (f"{manifest['model']} b{manifest['batch_size']}: " + "; ".join(parts)
            + f"; {seconds(elapsed)}")


def note_python_times(path, manifest, argv):
    """index.json (when there is one) with the entries of the manifest's
    model and batch marked python_times (the rest as it was) and the
    --time-only command beside made_with."""
    if not path.exists() or "python_eager_ms" not in manifest:
        return
    with open(path) as f:
        doc = json.load(f)
    key = (manifest["model"], manifest["batch_size"])
    for e in doc.get("entries", []):
        if (e.get("model"), e.get("batch_size")) == key:
            e["python_times"] = True
    doc["python_times_made_with"] = published_command(argv)
    doc["python_times_date"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    files.write_json(path, doc)


def index_entries(manifest):
    """The index's entries of one manifest, a backend each."""
    out = []
    for backend, entry in sorted(manifest.get("backends", {}).items()):
        row = {"model": manifest["model"], "batch_size": manifest["batch_size"],
               "device": manifest.get("device", "cpu"), "backend": backend,
               "status": entry.get("status")}
        for key in ("phase", "reason"):
            if key in entry:
                row[key] = entry[key]
        row.update({k: v for k, v in entry.items() if k.endswith("_seconds")})
        if "python_eager_ms" in manifest:
            row["python_times"] = True  # in the manifest
        row["path"] = f"{manifest['model']}/batch_size_{manifest['batch_size']}"
        out.append(row)
    return out


def read_index(path):
    """The entries of an earlier run's index.json ([] without one)."""
    if not path.exists():
        return []
    try:
        with open(path) as f:
            doc = json.load(f)
        if not (isinstance(doc, dict) and isinstance(doc.get("entries"), list)):
            raise ValueError("no entries")
        return doc["entries"]
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not an index this tool wrote ({e}); move it away or "
                         "choose another -o") from None


def merged(entries, manifest):
    """`entries` with those of the manifest's model and batch replaced."""
    key = (manifest["model"], manifest["batch_size"])
    kept = [e for e in entries if (e.get("model"), e.get("batch_size")) != key]
    return sorted(kept + index_entries(manifest),
                  key=lambda e: (str(e.get("model")), e.get("batch_size") or 0,
                                 str(e.get("backend"))))


def write_index(path, entries, args, argv, torch_version):
    cpu, _ = env.machine()
    files.write_json(path, {
        "format": 1, "made_with": published_command(argv),
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "torch_version": torch_version, "device": args.device, "threads": args.threads,
        "machine": {"cpu": cpu, "cores": os.cpu_count(), "cpu_flags": cpu_flags()},
        "entries": entries})


def seconds(value):
    return f"{value:.1f} s"


def backend_text(backend, entry):
    if entry.get("status") == "ok":
        times = ", ".join(f"{k.removesuffix('_seconds')} {seconds(v)}"
                          for k, v in entry.items() if k.endswith("_seconds"))
        return f"{backend} ok ({times}; rel. error {entry.get('max_rel_error')})"
    return f"{backend} failed at {entry.get('phase')}: {entry.get('reason', '')[:120]}"


def line(manifest, rerun, timed, elapsed):
    parts = [backend_text(b, manifest["backends"][b]) for b in rerun
             if b in manifest.get("backends", {})]
    if timed and "python_compile" in manifest:
        parts.append(backend_text("torch.compile", manifest["python_compile"]))
    return (f"{manifest['model']} b{manifest['batch_size']}: " + "; ".join(parts)
            + f"; {seconds(elapsed)}")


def summary(manifests, rerun):
    """Lines: the packages made per backend, the failures grouped by backend,
    phase and the reason's first words."""
    out = [f"compile: {len(manifests)} model(s); " + ", ".join(
        f"{b} ok {sum(m['backends'][b]['status'] == 'ok' for m in manifests)} of "
        f"{len(manifests)}" for b in rerun)]
    groups = {}
    for m in manifests:
        for b in rerun:
            entry = m["backends"][b]
            if entry["status"] != "ok":
                words = " ".join(entry.get("reason", "").split()[:6])
                groups.setdefault((b, entry["phase"], words), []).append(m["model"])
    for (b, phase_name, words), models in sorted(groups.items(), key=lambda g: -len(g[1])):
        out.append(f"compile: {b} failed at {phase_name} ({len(models)}): {words} ...: "
                   f"{', '.join(models)}")
    return out


# --- the command line ---------------------------------------------------------------------

def published_command(argv, cwd=None):
    """The command as index.json records it (versus-python's rule: a path
    inside the checkout relative to its root, any other its placeholder)."""
    options = {**vp.PATH_OPTIONS, "-o": "DIR", "--output": "DIR", "--stand-in": "STAND_IN"}
    text = vp.published_command(argv, cwd, options)
    return "tools/tb compile" + text[len("tools/tb versus-python"):]


def parse_args(argv):
    p = errors.ArgumentParser(prog="tools/tb compile", tool="compile", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="*", metavar="MODEL",
                   help="default: every model with an Eval mode")
    p.add_argument("--backend", choices=sorted(BACKENDS), default="both")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the module, its inputs and the packages run (cuda: the "
                        "program runs the package with --torchbench_device=cuda)")
    p.add_argument("--batch-size", default="1", help="N, or default (each model's own)")
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads while compiling (a package compiled at 1 has no "
                        "parallel regions); the program runs it at the same count")
    p.add_argument("--reference-root", default=os.environ.get("TORCHBENCH_REFERENCE_ROOT"),
                   metavar="CHECKOUT", help="a pytorch/benchmark checkout at 43ca0857 "
                   "(default: TORCHBENCH_REFERENCE_ROOT)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per model")
    p.add_argument("--jobs", type=int, default=1, help="models compiled side by side")
    p.add_argument("--binary", default=program.DEFAULT, metavar="PROGRAM")
    p.add_argument("--time-python", action="store_true",
                   help="also time eager, the packages and torch.compile from Python")
    p.add_argument("--time-only", action="store_true",
                   help="time the packages already in DIR from Python (as --time-python), "
                        "without compiling again: only the manifests' Python fields change")
    p.add_argument("--warmup", type=int, default=3, help="--time-python's warm-up calls")
    p.add_argument("--steps", type=int, default=10, help="--time-python's timed calls")
    p.add_argument("-o", "--output", default="compiled", metavar="DIR")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    # Test-only (tests/analysis/test_compile_models.py): every model is built
    # by this Python file's build(name, batch_size) -> (module, example_inputs)
    # instead of its reference; its manifests say reference "stand-in".
    p.add_argument("--stand-in", metavar="FILE", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return args
    p.check_batch_size(args.batch_size)
    for flag, value in (("--threads", args.threads), ("--timeout", args.timeout),
                        ("--jobs", args.jobs), ("--steps", args.steps)):
        if value < 1:
            p.error(f"{flag} must be positive, not {value}")
    if args.warmup < 0:
        p.error(f"--warmup must not be negative, not {args.warmup}")
    if args.stand_in:
        args.stand_in = os.path.abspath(args.stand_in)
    if args.time_only:
        args.time_python = True
    return args


def eval_batch_size(spec, requested):
    """The Eval batch size the program runs for `requested` ("default" or
    N): the model's own when fixed or asked for, else N raised to its
    smallest."""
    if spec["fixed_batch_size"] or requested == "default":
        return spec["eval_batch_size"]
    return max(int(requested), spec["min_eval_batch_size"])


def select(args):
    """([(model, batch size)], reference root); InputError on bad input."""
    specs, models, root = vp.select_models(args.binary, args.models, args.reference_root)
    without = [m for m in args.models if "Eval" not in specs[m]["modes"]]
    if without:
        raise InputError(f"{', '.join(without)} ha{'s' if len(without) == 1 else 've'} no Eval "
                         "mode (packages are forward-only)")
    return [(m, eval_batch_size(specs[m], args.batch_size)) for m in models
            if "Eval" in specs[m]["modes"]], root


def interrupt(signum, frame):
    raise KeyboardInterrupt


def require_cuda():
    """InputError unless this Python's torch can use a GPU."""
    import torch

    if not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device is usable here "
                         "(torch.cuda.is_available() is False)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        return time_worker(spec) if spec.get("time_only") else worker(spec)
    out_dir = pathlib.Path(args.output).resolve()
    try:
        if args.device == "cuda":
            require_cuda()
        work, root = select(args)
        entries = read_index(out_dir / INDEX)
    except InputError as e:
        print(f"compile: {e}", file=sys.stderr)
        return 2

    import torch

    if args.time_only:
        return time_only(args, argv, work, root, out_dir, torch.__version__)
    rerun = BACKENDS[args.backend]
    cpu, _ = env.machine()
    print(f"compile: {len(work)} model(s), {' and '.join(rerun)}, {args.device}, "
          f"{args.threads} thread(s); {cpu}; torch {torch.__version__}; into {out_dir}",
          file=sys.stderr)
    manifests = []
    # SIGTERM (a timeout's, as tools/gpu_check.sh's steps have) stops the run
    # as Ctrl-C does: else the driver dies alone and its workers, sessions
    # of their own, go on compiling.
    signal.signal(signal.SIGTERM, interrupt)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = [pool.submit(compile_model, model, batch, args, root, out_dir)
                   for model, batch in work]
        for future in concurrent.futures.as_completed(futures):
            manifest, elapsed = future.result()
            manifests.append(manifest)
            # Rewritten after every model: a run stopped early keeps its index.
            entries = merged(entries, manifest)
            write_index(out_dir / INDEX, entries, args, argv, torch.__version__)
            print(line(manifest, rerun, args.time_python, elapsed), flush=True)
    except KeyboardInterrupt:
        # The workers are sessions of their own (no Ctrl-C or timeout's
        # signal to the process group reaches them).
        _stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        for pid in list(_running):
            kill_group(pid)
        print(f"compile: interrupted; {out_dir / INDEX} has the {len(manifests)} model(s) "
              "that finished", file=sys.stderr)
        return 130
    pool.shutdown()
    for text in summary(manifests, rerun):
        print(text, file=sys.stderr)
    return 0


def time_only(args, argv, work, root, out_dir, torch_version):
    """--time-only's run: a line per model (skipped, or its times), then a
    count."""
    rerun = BACKENDS[args.backend]
    cpu, _ = env.machine()
    print(f"compile --time-only: {len(work)} model(s), {' and '.join(rerun)}, {args.device}, "
          f"{args.threads} thread(s); {cpu}; torch {torch_version}; in {out_dir}",
          file=sys.stderr)
    todo = []
    for model, batch in work:
        why = timing_skip(read_manifest(out_dir / model / f"batch_size_{batch}"), args,
                          torch_version)
        if why:
            print(f"{model} b{batch}: skipped: {why}", flush=True)
        else:
            todo.append((model, batch))
    timed = 0
    signal.signal(signal.SIGTERM, interrupt)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = [pool.submit(time_model, model, batch, args, root, out_dir)
                   for model, batch in todo]
        for future in concurrent.futures.as_completed(futures):
            manifest, elapsed = future.result()
            timed += 1
            note_python_times(out_dir / INDEX, manifest, argv)
            print(timing_line(manifest, rerun, elapsed), flush=True)
    except KeyboardInterrupt:
        _stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        for pid in list(_running):
            kill_group(pid)
        print(f"compile: interrupted; {timed} model(s) timed", file=sys.stderr)
        return 130
    pool.shutdown()
    print(f"compile --time-only: {timed} model(s) timed, {len(work) - len(todo)} skipped",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
