#!/usr/bin/env python3
"""Pins the Python fill to the values tests/unit/deterministic_fill_test.cpp
pins the C++ fill to, and checks the parameter rule on a small module."""

import numpy as np

import fill


def main():
    w = fill.deterministic_array("weight", (5,))
    want = [float.fromhex(x) for x in (
        "-0x1.c8d384p-1", "-0x1.f70690p-3", "0x1.50ff38p-1", "0x1.db85a0p-1", "0x1.06d164p-1")]
    assert w.dtype == np.float32 and w.tolist() == want, w.tolist()
    ids = fill.deterministic_integers("tokens", (6,), 0, 30522)
    assert ids.tolist() == [23170, 8911, 10719, 4636, 6736, 26231], ids.tolist()
    d = fill.deterministic_array("x", (3,), np.float64, 1.0, 0.5)
    assert d.tolist() == [0.701208233833313, 1.3085267543792725, 1.1433236002922058], d.tolist()
    assert (fill.deterministic_array("t", (12,)).reshape(3, 4) == fill.deterministic_array("t", (3, 4))).all()

    import torch

    root = torch.nn.Module()
    root.fc = torch.nn.Linear(48, 8)
    root.bn = torch.nn.BatchNorm1d(8)
    fill.deterministic_fill(root)
    bound = float(np.sqrt(3.0 / 48))
    expected = fill.deterministic_tensor("fc.weight", (8, 48), torch.float32, 0.0, bound)
    assert torch.equal(root.fc.weight, expected)
    assert root.fc.bias.abs().max() <= 0.1 and root.bn.running_var.min() >= 0.5
    assert root.bn.num_batches_tracked.item() == 0
    print("test_fill: the Python fill matches the pinned values")


if __name__ == "__main__":
    main()
