#!/usr/bin/env python3
"""Makes golden files from each reference model's own code.

    make_golden.py --reference-root CHECKOUT [--models NAME ...] [--out DIR]
                   [--detectron2-root DETECTRON2]

CHECKOUT is a checkout of pytorch/benchmark at commit 43ca0857 (the paper's
TorchBench), kept outside this repository: nothing from it is committed. For
every adapter in tools/golden/adapters/ (or only the named ones) this builds
the reference with TorchBench's hyper-parameters, overwrites its weights with
the deterministic fill (fill.py, the twin of the C++ DeterministicFill),
makes its inputs with the same fill, runs its forward (and loss and gradients
where it defines them) and writes DIR/<model>.golden (default tests/golden):
shapes, sums, abs-sums, max-abs and 32 sampled elements of each result, in
the format lib/include/torchbench/golden.h documents.

An adapter is a module with
    MODEL       the TorchBench name
    REFERENCE   what it runs, for the file's reference line
    MODE        "train" or "eval";  BATCH_SIZE;  DTYPE "float32"|"float64"
    NOTES       lines saying what is compared and what is turned off
    compute(root) -> {key: tensor}
Any failure exits non-zero with a one-line message.

Conditioning. A golden file is read on other machines, whose vector kernels
(ATen's, oneDNN's, MKL's, fbgemm's) round differently, so a key is kept only
if it does not depend on them. Each adapter runs in a child process as
recorded, then again under each of VARIANTS: an AVX2-only machine, the
lowest kernels, and (float32 models: variants_for) every filled tensor moved
by one rounding step (fill.PERTURB_ENV). A key whose value moves in any
variant by more than a tenth of the C++ test's tolerance (the same error
measure as GoldenError in
lib/src/golden.cpp) is dropped, and the file says so in a note with the
measured movement; the largest movement among the kept keys is noted too.
An adapter whose keys all drop is refused. --no-conditioning skips the check
(quick local iteration; such a file is marked and is not for committing).

The detectron2 adapters also need a detectron2 source checkout at c470ca3
(TorchBench's pin), outside this repository: --detectron2-root, which sets
DETECTRON2_ROOT for them (detectron2_env.py), or that variable itself.
"""

import argparse
import importlib
import math
import os
import pathlib
import subprocess
import sys
import tempfile

import fill

HERE = pathlib.Path(__file__).resolve().parent

REFERENCE_COMMIT = "43ca0857"

# The C++ golden test's tolerances (tests/models/golden_test.cpp).
TOLERANCE = {"float32": 1e-4, "float64": 1e-10}
CONDITIONING_FRACTION = 0.1
QUANTIZED_ALLOWED_STEPS = 1

# The machines a golden file must hold on, as environments of a rerun. The
# lowered one is what CI's second golden run uses (tests/CMakeLists.txt).
_AVX2 = {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
         "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2"}
VARIANTS = {
    "avx2": dict(_AVX2, ATEN_CPU_CAPABILITY="avx2"),
    "lowest-kernels": dict(_AVX2, ATEN_CPU_CAPABILITY="default"),
    "perturbed": {fill.PERTURB_ENV: "{dtype}"},
}


def sample_indices(numel):
    out = []
    for k in range(32):
        index = k * (numel - 1) // 31 if numel > 0 else None
        if index is not None and (not out or out[-1] != index):
            out.append(index)
    return out


def summary(tensor):
    """(shape, sum, abs_sum, max_abs, {index: value}) as the file records it."""
    import torch

    t = tensor.detach().to("cpu", torch.float64).contiguous()
    flat = t.reshape(-1)
    samples = {i: flat[i].item() for i in sample_indices(flat.numel())}
    max_abs = flat.abs().max().item() if flat.numel() else 0.0
    return tuple(t.shape), t.sum().item(), t.abs().sum().item(), max_abs, samples


def summary_lines(key, tensor):
    shape, total, abs_sum, max_abs, samples = summary(tensor)
    dims = ",".join(str(d) for d in shape) if shape else "-"
    lines = [f"tensor {key} {dims} {total!r} {abs_sum!r} {max_abs!r}"]
    lines += [f"sample {key} {i} {value!r}" for i, value in samples.items()]
    return lines


def golden_error(golden, actual):
    """The C++ test's GoldenError (lib/src/golden.cpp) between two summaries."""
    shape, total, abs_sum, max_abs, samples = golden
    a_shape, a_total, a_abs_sum, _, a_samples = actual
    if shape != a_shape or not (math.isfinite(a_total) and math.isfinite(a_abs_sum)):
        return math.inf
    mass = max(abs_sum, 1e-30)
    peak = max(max_abs, 1e-30)
    error = max(abs(a_total - total) / mass, abs(a_abs_sum - abs_sum) / mass)
    for index, value in samples.items():
        error = max(error, abs(a_samples[index] - value) / peak)
    return error


def run_child(name, variant, env_extra):
    """Runs adapter `name` in a fresh process (the kernel switches are read at
    start-up) and returns its results."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "results.pt"
        env = dict(os.environ, **env_extra)
        proc = subprocess.run(
            [sys.executable, __file__, "--child", name, "--child-out", str(out)],
            env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            lines = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()
            raise RuntimeError(f"{name} ({variant}) failed: {lines[-1]}")
        return torch.load(out)


def variants_for(adapter):
    """VARIANTS, less "perturbed" for a float64 model. A one-ulp move of
    every input breaks the exact ties a filled model has (equal values in a
    max pool, equal IoUs in a target assignment), which another machine's
    kernels keep: they compute equal values alike. In float32 that is the
    price of catching chaotic chains the kernel switches on one machine do
    not reproduce (resnet50_quantized_qat moved 2 steps on an AVX2 EPYC and
    0 under them); in float64, whose bar sits six orders above rounding, it
    only flagged ties (yolov3: 27 of 34 keys, moved 1e-8..3e-5, each stable
    to 1.3e-11 under both kernel switches)."""
    if adapter.DTYPE == "float64":
        return {k: v for k, v in VARIANTS.items() if k != "perturbed"}
    return VARIANTS


def grid_step(tensor):
    """The step of the grid a dequantized int8 tensor lies on (its smallest
    gap between distinct values), or None when it holds fewer than two."""
    import torch

    values = torch.unique(tensor.detach().to(torch.float64).reshape(-1))
    gaps = values[1:] - values[:-1]
    return gaps.min().item() if gaps.numel() else None


def step_movement(base, other, step):
    """How far `other` is from `base` in steps, as GoldenStepError measures
    it (lib/src/golden.cpp) but over every element."""
    import torch

    a = base.detach().to(torch.float64).reshape(-1)
    b = other.detach().to(torch.float64).reshape(-1)
    if a.shape != b.shape:
        return math.inf
    per_hundred = step * max(1.0, a.numel() / 100.0)
    return max((b - a).abs().max().item() / step,
               abs(b.sum().item() - a.sum().item()) / per_hundred,
               abs(b.abs().sum().item() - a.abs().sum().item()) / per_hundred)


def condition(adapter, results, variant_results):
    """Drops the keys that move across VARIANTS; returns (kept, quantized,
    notes), quantized mapping each kept int8 key to its grid step.

    Keys an adapter lists in QUANTIZED_KEYS hold int8 results of integer
    kernels (fbgemm's int32 accumulation) from inputs that are exact on
    every machine: only the requantization rounding can differ, which the
    kernel variants exercise; a one-ulp perturbation of the float inputs is
    not a machine difference for them, so "perturbed" does not judge them.
    They are kept within QUANTIZED_ALLOWED_STEPS."""
    limit = CONDITIONING_FRACTION * TOLERANCE[adapter.DTYPE]
    quantized_keys = set(getattr(adapter, "QUANTIZED_KEYS", ()))
    base = {key: summary(value) for key, value in results.items()}
    movement, dropped, quantized = {}, {}, {}
    for key in results:
        if key in quantized_keys:
            step = grid_step(results[key])
            if step is None:
                dropped[key] = "no signal: fewer than two distinct values"
                continue
            moved, where = 0.0, "none"
            for variant, other in variant_results.items():
                if variant == "perturbed":
                    continue
                m = step_movement(results[key], other[key], step) if key in other else math.inf
                if m > moved:
                    moved, where = m, variant
            if moved > QUANTIZED_ALLOWED_STEPS:
                dropped[key] = f"moved {moved:.2f} quantization steps ({where})"
            else:
                quantized[key] = step
            continue
        for variant, other in variant_results.items():
            error = golden_error(base[key], summary(other[key])) if key in other else math.inf
            if error > movement.get(key, (-1.0, ""))[0]:
                movement[key] = (error, variant)
            if error > limit:
                dropped.setdefault(key, f"moved {error:.2e} ({variant})")
    kept = {k: v for k, v in results.items() if k not in dropped}
    if not kept:
        raise RuntimeError(f"{adapter.MODEL}: every key moves past {limit:g} across machines;"
                           " record it in float64")
    notes = []
    floating = [k for k in kept if k not in quantized]
    if floating:
        worst = max(floating, key=lambda k: movement[k][0])
        notes.append(f"conditioning: {len(floating)} keys kept, each moving at most {limit:g} (a"
                     f" tenth of the tolerance) across {', '.join(variant_results)}; the largest,"
                     f" {worst}, moved {movement[worst][0]:.2e} ({movement[worst][1]})")
    for key, step in sorted(quantized.items()):
        notes.append(f"conditioning: {key} is int8 on a grid of {step:.6g}: compared in steps,"
                     f" at most {QUANTIZED_ALLOWED_STEPS} per sampled value and one per hundred"
                     " elements on the sums (a requantization rounding is a whole step)")
    for key in sorted(dropped):
        notes.append(f"conditioning: dropped {key}: {dropped[key]}")
    return kept, quantized, notes


def write_golden(adapter, results, out_dir, extra_notes=(), quantized=None):
    lines = [
        "torchbench-golden 1",
        f"fill {fill.FILL_VERSION}",
        f"model {adapter.MODEL}",
        f"reference pytorch/benchmark {REFERENCE_COMMIT} {adapter.REFERENCE}",
        f"mode {adapter.MODE}",
        f"batch_size {adapter.BATCH_SIZE}",
        f"dtype {adapter.DTYPE}",
    ]
    lines += [f"note {n}" for n in list(adapter.NOTES) + list(extra_notes)]
    for key in sorted(results):
        if " " in key:
            raise ValueError(f"key '{key}' has a space")
        lines += summary_lines(key, results[key])
        if key in (quantized or {}):
            lines.append(f"quantized {key} {quantized[key]!r} {QUANTIZED_ALLOWED_STEPS}")
    path = out_dir / f"{adapter.MODEL}.golden"
    fd, tmp = tempfile.mkstemp(dir=out_dir, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


def adapters():
    names = sorted(p.stem for p in (HERE / "adapters").glob("*.py") if p.stem != "__init__")
    return names


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-root", type=pathlib.Path,
                        default=os.environ.get("TORCHBENCH_REFERENCE_ROOT"),
                        help=f"a pytorch/benchmark checkout at {REFERENCE_COMMIT}")
    parser.add_argument("--models", nargs="*", help="adapters to run (default: all)")
    parser.add_argument("--out", type=pathlib.Path,
                        default=HERE.parent.parent / "tests" / "golden")
    parser.add_argument("--no-conditioning", action="store_true",
                        help="skip the conditioning reruns (not for committed files)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="conditioning reruns at once (default: 2)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=pathlib.Path, help=argparse.SUPPRESS)
    parser.add_argument("--detectron2-root", type=pathlib.Path,
                        help="a facebookresearch/detectron2 checkout at c470ca3 (for the"
                        " detectron2 adapters; default: $DETECTRON2_ROOT)")
    args = parser.parse_args(argv)
    if args.detectron2_root:
        os.environ["DETECTRON2_ROOT"] = str(args.detectron2_root.resolve())
    if args.reference_root is None:
        raise ValueError("--reference-root (or TORCHBENCH_REFERENCE_ROOT) is required")
    root = args.reference_root.resolve()
    # Children inherit it through the environment.
    os.environ["TORCHBENCH_REFERENCE_ROOT"] = str(root)
    if not (root / "torchbenchmark" / "models").is_dir():
        raise ValueError(f"{root} is not a pytorch/benchmark checkout")
    names = args.models or adapters()
    unknown = sorted(set(names) - set(adapters()))
    if unknown:
        raise ValueError(f"no adapter for {', '.join(unknown)} (have: {', '.join(adapters())})")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.child:
        import torch

        torch.set_num_threads(1)
        adapter = importlib.import_module(f"adapters.{args.child}")
        torch.manual_seed(0)
        results = adapter.compute(root)
        torch.save({k: v.detach().cpu() for k, v in results.items()}, args.child_out)
        return
    from concurrent.futures import ThreadPoolExecutor

    for name in names:
        adapter = importlib.import_module(f"adapters.{name}")
        if adapter.DTYPE not in TOLERANCE:
            raise ValueError(f"{name}: DTYPE {adapter.DTYPE!r} is not one of {sorted(TOLERANCE)}")
        variants = {} if args.no_conditioning else variants_for(adapter)
        runs = {"recorded": {}, **variants}
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {
                v: pool.submit(run_child, name, v,
                               {k: x.format(dtype=adapter.DTYPE) for k, x in env.items()})
                for v, env in runs.items()}
            outputs = {v: f.result() for v, f in futures.items()}
        results = outputs.pop("recorded")
        if args.no_conditioning:
            kept, quantized = results, {}
            notes = ["conditioning: not checked (--no-conditioning)"]
        else:
            kept, quantized, notes = condition(adapter, results, outputs)
        path = write_golden(adapter, kept, args.out, notes, quantized)
        print(f"make_golden: {adapter.MODEL}: {len(kept)} of {len(results)} tensors -> {path}")
        for note in notes:
            print(f"make_golden: {adapter.MODEL}: {note}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - one line for any failure.
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        sys.exit(f"make_golden: error: {type(e).__name__}: {message}")
