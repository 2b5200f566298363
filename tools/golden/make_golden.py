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

The detectron2 adapters also need a detectron2 source checkout at c470ca3
(TorchBench's pin), outside this repository: --detectron2-root, which sets
DETECTRON2_ROOT for them (detectron2_env.py), or that variable itself.
"""

import argparse
import importlib
import os
import pathlib
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fill  # noqa: E402

REFERENCE_COMMIT = "43ca0857"


def sample_indices(numel):
    out = []
    for k in range(32):
        index = k * (numel - 1) // 31 if numel > 0 else None
        if index is not None and (not out or out[-1] != index):
            out.append(index)
    return out


def summary_lines(key, tensor):
    import torch

    t = tensor.detach().to("cpu", torch.float64).contiguous()
    shape = ",".join(str(d) for d in t.shape) if t.dim() > 0 else "-"
    flat = t.reshape(-1)
    max_abs = flat.abs().max().item() if flat.numel() else 0.0
    lines = [f"tensor {key} {shape} {t.sum().item()!r} {t.abs().sum().item()!r} {max_abs!r}"]
    lines += [f"sample {key} {i} {flat[i].item()!r}" for i in sample_indices(flat.numel())]
    return lines


def write_golden(adapter, results, out_dir):
    lines = [
        "torchbench-golden 1",
        f"fill {fill.FILL_VERSION}",
        f"model {adapter.MODEL}",
        f"reference pytorch/benchmark {REFERENCE_COMMIT} {adapter.REFERENCE}",
        f"mode {adapter.MODE}",
        f"batch_size {adapter.BATCH_SIZE}",
        f"dtype {adapter.DTYPE}",
    ]
    lines += [f"note {n}" for n in adapter.NOTES]
    for key in sorted(results):
        if " " in key:
            raise ValueError(f"key '{key}' has a space")
        lines += summary_lines(key, results[key])
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
    parser.add_argument("--reference-root", required=True, type=pathlib.Path,
                        help=f"a pytorch/benchmark checkout at {REFERENCE_COMMIT}")
    parser.add_argument("--models", nargs="*", help="adapters to run (default: all)")
    parser.add_argument("--out", type=pathlib.Path,
                        default=HERE.parent.parent / "tests" / "golden")
    parser.add_argument("--detectron2-root", type=pathlib.Path,
                        help="a facebookresearch/detectron2 checkout at c470ca3 (for the"
                        " detectron2 adapters; default: $DETECTRON2_ROOT)")
    args = parser.parse_args(argv)
    if args.detectron2_root:
        os.environ["DETECTRON2_ROOT"] = str(args.detectron2_root.resolve())
    root = args.reference_root.resolve()
    if not (root / "torchbenchmark" / "models").is_dir():
        raise ValueError(f"{root} is not a pytorch/benchmark checkout")
    names = args.models or adapters()
    unknown = sorted(set(names) - set(adapters()))
    if unknown:
        raise ValueError(f"no adapter for {', '.join(unknown)} (have: {', '.join(adapters())})")
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    torch.set_num_threads(max(1, torch.get_num_threads()))
    for name in names:
        adapter = importlib.import_module(f"adapters.{name}")
        torch.manual_seed(0)
        results = adapter.compute(root)
        path = write_golden(adapter, results, args.out)
        print(f"make_golden: {adapter.MODEL}: {len(results)} tensors -> {path}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - one line for any failure.
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        sys.exit(f"make_golden: error: {type(e).__name__}: {message}")
