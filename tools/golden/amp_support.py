#!/usr/bin/env python3
"""Records which TorchBench models may run amp Train on CUDA, for the spec test.

    amp_support.py --reference-root CHECKOUT [--out FILE]

TorchBench's util/extra_args.py check_precision allows amp Train (on CUDA; it
has no amp on the CPU) only for a model with its own enable_amp() or one that
is a staged train test (forward, backward and optimizer methods). A model has
enable_amp() when its Model class or a base class defines it: the families'
base classes in util/framework/*/model_factory.py, or the model itself. This
reads both by parsing the source (nothing is imported) and writes, one model
per line, whether each has enable_amp() and whether it is a staged train test
to FILE (default tests/golden/amp_support.txt); tests/models/amp_support_test.cpp
checks every registered ModelSpec's enable_amp against it. CHECKOUT is a
pytorch/benchmark checkout at 43ca0857, outside this repository.
"""
import argparse
import ast
import pathlib
import sys

STAGED = {"forward", "backward", "optimizer"}


def classes(path):
    """{class name: (base names, method names)} of one Python file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                     for b in node.bases]
            methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            found[node.name] = (bases, methods)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-root", required=True)
    parser.add_argument("--out", default="tests/golden/amp_support.txt")
    args = parser.parse_args()
    root = pathlib.Path(args.reference_root) / "torchbenchmark"
    if not (root / "models").is_dir():
        sys.exit(f"amp_support.py: {root / 'models'} is not a TorchBench models folder")
    # The families' base classes (TorchVisionModel, TimmModel,
    # HuggingFaceModel, ...) and what they define.
    family = {}
    for factory in sorted((root / "util" / "framework").glob("*/model_factory.py")):
        family.update(classes(factory))
    lines = ["# TorchBench 43ca0857: amp Train on CUDA (util/extra_args.py check_precision),"
             " by tools/golden/amp_support.py",
             "# model enable_amp staged_train"]
    for init in sorted((root / "models").glob("*/__init__.py"), key=lambda p: p.parent.name):
        own = classes(init).get("Model")
        if own is None:
            continue
        bases, methods = own
        for base in bases:
            methods = methods | family.get(base, ((), set()))[1]
        enable_amp = "enable_amp" in methods
        staged = STAGED <= methods
        lines.append(f"{init.parent.name} {str(enable_amp).lower()} {str(staged).lower()}")
    pathlib.Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"amp_support.py: {len(lines) - 2} models written to {args.out}")


if __name__ == "__main__":
    main()
