#!/usr/bin/env python3
"""C++ step time beside the same reference model's step in Python eager.

Runs, in one invocation on one machine, the torchbench program and the
Python reference of each model (torchvision / timm / transformers, with
TorchBench's step)
on the CPU with the same thread count, the same warm-up (3 steps) and the
same statistic (median of the timed steps, each step timed alone after the
previous one finished), then prints both and their ratio.

    .venv/bin/python tools/compare_eager.py --batch-size 8 \\
        --models resnet18 mobilenet_v2 timm_vision_transformer

The Python side mirrors TorchBench 43ca0857: TorchVisionModel (Adam lr 1e-3,
CrossEntropy against rand_like soft targets, inputs rand_like(randn)) and
TimmModel (timm SGD nesterov lr 1e-4 momentum 0.9 weight decay 1e-4 without
decay on biases/norms, CrossEntropy on fresh random labels each step) and
HuggingFaceModel (from_config, randint ids of its train/eval length, the eval
length divided by cpu_input_slice; Train: model(input_ids, labels).loss,
backward, Adam lr 1e-3 with no zero_grad, as at 43ca0857); eval is the
forward under no_grad.

--device cuda runs both sides on the GPU (batch sizes: each model's default
unless --batch-size) with TorchBench's CUDA settings: fp32 leaves
torch.backends' defaults (cuDNN TF32 on, matmul TF32 off), tf32 turns both
on; cudnn.benchmark is True for torchvision/timm models and False for the
HF ones; `default` is the family's DEFAULT_{TRAIN,EVAL}_CUDA_PRECISION
(Train fp32, Eval fp16 = model.half()); fp16/bf16 convert the module and
the float inputs, amp_fp16/amp_bf16 autocast the forward. Each Python step
is timed by CUDA events around it, then synchronized; after the 3 warm-up
steps the peak-memory statistics are reset, and torch.cuda.
max_memory_allocated() after the timed steps stands beside the C++
`peak_mem`. --kernels counts the CUDA kernels of a few more steps under
torch.profiler (one discarded step first, as the program's profiling pass;
the C++ side runs with --torchbench_profile for its kernels_per_step).
--cpp-json reads the C++ side from a run already made (tools/gpu_check.sh)
instead of running the program; --json writes every figure.
"""
import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

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

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "amp_fp16", "amp_bf16", "default")
MODES = ("Train", "Eval")


def resolve_precision(precision, mode):
    """`default` on CUDA: DEFAULT_TRAIN_CUDA_PRECISION (fp32) and
    DEFAULT_EVAL_CUDA_PRECISION (fp16) of TorchVisionModel, TimmModel and
    HuggingFaceModel alike."""
    if precision != "default":
        return precision
    return "fp32" if mode == "Train" else "fp16"


def build_step(name, mode, batch_size, device="cpu", precision="fp32"):
    """The reference model's TorchBench step as a function of no arguments."""
    import torch

    package, builder = REFERENCES[name]
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
    amp_dtype = {"amp_fp16": torch.float16, "amp_bf16": torch.bfloat16}.get(precision)
    if amp_dtype is not None:
        device_type = torch.device(device).type

        def autocast():
            return torch.autocast(device_type=device_type, dtype=amp_dtype)
    else:
        autocast = contextlib.nullcontext
    if package == "torchvision":
        import torchvision

        model = getattr(torchvision.models, builder)(weights=None).to(device)
        x = torch.randn(batch_size, 3, 224, 224, device=device)
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
        import transformers

        config_name, auto_name, train_length, eval_length = builder
        if torch.device(device).type != "cpu":
            eval_length = CUDA_EVAL_LENGTH.get(name, eval_length)
        config_name, config_args = (
            config_name if isinstance(config_name, tuple) else (config_name, {}))
        config = getattr(transformers, config_name)(**config_args)
        model = getattr(transformers, auto_name).from_config(config).to(device)
        if dtype is not None:
            model = model.to(dtype)
        length = train_length if mode == "Train" else eval_length
        ids = torch.randint(0, config.vocab_size, (batch_size, length), device=device)
        if mode == "Train":
            labels = torch.randint(0, config.vocab_size, (batch_size, length),
                                   device=device)
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
        import timm
        from timm.optim import create_optimizer_v2

        model = timm.create_model(builder, pretrained=False).to(device)
        x = torch.randn((batch_size,) + tuple(model.default_cfg["input_size"]),
                        device=device)
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


def python_step_times(name, mode, batch_size, warmup, steps, seed):
    import torch

    torch.manual_seed(seed)
    step = build_step(name, mode, batch_size)
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
        import torch

        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
         torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic) = self.defaults
        if precision == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        # TorchVisionModel and TimmModel set it; HuggingFaceModel does not.
        torch.backends.cudnn.benchmark = package in ("torchvision", "timm")
        return {"matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                "cudnn_benchmark": torch.backends.cudnn.benchmark,
                "cudnn_deterministic": torch.backends.cudnn.deterministic}


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


def python_cuda_instance(name, mode, batch_size, warmup, steps, seed, precision,
                         kernel_steps, flags):
    """One instance on the GPU: CUDA-event step times, peak memory of the
    timed steps, and (kernel_steps > 0) kernels per step."""
    import gc

    import torch

    gc.collect()
    torch.cuda.empty_cache()
    package = REFERENCES[name][0]
    resolved = resolve_precision(precision, mode)
    applied = flags.apply(package, resolved)
    torch.manual_seed(seed)
    step = build_step(name, mode, batch_size, device="cuda", precision=resolved)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
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
    result = {"python_precision": resolved,
              "python_median_ms": statistics.median(times) * 1e3,
              "python_step_ms": [t * 1e3 for t in times],
              "python_wall_median_ms": statistics.median(walls) * 1e3,
              "python_peak_mem": torch.cuda.max_memory_allocated(),
              **applied}
    if kernel_steps > 0:
        result["python_kernels_per_step"] = count_kernels(step, kernel_steps)
    del step
    gc.collect()
    torch.cuda.empty_cache()
    return result


def run_cpp(binary, names, warmup, steps, seed, device_args, batch_size=None):
    """Runs torchbench, one step per repetition; returns its JSON document."""
    pattern = "^(" + "|".join(names) + ")/"
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cpp.json")
        batch = [f"--torchbench_batch_sizes={batch_size}"] if batch_size else []
        proc = subprocess.run(
            [binary, *device_args, *batch,
             f"--torchbench_warmup_steps={warmup}", f"--torchbench_seed={seed}",
             f"--benchmark_filter={pattern}",
             # One step per repetition: each repetition's time is one step.
             f"--benchmark_repetitions={steps}", "--benchmark_min_time=1e-9",
             "--benchmark_report_aggregates_only=false",
             f"--benchmark_out={out}", "--benchmark_out_format=json"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # On CUDA an errored instance (exit 1) is that row's error; on the
        # CPU, as before, any failure ends the comparison.
        cuda = "--torchbench_device=cuda" in device_args
        if proc.returncode != 0 and not (cuda and os.path.exists(out)):
            sys.exit(f"compare_eager.py: torchbench failed:\n{proc.stderr}")
        with open(out) as f:
            return json.load(f)


def cpp_step_times(binary, names, batch_size, warmup, steps, seed):
    """Returns {benchmark name: [seconds per step, ...]} from torchbench."""
    doc = run_cpp(binary, names, warmup, steps, seed, ["--torchbench_device=cpu"],
                  batch_size)
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    times = {}
    for run in doc["benchmarks"]:
        if run.get("run_type") != "iteration" or run.get("error_occurred"):
            continue
        times.setdefault(run["name"], []).append(
            run["real_time"] * scale[run["time_unit"]])
    return times, doc["context"]


SCALE_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
CPP_COUNTERS = ("peak_mem", "kernels_per_step", "gpu_busy_pct", "gpu_idle_pct",
                "syncs_per_step")


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
                row["median"] = run["real_time"] * SCALE_MS[run["time_unit"]]
            continue
        row["times"].append(run["real_time"] * SCALE_MS[run["time_unit"]])
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
    if all((m, mode) in sizes for m in models for mode in MODES):
        return sizes
    try:
        listed = json.loads(subprocess.run(
            [binary, "--torchbench_list_models=json"], capture_output=True,
            text=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as e:
        sys.exit(f"compare_eager.py: cannot read the models' default batch sizes "
                 f"from {binary} --torchbench_list_models=json ({e}); pass --batch-size")
    for spec in listed:
        if spec["name"] in models:
            sizes.setdefault((spec["name"], "Train"), spec["train_batch_size"])
            sizes.setdefault((spec["name"], "Eval"), spec["eval_batch_size"])
    return sizes


def main_cuda(args):
    import torch

    device_args = ["--torchbench_device=cuda", f"--torchbench_precision={args.precision}"]
    if args.kernels:
        device_args.append("--torchbench_profile")
    if args.cpp_json:
        with open(args.cpp_json) as f:
            doc = json.load(f)
    elif args.python_only:
        doc = {"benchmarks": [], "context": {}}
    else:
        doc = run_cpp(args.binary, args.models, args.warmup, args.steps, args.seed,
                      device_args, args.batch_size)
    cpp = cpp_rows(doc)
    context = doc.get("context", {})
    sizes = ({(m, mode): args.batch_size for m in args.models for mode in MODES}
             if args.batch_size else default_batch_sizes(args.binary, cpp, args.models))
    flags = CudaFlags()
    print(f"CUDA ({torch.cuda.get_device_name()}), warm-up {args.warmup}, median of "
          f"{args.steps} steps, precision {args.precision}; LibTorch "
          f"{context.get('libtorch_version', '-')} vs torch {torch.__version__}")
    print(f"{'benchmark':32s} {'prec':>8s} {'C++ ms':>9s} {'Python ms':>10s} "
          f"{'C++/Py':>7s} {'C++ MiB':>9s} {'Py MiB':>9s} {'C++ kern':>9s} {'Py kern':>8s}")
    results, failed = [], False
    for name in args.models:
        for mode in args.modes:
            key = f"{name}/{mode}/batch_size:{sizes[(name, mode)]}"
            record = {"benchmark": key, "model": name, "mode": mode,
                      "batch_size": sizes[(name, mode)], "device": "cuda",
                      "precision": args.precision, **cpp.get(key, {})}
            try:
                record.update(python_cuda_instance(
                    name, mode, sizes[(name, mode)], args.warmup, args.steps, args.seed,
                    args.precision, args.kernel_steps if args.kernels else 0, flags))
            except Exception as e:  # an OOM or a model error: that instance's
                failed = True
                record["python_error"] = f"{type(e).__name__}: {e}".splitlines()[0]
            results.append(record)
            print(cuda_line(record), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"context": {
                "device": "cuda", "device_name": torch.cuda.get_device_name(),
                "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
                "cudnn_version": torch.backends.cudnn.version(),
                "precision": args.precision, "warmup": args.warmup, "steps": args.steps,
                "seed": args.seed, "kernel_steps": args.kernel_steps if args.kernels else 0,
                "cpp_context": context}, "results": results}, f, indent=1)
    return 1 if failed else 0


def cuda_line(r):
    def num(key, scale=1.0, fmt="{:.1f}"):
        return fmt.format(r[key] * scale) if r.get(key) is not None else "-"
    ratio = (f"{r['cpp_median_ms'] / r['python_median_ms']:.3f}"
             if r.get("cpp_median_ms") and r.get("python_median_ms") else "-")
    line = (f"{r['benchmark']:32s} {r.get('python_precision', r['precision']):>8s} "
            f"{num('cpp_median_ms', fmt='{:.2f}'):>9s} "
            f"{num('python_median_ms', fmt='{:.2f}'):>10s} {ratio:>7s} "
            f"{num('cpp_peak_mem', 2 ** -20, '{:.0f}'):>9s} "
            f"{num('python_peak_mem', 2 ** -20, '{:.0f}'):>9s} "
            f"{num('cpp_kernels_per_step'):>9s} {num('python_kernels_per_step'):>8s}")
    for side in ("cpp_error", "python_error"):
        if side in r:
            line += f"  {side}: {r[side]}"
    return line


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(2, f"compare_eager.py: {message}\n")


def main():
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+",
                        default=["resnet18", "mobilenet_v2",
                                 "timm_vision_transformer"])
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: 8 on the CPU, each model's default on CUDA")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--binary", default=os.path.join(
        os.path.dirname(__file__), "..", "build", "benchmarks", "torchbench"))
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=PRECISIONS, default="fp32",
                        help="CUDA only (the CPU comparison is fp32)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                        help="CUDA only")
    parser.add_argument("--kernels", action="store_true",
                        help="CUDA only: kernels per step under torch.profiler")
    parser.add_argument("--kernel-steps", type=int, default=5)
    parser.add_argument("--cpp-json", help="CUDA only: the C++ side from this "
                        "torchbench JSON instead of running the program")
    parser.add_argument("--python-only", action="store_true",
                        help="CUDA only: no C++ side")
    parser.add_argument("--json", help="CUDA only: write every figure to this file")
    args = parser.parse_args()
    unknown = [m for m in args.models if m not in REFERENCES]
    if unknown:
        sys.exit(f"compare_eager.py: no Python reference for {unknown}")
    if args.device == "cpu":
        given = [flag for flag, value in (
            ("--precision", args.precision != "fp32"),
            ("--modes", args.modes != list(MODES)), ("--kernels", args.kernels),
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
        sys.exit(main_cuda(args))

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


if __name__ == "__main__":
    main()
