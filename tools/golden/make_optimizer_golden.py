#!/usr/bin/env python3
"""Makes tests/golden/optimizers.golden: what torch.optim computes.

    make_optimizer_golden.py [--out DIR]

For every optimizer configuration tests/unit/optim_fidelity_test.cpp checks,
and for both of PyTorch's code paths (foreach=False: the per-parameter
_single_tensor_* loop; foreach=True: the _multi_tensor_* path, which PyTorch
runs by default on CUDA and which can be forced on the CPU), this runs five
steps of torch.optim on five small parameters and records each parameter
afterwards. Parameters and gradients come from closed formulas that the C++
test computes the same way (sin of a ramp; a fixed loss in which parameter 1
has no gradient on odd steps, which PyTorch skips). The CASES list is the
twin of the C++ test's.
"""

import argparse
import os
import pathlib
import sys
import tempfile

import torch

from make_golden import summary_lines

HERE = pathlib.Path(__file__).resolve().parent

O = torch.optim
CASES = {
    "Adam": lambda p, f: O.Adam(p, foreach=f),
    "AdamWeightDecay": lambda p, f: O.Adam(p, lr=1e-2, weight_decay=0.1, foreach=f),
    "AdamAmsgrad": lambda p, f: O.Adam(p, lr=1e-2, betas=(0.9, 0.9), amsgrad=True, foreach=f),
    "AdamW": lambda p, f: O.AdamW(p, lr=1e-2, weight_decay=1e-2, foreach=f),
    "Sgd": lambda p, f: O.SGD(p, lr=0.1, foreach=f),
    "SgdMomentum": lambda p, f: O.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, foreach=f),
    "SgdNesterovWeightDecay": lambda p, f: O.SGD(
        p, lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True, foreach=f
    ),
    "Rmsprop": lambda p, f: O.RMSprop(p, foreach=f),
    "RmspropMomentumCenteredWeightDecay": lambda p, f: O.RMSprop(
        p, lr=1e-3, weight_decay=1e-2, momentum=0.9, centered=True, foreach=f
    ),
    "Radam": lambda p, f: O.RAdam(p, foreach=f),
    "RadamDecoupledWeightDecay": lambda p, f: O.RAdam(
        p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, foreach=f
    ),
}
NUM_PARAMS = 5
STEPS = 5


def make_params():
    params = []
    for i in range(NUM_PARAMS):
        rows, cols = 2 + i % 3, 3 + i % 4
        p = torch.sin(torch.arange(rows * cols, dtype=torch.float32) * 0.37 + i)
        params.append(p.view(rows, cols).requires_grad_())
    return params


def backward(params, step):
    loss = torch.zeros(())
    for i, p in enumerate(params):
        if i == 1 and step % 2 == 1:
            continue
        loss = loss + (p * p).sum() * (0.5 + 0.1 * i) + p.sin().sum() * (step + 1)
    loss.backward()


def run(make, foreach):
    params = make_params()
    optimizer = make(params, foreach)
    for step in range(STEPS):
        optimizer.zero_grad()
        backward(params, step)
        optimizer.step()
    return params


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE.parent.parent / "tests" / "golden"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    lines = [
        "torchbench-golden 1",
        "fill 1",
        "model optimizers",
        f"reference torch {torch.__version__} torch.optim (tools/golden/make_optimizer_golden.py)",
        "mode train",
        "batch_size 1",
        "dtype float32",
        f"note {STEPS} steps of each optimizer on {NUM_PARAMS} parameters; keys are",
        "note <case>/<foreach|single>/param<i>; param1 has no gradient on odd steps",
    ]
    for name, make in CASES.items():
        for foreach in (True, False):
            path = "foreach" if foreach else "single"
            for i, p in enumerate(run(make, foreach)):
                lines += summary_lines(f"{name}/{path}/param{i}", p)
    out = pathlib.Path(args.out)
    fd, tmp = tempfile.mkstemp(dir=out, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out / "optimizers.golden")
    print(out / "optimizers.golden")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
