#!/usr/bin/env python3
"""Records TorchBench's per-model cuDNN flags for the spec test.

    cudnn_flags.py --reference-root CHECKOUT [--out FILE]

TorchBench records, in each model's metadata.yaml, the values of
torch.backends.cudnn.benchmark and .deterministic its train and eval runs saw
(train_benchmark, eval_benchmark, train_deterministic, eval_deterministic),
set by the model's module on import or by its family's factory. This writes
them, one model per line, to FILE (default tests/golden/cudnn_flags.txt);
tests/models/cudnn_flags_test.cpp checks every registered ModelSpec's
train_cudnn / eval_cudnn against it. CHECKOUT is a pytorch/benchmark checkout
at 43ca0857, outside this repository. A missing key is written as '-'.
"""
import argparse
import pathlib
import sys

KEYS = ("train_benchmark", "eval_benchmark", "train_deterministic",
        "eval_deterministic")


def read_flags(metadata):
    """The four flags of one metadata.yaml: top-level 'key: true|false'."""
    found = {}
    for line in metadata.read_text().splitlines():
        key, sep, value = line.partition(":")
        if sep and key in KEYS:
            found[key] = value.strip()
    return [found.get(k, "-") for k in KEYS]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-root", required=True)
    parser.add_argument("--out", default="tests/golden/cudnn_flags.txt")
    args = parser.parse_args()
    models = pathlib.Path(args.reference_root) / "torchbenchmark" / "models"
    if not models.is_dir():
        sys.exit(f"cudnn_flags.py: {models} is not a TorchBench models folder")
    lines = ["# TorchBench 43ca0857 metadata.yaml, by tools/golden/cudnn_flags.py",
             "# model " + " ".join(KEYS)]
    for metadata in sorted(models.glob("*/metadata.yaml")):
        lines.append(" ".join([metadata.parent.name] + read_flags(metadata)))
    pathlib.Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"{args.out}: {len(lines) - 2} models")


if __name__ == "__main__":
    main()
