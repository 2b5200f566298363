#!/usr/bin/env python3
"""Counts the ATen ops one PyTorch optimizer step issues, for comparison with
the C++ harness's --torchbench_count_ops (its optimizer_ops counter).

    .venv/bin/python tools/count_python_ops.py [--model resnet50] [--optimizer adam]

Builds torchvision's model on the CPU, runs one forward/backward, and counts
the top-level ATen ops (a TorchDispatchMode sees each op the Python code
dispatches, not the ones inside it) of optimizer.step() with foreach=False
(PyTorch's per-parameter loop) and foreach=True (its multi-tensor path, the
CUDA default).
"""

import argparse
import sys

import torch
import torchvision
from torch.utils._python_dispatch import TorchDispatchMode


class CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.by_op = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        self.by_op[name] = self.by_op.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def optimizer_ops(model_name, optimizer, foreach):
    torch.manual_seed(0)
    model = getattr(torchvision.models, model_name)()
    params = list(model.parameters())
    if optimizer == "adam":
        opt = torch.optim.Adam(params, lr=1e-3, foreach=foreach)
    else:
        opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9, nesterov=True, foreach=foreach)
    x = torch.randn(1, 3, 224, 224)
    for _ in range(2):  # the second step runs with the state allocated
        opt.zero_grad()
        model(x).sum().backward()
        if _ == 0:
            opt.step()
    with CountOps() as counter:
        opt.step()
    return len(params), counter.by_op


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
    args = parser.parse_args(argv)
    for foreach in (False, True):
        n, by_op = optimizer_ops(args.model, args.optimizer, foreach)
        path = "foreach" if foreach else "single"
        # _local_scalar_dense is .item() on PyTorch's CPU step counters: a
        # host read, no kernel (the C++ optimizers keep the count as a double).
        host = by_op.get("aten._local_scalar_dense", 0)
        total = sum(by_op.values())
        print(f"{args.model} {args.optimizer} {path}: {total} ATen ops per step "
              f"({n} parameters; {host} of them .item() reads of step counters)")
        for name, count in sorted(by_op.items(), key=lambda kv: -kv[1]):
            print(f"    {count:6d} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
