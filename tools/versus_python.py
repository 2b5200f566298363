#!/usr/bin/env python3
"""Every model's C++ step beside TorchBench's own Python step, on one machine.

    tools/tb versus-python [MODEL...] [--mode train|eval|both]
        [--batch-size N|default] [--device cpu|cuda] [--reference-root CHECKOUT]
        [--threads 1,2] [--rounds 3] [--steps 10] [--warmup 3] [--timeout S]
        [--jobs N] [--costs RUN.json] [-o OUT.json] [--markdown OUT.md]
        [--journal FILE [--journal-only]] [--host-malloc retain|glibc]

For each selected instance (<model>/<Train|Eval>/batch_size:<N>, every model
by default) and each thread count, both sides run in rounds, each round in
fresh processes, interleaved A B B A ... so that a drift of the machine falls
on both: the torchbench program (one process per instance) and a Python
worker (this file, --worker) that builds the reference step:
  - pip-referenced models (torchvision, timm, transformers): the step
    TorchBench's model factories build (build_pip_step);
  - the others: TorchBench's own Model class from a pytorch/benchmark checkout
    at 43ca0857 (--reference-root, or TORCHBENCH_REFERENCE_ROOT), loaded by
    tools/golden/reference.py, calling its own train() / eval() as
    BenchmarkModel.invoke does (eval under no_grad unless the model says
    otherwise); TorchBench's code runs unchanged, its environment stood in for
    by each model's adapter (tools/golden/adapters/, found by
    tools/golden/reference_env.py).
Same intra-op threads (OMP_NUM_THREADS, MKL_NUM_THREADS, torch.set_num_threads),
warm-up (TorchBench's 3), timed steps and statistic (the median step) on both.
Same host malloc on both (--host-malloc): "retain" (the default) keeps freed
memory in each process (the program's --torchbench_host_malloc=retain, and
glibc's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ at the same values
for Python), since glibc's own heuristics give memory back to the kernel or
not depending on the heap's layout, which differs between the two processes;
"glibc" leaves both as glibc sets them (the tables measured before this
option existed).

Per instance: C++ and Python median step (the median over rounds of each
round's median), C++/Python and its spread over the rounds (the lowest and
highest round's ratio), the Python share (Py - C++) / Py, and the ATen
operators per step on both sides, counted alike: top-level operators
(RecordFunction scope FUNCTION, not inside another operator, not the autograd
engine's node wrappers) of one extra untimed step, through the program's
--torchbench_count_ops and torch.profiler's events in Python. An instance is
"slower" when C++ is slower than Python in every round and the median ratio
exceeds 1 by more than the rounds' spread and --tolerance (5 %), "faster"
likewise, else "even". Per domain and overall: the geometric mean of
C++/Python.

A model whose reference cannot run here (a missing package, data, weights)
is listed with the reason, never left out. --journal appends each finished
instance and skips the ones a previous run of the same settings finished
with both sides; --journal-only measures nothing and makes the table from the
journal (an instance it lacks is listed as not measured). An instance whose C++ step takes more than
--one-round-above seconds (2) runs one round: the interpreter's cost per
operator is far below such a step's noise, and rounds of it cost minutes.
--jobs N runs N instances side by side, each lane's
processes pinned to cores of its own (N x threads must fit the machine):
faster on many cores, at the price of sharing the memory system. --costs
RUN.json orders the instances by a previous run's step times, the cheapest
first, so that a run stopped early holds the most rows.

--markdown writes the table (the command and the date in its head; a path
outside the checkout is named by its placeholder, CHECKOUT, PROGRAM, ...),
and -o the JSON that tools/tb report reads for its "C++ against Python"
section.

`versus-python eager ...` is the older comparison of the pip-referenced
models, each side in one process, which the GPU check runs for its memory
and kernel columns (`versus-python eager --help`).

Exit status: 0 every instance has both sides; 1 the program failed on some
instance (each one line); 2 bad input (an unknown model, no reference root, a
program that cannot list its models) or a Python reference that failed (each
one line), after writing what was measured.
"""

import argparse
import concurrent.futures
import contextlib
import datetime
import json
import math
import os
import pathlib
import queue
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from tbench import env, errors, files, program, results
from tbench.errors import InputError

TOOLS = pathlib.Path(__file__).resolve().parent
ROOT = TOOLS.parent
# The Python worker imports TorchBench's loader (tools/golden/reference_env.py)
# as tools/golden's own scripts do, with that folder on its path.
GOLDEN = TOOLS / "golden"

TOOL = "torchbench-versus-python"
RESULT_PREFIX = "VERSUS_PYTHON_RESULT "
MODES = {"train": ["Train"], "eval": ["Eval"], "both": ["Train", "Eval"]}
ENGINE_NODE = "autograd::engine::evaluate_function"
FUNCTION_SCOPE = 0  # at::RecordScope::FUNCTION


# Models whose step's work depends on their weights' values (how many boxes
# pass the score threshold and NMS, how many masks are pasted) and whose
# trained checkpoint TorchBench loads is not available, so that each side
# would otherwise run stand-in weights of its own: the Python reference's
# stand-in (detectron2_stand_ins._trained_weights) is exported once per
# instance and the program loads it (--torchbench_weights), so that both steps
# detect the same boxes. Eval only: eval's stand-in diverges to inf in
# training on either side (the program's vision_maskrcnn Train within its
# warm-up at lr 0.02; TorchBench's detectron2 r_101_fpn, DC5 and R-101), so
# in Train both sides run the port's kind of stand-in (detectron2_stand_ins.
# _train_stand_in, adapters/vision_maskrcnn._calibrated_stand_in) on the
# same input, each its own draw. A Train step's work still depends on the
# weights (roi_align's cost
# on the proposals' sizes, the mask head's on the foreground count), and
# sharing the Train stand-in was tried: the trajectories part anyway with
# each side's random sampling (r_101_fpn 1.05 -> 0.98, but maskrcnn_r_50_fpn
# 1.00 -> 1.05), and the program's fasterrcnn_r_101_fpn and vision_maskrcnn
# diverged from the Python side's weights within their warm-up.
SHARED_WEIGHTS = {f"detectron2_{v}" for v in (
    "fasterrcnn_r_101_c4", "fasterrcnn_r_101_dc5", "fasterrcnn_r_101_fpn", "fasterrcnn_r_50_c4",
    "fasterrcnn_r_50_dc5", "fasterrcnn_r_50_fpn", "maskrcnn", "maskrcnn_r_101_c4",
    "maskrcnn_r_101_fpn", "maskrcnn_r_50_c4", "maskrcnn_r_50_fpn")} | {"vision_maskrcnn"}

# Python steps that cannot finish within a run on a CPU, and why: their rows
# say so instead of spending --timeout to find out.
CPU_OUT_OF_REACH = {
    "detectron2_maskrcnn": "not run on a CPU: one step of TorchBench's is its loop over all 100 "
                           "prefetched COCO batches (NUM_BATCHES), about 100 times "
                           "detectron2_maskrcnn_r_50_fpn's step (the same network; see its row), "
                           "so warm-up and the timed steps take hours a process",
}


# --- the pip-referenced models: TorchBench's model factories' step ------------

# TorchBench model name -> (package, builder name)
REFERENCES = {
    "alexnet": ("torchvision", "alexnet"),
    "densenet121": ("torchvision", "densenet121"),
    "mnasnet1_0": ("torchvision", "mnasnet1_0"),
    "mobilenet_v2": ("torchvision", "mobilenet_v2"),
    "mobilenet_v3_large": ("torchvision", "mobilenet_v3_large"),
    "resnet18": ("torchvision", "resnet18"),
    "resnet50": ("torchvision", "resnet50"),
    "resnet152": ("torchvision", "resnet152"),
    "resnext50_32x4d": ("torchvision", "resnext50_32x4d"),
    "shufflenet_v2_x1_0": ("torchvision", "shufflenet_v2_x1_0"),
    "vgg16": ("torchvision", "vgg16"),
    "timm_efficientnet": ("timm", "efficientnet_b0"),
    "timm_nfnet": ("timm", "dm_nfnet_f0"),
    "timm_regnet": ("timm", "regnety_120"),
    "timm_resnest": ("timm", "resnest14d"),
    "timm_vision_transformer": ("timm", "vit_small_patch16_224"),
    "timm_vovnet": ("timm", "vovnet39a"),
    # (config class or (class, its arguments), auto class, train length,
    # CPU eval length)
    "hf_Bert": ("transformers", ("BertConfig", "AutoModelForMaskedLM", 512, 512)),
    "hf_GPT2": ("transformers", ("GPT2Config", "AutoModelForCausalLM", 512, 1024 // 4)),
    # allenai/longformer-base-4096's config.json (no hub here).
    "hf_Longformer": ("transformers", (
        ("LongformerConfig", dict(vocab_size=50265, max_position_embeddings=4098,
                                  type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1,
                                  attention_window=[512] * 12)),
        "AutoModelForMaskedLM", 1024, 4096 // 8)),
}
# On CUDA the eval length is not divided by cpu_input_slice (where it
# differs from the CPU's above).
CUDA_EVAL_LENGTH = {"hf_GPT2": 1024, "hf_Longformer": 4096}


def build_pip_model(name, mode, batch_size, device="cpu"):
    """(model, input) of a pip-referenced model as TorchBench's model
    factories build them, in build_pip_step's order (the model's
    initialisation draws first, then the input): torchvision's builder
    without weights and randn(N, 3, 224, 224); timm's create_model without
    pretrained weights and randn of its default_cfg input size;
    transformers' from_config and randint ids of the mode's length (the
    CPU eval length, or CUDA_EVAL_LENGTH's on a GPU), called as
    model(input_ids=ids). The model is on `device`, in neither mode."""
    import torch

    package, builder = REFERENCES[name]
    if package == "torchvision":
        import torchvision

        model = getattr(torchvision.models, builder)(weights=None).to(device)
        return model, torch.randn(batch_size, 3, 224, 224, device=device)
    if package == "transformers":
        import transformers

        config_name, auto_name, train_length, eval_length = builder
        if torch.device(device).type != "cpu":
            eval_length = CUDA_EVAL_LENGTH.get(name, eval_length)
        config_name, config_args = (
            config_name if isinstance(config_name, tuple) else (config_name, {}))
        config = getattr(transformers, config_name)(**config_args)
        model = getattr(transformers, auto_name).from_config(config).to(device)
        length = train_length if mode == "Train" else eval_length
        return model, torch.randint(0, config.vocab_size, (batch_size, length), device=device)
    import timm

    model = timm.create_model(builder, pretrained=False).to(device)
    return model, torch.randn((batch_size,) + tuple(model.default_cfg["input_size"]),
                              device=device)


def build_pip_step(name, mode, batch_size, device="cpu", precision="fp32"):
    """The reference model's TorchBench step as a function of no arguments,
    as TorchBench 43ca0857 builds it: TorchVisionModel (Adam lr 1e-3,
    CrossEntropy against rand_like soft targets, inputs rand_like(randn)),
    TimmModel (timm SGD nesterov lr 1e-4 momentum 0.9 weight decay 1e-4
    without decay on biases/norms, CrossEntropy on fresh random labels each
    step) and HuggingFaceModel (from_config, randint ids of its train/eval
    length, the eval length divided by cpu_input_slice; Train:
    model(input_ids, labels).loss, backward, Adam lr 1e-3 with no zero_grad,
    as at 43ca0857), model and input from build_pip_model; eval is the
    forward under no_grad. fp16/bf16 convert
    the module and the float inputs (TorchBench's model.half() path),
    amp_fp16/amp_bf16 autocast the forward."""
    import torch

    package = REFERENCES[name][0]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
    amp_dtype = {"amp_fp16": torch.float16, "amp_bf16": torch.bfloat16}.get(precision)
    if amp_dtype is not None:
        device_type = torch.device(device).type

        def autocast():
            return torch.autocast(device_type=device_type, dtype=amp_dtype)
    else:
        autocast = contextlib.nullcontext
    model, x = build_pip_model(name, mode, batch_size, device)
    if package == "torchvision":
        if dtype is not None:  # TorchBench's model.half() path
            model, x = model.to(dtype), x.to(dtype)
        if mode == "Train":
            model.train()
            with torch.no_grad():
                out = model(x)
            real_input = torch.rand_like(x)
            target = torch.rand_like(out)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            loss_fn = torch.nn.CrossEntropyLoss()

            def step():
                opt.zero_grad()
                with autocast():
                    pred = model(real_input)
                loss_fn(pred, target).backward()
                opt.step()
        else:
            model.eval()

            def step():
                with torch.no_grad(), autocast():
                    model(x)
    elif package == "transformers":
        ids = x
        if dtype is not None:
            model = model.to(dtype)
        if mode == "Train":
            labels = torch.randint(0, model.config.vocab_size, ids.shape, device=device)
            model.train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)

            def step():
                with autocast():
                    loss = model(input_ids=ids, labels=labels).loss
                loss.backward()
                opt.step()
        else:
            model.eval()

            def step():
                with torch.no_grad(), autocast():
                    model(input_ids=ids).logits
    else:
        from timm.optim import create_optimizer_v2

        if dtype is not None:
            model, x = model.to(dtype), x.to(dtype)
        if mode == "Train":
            model.train()
            opt = create_optimizer_v2(model, opt="sgd", lr=1e-4,
                                      weight_decay=1e-4, momentum=0.9)
            loss_fn = torch.nn.CrossEntropyLoss()

            def step():
                opt.zero_grad()
                with autocast():
                    out = model(x)
                target = torch.empty(out.shape[0], dtype=torch.long,
                                     device=device).random_(model.num_classes)
                loss_fn(out, target).backward()
                opt.step()
        else:
            model.eval()

            def step():
                with torch.no_grad(), autocast():
                    model(x)
    return step


# --- the Python side (a worker process per round) ----------------------------

def reference_kind(model):
    """'pip:<package>' for the pip-referenced models (build_pip_step), else
    'torchbench'."""
    if model in REFERENCES:
        return "pip:" + REFERENCES[model][0]
    return "torchbench"


def build_python_step(model, mode, batch_size, device, reference_root, export_weights=None):
    """The reference's step; with export_weights, TorchBench's module's
    state_dict is written there (safetensors) as built, for the program's
    --torchbench_weights."""
    if model in REFERENCES:
        return build_pip_step(model, mode, batch_size, device=device)
    import reference_env  # tools/golden/reference_env.py: GOLDEN is on the worker's path

    tb_model, step = reference_env.build_step(reference_root, model, mode.lower(), batch_size,
                                              device)
    if export_weights:
        save_weights(module_tensors(tb_model.get_module()[0]), export_weights)
    return step


def module_tensors(module):
    """{name: tensor} of every parameter and buffer of `module`, the
    non-persistent buffers (detectron2's pixel_mean, pixel_std and cell
    anchors) too, as named_parameters and named_buffers name them: what the
    program's --torchbench_weights loads."""
    tensors = dict(module.named_parameters())
    tensors.update(module.named_buffers())
    return tensors


def save_weights(tensors, path):
    """module_tensors' tensors as a safetensors file: detached, on the CPU,
    cloned, as make_reference.py does (save_file refuses tensors that share
    storage: tied weights)."""
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().clone() for k, v in tensors.items()}, path)


def top_level_ops(events, main_thread=None):
    """{name: calls} of the top-level operators among torch.profiler's
    function events: scope FUNCTION, not an autograd engine node, no
    FUNCTION ancestor but engine nodes; on the CPU only the stepping
    thread's (intra-op workers run inside an operator of that thread), as
    the program's OpCounter."""
    counts = {}
    for e in events:
        if getattr(e, "scope", FUNCTION_SCOPE) != FUNCTION_SCOPE or e.name.startswith(ENGINE_NODE):
            continue
        if main_thread is not None and e.thread != main_thread:
            continue
        parent, nested = e.cpu_parent, False
        while parent is not None:
            if (getattr(parent, "scope", FUNCTION_SCOPE) == FUNCTION_SCOPE
                    and not parent.name.startswith(ENGINE_NODE)):
                nested = True
                break
            parent = parent.cpu_parent
        if not nested:
            counts[e.name] = counts.get(e.name, 0) + 1
    return counts


def count_python_ops(step, device):
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    scope = "versus_python_step"
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function(scope):  # marks the stepping thread's id
            step()
        if device == "cuda":
            torch.cuda.synchronize()
    events = prof.events()
    main = next((e.thread for e in events if e.name == scope), None)
    return top_level_ops(events, main if device == "cpu" else None)


def gpu_busy_pct(step, steps=3):
    """The share of the profiled steps' wall time some kernel ran (the union
    of the kernels' intervals), as the program's gpu_busy_pct."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            start = time.perf_counter()
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
            wall_us = (time.perf_counter() - start) * 1e6
        prof.export_chrome_trace(path)
        with open(path) as f:
            kernels = sorted((e["ts"], e["ts"] + e.get("dur", 0))
                             for e in json.load(f).get("traceEvents", [])
                             if e.get("cat") == "kernel")
    busy, end = 0.0, -math.inf
    for a, b in kernels:
        if b > end:
            busy += b - max(a, end)
            end = b
    return 100.0 * busy / wall_us if wall_us > 0 else None


CUDNN_FLAGS = ROOT / "tests" / "golden" / "cudnn_flags.txt"


def apply_cudnn_flags(model, mode):
    """cudnn.benchmark / .deterministic as TorchBench's metadata.yaml sets them
    for the model and mode (tests/golden/cudnn_flags.txt records them; the
    program's ModelSpecs are checked against it); fp32 keeps PyTorch's TF32
    defaults, as TorchBench's fp32 does."""
    import torch

    with open(CUDNN_FLAGS) as f:
        for text in f:
            fields = text.split()
            if fields and fields[0] == model:
                column = 1 if mode == "Train" else 2
                torch.backends.cudnn.benchmark = fields[column] == "true"
                torch.backends.cudnn.deterministic = fields[column + 2] == "true"
                return
    raise ValueError(f"{model} is not in {CUDNN_FLAGS}")


def worker(spec):
    """One round of the Python side: build, warm up, time, and (first round)
    count operators; the result is one JSON line on stdout."""
    import torch

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    device = spec["device"]
    out = {}
    try:
        if device == "cuda":
            apply_cudnn_flags(spec["model"], spec["mode"])
        step = build_python_step(spec["model"], spec["mode"], spec["batch_size"], device,
                                 spec.get("reference_root"), spec.get("export_weights"))
        for _ in range(spec["warmup"]):
            step()
        times = []
        for _ in range(spec["steps"]):
            if device == "cuda":
                begin, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                begin.record()
                step()
                end.record()
                torch.cuda.synchronize()
                times.append(begin.elapsed_time(end))
            else:
                start = time.perf_counter()
                step()
                times.append((time.perf_counter() - start) * 1e3)
        out["step_ms"] = times
        if spec.get("count_ops"):
            out["ops"] = count_python_ops(step, device)
            out["aten_ops"] = sum(out["ops"].values())
            if device == "cuda":
                out["gpu_busy_pct"] = gpu_busy_pct(step)
        out["torch_version"] = torch.__version__
    except (Exception, SystemExit) as e:  # the reference failed: that instance's reason
        out["error"] = errors.one_line(e, 300)
    print(RESULT_PREFIX + json.dumps(out), flush=True)
    return 0


# --- the C++ side --------------------------------------------------------------

def list_specs(binary):
    try:
        out = subprocess.run([binary, "--torchbench_list_models=json"], capture_output=True,
                             text=True, check=True, timeout=300).stdout
        specs = json.loads(out)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
        raise InputError(f"{binary} cannot list its models ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''}); build it: tools/tb build")
    return {s["name"]: s for s in specs}


def instance_names(binary, models, modes, batch_size, device):
    """The program's own instance names for the selection (models with a
    fixed batch size keep theirs)."""
    pattern = "^(" + "|".join(map(program.escape, models)) + ")/(" + "|".join(modes) + ")/"
    args = [binary, f"--torchbench_device={device}", f"--benchmark_filter={pattern}",
            "--benchmark_list_tests"]
    if batch_size != "default":
        args.insert(1, f"--torchbench_batch_sizes={batch_size}")
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise InputError(f"{binary} cannot list the selected instances: "
                         f"{errors.last_line(proc.stderr, '?')}")
    return [line.strip() for line in proc.stdout.splitlines() if line.count("/") == 2]


# glibc's tunables for what --torchbench_host_malloc=retain sets by mallopt.
RETAIN_ENV = {"MALLOC_MMAP_THRESHOLD_": "2147483647", "MALLOC_TRIM_THRESHOLD_": "2147483647"}


def side_env(threads, host_malloc):
    """A side's environment: its threads and, under retain, glibc's tunables
    at the values the program's mallopt sets (so they differ on neither side)."""
    environment = env.thread_env(threads)
    for key in RETAIN_ENV:
        environment.pop(key, None)
    if host_malloc == "retain":
        environment.update(RETAIN_ENV)
    return environment


def why_ended(proc):
    """Why a side's process ended without a result, in one line: the signal
    that killed it or, when it exited, its last line on stderr (a killed
    process's last line is whatever it printed before, often a warning)."""
    if proc.returncode is not None and proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        if name != "SIGKILL":
            return f"killed by {name}"
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        return (f"killed by SIGKILL: most likely the kernel's out-of-memory killer (this "
                f"machine has {ram:.0f} GiB; dmesg says)")
    return errors.last_line(proc.stderr, f"exit status {proc.returncode}")


def run_cpp(binary, name, device, threads, warmup, steps, seed, count_ops, timeout,
            cores=None, weights=None, host_malloc="retain"):
    """One round of the C++ side: the program on one instance, one step per
    repetition. Returns {"step_ms": [...], "aten_ops"?} or {"error": ...}."""
    model, mode, batch = name.split("/")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cpp.json")
        args = [binary, f"--torchbench_device={device}",
                f"--torchbench_batch_sizes={batch.split(':')[1]}",
                program.filter_flag([name]),
                f"--torchbench_warmup_steps={warmup}", f"--torchbench_seed={seed}",
                *program.one_step_flags(steps, out),
                f"--torchbench_host_malloc={host_malloc}"]
        if weights:
            args.append(f"--torchbench_weights={weights}")
        coverage = os.path.join(tmp, "ops.jsonl")
        if count_ops:
            args += ["--torchbench_count_ops", f"--torchbench_op_coverage={coverage}"]
            if device == "cuda":
                args.append("--torchbench_profile")
        try:
            proc = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, env=side_env(threads, host_malloc),
                                  timeout=timeout, preexec_fn=env.pinned(cores))
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout} s"}
        doc = None
        if os.path.exists(out):
            try:
                with open(out) as f:
                    doc = json.load(f)
            except (OSError, json.JSONDecodeError):
                doc = None
        ops = read_coverage_ops(coverage, name) if count_ops else None
    if doc is None:
        return {"error": why_ended(proc)[:300]}
    result = {"step_ms": [], "context": doc.get("context", {})}
    for run in doc.get("benchmarks", []):
        if run.get("error_occurred"):
            return {"error": str(run.get("error_message", "error"))[:300]}
        if run.get("run_type") != "iteration":
            continue
        result["step_ms"].append(results.real_time(run))
        for counter in ("aten_ops", "gpu_busy_pct"):
            if counter in run:
                result[counter] = run[counter]
    if not result["step_ms"]:
        return {"error": f"no timed step in the program's output (exit {proc.returncode})"}
    if ops:
        result["ops"] = ops
    return result


def read_coverage_ops(path, name):
    """{operator: top-level calls} of one instance's step in the program's
    --torchbench_op_coverage file (None if it has none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = files.json_lines(path, f.read())
        for line in lines:  # a damaged line is some other instance's, or none
            entry = line.value
            if isinstance(entry, dict) and entry.get("instance") == name:
                ops = {}
                for op in entry.get("ops", []):
                    if op.get("top_level"):
                        ops[op["op"]] = ops.get(op["op"], 0) + op["calls"]
                return ops
    except (OSError, KeyError, TypeError):
        pass
    return None


def run_python(spec, timeout, cores=None, host_malloc="retain"):
    """One round of the Python side in a fresh worker process."""
    environment = side_env(spec["threads"], host_malloc)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(GOLDEN)] + [p for p in [environment.get("PYTHONPATH")] if p])
    try:
        proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                              capture_output=True, text=True, env=environment,
                              timeout=timeout, preexec_fn=env.pinned(cores))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    return {"error": f"the worker died ({why_ended(proc)[:280]})"}


# --- statistics -----------------------------------------------------------------

def summarize(record, tolerance=0.05):
    """Fills an instance record's figures from its rounds: each side's
    median (over rounds of each round's median step), the ratio of the
    round medians per round, its spread, the Python share and the verdict."""
    cpp = [statistics.median(r) for r in record["cpp"]["rounds_ms"]]
    py = [statistics.median(r) for r in record["python"]["rounds_ms"]]
    for side, medians in (("cpp", cpp), ("python", py)):
        if medians:
            record[side]["median_ms"] = statistics.median(medians)
    if not cpp or not py or "error" in record["cpp"] or "error" in record["python"]:
        record["verdict"] = "missing"
        return record
    ratios = [c / p for c, p in zip(cpp, py)]
    ratio = record["cpp"]["median_ms"] / record["python"]["median_ms"]
    record.update(ratio=ratio, ratio_min=min(ratios), ratio_max=max(ratios),
                  python_share=1.0 - ratio)
    record["verdict"] = verdict(ratio, min(ratios), max(ratios), tolerance)
    return record


def verdict(ratio, lowest, highest, tolerance):
    """'slower' / 'faster' when every round agrees and the median ratio is
    off 1 by more than both the rounds' spread and the tolerance (two
    processes of the same code differ by a few per cent: allocation, page
    placement), else 'even'."""
    margin = max(tolerance, highest - lowest)
    if lowest > 1.0 and ratio - 1.0 > margin:
        return "slower"
    if highest < 1.0 and 1.0 - ratio > margin:
        return "faster"
    return "even"


def op_differences(record, limit=6):
    """[(operator, C++ calls, Python calls)] per step where the two sides
    differ most (by |difference|), from the first round's counts."""
    cpp, py = record["cpp"].get("ops"), record["python"].get("ops")
    if not cpp or not py:
        return []
    diff = [(op, cpp.get(op, 0), py.get(op, 0)) for op in set(cpp) | set(py)
            if cpp.get(op, 0) != py.get(op, 0)]
    diff.sort(key=lambda d: (-abs(d[1] - d[2]), d[0]))
    return diff[:limit]


def op_diff_text(record, limit=6):
    return ", ".join(f"{op} {c} vs {p}" for op, c, p in op_differences(record, limit))


def aggregate(records):
    """Per (threads, mode) group: the geometric mean of C++/Python per domain
    and overall, and the verdict counts."""
    groups = {}
    for r in records:
        groups.setdefault((r["threads"], r["mode"]), []).append(r)
    out = []
    for (threads, mode), rows in sorted(groups.items()):
        paired = [r for r in rows if r.get("ratio")]
        domains = {}
        for r in paired:
            domains.setdefault(r["domain"], []).append(r["ratio"])
        out.append({
            "threads": threads, "mode": mode, "instances": len(rows), "paired": len(paired),
            "geomean_ratio": results.geomean([r["ratio"] for r in paired]),
            "domains": {d: {"instances": len(v), "geomean_ratio": results.geomean(v)}
                        for d, v in sorted(domains.items())},
            "verdicts": {v: sum(r["verdict"] == v for r in rows)
                         for v in ("faster", "even", "slower", "missing")},
        })
    return out


# --- the driver -------------------------------------------------------------------

def record_key(r):
    return (r["benchmark"], r["threads"], r["device"])


def read_journal(path, settings, keep_missing=False):
    """{record_key: record} of the journal's records made with `settings`.
    A line that is not a record (the last one cut short by a kill, or a
    damaged one) is skipped with one line naming FILE:LINE: its instance is
    measured again, and every other record is kept."""
    done = {}
    if not path or not os.path.exists(path):
        return done
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"--journal {path}: cannot read: {e.strerror or e}") from None
    for line in files.json_lines(path, text):
        r = line.value
        if line.ok and not (isinstance(r, dict) and {"benchmark", "threads", "device"} <= r.keys()):
            line = line._replace(problem="not a record of this tool (no benchmark, threads "
                                 "and device)")
        if not line.ok:
            kind = "note" if line.torn else "warning"
            print(f"versus-python: {kind}: {line.where}: skipped: {line.problem}; its "
                  "instance is measured again", file=sys.stderr)
            continue
        # A side that failed is measured again (its reference may have
        # been fixed since); a finished pair is kept.
        if r.get("settings") == settings and (keep_missing or r.get("verdict") != "missing"):
            done[record_key(r)] = r
    return done


def measure(binary, name, spec, reference, threads, args, reference_root, cores=None):
    model, mode, batch = name.split("/")
    record = {"benchmark": name, "model": model, "domain": spec.get("domain", "unknown"),
              "mode": mode, "batch_size": int(batch.split(":")[1]), "threads": threads,
              "device": args.device, "reference": reference,
              "cpp": {"rounds_ms": []}, "python": {"rounds_ms": []}}
    py_spec = {"model": model, "mode": mode, "batch_size": record["batch_size"],
               "device": args.device, "threads": threads, "warmup": args.warmup,
               "steps": args.steps, "seed": args.seed, "reference_root": reference_root}
    if args.device == "cpu" and model in CPU_OUT_OF_REACH:
        record["python"]["error"] = CPU_OUT_OF_REACH[model]
        return summarize(record, args.tolerance)
    shared = model in SHARED_WEIGHTS and mode == "Eval"
    if shared:
        record["weights"] = "shared"
    with tempfile.TemporaryDirectory(prefix="versus_python_") as tmp:
        # Shared weights: Python's first round writes them before its
        # warm-up, so Python starts the odd rounds instead of the even ones.
        weights = os.path.join(tmp, "weights.safetensors") if shared else None
        for r in range(args.rounds):
            first = r == 0
            sides = ["cpp", "python"] if (r % 2 == 0) != shared else ["python", "cpp"]
            for side in sides:
                if side == "cpp":
                    got = run_cpp(binary, name, args.device, threads, args.warmup, args.steps,
                                  args.seed, first, args.timeout, cores, weights,
                                  args.host_malloc)
                    version = got.pop("context", {}).get("libtorch_version")
                    if version:
                        record["cpp"]["libtorch_version"] = version
                else:
                    extra = {"export_weights": weights} if shared and first else {}
                    got = run_python(dict(py_spec, count_ops=first, **extra), args.timeout,
                                     cores, args.host_malloc)
                if "error" in got:
                    record[side]["error"] = got["error"]
                    if shared and first and side == "python":
                        break  # no weights written: the C++ side has nothing to load
                    continue
                record[side]["rounds_ms"].append(got["step_ms"])
                for key in ("aten_ops", "ops", "gpu_busy_pct", "torch_version"):
                    if key in got:
                        record[side][key] = got[key]
            if "error" in record["cpp"] or "error" in record["python"]:
                break  # one side cannot run: no ratio, no point in more rounds
            if (first and record["cpp"]["rounds_ms"] and args.one_round_above and
                    statistics.median(record["cpp"]["rounds_ms"][0]) >
                    args.one_round_above * 1e3):
                break  # a step of seconds: Python's per-op cost is far below its noise
    return summarize(record, args.tolerance)


def read_costs(path):
    """{instance: step ms} from a torchbench Google Benchmark JSON file."""
    try:
        with open(path) as f:
            doc = json.load(f)
        return {r.get("run_name", r["name"]): results.real_time(r)
                for r in doc["benchmarks"] if not r.get("error_occurred")}
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise InputError(f"--costs {path}: not a torchbench results file ({e})")


def not_measured(name, spec, reference, threads, args):
    """The row of an instance --journal-only found no record of."""
    model, mode, batch = name.split("/")
    reason = "not measured yet: the journal has no record of it (the same command without " \
             "--journal-only measures it)"
    return {"benchmark": name, "model": model, "domain": spec.get("domain", "unknown"),
            "mode": mode, "batch_size": int(batch.split(":")[1]), "threads": threads,
            "device": args.device, "reference": reference, "verdict": "missing",
            "not_measured": reason, "cpp": {"rounds_ms": []}, "python": {"rounds_ms": []}}


def fmt(v, spec="{:.2f}"):
    return spec.format(v) if isinstance(v, (int, float)) and v is not None else "-"


def line(r):
    c, p = r["cpp"], r["python"]
    text = (f"{r['benchmark']:52s} {r['threads']:>2d} {fmt(c.get('median_ms'), '{:.3f}'):>10s} "
            f"{fmt(p.get('median_ms'), '{:.3f}'):>10s} {fmt(r.get('ratio'), '{:.3f}'):>7s} "
            f"{'[' + rounds_text(r) + ']':11s} "
            f"{fmt(r.get('python_share'), '{:+.0%}'):>6s} "
            f"{fmt(c.get('aten_ops'), '{:.0f}'):>6s} {fmt(p.get('aten_ops'), '{:.0f}'):>6s} "
            f"{r['verdict']}")
    busy = busy_text(r)
    if busy:
        text += f"  ({busy})"
    for side in ("cpp", "python"):
        if "error" in r[side]:
            text += f"  {side}: {r[side]['error']}"
    if "not_measured" in r:
        text += f"  {r['not_measured']}"
    return text


def rounds_text(r):
    """The rounds' spread of the ratio, or how many rounds there were."""
    n = len(r["cpp"]["rounds_ms"])
    if not r.get("ratio"):
        return "-"
    if n == 1:
        return "1 round"
    return f"{fmt(r.get('ratio_min'))}-{fmt(r.get('ratio_max'))}"


def busy_text(r):
    """On a GPU: the share of the step some kernel ran, per side."""
    c, p = r["cpp"].get("gpu_busy_pct"), r["python"].get("gpu_busy_pct")
    if c is None and p is None:
        return ""
    return f"GPU busy C++ {fmt(c, '{:.0f}')} %, Python {fmt(p, '{:.0f}')} %"


HEADER = (f"{'benchmark':52s} {'th':>2s} {'C++ ms':>10s} {'Python ms':>10s} {'C++/Py':>7s} "
          f"{'[rounds]':11s} {'Py share':>6s} {'C++ ops':>6s} {'Py ops':>6s} verdict")


def markdown(doc):
    """The published table: head (command, date, machine), summary, rows."""
    ctx = doc["context"]
    what = [ctx["device"]]
    if "batch_size" in ctx:  # older files have neither batch nor threads
        what.append("default batch" if ctx["batch_size"] == "default"
                    else f"batch {ctx['batch_size']}")
        what.append(f"{'/'.join(map(str, ctx['threads']))} thread(s)")
    out = [f"# C++ step beside TorchBench's Python step ({', '.join(what)})", "",
           f"Generated {ctx['date']} by `{ctx['command']}`", "",
           f"Machine: {ctx['cpu']}; {ctx['cores']} cores; {ctx.get('cpu_flags') or '?'}. "
           f"LibTorch {ctx.get('libtorch_version', '?')} against torch "
           f"{ctx['torch_version']}; warm-up {ctx['warmup']}, median of "
           f"{ctx['steps']} steps per round, {ctx['rounds']} rounds interleaved in fresh "
           f"processes (one round where the C++ step exceeds {ctx['one_round_above']} s); "
           f"host malloc {ctx.get('host_malloc', 'glibc')} on both sides. "
           "C++/Py below 1: the C++ step is faster; Python share = (Py - C++) / Py. "
           "[rounds]: the lowest and highest round's ratio; **slower** (faster) when C++ was "
           "slower (faster) in every round and the ratio is off 1 by more than the rounds' "
           f"spread and {ctx['tolerance']:.0%}. Ops: top-level ATen operators of one step on "
           "each side. *shared weights*: the program loads the Python reference's weights "
           "(the detection models, whose step's work depends on them).", "",
           "## Summary", "",
           "| threads | mode | paired / instances | geomean C++/Py | faster | even | slower |"
           " per domain (geomean C++/Py, instances) |",
           "|---|---|---|---|---|---|---|---|"]
    for g in doc["summary"]:
        domains = "; ".join(f"{d} {fmt(v['geomean_ratio'], '{:.2f}')} ({v['instances']})"
                            for d, v in g["domains"].items())
        v = g["verdicts"]
        out.append(f"| {g['threads']} | {g['mode']} | {g['paired']} / {g['instances']} | "
                   f"{fmt(g['geomean_ratio'], '{:.3f}')} | {v['faster']} | {v['even']} | "
                   f"{v['slower']} | {domains} |")
    slower = [r for r in doc["results"] if r["verdict"] == "slower"]
    if slower:
        out += ["", "## Where C++ is slower", "",
                "Each with the top-level operators per step whose counts differ most "
                "(C++ vs Python):", ""]
        out += [f"- {r['benchmark']} ({r['threads']} thread(s)): C++/Py "
                f"{r['ratio']:.3f}; {op_diff_text(r) or 'the same operators'}" for r in slower]
    shares = sorted((r for r in doc["results"] if r.get("ratio")),
                    key=lambda r: -r["python_share"])[:5]
    if shares:
        out += ["", "## Largest Python shares", ""]
        out += [f"- {r['benchmark']} ({r['threads']} thread(s)): {r['python_share']:.0%} "
                f"({fmt(r['python']['median_ms'], '{:.3f}')} ms Python, "
                f"{fmt(r['cpp']['median_ms'], '{:.3f}')} ms C++; ops "
                f"{fmt(r['python'].get('aten_ops'), '{:.0f}')} vs "
                f"{fmt(r['cpp'].get('aten_ops'), '{:.0f}')})" for r in shares]
    out += ["", "## Every instance", "",
            "| benchmark | threads | reference | C++ ms | Python ms | C++/Py [rounds] | Py share |"
            " C++ ops | Py ops | verdict |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        c, p = r["cpp"], r["python"]
        why = "; ".join([f"{'C++' if s == 'cpp' else 'Python'}: {r[s]['error']}"
                         for s in ("cpp", "python") if "error" in r[s]] +
                        ([r["not_measured"]] if "not_measured" in r else []))
        verdict = f"**{r['verdict']}**" if r["verdict"] == "slower" else r["verdict"]
        if busy_text(r):
            verdict += f"; {busy_text(r)}"
        if why:
            verdict += f" ({why.replace('|', '/')})"
        out.append(
            f"| {r['benchmark']} | {r['threads']} | {r['reference']}"
            f"{', *shared weights*' if r.get('weights') == 'shared' else ''} | "
            f"{fmt(c.get('median_ms'), '{:.3f}')} | {fmt(p.get('median_ms'), '{:.3f}')} | "
            f"{fmt(r.get('ratio'), '{:.3f}')} [{rounds_text(r)}] | "
            f"{fmt(r.get('python_share'), '{:+.0%}')} | "
            f"{fmt(c.get('aten_ops'), '{:.0f}')} | {fmt(p.get('aten_ops'), '{:.0f}')} | "
            f"{verdict} |")
    return "\n".join(out) + "\n"


# --- eager: both sides in one process each (the GPU check's memory and kernels)

EAGER_DOC = """The pip-referenced models' C++ step beside their Python eager step, each
side in one process (the older comparison, kept for the GPU check).

    tools/tb versus-python eager [--models M...] [--batch-size N] [--device cpu|cuda]
        [--precision P] [--modes Train Eval] [--kernels] [--cpp-json RUN.json]
        [--python-only] [--json OUT.json]

On the CPU: the program over the models, then each reference step
(build_pip_step) with the program's thread count, the same warm-up (3 steps)
and statistic (median of the timed steps, each timed alone), and their ratio.

--device cuda runs both sides on the GPU (batch sizes: each model's default
unless --batch-size) with TorchBench's CUDA settings: fp32 leaves
torch.backends' defaults (cuDNN TF32 on, matmul TF32 off), tf32 turns both
on; cudnn.benchmark is True for torchvision/timm models and False for the
HF ones; `default` is the family's DEFAULT_{TRAIN,EVAL}_CUDA_PRECISION
(Train fp32, Eval fp16 = model.half()). Each Python step is timed by CUDA
events around it, then synchronized; after the warm-up steps the
peak-memory statistics are reset. Right after the timed steps, before
anything else, NVML's used bytes of the device (torch.cuda.device_memory_used,
else pynvml; TorchBench's gpu_peak_mem) stand beside the C++
`device_memory_used`, then torch.cuda.max_memory_allocated() and
max_memory_reserved() beside `peak_mem` and `peak_mem_reserved`. The flags
each instance ran under are read back from torch.backends (python_flags,
spelled as the program's label). --kernels counts the CUDA kernels of a few
more steps under torch.profiler (one discarded step first, as the program's
profiling pass; the C++ side runs with --torchbench_profile for its
kernels_per_step), in a pass after every instance's timed steps: each step
built again (same seed, flags and warm-up), since no timed loop may follow a
profiler session in the same process. --cpp-json reads the C++ side from a
run already made (tools/gpu_check.sh) instead of running the program;
--json writes every figure.
"""
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16", "default")
EAGER_MODES = ("Train", "Eval")
CPP_COUNTERS = ("peak_mem", "peak_mem_reserved", "device_memory_used", "kernels_per_step",
                "gpu_busy_pct", "gpu_idle_pct", "syncs_per_step")


def resolve_precision(precision, mode):
    """`default` on CUDA: DEFAULT_TRAIN_CUDA_PRECISION (fp32) and
    DEFAULT_EVAL_CUDA_PRECISION (fp16) of TorchVisionModel, TimmModel and
    HuggingFaceModel alike."""
    if precision != "default":
        return precision
    return "fp32" if mode == "Train" else "fp16"


def python_step_times(name, mode, batch_size, warmup, steps, seed):
    import torch

    torch.manual_seed(seed)
    step = build_pip_step(name, mode, batch_size)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


class CudaFlags:
    """torch.backends' CUDA math flags, as this process started (PyTorch's
    defaults), put back before each instance."""

    def __init__(self):
        import torch

        self.defaults = (torch.backends.cuda.matmul.allow_tf32,
                         torch.backends.cudnn.allow_tf32,
                         torch.backends.cudnn.benchmark,
                         torch.backends.cudnn.deterministic)

    def apply(self, package, precision):
        """Sets TorchBench's flags for the instance; returns them as read
        back from torch.backends (what the steps run under, whatever an
        override in the environment made of what was set), each under its
        record key and all as `python_flags`, spelled as the program's label
        so the summary compares the two strings."""
        import torch

        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
         torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic) = self.defaults
        if precision == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        # TorchVisionModel and TimmModel set it; HuggingFaceModel does not.
        torch.backends.cudnn.benchmark = package in ("torchvision", "timm")
        read = {"matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                "cudnn_benchmark": torch.backends.cudnn.benchmark,
                "cudnn_deterministic": torch.backends.cudnn.deterministic}
        read["python_flags"] = " ".join(f"{label}:{str(bool(read[key])).lower()}"
                                        for label, key in results.CUDA_FLAGS)
        return read


def device_memory_reader():
    """(read, source): a function of no arguments returning NVML's used
    bytes of the current device (the figure TorchBench's gpu_peak_mem and
    the program's device_memory_used are) and where it comes from:
    torch.cuda.device_memory_used where this torch has it and it answers
    (it needs pynvml itself), else pynvml directly; (None, "unavailable:
    why") when neither answers. Probed once, before any timed step."""
    import torch

    why = []
    if hasattr(torch.cuda, "device_memory_used"):
        try:
            torch.cuda.device_memory_used()
            return torch.cuda.device_memory_used, "torch.cuda.device_memory_used"
        except Exception as e:  # no pynvml, no driver library
            why.append(f"torch.cuda.device_memory_used: {errors.one_line(e)}")
    else:
        why.append(f"torch {torch.__version__} has no torch.cuda.device_memory_used")
    try:
        import pynvml

        pynvml.nvmlInit()
        # NVML numbers the devices as the driver does, CUDA_VISIBLE_DEVICES aside.
        nvml_index = getattr(torch.cuda, "_get_nvml_device_index", None)
        index = nvml_index(None) if nvml_index else torch.cuda.current_device()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)

        def read():
            return pynvml.nvmlDeviceGetMemoryInfo(handle).used

        read()
        return read, "pynvml"
    except Exception as e:  # ImportError included
        why.append(f"pynvml: {errors.one_line(e)}")
    return None, "unavailable: " + "; ".join(why)


def count_kernels(step, kernel_steps):
    """CUDA kernels per step: one discarded step, then kernel_steps steps
    under torch.profiler; the Chrome trace's "kernel" events (not memcpy or
    memset) over the steps."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=0, warmup=1, active=kernel_steps, repeat=1),
                     on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
            for _ in range(kernel_steps + 1):
                step()
                torch.cuda.synchronize()
                prof.step()
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    return sum(1 for e in events if e.get("cat") == "kernel") / kernel_steps


def release_cuda_memory():
    """The previous instance's tensors gone and the caching allocator's
    reserve given back, so each instance's peaks are its own."""
    import gc

    import torch

    gc.collect()
    torch.cuda.empty_cache()


def warm_cuda_step(name, mode, batch_size, warmup, seed, precision, flags):
    """(step, resolved precision, flags read back): the instance's step on
    the GPU, built after TorchBench's flags and the seed are set, after its
    warm-up steps. The timed pass and the kernel pass build it alike."""
    import torch

    release_cuda_memory()
    resolved = resolve_precision(precision, mode)
    applied = flags.apply(REFERENCES[name][0], resolved)
    torch.manual_seed(seed)
    step = build_pip_step(name, mode, batch_size, device="cuda", precision=resolved)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    return step, resolved, applied


def python_cuda_instance(name, mode, batch_size, warmup, steps, seed, precision,
                         flags, memory_used=None):
    """One instance's timed pass on the GPU: CUDA-event step times, NVML's
    used bytes right after the timed steps (memory_used, from
    device_memory_reader; None without it), then the allocator's peaks of
    the timed steps, and the flags read back."""
    import torch

    step, resolved, applied = warm_cuda_step(name, mode, batch_size, warmup, seed,
                                             precision, flags)
    torch.cuda.reset_peak_memory_stats()
    times, walls = [], []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(steps):
        wall = time.perf_counter()
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - wall)
        times.append(start.elapsed_time(end) / 1e3)
    # First, while the allocator still holds the steps' reserve: what the
    # device has in use (context + reserve + anything else), as the program
    # reads its device_memory_used.
    device_used = None
    if memory_used is not None:
        try:
            device_used = memory_used()
        except Exception:  # NVML went away mid-run: the figure is missing, not the times
            device_used = None
    result = {"python_precision": resolved,
              "python_median_ms": statistics.median(times) * 1e3,
              "python_step_ms": [t * 1e3 for t in times],
              "python_wall_median_ms": statistics.median(walls) * 1e3,
              "python_device_memory_used": device_used,
              "python_peak_mem": torch.cuda.max_memory_allocated(),
              "python_peak_mem_reserved": torch.cuda.max_memory_reserved(),
              **applied}
    del step
    release_cuda_memory()
    return result


def python_cuda_kernels(name, mode, batch_size, warmup, seed, precision, kernel_steps,
                        flags):
    """One instance's kernels per step (count_kernels), its step built
    again as the timed pass built it: run after every timed pass, since a
    torch.profiler session leaves CUPTI's callbacks and the profiler's state
    in the process, and no timed loop may follow one."""
    step, _, _ = warm_cuda_step(name, mode, batch_size, warmup, seed, precision, flags)
    try:
        return count_kernels(step, kernel_steps)
    finally:
        del step
        release_cuda_memory()


def run_cpp_models(binary, names, warmup, steps, seed, device_args, batch_size=None):
    """Runs torchbench over the models, one step per repetition; returns its
    JSON document."""
    pattern = "^(" + "|".join(map(program.escape, names)) + ")/"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cpp.json")
        batch = [f"--torchbench_batch_sizes={batch_size}"] if batch_size else []
        proc = subprocess.run(
            [binary, *device_args, *batch,
             f"--torchbench_warmup_steps={warmup}", f"--torchbench_seed={seed}",
             f"--benchmark_filter={pattern}", *program.one_step_flags(steps, out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # On CUDA an errored instance (exit 1) is that row's error; on the
        # CPU, as before, any failure ends the comparison.
        cuda = "--torchbench_device=cuda" in device_args
        if proc.returncode != 0 and not (cuda and os.path.exists(out)):
            sys.exit(f"versus-python eager: torchbench failed:\n{proc.stderr}")
        with open(out) as f:
            return json.load(f)


def cpp_step_times(binary, names, batch_size, warmup, steps, seed):
    """Returns {benchmark name: [seconds per step, ...]} from torchbench."""
    doc = run_cpp_models(binary, names, warmup, steps, seed, ["--torchbench_device=cpu"],
                         batch_size)
    times = {}
    for run in doc["benchmarks"]:
        if run.get("run_type") != "iteration" or run.get("error_occurred"):
            continue
        times.setdefault(run["name"], []).append(results.real_time(run, "s"))
    return times, doc["context"]


def cpp_rows(doc):
    """{benchmark name: C++ figures} from a torchbench JSON document: the
    median step (of the repetitions, else the _median aggregate), the
    counters' medians, the label, or the instance's error."""
    rows = {}
    for run in doc.get("benchmarks", []):
        name = run.get("run_name", run["name"])
        row = rows.setdefault(name, {"times": [], "counters": {}, "median": None})
        if run.get("error_occurred"):
            row["error"] = run.get("error_message", "error")
            continue
        if run.get("run_type") == "aggregate":
            if run.get("aggregate_name") == "median":
                row["median"] = results.real_time(run)
            continue
        row["times"].append(results.real_time(run))
        row["label"] = run.get("label", "")
        for counter in CPP_COUNTERS:
            if counter in run:
                row["counters"].setdefault(counter, []).append(run[counter])
    out = {}
    for name, row in rows.items():
        if "error" in row:
            out[name] = {"cpp_error": row["error"]}
            continue
        median = statistics.median(row["times"]) if row["times"] else row["median"]
        if median is None:
            continue
        figures = {"cpp_median_ms": median, "cpp_label": row.get("label", "")}
        for counter, values in row["counters"].items():
            figures[f"cpp_{counter}"] = statistics.median(values)
        out[name] = figures
    return out


def default_batch_sizes(binary, cpp, models):
    """{(model, mode): batch size}: the C++ run's own where it has the
    instance, else each model's default (the program's model list)."""
    sizes = {}
    for name in cpp:
        match = re.fullmatch(r"([^/]+)/(Train|Eval)/batch_size:(\d+)", name)
        if match and match.group(1) in models:
            sizes.setdefault((match.group(1), match.group(2)), int(match.group(3)))
    if all((m, mode) in sizes for m in models for mode in EAGER_MODES):
        return sizes
    try:
        listed = json.loads(subprocess.run(
            [binary, "--torchbench_list_models=json"], capture_output=True,
            text=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as e:
        sys.exit(f"versus-python eager: cannot read the models' default batch sizes "
                 f"from {binary} --torchbench_list_models=json ({e}); pass --batch-size")
    for spec in listed:
        if spec["name"] in models:
            sizes.setdefault((spec["name"], "Train"), spec["train_batch_size"])
            sizes.setdefault((spec["name"], "Eval"), spec["eval_batch_size"])
    return sizes


# The timed figures' table (cuda_line); MiB allocated, reserved, in use.
CUDA_HEADER = (f"{'benchmark':32s} {'prec':>8s} {'C++ ms':>9s} {'Python ms':>10s} "
               f"{'C++/Py':>7s} {'C++ MiB':>8s} {'Py MiB':>8s} {'C++ res':>8s} "
               f"{'Py res':>8s} {'C++ dev':>8s} {'Py dev':>8s}")


def eager_cuda(args):
    import torch

    device_args = ["--torchbench_device=cuda", f"--torchbench_precision={args.precision}"]
    if args.kernels:
        device_args.append("--torchbench_profile")
    if args.cpp_json:
        problem = None
        try:
            with open(args.cpp_json, encoding="utf-8") as f:
                doc = json.load(f)
            if not isinstance(doc, dict):
                problem = "not Google Benchmark JSON"
        except OSError as e:
            problem = f"cannot read: {e.strerror or e}"
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            problem = f"not valid JSON ({e}); a run cut short? rerun it or resume its journal"
        if problem:
            print(f"versus-python eager: --cpp-json {args.cpp_json}: {problem}", file=sys.stderr)
            return 2
    elif args.python_only:
        doc = {"benchmarks": [], "context": {}}
    else:
        doc = run_cpp_models(args.binary, args.models, args.warmup, args.steps, args.seed,
                             device_args, args.batch_size)
    cpp = cpp_rows(doc)
    context = doc.get("context", {})
    sizes = ({(m, mode): args.batch_size for m in args.models for mode in EAGER_MODES}
             if args.batch_size else default_batch_sizes(args.binary, cpp, args.models))
    flags = CudaFlags()
    memory_used, memory_source = device_memory_reader()
    print(f"CUDA ({torch.cuda.get_device_name()}), warm-up {args.warmup}, median of "
          f"{args.steps} steps, precision {args.precision}; LibTorch "
          f"{context.get('libtorch_version', '-')} vs torch {torch.__version__}; "
          f"device memory used: {memory_source}")
    print(CUDA_HEADER)
    rows, failed = [], False
    for name in args.models:
        for mode in args.modes:
            key = f"{name}/{mode}/batch_size:{sizes[(name, mode)]}"
            record = {"benchmark": key, "model": name, "mode": mode,
                      "batch_size": sizes[(name, mode)], "device": "cuda",
                      "precision": args.precision, **cpp.get(key, {})}
            try:
                record.update(python_cuda_instance(
                    name, mode, sizes[(name, mode)], args.warmup, args.steps, args.seed,
                    args.precision, flags, memory_used))
            except Exception as e:  # an OOM or a model error: that instance's
                failed = True
                record["python_error"] = errors.one_line(e)
            rows.append(record)
            print(cuda_line(record), flush=True)
    if args.kernels:
        failed = kernel_pass(rows, args, flags) or failed
    if args.json:
        files.write_json(args.json, {"context": {
                "device": "cuda", "device_name": torch.cuda.get_device_name(),
                "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
                "cudnn_version": torch.backends.cudnn.version(),
                "precision": args.precision, "warmup": args.warmup, "steps": args.steps,
                "seed": args.seed, "kernel_steps": args.kernel_steps if args.kernels else 0,
                "python_device_memory_source": memory_source,
                "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
                "cpp_context": context}, "results": rows}, indent=1)
    return 1 if failed else 0


def kernel_pass(rows, args, flags):
    """Kernels per step of each timed instance (python_kernels_per_step),
    after every timed loop has run; an instance whose count fails keeps its
    timings and says why in python_kernels_error. Returns whether one
    failed."""
    print(f"kernels per step under torch.profiler ({args.kernel_steps} steps, after "
          "every timed loop; each step built again):")
    print(f"{'benchmark':32s} {'C++ kern':>9s} {'Py kern':>8s}")
    failed = False
    for record in rows:
        if "python_error" in record:  # building it again would fail too
            print(f"{kernels_line(record)}  not counted: its timed pass failed", flush=True)
            continue
        try:
            record["python_kernels_per_step"] = python_cuda_kernels(
                record["model"], record["mode"], record["batch_size"], args.warmup,
                args.seed, args.precision, args.kernel_steps, flags)
        except Exception as e:  # the profiler or the rebuilt step: the count only
            failed = True
            record["python_kernels_error"] = errors.one_line(e)
        print(kernels_line(record), flush=True)
    return failed


def cuda_num(r, key, scale=1.0, fmt="{:.1f}"):
    return fmt.format(r[key] * scale) if r.get(key) is not None else "-"


def cuda_line(r):
    """An instance's timed figures under CUDA_HEADER: times, and MiB
    allocated (peak), reserved (peak) and in use on the device (NVML)."""
    def mib(key):
        return cuda_num(r, key, 2 ** -20, "{:.0f}")
    ratio = (f"{r['cpp_median_ms'] / r['python_median_ms']:.3f}"
             if r.get("cpp_median_ms") and r.get("python_median_ms") else "-")
    text = (f"{r['benchmark']:32s} {r.get('python_precision', r['precision']):>8s} "
            f"{cuda_num(r, 'cpp_median_ms', fmt='{:.2f}'):>9s} "
            f"{cuda_num(r, 'python_median_ms', fmt='{:.2f}'):>10s} {ratio:>7s} "
            f"{mib('cpp_peak_mem'):>8s} {mib('python_peak_mem'):>8s} "
            f"{mib('cpp_peak_mem_reserved'):>8s} {mib('python_peak_mem_reserved'):>8s} "
            f"{mib('cpp_device_memory_used'):>8s} {mib('python_device_memory_used'):>8s}")
    for side in ("cpp_error", "python_error"):
        if side in r:
            text += f"  {side}: {r[side]}"
    return text


def kernels_line(r):
    text = (f"{r['benchmark']:32s} {cuda_num(r, 'cpp_kernels_per_step'):>9s} "
            f"{cuda_num(r, 'python_kernels_per_step'):>8s}")
    if "python_kernels_error" in r:
        text += f"  python_kernels_error: {r['python_kernels_error']}"
    return text


def eager_main(argv):
    parser = errors.ArgumentParser(prog="tools/tb versus-python eager",
                                   tool="versus-python eager",
                                   description=EAGER_DOC.splitlines()[0])
    parser.add_argument("--models", nargs="+",
                        default=["resnet18", "mobilenet_v2",
                                 "timm_vision_transformer"])
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: 8 on the CPU, each model's default on CUDA")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--binary", default=program.DEFAULT, metavar="PROGRAM")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="CUDA only (the CPU comparison is fp32)")
    parser.add_argument("--modes", nargs="+", choices=EAGER_MODES, default=list(EAGER_MODES),
                        help="CUDA only")
    parser.add_argument("--kernels", action="store_true",
                        help="CUDA only: kernels per step under torch.profiler")
    parser.add_argument("--kernel-steps", type=int, default=5)
    parser.add_argument("--cpp-json", help="CUDA only: the C++ side from this "
                        "torchbench JSON instead of running the program")
    parser.add_argument("--python-only", action="store_true",
                        help="CUDA only: no C++ side")
    parser.add_argument("--json", help="CUDA only: write every figure to this file")
    args = parser.parse_args(argv)
    unknown = [m for m in args.models if m not in REFERENCES]
    if unknown:
        sys.exit(f"versus-python eager: no Python reference for {unknown}")
    if args.device == "cpu":
        given = [flag for flag, value in (
            ("--precision", args.precision != "fp32"),
            ("--modes", args.modes != list(EAGER_MODES)), ("--kernels", args.kernels),
            ("--cpp-json", args.cpp_json), ("--python-only", args.python_only),
            ("--json", args.json)) if value]
        if given:
            parser.error(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} "
                         "--device cuda")
        if args.batch_size is None:
            args.batch_size = 8
    for flag, value in (("--batch-size", args.batch_size), ("--steps", args.steps),
                        ("--kernel-steps", args.kernel_steps)):
        if value is not None and value < 1:
            parser.error(f"{flag} must be a positive integer, not {value}")

    import torch

    if args.device == "cuda":
        if not torch.cuda.is_available():
            parser.error("--device cuda: no CUDA device is usable here "
                         "(torch.cuda.is_available() is False)")
        return eager_cuda(args)

    cpp, context = cpp_step_times(args.binary, args.models, args.batch_size,
                                  args.warmup, args.steps, args.seed)
    threads = int(context.get("intra_op_threads", torch.get_num_threads()))
    torch.set_num_threads(threads)
    print(f"CPU, batch {args.batch_size}, {threads} threads, warm-up "
          f"{args.warmup}, median of {args.steps} steps; LibTorch "
          f"{context.get('libtorch_version')} vs torch {torch.__version__}")
    print(f"{'benchmark':45s} {'C++ ms':>10s} {'Python ms':>10s} {'C++/Py':>8s}")
    for name in args.models:
        for mode in ("Train", "Eval"):
            key = f"{name}/{mode}/batch_size:{args.batch_size}"
            py = statistics.median(python_step_times(
                name, mode, args.batch_size, args.warmup, args.steps,
                args.seed))
            c = statistics.median(cpp[key]) if key in cpp else float("nan")
            print(f"{key:45s} {c * 1e3:10.1f} {py * 1e3:10.1f} {c / py:8.3f}")
    return 0


# --- the command line ---------------------------------------------------------------

# The options whose value is a path, and what the published command says
# instead of a path outside the checkout (this machine's folders are no use
# to a reader).
PATH_OPTIONS = {"--binary": "PROGRAM", "--reference-root": "CHECKOUT",
                "-o": "OUT.json", "--output": "OUT.json", "--markdown": "OUT.md",
                "--journal": "JOURNAL.jsonl", "--costs": "RUN.json"}


def published_command(argv, cwd=None, options=None):
    """The command as the table's head records it: a path inside the
    checkout relative to its root, any other path its placeholder
    (`options`: {option: placeholder}, PATH_OPTIONS by default)."""
    cwd = cwd or os.getcwd()
    options = PATH_OPTIONS if options is None else options

    def placeholder(option, value):
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
        inside = os.path.relpath(path, ROOT)
        if inside != os.pardir and not inside.startswith(os.pardir + os.sep):
            return inside
        return options[option]

    out, pending = [], None
    for a in argv:
        if pending:
            out.append(placeholder(pending, a))
            pending = None
            continue
        option, eq, value = a.partition("=")
        if option in options and eq:
            out.append(f"{option}={placeholder(option, value)}")
        else:
            out.append(a)
            pending = a if a in options else None
    return "tools/tb versus-python " + " ".join(shlex.quote(a) for a in out)


def parse_args(argv):
    p = errors.ArgumentParser(prog="tools/tb versus-python", tool="versus-python",
                              description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", metavar="MODEL", help="default: every model")
    p.add_argument("--mode", choices=sorted(MODES), default="both")
    p.add_argument("--batch-size", default="1", help="N, or default (each model's own)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--reference-root", default=os.environ.get("TORCHBENCH_REFERENCE_ROOT"),
                   metavar="CHECKOUT", help="a pytorch/benchmark checkout at 43ca0857 "
                   "(default: TORCHBENCH_REFERENCE_ROOT)")
    p.add_argument("--threads", default="1", help="intra-op threads, e.g. 1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--timeout", type=int, default=900, help="seconds per process")
    p.add_argument("--one-round-above", type=float, default=2.0, metavar="SECONDS",
                   help="one round only for an instance whose C++ step (first round's "
                        "median) exceeds this (0: every instance gets --rounds)")
    p.add_argument("--tolerance", type=float, default=0.05,
                   help="a ratio within 1 +- this (or the rounds' spread) is 'even'")
    p.add_argument("--jobs", type=int, default=1,
                   help="instances side by side, each lane pinned to its own cores "
                        "(jobs x threads must fit the cores; default 1: one at a time)")
    p.add_argument("--binary", default=program.DEFAULT, metavar="PROGRAM")
    p.add_argument("-o", "--output", metavar="OUT.json")
    p.add_argument("--markdown", metavar="OUT.md")
    p.add_argument("--journal", metavar="JOURNAL.jsonl")
    p.add_argument("--costs", metavar="RUN.json",
                   help="a torchbench results file: instances in the order of its step times "
                        "(the cheapest first; the ones it lacks last)")
    p.add_argument("--journal-only", action="store_true",
                   help="measure nothing: the table from --journal's records (an instance "
                        "it lacks is listed as not measured)")
    p.add_argument("--host-malloc", choices=("retain", "glibc"), default="retain",
                   help="freed host memory stays in each process (retain) or glibc "
                        "gives it back by its heuristics (glibc); the same on both sides")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return args
    p.check_batch_size(args.batch_size)
    try:
        args.threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        p.error(f"--threads must be a comma-separated list of integers, not {args.threads}")
    for flag, value in (("--rounds", args.rounds), ("--steps", args.steps),
                        ("--timeout", args.timeout), *(("--threads", t) for t in args.threads)):
        if value < 1:
            p.error(f"{flag} must be positive, not {value}")
    if args.jobs < 1 or args.jobs * max(args.threads) > len(os.sched_getaffinity(0)):
        p.error(f"--jobs {args.jobs} x --threads {max(args.threads)} does not fit the "
                f"{len(os.sched_getaffinity(0))} cores this process may use")
    if args.journal_only and not args.journal:
        p.error("--journal-only needs --journal FILE")
    if args.warmup < 0:
        p.error(f"--warmup must not be negative, not {args.warmup}")
    return args


def select_models(binary, requested, reference_root):
    """(the program's specs, the models selected: `requested` or all, the
    reference root resolved) for a tool that runs both sides; InputError for
    no program, an unknown model, or a TorchBench model without a checkout."""
    if not os.access(binary, os.X_OK):
        raise InputError(f"no program at {binary}: build it (tools/tb build) or pass --binary")
    specs = list_specs(binary)
    unknown = [m for m in requested if m not in specs]
    if unknown:
        raise InputError(f"unknown model{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)} (the program lists {len(specs)}; "
                         "--torchbench_list_models)")
    models = requested or sorted(specs)
    needs_root = [m for m in models if reference_kind(m) == "torchbench"]
    root = reference_root
    if needs_root and not root:
        raise InputError(f"{len(needs_root)} selected model(s) ({needs_root[0]}, ...) "
                         "run TorchBench's own code: pass --reference-root CHECKOUT "
                         "(a pytorch/benchmark checkout at 43ca0857) or set "
                         "TORCHBENCH_REFERENCE_ROOT")
    if needs_root and not (pathlib.Path(root) / "torchbenchmark" / "models").is_dir():
        raise InputError(f"--reference-root {root}: no torchbenchmark/models/ there (a "
                         "pytorch/benchmark checkout at 43ca0857)")
    return specs, models, str(pathlib.Path(root).resolve()) if root else None


def lane_cores(jobs, threads):
    """The cores each of `jobs` side-by-side lanes is pinned to: disjoint
    sets of max(threads) cores; one lane is not pinned."""
    if jobs == 1:
        return [None]
    width = max(threads)
    available = sorted(os.sched_getaffinity(0))
    return [set(available[k * width:(k + 1) * width]) for k in range(jobs)]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["eager"]:
        return eager_main(argv[1:])
    args = parse_args(argv)
    if args.worker:
        return worker(json.loads(args.worker))
    try:
        specs, models, root = select_models(args.binary, args.models, args.reference_root)
        names = instance_names(args.binary, models, MODES[args.mode], args.batch_size,
                               args.device)
        if not names:
            raise InputError("the selection has no instance (a model without that mode?)")
        costs = read_costs(args.costs) if args.costs else {}
    except InputError as e:
        print(f"versus-python: {e}", file=sys.stderr)
        return 2

    import torch

    cpu, cpu_flags = env.machine()
    cores = os.cpu_count()
    settings = {"device": args.device, "rounds": args.rounds, "steps": args.steps,
                "warmup": args.warmup, "seed": args.seed, "tolerance": args.tolerance,
                "one_round_above": args.one_round_above}
    # Records from before --host-malloc have no key: they were glibc's.
    if args.host_malloc != "glibc":
        settings["host_malloc"] = args.host_malloc
    try:
        done = read_journal(args.journal, settings, keep_missing=args.journal_only)
    except InputError as e:
        print(f"versus-python: {e}", file=sys.stderr)
        return 2
    command = published_command(argv)
    print(f"versus-python: {len(names)} instances x threads {args.threads}, {args.rounds} rounds"
          f" of {args.warmup} warm-up + {args.steps} steps; {cpu}, {cores} cores; torch "
          f"{torch.__version__}", file=sys.stderr)
    print(HEADER, flush=True)
    # The cheapest first (a previous run's step times, else Eval before
    # Train), so that a run stopped early has the most rows.
    order = sorted(names, key=lambda n: (costs.get(n, math.inf), n.split("/")[1] != "Eval"))
    work = [(t, n) for t in args.threads for n in order]
    lanes = queue.Queue()
    for lane in lane_cores(args.jobs, args.threads):
        lanes.put(lane)
    lock = threading.Lock()
    finished = {}

    def run_one(item):
        threads, name = item
        model = name.split("/")[0]
        key = (name, threads, args.device)
        if key in done:
            record = done[key]
        elif args.journal_only:
            record = not_measured(name, specs[model], reference_kind(model), threads, args)
        else:
            cores = lanes.get()
            try:
                record = measure(args.binary, name, specs[model], reference_kind(model),
                                 threads, args, root, cores)
            finally:
                lanes.put(cores)
            if args.journal:
                with lock:
                    note = files.append_line(args.journal,
                                             json.dumps(dict(record, settings=settings)))
                if note:
                    print(f"versus-python: note: {note}", file=sys.stderr)
        record.pop("settings", None)
        with lock:
            finished[item] = record
            print(line(record), flush=True)

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(run_one, work))
    records = [finished[item] for item in work]
    doc = {"tool": TOOL, "context": {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "command": command,
        "device": args.device, "batch_size": args.batch_size, "threads": args.threads,
        "cpu": cpu, "cpu_flags": cpu_flags, "cores": cores,
        "torch_version": torch.__version__,
        "libtorch_version": next((r["cpp"]["libtorch_version"] for r in records
                                  if r["cpp"].get("libtorch_version")), None),
        **settings, "host_malloc": args.host_malloc},
        "results": records, "summary": aggregate(records)}
    print("", file=sys.stderr)
    for g in doc["summary"]:
        domains = ", ".join(f"{d} {fmt(v['geomean_ratio'], '{:.2f}')}"
                            for d, v in g["domains"].items())
        print(f"versus-python: {g['threads']} thread(s), {g['mode']}: geomean C++/Py "
              f"{fmt(g['geomean_ratio'], '{:.3f}')} over {g['paired']} of {g['instances']} "
              f"instances ({domains}); {g['verdicts']['slower']} slower", file=sys.stderr)
    for r in records:
        if r["verdict"] == "slower":
            print(f"versus-python: slower: {r['benchmark']} ({r['threads']} thread(s)) "
                  f"C++/Py {r['ratio']:.3f}; top-level ops C++ vs Python: "
                  f"{op_diff_text(r) or 'the same'}", file=sys.stderr)
    for path, text in ((args.output, lambda: json.dumps(doc, indent=1) + "\n"),
                       (args.markdown, lambda: markdown(doc))):
        if path:
            files.write_text(path, text())
    status = 0
    unmeasured = sum("not_measured" in r for r in records)
    if unmeasured:
        print(f"versus-python: {unmeasured} instance(s) not measured: the journal has no record "
              "of them", file=sys.stderr)
        status = 1
    for r in records:
        if "error" in r["cpp"]:
            print(f"versus-python: {r['benchmark']} ({r['threads']} thread(s)): the program "
                  f"failed: {r['cpp']['error']}", file=sys.stderr)
            status = max(status, 1)
    for r in records:
        if "error" in r["python"]:
            print(f"versus-python: {r['benchmark']} ({r['threads']} thread(s)): the Python "
                  f"reference failed: {r['python']['error']}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
